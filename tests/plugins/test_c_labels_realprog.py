"""counter, timer and timeline name every C callable of a real program as
cProfile does, with cProfile's call counts: CPython's own email tests
(test.test_email), run by unittest.

Two fresh interpreters run the same thing: load the tests, then run them,
once inside a cProfile.Profile (the oracle) and once inside one session of
counter, timer and timeline (builtins=true, format=json). Both runs have
PYTHONHASHSEED=0 and make the same imports before the measured part, so
the C calls made are the same. Compared: the set of C-callable labels
(cProfile's `<method 'append' of 'list' objects>`, `<built-in method
builtins.len>`, ...) exactly, and each label's call count exactly: the
counter's `calls` by label, the timer's pstats `nc` of ("~", 0, label), the
number of timeline spans with that name.

Left out, and printed: each profiler's own switch (cProfile's `disable`,
the session's `__exit__` and what it calls), which only one side runs. The
address in the label of a type's method (`<built-in method __new__ of type
object at 0x7f...>`, its repr, as cProfile prints it) differs from one
process to the other: it is compared without it.

The timeline drops events when its writer falls behind (it says how many,
in timeline.summary.json): a run with drops compares the timeline's labels
exactly and its counts as at most cProfile's, short by at most the number
dropped; a buffer of 64 MiB makes that rare.

The tests run are every module of test.test_email but test_email.test_email
and test_message (4.0 M and 0.45 M of test_email's 6.8 M C calls on 3.13):
with those the timeline's JSON would be about 1.6 GB; without them it is
about 0.2 GB and 0.37 M C calls of some 150 C functions. Left out too:
test_utils' TestImportTime.test_lazy_import (3.14+), which runs a child
interpreter: how often subprocess polls for its output depends on timing.

usage: test_c_labels_realprog.py test_email
"""
import collections
import json
import marshal
import os
import re
import shutil
import subprocess
import sys
import tempfile

import ptk_testlib as T

LEFT_OUT_MODULES = ("test_email", "test_message")
# Runs a child interpreter (3.14+): how often subprocess polls for its
# output (select.poll's poll, the len() around it) depends on timing.
LEFT_OUT_TESTS = (".TestImportTime.test_lazy_import",)

# Both runs import the same modules (gc: the timeline's collection spans),
# as a test iterates over sys.modules.
LOAD = r"""
import cProfile, gc, io, marshal, pkgutil, sys, unittest
import pytracekit
import test.test_email as te
mods = ["test.test_email." + m.name for m in pkgutil.iter_modules(te.__path__)
        if m.name.startswith("test_") and m.name not in %(left)r]
def keep(tests):
    out = unittest.TestSuite()
    for t in tests:
        if isinstance(t, unittest.TestSuite):
            out.addTest(keep(t))
        elif not t.id().endswith(%(tests)r):
            out.addTest(t)
    return out
suite = keep(unittest.TestLoader().loadTestsFromNames(sorted(mods)))
runner = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0)
"""

ORACLE = LOAD + r"""
pr = cProfile.Profile()
pr.enable()
result = runner.run(suite)
pr.disable()
pr.create_stats()
with open(%(out)r, "wb") as f:
    marshal.dump(pr.stats, f)
print("tests", result.testsRun, len(result.failures), len(result.errors))
"""

OURS = LOAD + r"""
with pytracekit.Session(["counter:top=0", "timer:top=0",
                         "timeline:builtins=true,format=json,buffer_kb=65536"],
                        output_dir=%(out)r):
    result = runner.run(suite)
print("tests", result.testsRun, len(result.failures), len(result.errors))
"""

# The profilers' own switches, each seen by one side only.
CPROFILE_OWN = ("<method 'disable' of '_lsprof.Profiler' objects>",)


ADDRESS = re.compile(r" at 0x[0-9a-f]+>$")


def by_label(pairs):
    """{label: calls}; the address in a label ("<built-in method __new__ of
    type object at 0x7f...>", the repr of a type's method) differs between
    the two processes, so it is left out, and labels then equal summed."""
    out = collections.Counter()
    for label, calls in pairs:
        out[ADDRESS.sub(" at 0x...>", label)] += calls
    return dict(out)


def session_own(label):
    return "pytracekit" in label or "Session" in label or "_pytracekit" in label


def run(code, what):
    env = dict(os.environ, PYTHONHASHSEED="0")
    p = subprocess.run([T.PYTHON, "-c", code], env=env, capture_output=True,
                       text=True, timeout=900)
    if p.returncode != 0:
        T.fail("%s run exited %d:\n%s" % (what, p.returncode, p.stderr[-3000:]))
    tests = [line for line in p.stdout.splitlines() if line.startswith("tests ")]
    T.check(len(tests) == 1 and tests[0].endswith(" 0 0"),
            "%s run: the email tests did not all pass: %r" % (what, p.stdout[-2000:]))
    return int(tests[0].split()[1])


