"""The timer on a real program no one here wrote: CPython's own unittest
suite of a stdlib module (`python -m unittest -q test.test_difflib` by
default), every Python function of the run, not only a test program's.

The oracle is sys.setprofile in the same interpreter (setprofile_oracle.py):
each function's call count in timer.pstats (pstats' nc: every call, the
recursive ones and generator resumes included) must equal the number of
'call' events the oracle saw for it. Keys are pstats' (file, first line,
name); code objects that share one (the modules namedtuple and dataclasses
compile from strings, a module imported twice) are summed on both sides.

Left out of the comparison, and printed: runpy's own frames (the command
runs the module with runpy._run_module_as_main, the oracle with
runpy.run_module: different runpy functions by design), the oracle's own
file, and the polling of subprocess.communicate() (selectors, the deadline
checks), whose counts depend on how a child's output arrives. Anything else in one run and not the other is a failure.

usage: test_realprog.py [MODULE MIN_FUNCS]
"""
import os
import subprocess
import sys

import ptk_timer_util as U
from ptk_testlib import check, fail, skip

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "setprofile_oracle.py")


def main():
    module = sys.argv[1] if len(sys.argv) > 1 else "test.test_difflib"
    min_funcs = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    probe = subprocess.run([U.PYTHON, "-c", "import %s" % module],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        skip("%s is not importable by %s (CPython's test package is not installed: "
             "Debian's libpython3.X-testsuite): %s"
             % (module, U.PYTHON, probe.stderr.strip().splitlines()[-1:]))
    prog = ["-m", "unittest", "-q", module]
    outdir, _ = U.run_timer(prog[0], opts="contexts=false", args=prog[1:])
    ours = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    U.check_consistent(ours, "timer.pstats")

    oracle_out = os.path.join(U.tempdir(), "oracle.marshal")
    p = subprocess.run([U.PYTHON, ORACLE, oracle_out] + prog,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail("oracle run exited %d:\n%s" % (p.returncode, p.stderr[-3000:]))
    theirs = U.load_pstats(oracle_out)

    def ignored(key):
        return (key[0] in ("<frozen runpy>", ORACLE) or key[0].endswith("runpy.py")
                or polled(key))

    # 3.15's test_difflib runs difflib's command line in a child process;
    # how often subprocess.communicate() wakes up to read its output (the
    # selector's calls, the deadline checks between them) depends on how
    # the output arrives, and differs between two runs of the suite.
    def polled(key):
        name = os.path.basename(key[0])
        return name == "selectors.py" or (
            name == "subprocess.py" and key[2] in ("_deadline_remaining", "_remaining_time",
                                                    "_check_timeout"))

    ours_py = {k: v[1] for k, v in ours.items() if k[0] != "~" and not ignored(k)}
    theirs_py = {k: n for k, n in theirs.items() if not ignored(k)}
    left = sorted({k for k in ours if ignored(k)} | {k for k in theirs if ignored(k)})
    print("left out: %s" % ", ".join("%s:%d(%s)" % k for k in left))

    problems = []
    for k in sorted(set(ours_py) | set(theirs_py)):
        a, b = ours_py.get(k), theirs_py.get(k)
        if a != b:
            problems.append("%s:%d(%s): timer %s, sys.setprofile %s" % (k + (a, b)))
    for p_ in problems[:60]:
        print("MISMATCH:", p_)
    check(not problems, "%d of %d functions differ from sys.setprofile's counts"
          % (len(problems), len(theirs_py)))
    check(len(theirs_py) >= min_funcs, "compared %d functions, expected >= %d"
          % (len(theirs_py), min_funcs))
    shared = sum(1 for k in ours_py if k[0].startswith("<") and not k[0].startswith("<frozen"))
    print("OK: %s: %d Python functions, %d calls, equal to sys.setprofile's "
          "(%d of them from source strings)"
          % (module, len(theirs_py), sum(theirs_py.values()), shared))


main()
