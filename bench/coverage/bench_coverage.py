#!/usr/bin/env python3
"""coverage plugin overhead, against coverage.py's C tracer, side by side.

For each workload (line_heavy: a tight 5-line loop; line_partial: the same
with a branch that never runs; call_heavy: small function calls), one table
from one run with

  bare               no trace function
  nulltrace          a do-nothing C trace function (PyEval_SetTrace): what
                     CPython spends to deliver every trace event
  coveragepy         coverage.py, C tracer, line coverage
  coveragepy_branch  coverage.py, C tracer, branch=True
  ptk                pytracekit coverage plugin, line coverage
  ptk_calls          the same with calls=true (a CALL event per call: how
                     often each function ran, not only whether)
  ptk_branch         pytracekit coverage plugin, branch=true (from BRANCH events
                     on sys.monitoring, from every LINE on the legacy backend)
  ptk_branch_counts  the same with counts=true (every LINE event, exact counts)

in instructions per iteration (callgrind, the workload region only, as the
difference of two run lengths so that one-time costs cancel; a traced first
pass of the workload runs before the region) and wall time
(min of --reps runs), each as a ratio to bare and to coverage.py.

    python3 bench/coverage/bench_coverage.py                 # Debian python3 + coverage.py
    python3 bench/coverage/bench_coverage.py --python /root/.pyenv/versions/3.12.1/bin/python3

The interpreter needs coverage.py for the coverage.py rows (else they are
left out). Builds build/cov-rel-<version> (Release) if --build is not given.
Every run is a fresh process (driver.py).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DRIVER = os.path.join(HERE, "driver.py")
VARIANTS = ["bare", "nulltrace", "coveragepy", "coveragepy_branch", "ptk", "ptk_calls",
            "ptk_branch", "ptk_branch_counts"]
WORKLOADS = ["line_heavy", "line_partial", "call_heavy"]
WALL_N = {"line_heavy": 2000000, "line_partial": 2000000, "call_heavy": 1000000}
TARGET = 0.8  # ptk's time as a fraction of coverage.py's (line coverage)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def interp(python):
    src = ("import json, sys, sysconfig\n"
           "try:\n import coverage; cv = coverage.__version__\nexcept ImportError: cv = None\n"
           "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3],"
           " 'include': sysconfig.get_paths()['include'],"
           " 'suffix': sysconfig.get_config_var('EXT_SUFFIX'), 'coverage': cv}))")
    return json.loads(subprocess.run([python, "-c", src], check=True, capture_output=True,
                                     text=True).stdout)


def build_null(info, tmp):
    out = os.path.join(tmp, "_ptkcovnull" + info["suffix"])
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-I" + info["include"],
                    os.path.join(HERE, "nulltrace.c"), "-o", out], check=True)
    return tmp


def ensure_build(python, info, build, rebuild=True):
    if build is None:
        build = os.path.join(REPO, "build", "cov-rel-" + info["version"])
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        log("configuring %s (Release) for %s" % (build, python))
        subprocess.run(["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                        "-DPTK_WERROR=ON", "-DPython3_EXECUTABLE=" + python],
                       check=True, stdout=subprocess.DEVNULL)
    if rebuild:
        subprocess.run(["cmake", "--build", build, "-j2", "--target", "ptk_python",
                        "ptk_plugin_coverage"], check=True, stdout=subprocess.DEVNULL)
    return build


def run_one(python, env, workload, variant, n, null_dir, callgrind):
    with tempfile.TemporaryDirectory() as out:
        cmd = [python, DRIVER, workload, variant, str(n), null_dir, out]
        if callgrind:
            cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=ptkcov_region",
                   "--callgrind-out-file=/dev/null"] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit("%s %s failed:\n%s" % (workload, variant, p.stderr))
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if callgrind:
        m = re.search(r"Collected : (\d+)", p.stderr)
        if not m:
            raise SystemExit("no callgrind total in:\n" + p.stderr)
        res["instr"] = int(m.group(1))
    return res


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--no-build", action="store_true", help="use the build as it is")
    args = ap.parse_args()
    info = interp(args.python)
    build = ensure_build(args.python, info, args.build, not args.no_build)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(build, "python")
    env["PYTRACEKIT_PLUGIN_PATH"] = os.path.join(build, "plugins")
    variants = [v for v in VARIANTS if info["coverage"] or not v.startswith("coveragepy")]
    with tempfile.TemporaryDirectory() as tmp:
        null_dir = build_null(info, tmp)
        print("Python %s (%s), coverage.py %s, build %s"
              % (info["version"], args.python, info["coverage"] or "not installed",
                 os.path.relpath(build, REPO)))
        for wl in args.workloads.split(","):
            rows = {}
            for v in variants:
                row = {}
                if not args.no_callgrind:
                    n1 = int(re.search(r"CALLGRIND_N = (\d+)",
                                       open(os.path.join(HERE, wl + ".py")).read()).group(1))
                    a = run_one(args.python, env, wl, v, n1, null_dir, True)
                    b = run_one(args.python, env, wl, v, 2 * n1, null_dir, True)
                    row["ipi"] = (b["instr"] - a["instr"]) / n1
                walls = [run_one(args.python, env, wl, v, WALL_N[wl], null_dir, False)["wall"]
                         for _ in range(args.reps)]
                row["wall"] = min(walls)
                rows[v] = row
                log("  %s %s done" % (wl, v))
            base = rows["bare"]
            cov = rows.get("coveragepy")
            print("\n%s (wall: %d iterations, min of %d runs)" % (wl, WALL_N[wl], args.reps))
            print("%-18s %12s %7s %7s %9s %7s %7s" % ("variant", "instr/iter", "xbare", "xcovpy",
                                                    "wall s", "xbare", "xcovpy"))
            for v in variants:
                r = rows[v]
                ipi = r.get("ipi")
                print("%-18s %12s %7s %7s %9.4f %7s %7s" % (
                    v, "%.0f" % ipi if ipi is not None else "-",
                    ratio(ipi, base.get("ipi")), ratio(ipi, cov.get("ipi") if cov else None),
                    r["wall"], ratio(r["wall"], base["wall"]),
                    ratio(r["wall"], cov["wall"] if cov else None)))
            if cov:
                got = rows["ptk"]["wall"] / cov["wall"]
                print("ptk / coverage.py wall time: %.2f (target <= %.2f): %s"
                      % (got, TARGET, "met" if got <= TARGET else "NOT met"))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
