"""Coverage of a real program no one here wrote: CPython's own unittest suite
of difflib (`unittest -q test.test_difflib`), measuring difflib.py and
test_difflib.py, against the settrace oracle (tests/python/ptk_coverage_tracer.py)
in the same interpreter.

    test_realprog.py [--branch]
    test_realprog.py --oracle    only the oracle's run, into ORACLE_FILE

The oracle's run is most of the cost (test_difflib under a pure-Python
settrace collector) and the same for both modes and both backends: CTest runs
it once (coverage.realprog.difflib.oracle, a fixture) and the four tests
read its file; run alone, a test runs the oracle itself.

The executed lines of both files must be the oracle's, difflib's import-time
lines included (the program imports difflib itself). With --branch: on the
legacy backend every arc and its count must be the oracle's; on
sys.monitoring (branch events), the branches taken must be the oracle's
transitions out of each branch line, and every arc made must be one the
oracle saw.
"""
import json
import os
import subprocess
import sys

import ptk_coverage_util as u
from ptk_testlib import skip

MONITORING_BRANCHES = u.MONITORING and sys.version_info >= (3, 12)
DRIVER = """import sys
import unittest

sys.argv[1:] = ["-q", "test.test_difflib"]
unittest.main(module=None)
"""


# (in the test's working directory, the build's tests/coverage)
ORACLE_FILE = os.path.join(os.getcwd(), "realprog-difflib-oracle.json")


def main():
    branch = "--branch" in sys.argv[1:]
    probe = subprocess.run([u.python(), "-c", "import test.test_difflib"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        skip("test.test_difflib is not importable by %s (CPython's test package is not "
             "installed: Debian's libpython3.X-testsuite)" % u.python())
    wd = u.workdir("realprog" + ("-branch" if branch else ""))
    script = os.path.join(wd, "run_difflib.py")
    with open(script, "w") as f:
        f.write(DRIVER)
    if "--oracle" in sys.argv[1:]:
        if os.path.exists(ORACLE_FILE):
            os.unlink(ORACLE_FILE)
        oracle = u.run_oracle(wd, [script])
        names = sorted(os.path.basename(f) for f in oracle)
        if "difflib.py" not in names or "test_difflib.py" not in names:
            u.fail("the oracle did not see difflib.py and test_difflib.py run: %s" % names)
        with open(ORACLE_FILE + ".tmp", "w") as f:
            json.dump(oracle, f)
        os.replace(ORACLE_FILE + ".tmp", ORACLE_FILE)
        print("oracle: %d files, written to %s" % (len(oracle), ORACLE_FILE))
        return
    spec = "coverage:include='*/difflib.py,*/test_difflib.py'" + (",branch=true" if branch
                                                                   else "")
    _, data = u.run_ptk(wd, [script], spec=spec)
    if data is None:
        u.fail("no coverage.json written")
    measured = sorted(data["files"])
    names = sorted(os.path.basename(f) for f in measured)
    if names != ["difflib.py", "test_difflib.py"]:
        u.fail("measured %s, expected difflib.py and test_difflib.py" % measured)
    if os.path.exists(ORACLE_FILE):
        with open(ORACLE_FILE) as f:
            oracle = json.load(f)
        print("oracle: from %s (coverage.realprog.difflib.oracle)" % ORACLE_FILE)
    else:
        oracle = u.run_oracle(wd, [script])
    ours = u.executed(data)
    u.compare_sets("executed lines", ours, u.oracle_lines(oracle, measured), "oracle")
    nlines = sum(len(v) for v in ours.values())
    difflib = [f for f in measured if f.endswith(os.sep + "difflib.py")][0]
    # import-time lines: the module's own first statement ran
    if min(ours[difflib]) > 40:
        u.fail("difflib.py's import-time lines were not measured (first: %d)"
               % min(ours[difflib]))
    narcs = 0
    if branch and MONITORING_BRANCHES:
        theirs = u.oracle_arcs(oracle, measured)
        taken_ours, taken_theirs = {}, {}
        for f in measured:
            ours_arcs = set(u.arcs(data)[f])
            dests = {line: set(d) for line, d in data["files"][f]["branches"]}
            taken_ours[f] = {a for a in ours_arcs if a[0] in dests and a[1] in dests[a[0]]}
            taken_theirs[f] = {a for a in theirs[f] if a[0] in dests and a[1] in dests[a[0]]}
            stray = sorted(ours_arcs - set(theirs[f]))
            if stray:
                u.fail("%s: arcs the oracle never saw: %s" % (f, stray))
            narcs += len(taken_ours[f])
        u.compare_sets("branches taken", taken_ours, taken_theirs, "oracle")
    elif branch:
        mine = u.arcs(data)
        u.compare_maps("arcs", mine, u.oracle_arcs(oracle, measured), "oracle")
        narcs = sum(len(v) for v in mine.values())
    print("ok: test_difflib (%s): %d executed lines%s equal to the oracle's"
          % ("monitoring" if u.MONITORING else "legacy", nlines,
             ", %d %s" % (narcs, "branches taken" if MONITORING_BRANCHES else "arcs with counts")
             if branch else ""))


main()
