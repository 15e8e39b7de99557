"""counter, timer and timeline name C callables as cProfile does, with the
same call counts: {method 'append' of 'list' objects} whether it was first
seen on a subclass of list or not (issue: the counter said MyList.append).

The same workload runs under cProfile.Profile, then in one session of the
three plugins, in one interpreter; every C function cProfile saw in it must
be in each plugin's report under cProfile's label, with cProfile's count."""
import collections
import json
import marshal
import os
import sys

import ptk_testlib as T

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")

CODE = r"""
import cProfile, json, marshal, sys
sys.path.insert(0, %(programs)r)
import c_labels
import pytracekit
pr = cProfile.Profile()
pr.enable()
c_labels.work()
pr.disable()
pr.create_stats()
with open(%(out)r + "/cprofile.pstats", "wb") as f:
    marshal.dump(pr.stats, f)
with pytracekit.Session(["counter:top=40", "timer:top=0",
                         "timeline:builtins=true,format=json"],
                        output_dir=%(out)r):
    c_labels.work()
"""

# The profilers' own switches, seen by one side only.
OWN = ("<method 'disable' of '_lsprof.Profiler' objects>",)


def session_own(label):
    return "pytracekit" in label or "Session" in label or "_pytracekit" in label


def main():
    out = T.tempdir() if hasattr(T, "tempdir") else None
    if out is None:
        import tempfile
        out = tempfile.mkdtemp(prefix="ptk-clabels-")
    p = T.run_python(CODE % {"programs": PROGRAMS, "out": out})
    with open(os.path.join(out, "cprofile.pstats"), "rb") as f:
        cprof = marshal.load(f)
    want = {k[2]: v[1] for k, v in cprof.items()
            if k[0] == "~" and k[2] not in OWN}
    T.check("<method 'append' of 'list' objects>" in want, sorted(want))
    T.check(want["<method 'append' of 'list' objects>"] == 102, want)

    with open(os.path.join(out, "counter.json")) as f:
        counter = json.load(f)
    got_counter = {f["label"]: f["calls"] for f in counter["functions"]
                   if f["kind"] == "c" and not session_own(f["label"])}
    by_qual = {f["qualname"]: f["calls"] for f in counter["functions"]
               if f["kind"] == "c"}
    T.check(by_qual.get("list.append") == 102 and "MyList.append" not in by_qual,
            "counter qualnames %r" % by_qual)
    T.check(by_qual.get("dict.get") == 4 and "MyDict.get" not in by_qual,
            "counter qualnames %r" % by_qual)

    with open(os.path.join(out, "timer.pstats"), "rb") as f:
        timer = marshal.load(f)
    got_timer = {k[2]: v[1] for k, v in timer.items()
                 if k[0] == "~" and not session_own(k[2])}

    with open(os.path.join(out, "timeline.json")) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    got_timeline = collections.Counter(
        e["name"] for e in events
        if e.get("ph") in ("B", "X") and e.get("name", "").startswith("<")
        and not session_own(e["name"]))

    for who, got in (("counter", got_counter), ("timer", got_timer),
                     ("timeline", dict(got_timeline))):
        missing = {k: v for k, v in want.items() if got.get(k) != v}
        extra = {k: v for k, v in got.items() if k not in want}
        T.check(not missing and not extra,
                "%s differs from cProfile: wanted %r, found %r; not in "
                "cProfile: %r" % (who, missing,
                                  {k: got.get(k) for k in missing}, extra))

    # the tables print the label as pstats does
    T.check("{method 'append' of 'list' objects}" in p.stderr, p.stderr)
    print("OK: %d C functions named and counted as cProfile does by "
          "counter, timer and timeline" % len(want))


main()
