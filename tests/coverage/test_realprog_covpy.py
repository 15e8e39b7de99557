"""Branch coverage of CPython's own unittest suites against coverage.py on
the same interpreter.

    test_realprog_covpy.py SUITE      (difflib, argparse, json; enum: see docs/coverage.md)

Runs `unittest -q test.test_SUITE` under the coverage plugin (branch=true)
and under coverage.py (--branch), both measuring the module and its tests
only, and compares the executed lines and the branches taken: for each
branch line we list, the arcs to its destinations. Arcs from branch events
(the monitoring backend on 3.14+: BRANCH_LEFT / BRANCH_RIGHT) are compared
with coverage.py's sysmon core, which measures the same way; line
transitions (the legacy backend, and 3.12/3.13) with its trace core. The one
documented difference is printed and allowed: a line after a loop that has
a break, reached by the loop's exit, has no LINE on 3.14+ (docs/events.md);
coverage.py's sysmon core counts it from the branch event.
Skips (77) where coverage.py or the suite is not importable.
"""
import os
import subprocess
import sys

import ptk_coverage_util as u
from ptk_testlib import skip

SUITES = {
    "difflib": ("test.test_difflib", "*/difflib.py,*/test_difflib.py"),
    "argparse": ("test.test_argparse", "*/argparse.py,*/test_argparse.py"),
    "enum": ("test.test_enum", "*/enum.py,*/test_enum.py"),
    "json": ("test.test_json", "*/json/*.py,*/test_json/*.py"),
}
DRIVER = """import sys
import unittest

sys.argv[1:] = ["-q", %r]
unittest.main(module=None)
"""


MULTILINE = r"""
import json, sys
from coverage.parser import PythonParser
out = {}
for path in sys.argv[1:]:
    p = PythonParser(filename=path)
    p.parse_source()
    m = getattr(p, "multiline_map", None) or getattr(p, "multiline", {})
    out[path] = {str(k): v for k, v in m.items()}
print(json.dumps(out))
"""


def statement_first_lines(files):
    """{file: {line: first line of its statement}} from coverage.py's parser."""
    import json
    p = u.run([u.python(), "-c", MULTILINE] + [f for f in files if os.path.exists(f)],
              os.getcwd(), oracle=True)
    return {f: {int(k): v for k, v in m.items()} for f, m in json.loads(p.stdout).items()}


EARLY = r"""
import json, sys, types
import coverage, coverage.control  # what coverage.py has imported when it starts
loaded = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
out = {}
for path in sys.argv[1:]:
    if path in loaded:
        code = compile(open(path).read(), path, "exec")
        out[path] = sorted({l for _, _, l in code.co_lines() if l})
print(json.dumps(out))
"""


def import_time_lines(files):
    """{file: lines of its module body} for the measured modules coverage.py
    itself imports before it starts measuring."""
    import json
    p = u.run([u.python(), "-c", EARLY] + [f for f in files if os.path.exists(f)], os.getcwd(),
              oracle=True)
    return {f: set(v) for f, v in json.loads(p.stdout).items()}


