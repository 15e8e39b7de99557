"""Filtered subscribers against unfiltered ones and a bare run, side by side.

    python3 bench/filters/run.py --build build/bench-313 [--build ...] [--reps 5]
           [--no-callgrind] [--suite test.test_json --suite-modules json]

Two measurements per build (per Python):

1. The excluded-heavy workload (fapp/: ~90% of calls and lines in fapp.lib,
   which the filter `modules=fapp.app` leaves out): CPU time of the second
   pass of the workload in one process (the first pass is where code gets
   judged and, on the monitoring backend, switched off), min of --reps; and
   callgrind instructions of that second pass (ptkbench_region of
   bench/floor). Ratios to bare, and filtered overhead as a share of the
   unfiltered one; `floor` is a do-nothing C profile function (bench/run.py),
   the least anything on the profile hook costs.
2. A real program: CPython's own unittest suite (--suite, default
   test.test_json) whole-process, bare python vs the pytracekit command with
   counter and timer, unfiltered and with modules= naming the module under
   test; user+sys CPU time, median of --reps, variants taking turns.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from run import build_floor, cache_value, interp_info  # noqa: E402  (bench/run.py)

VARIANTS = ["bare", "floor", "counter", "counter-filtered", "timer", "timer-filtered",
            "lines", "lines-filtered", "coverage", "coverage-filtered"]


def env_for(build):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(build, "python")
    e["PYTHONHASHSEED"] = "0"
    e.pop("PYTRACEKIT_BACKEND", None)
    return e


def cpu_of(cmd, env):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):  # a failing test suite still ran
        raise SystemExit("failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), p


def callgrind_ir(cmd, env):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                            "--collect-atstart=no", "--toggle-collect=ptkbench_region"] + cmd,
                           env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit("callgrind failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
        m = re.search(r"Collected : (\d+)", p.stderr)
        return int(m.group(1))


def workload(py, build, reps, n, cg_n, callgrind):
    env = env_for(build)
    floor_dir = build_floor(interp_info(py), py, build)
    rows = {}
    drv = os.path.join(HERE, "driver.py")
    with tempfile.TemporaryDirectory() as out:
        times = {v: [] for v in VARIANTS}
        for _ in range(reps):
            for v in VARIANTS:  # variants take turns
                p = subprocess.run([py, drv, v, str(n), floor_dir, out],
                                   env=env, capture_output=True, text=True)
                if p.returncode != 0:
                    raise SystemExit(p.stderr)
                times[v].append(float(p.stdout.split()[-1]))
        ir = {}
        if callgrind:
            for v in VARIANTS:
                ir[v] = callgrind_ir([py, drv, v, str(cg_n), floor_dir, out], env)
    for v in VARIANTS:
        rows[v] = (min(times[v]), ir.get(v))
    return rows


def suite(py, build, reps, name, modules):
    env = env_for(build)
    cli = os.path.join(build, "tools", "pytracekit")
    variants = {
        "bare": [py, "-m", "unittest", "-q", name],
        "counter": [cli, "-p", "counter", "-m", "unittest", "-q", name],
        "counter-filtered": [cli, "-p", "counter", "--modules", modules, "-m", "unittest", "-q", name],
        "timer": [cli, "-p", "timer", "-m", "unittest", "-q", name],
        "timer-filtered": [cli, "-p", "timer", "--modules", modules, "-m", "unittest", "-q", name],
    }
    res = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(reps):
            for v, cmd in variants.items():
                if cmd[0] == cli:
                    cmd = cmd[:1] + ["-o", out] + cmd[1:]
                t, _ = cpu_of(cmd, env)
                res[v].append(t)
    return {v: statistics.median(ts) for v, ts in res.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--callgrind-n", type=int, default=5000)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--suite", default="test.test_json")
    ap.add_argument("--suite-modules", default="json")
    ap.add_argument("--no-suite", action="store_true")
    a = ap.parse_args()
    for build in a.build:
        py = cache_value(build, "Python3_EXECUTABLE")
        ver = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True).stdout.strip()
        backend = "monitoring" if ver >= "3.12" else "legacy"
        rows = workload(py, build, a.reps, a.n, a.callgrind_n, not a.no_callgrind)
        bt, bi = rows["bare"]
        print("\n### CPython %s (%s backend): excluded-heavy workload, second pass, ratio to bare" % (ver, backend))
        print("| variant | CPU s | × bare (time) | instructions | × bare (instructions) |")
        print("|---|---|---|---|---|")
        for v in VARIANTS:
            t, ir = rows[v]
            print("| %s | %.3f | %.2f | %s | %s |" % (
                v, t, t / bt, "%d" % ir if ir else "–",
                "%.2f" % (ir / bi) if ir and bi else "–"))
        fl = rows["floor"][1]
        for base in ("counter", "timer", "lines", "coverage"):
            t, ir = rows[base]
            ft, fir = rows[base + "-filtered"]
            if ir and fir and bi:
                print("%s: filtered overhead / unfiltered overhead (instructions) = %.2f%s"
                      % (base, (fir - bi) / max(ir - bi, 1),
                         "; floor overhead / unfiltered overhead = %.2f" % ((fl - bi) / max(ir - bi, 1))
                         if fl and base in ("counter", "timer") else ""))
        if not a.no_suite:
            res = suite(py, build, a.reps, a.suite, a.suite_modules)
            print("\n### CPython %s: `-m unittest %s`, whole process, user+sys CPU, median of %d"
                  % (ver, a.suite, a.reps))
            print("| variant | CPU s | × bare |")
            print("|---|---|---|")
            for v, t in res.items():
                print("| %s%s | %.2f | %.2f |" % (
                    v, " (--modules %s)" % a.suite_modules if "filtered" in v else "", t, t / res["bare"]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