def timeline_spans(path):
    """Spans per name of C callables (a span of a Python function has its
    file in its args), read a line (an event) at a time: the file is too big
    to hold as objects. The timeline writes an event's "ph" first; a span's
    name is decoded where it starts (a regular expression over the 0.2 GB
    took 4 to 9 times as long)."""
    spans = collections.Counter()
    decode = json.JSONDecoder().raw_decode
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith(('{"ph":"B"', '{"ph":"X"')):
                continue
            i = line.find('"name":"<')
            if i >= 0 and '"args":{"file":' not in line:
                spans[decode(line, i + len('"name":'))[0]] += 1
    return spans


def main():
    if sys.argv[1:] != ["test_email"]:
        T.fail("usage: test_c_labels_realprog.py test_email")
    probe = subprocess.run([T.PYTHON, "-c", "import test.test_email"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        T.skip("test.test_email is not importable by %s (CPython's test package "
               "is not installed: Debian's libpython3.X-testsuite): %s"
               % (T.PYTHON, probe.stderr.strip().splitlines()[-1:]))
    work = tempfile.mkdtemp(prefix="ptk-clabels-")
    try:
        compare(work)
    finally:
        if not os.environ.get("PTK_KEEP"):
            shutil.rmtree(work, ignore_errors=True)


def compare(work):
    stats = os.path.join(work, "cprofile.marshal")
    what = {"left": LEFT_OUT_MODULES, "tests": LEFT_OUT_TESTS}
    n_oracle = run(ORACLE % dict(what, out=stats), "cProfile")
    n_ours = run(OURS % dict(what, out=work), "pytracekit")
    T.check(n_oracle == n_ours and n_ours > 500,
            "ran %d tests under cProfile, %d in the session" % (n_oracle, n_ours))
    with open(stats, "rb") as f:
        cprof = marshal.load(f)
    want = by_label((k[2], v[1]) for k, v in cprof.items()
                    if k[0] == "~" and k[2] not in CPROFILE_OWN)
    T.check(want.get("<method 'append' of 'list' objects>", 0) > 1000, sorted(want))

    with open(os.path.join(work, "counter.json")) as f:
        counter = json.load(f)
    got_counter = by_label((f["label"], f["calls"]) for f in counter["functions"]
                           if f["kind"] == "c")
    with open(os.path.join(work, "timer.pstats"), "rb") as f:
        timer = marshal.load(f)
    got_timer = by_label((k[2], v[1]) for k, v in timer.items() if k[0] == "~")
    got_timeline = by_label(timeline_spans(os.path.join(work, "timeline.json")).items())

    with open(os.path.join(work, "timeline.summary.json")) as f:
        dropped = json.load(f)["dropped"]

    left = sorted(CPROFILE_OWN)
    bad = []
    for who, got in (("counter", got_counter), ("timer", got_timer),
                     ("timeline", got_timeline)):
        left += sorted(k for k in got if session_own(k))
        got = {k: v for k, v in got.items() if not session_own(k)}
        lost = who == "timeline" and dropped
        T.check(set(got) == set(want) or (lost and set(got) <= set(want)),
                "%s names C callables cProfile does not, or misses some: only %s %r, "
                "only cProfile %r" % (who, who, sorted(set(got) - set(want)),
                                      sorted(set(want) - set(got))))
        if lost:
            # The timeline drops events when its writer falls behind (a
            # loaded machine), and says how many: then its spans may only
            # fall short of cProfile's calls (a rare one to none), by no
            # more than that.
            short = sum(want[k] - got.get(k, 0) for k in want)
            T.check(all(got.get(k, 0) <= want[k] for k in want) and short <= dropped,
                    "timeline: %d events dropped, %d spans short: %r" % (dropped, short, {
                        k: (want[k], got.get(k)) for k in want if got.get(k) != want[k]}))
            print("timeline: %d events dropped (writer behind); %d C spans short, "
                  "counts compared as at most cProfile's" % (dropped, short))
            continue
        for k in sorted(want):
            if want[k] != got[k]:
                bad.append("%s: %s: cProfile %s, %s %s" % (who, k, want[k], who, got[k]))
    print("left out: %s" % ", ".join(sorted(set(left))))
    for b in bad[:60]:
        print("MISMATCH:", b)
    T.check(not bad, "%d labels or counts differ from cProfile's" % len(bad))
    print("OK: %d tests, %d C functions, %d C calls named and counted as cProfile "
          "does by counter, timer and timeline"
          % (n_ours, len(want), sum(want.values())))


main()