def main():
    name = sys.argv[1]
    module, include = SUITES[name]
    ok, why = u.coveragepy_available()
    if not ok:
        skip(why)
    probe = subprocess.run([u.python(), "-c", "import " + module],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        skip("%s is not importable by %s (CPython's test package is not installed: "
             "Debian's libpython3.X-testsuite)" % (module, u.python()))
    # How the plugin measures is known before the run (the monitoring
    # backend: branch events; the legacy backend: line transitions), and so
    # is which core of coverage.py it is compared with: a comparison that
    # cannot be made here is skipped before the suite runs, not after.
    by_events = u.MONITORING
    core = "sysmon" if by_events else "ctrace"
    if by_events and sys.version_info < (3, 14):
        skip("coverage.py measures branches from sys.monitoring only on 3.14+; "
             "coverage.realprog.difflib.branch@monitoring checks branch events here")
    if name == "json" and core == "ctrace":
        # (on 3.15, coverage.py's trace core ran test_json for more than 5
        # minutes without finishing, against 25 s here)
        skip("test_json under coverage.py's trace core takes over 5 minutes; compared "
             "on the monitoring backend (branch events, coverage.py's sysmon core)")
    wd = u.workdir("realprog-covpy-" + name)
    script = os.path.join(wd, "run_%s.py" % name)
    with open(script, "w") as f:
        f.write(DRIVER % module)
    spec = "coverage:include='%s',branch=true" % include
    _, data = u.run_ptk(wd, [script], spec=spec, expect=None)
    if data is None:
        u.fail("no coverage.json written")
    measured = data["meta"].get("measured")
    if measured != ("branch events" if by_events else "line transitions"):
        u.fail("the plugin measured by %r on the %s backend" % (measured, u.BACKEND))
    theirs = u.run_coveragepy(wd, [script], branch=True, core=core, include=include)
    files = sorted(set(data["files"]) | set(theirs))
    ours_lines = u.executed(data)
    cov_lines = {f: set(theirs.get(f, {}).get("lines", set())) for f in files}
    ours_arcs = u.arcs(data)
    allowed = 0
    if core == "sysmon":
        for f in files:
            for line in sorted(cov_lines[f] - ours_lines.get(f, set())):
                if any(b == line for a, b in ours_arcs.get(f, ())):
                    print("lines: %s:%d only coverage.py: the destination of a loop's exit "
                          "branch, which gives no LINE" % (os.path.basename(f), line))
                    cov_lines[f].discard(line)
                    allowed += 1
    # Statement level (see below), and without the import-time lines of a
    # module coverage.py imports itself before it starts (enum): it cannot
    # see those run, we can.
    first = statement_first_lines(files)
    early = import_time_lines(files)
    for f in files:
        m = first.get(f, {})
        if early.get(f):
            print("lines: %s: %d import-time lines left out (the module is imported "
                  "before coverage.py starts)" % (os.path.basename(f), len(early[f])))
        ours_lines[f] = {m.get(x, x) for x in ours_lines.get(f, set()) if x not in early.get(f, ())}
        cov_lines[f] = {m.get(x, x) for x in cov_lines[f] if x not in early.get(f, ())}
    u.compare_sets("executed lines", ours_lines, cov_lines, "coverage.py (%s)" % core)
    # Statement level: coverage.py names a multi-line statement by its first
    # line; our branch lines and destinations are the lines of the
    # instructions (a condition's continuation line, a call's argument on
    # the next line). Both sides go through coverage.py's multiline map, and
    # an arc within one statement is no branch at that level.
    dests = {}
    for f in data["files"]:
        m = first.get(f, {})
        for line, d in data["files"][f]["branches"]:
            for b in d:
                a2, b2 = m.get(line, line), m.get(b, b)
                if a2 != b2:
                    dests.setdefault(f, {}).setdefault(a2, set()).add(b2)

    def taken(arcs, f):
        m = first.get(f, {})
        out = set()
        for a, b in arcs:
            a2, b2 = m.get(a, a), m.get(b, b)
            if a in early.get(f, ()):
                continue
            if a2 != b2 and a2 in dests.get(f, {}) and b2 in dests[f][a2]:
                out.add((a2, b2))
        return out
    mine = {f: taken(set(map(tuple, ours_arcs.get(f, ()))), f) for f in files}
    cov = {f: taken(theirs.get(f, {}).get("arcs") or set(), f) for f in files}
    u.compare_sets("branches taken", mine, cov, "coverage.py (%s)" % core)
    nb = sum(len(v) for v in mine.values())
    if nb < 50:
        u.fail("only %d branches taken: the suite did not run" % nb)
    print("ok: test_%s (%s): %d files, %d executed lines, %d branches taken equal to "
          "coverage.py %s's (%s core); %d lines allowed (no LINE after a loop's exit)"
          % (name, "monitoring" if u.MONITORING else "legacy", len(files),
             sum(len(v) for v in ours_lines.values()), nb, u.coveragepy_available()[1],
             core, allowed))


main()
