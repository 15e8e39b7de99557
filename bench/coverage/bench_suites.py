#!/usr/bin/env python3
"""Coverage of CPython's own unittest suites: whole-process CPU, side by side.

For each suite (test_difflib, test_argparse, test_enum, test_json by
default), one table from one run, with the variants run in turn (round
robin, --reps times; the min of each is kept):

  bare               python -m unittest test.SUITE
  coveragepy         python -m coverage run [--include=...] -m unittest ...
  coveragepy_branch  the same with --branch
  ptk                pytracekit -p coverage[:include=...] -m unittest ...
                     (the pytracekit command: it embeds the shared libpython)
  ptk_branch         the same with branch=true
  ptk_calls          the same with calls=true (a CALL event per call: how
                     often each function ran, not only whether)
  ptk_py, ptk_py_branch  the same through pytracekit.Session in the
                     interpreter binary itself (suite_driver.py): on Debian
                     /usr/bin/python3 is a faster build than its shared
                     libpython, so these are the like-for-like rows

CPU is user + system time of the whole process (os.wait4), so start-up,
measuring and writing the reports are all in. Scopes (--scope):

  module   the module under test and its test file are measured (include=
           */difflib.py,*/test_difflib.py for both tools): the common case
  default  each tool's default scope; both leave the standard library out,
           so nothing is measured and all of the cost is the tracer's
           handling of unmeasured code

    python3 bench/coverage/bench_suites.py --build build/rel-deb311
    python3 bench/coverage/bench_suites.py --build build/rel-313 --no-coveragepy

The interpreter is the one the --build directory was configured for; it
needs its test package (Debian: libpython3.11-testsuite) and, for the
coverage.py rows, coverage.py (Debian: python3-coverage).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SUITES = {
    "test_difflib": "difflib",
    "test_argparse": "argparse",
    "test_enum": "enum",
    "test_json": "json",
}
BACKEND = "auto"
VARIANTS = ["bare", "coveragepy", "coveragepy_branch", "ptk", "ptk_branch", "ptk_calls",
            "ptk_py", "ptk_py_branch"]
HERE = os.path.dirname(os.path.abspath(__file__))


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def cache_python(build):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"Python3_EXECUTABLE:\w+=(.*)", line)
            if m:
                return m.group(1).strip()
    sys.exit("no Python3_EXECUTABLE in %s/CMakeCache.txt" % build)


def include_for(suite, module):
    if module == "json":
        return "*/json/*.py,*/test_json/*.py"
    return "*/%s.py,*/%s.py" % (module, suite)


def command(variant, python, build, suite, module, scope, out):
    unit = ["-m", "unittest", "-q", "test." + suite]
    inc = include_for(suite, module) if scope == "module" else None
    if variant == "bare":
        return [python] + unit
    if variant.startswith("coveragepy"):
        cmd = [python, "-m", "coverage", "run", "--data-file=" + os.path.join(out, ".cov")]
        if variant.endswith("branch"):
            cmd.append("--branch")
        if inc:
            cmd.append("--include=" + inc)
        return cmd + unit
    spec = "coverage"
    opts = []
    if inc:
        opts.append("include='%s'" % inc)
    if variant.endswith("branch"):
        opts.append("branch=true")
    if variant.endswith("_calls"):
        opts.append("calls=true")
    if opts:
        spec += ":" + ",".join(opts)
    if variant.startswith("ptk_py"):
        return [python, os.path.join(HERE, "suite_driver.py"), out,
                os.path.join(build, "plugins"), BACKEND, spec] + unit
    return [os.path.join(build, "tools", "pytracekit"), "--plugin-path",
            os.path.join(build, "plugins"), "--backend", BACKEND, "-p", spec, "-o", out] + unit


def cpu_of(cmd, cwd, build):
    env = dict(os.environ, COVERAGE_RCFILE=os.devnull, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.path.join(build, "python"))
    with open(os.devnull, "w") as null:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode(errors="replace")
        p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit("%s exited with %d:\n%s" % (" ".join(cmd), code, err[-3000:]))
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="a pytracekit build directory (Release)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scope", choices=["module", "default"], default="module")
    ap.add_argument("--suite", action="append", choices=sorted(SUITES))
    ap.add_argument("--no-coveragepy", action="store_true")
    ap.add_argument("--backend", choices=["auto", "legacy", "monitoring"], default="auto")
    args = ap.parse_args()
    global BACKEND
    BACKEND = args.backend
    build = os.path.abspath(args.build)
    python = cache_python(build)
    variants = [v for v in VARIANTS if not (args.no_coveragepy and v.startswith("coveragepy"))]
    ver = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                         stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    covver = None
    if not args.no_coveragepy:
        p = subprocess.run([python, "-c", "import coverage; print(coverage.__version__)"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True)
        if p.returncode != 0:
            sys.exit("coverage.py is not importable by %s (use --no-coveragepy)" % python)
        covver = p.stdout.strip()
    suites = args.suite or list(SUITES)
    work = tempfile.mkdtemp(prefix="ptk-bench-suites-")
    results = {}
    try:
        for suite in suites:
            best = {}
            for rep in range(args.reps):
                for v in variants:
                    out = os.path.join(work, "%s-%s" % (suite, v))
                    os.makedirs(out, exist_ok=True)
                    t = cpu_of(command(v, python, build, suite, SUITES[suite], args.scope, out),
                               work, build)
                    best[v] = min(best.get(v, t), t)
                    log("%s %s rep %d: %.2f s" % (suite, v, rep + 1, t))
            results[suite] = best
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("Python %s%s, scope %s, backend %s, whole-process CPU (user+sys), min of %d"
          % (ver, ", coverage.py %s" % covver if covver else "", args.scope,
             BACKEND, args.reps))
    print()
    head = "| suite | bare s |" + "".join(" %s |" % v for v in variants[1:])
    if covver:
        head += (" ptk / coveragepy | ptk_branch / coveragepy_branch | ptk_py / coveragepy |"
                 " ptk_py_branch / coveragepy_branch |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for suite in suites:
        r = results[suite]
        row = "| %s | %.2f |" % (suite, r["bare"])
        row += "".join(" %.2fx |" % (r[v] / r["bare"]) for v in variants[1:])
        if covver:
            row += " %.2f | %.2f | %.2f | %.2f |" % (
                r["ptk"] / r["coveragepy"], r["ptk_branch"] / r["coveragepy_branch"],
                r["ptk_py"] / r["coveragepy"], r["ptk_py_branch"] / r["coveragepy_branch"])
        print(row)


main()
