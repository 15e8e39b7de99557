#!/usr/bin/env python3
"""timer plugin overhead, against cProfile on the same interpreter.

For each workload, one table with, side by side from one run:

  bare       no profile function
  floor      a do-nothing C profile function (bench/floor): what CPython
             itself spends to report the events, the least any profiler on
             PyEval_SetProfile pays
  cprofile   cProfile.Profile() (builtins on, its default)
  hub        the pytracekit hub with the counter plugin: the hub's own cost
  timer      the pytracekit hub with the timer plugin (clock=wall)
  timer_cpu  the same with clock=cpu

in instructions (callgrind, the workload only) and wall time (min of
--reps runs), as ratios to bare and to cProfile.

    python3 bench/timer/bench_timer.py --python /root/.pyenv/versions/3.11.7/bin/python3
    python3 bench/timer/bench_timer.py --all --reps 3

Builds build/timer-rel-3XX (Release) for each interpreter if needed. Every
run is a fresh process (bench/timer/driver.py).
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
DRIVER = os.path.join(HERE, "driver.py")

VARIANTS = ["bare", "floor", "cprofile", "hub", "timer", "timer_cpu"]
LABEL = {
    "bare": "bare",
    "floor": "floor: do-nothing C profile fn",
    "cprofile": "cProfile",
    "hub": "pytracekit hub + counter",
    "timer": "pytracekit timer (wall)",
    "timer_cpu": "pytracekit timer (clock=cpu)",
}
WORKLOADS = ["call_heavy", "method_heavy", "c_call_heavy"]
# timer's time as a fraction of cProfile's: the goal per workload.
TARGET = {"call_heavy": 1.0, "method_heavy": 0.85, "c_call_heavy": 0.85}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def shared():
    """bench/run.py: interpreter info, the floor extension, tables."""
    spec = importlib.util.spec_from_file_location("ptk_bench_run",
                                                  os.path.join(BENCH, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ensure_build(python, build):
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        log("bench: configuring %s for %s" % (build, python))
        subprocess.run(["cmake", "-S", REPO, "-B", build,
                        "-DCMAKE_BUILD_TYPE=Release", "-DPTK_BUILD_TESTS=OFF",
                        "-DPython3_EXECUTABLE=" + python],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j2"], check=True,
                   stdout=subprocess.DEVNULL)


def workload(name):
    for d in (HERE, os.path.join(BENCH, "workloads")):
        path = os.path.join(d, name + ".py")
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    raise SystemExit("no workload %r" % name)


def run(python, env, wl, variant, n, floor_dir, callgrind):
    with tempfile.TemporaryDirectory(prefix="ptk-timer-bench-") as out_dir:
        cmd = [python, DRIVER, wl, variant, str(n), floor_dir, out_dir]
        if callgrind:
            cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                   "--collect-atstart=no", "--toggle-collect=ptkbench_region"] + cmd
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s/%s failed:\n%s" % (wl, variant, p.stderr))
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if callgrind:
        m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
        if not m:
            raise RuntimeError("no 'Collected' line from callgrind:\n" + p.stderr)
        res["instr"] = int(m.group(1))
    return res


def bench(python, build, args, R):
    build = os.path.abspath(build)
    ensure_build(python, build)
    info = R.interp_info(python)
    floor_dir = R.build_floor(info, python, build)
    env = R.env_for(build)
    out = []
    for name in args.workloads:
        wl = workload(name)
        n_wall = wl.WALL_N if args.wall_n is None else args.wall_n
        res = {}
        for v in args.variants:
            r = {}
            if not args.no_callgrind:
                log("bench %s %s/%s: callgrind" % (info["version"], name, v))
                r["instr"] = run(python, env, name, v, wl.CALLGRIND_N,
                                 floor_dir, True)["instr"]
            if not args.no_wall:
                walls = []
                for _ in range(args.reps):
                    x = run(python, env, name, v, n_wall, floor_dir, False)
                    walls.append(x["wall"])
                    if x.get("calls") is not None:
                        r["calls"] = x["calls"]
                r["wall"] = min(walls)
                log("bench %s %s/%s: wall %.3f s" % (info["version"], name, v, r["wall"]))
            res[v] = r
        out.append(render(info["version"], name, wl, res, args, R))
    return "\n".join(out)


def render(version, name, wl, res, args, R):
    def get(v, k):
        return res.get(v, {}).get(k)

    units_cg, units_w = wl.units(wl.CALLGRIND_N), wl.units(
        wl.WALL_N if args.wall_n is None else args.wall_n)
    rows = []
    for v in args.variants:
        i, w = get(v, "instr"), get(v, "wall")
        ib, wb = get("bare", "instr"), get("bare", "wall")
        ic, wc = get("cprofile", "instr"), get("cprofile", "wall")
        per = (i - ib) / units_cg if i is not None and ib is not None else None
        rows.append([
            LABEL[v],
            "{:,}".format(i) if i is not None else "-",
            "%.0f" % per if per is not None else "-",
            "%.2f×" % (i / ib) if i and ib else "-",
            "%.2f×" % (i / ic) if i and ic else "-",
            "%.3f" % w if w is not None else "-",
            "%.2f×" % (w / wb) if w and wb else "-",
            "%.2f×" % (w / wc) if w and wc else "-",
        ])
    head = ["variant", "instr", "instr/%s above bare" % wl.UNIT, "instr×bare",
            "instr×cProfile", "wall s", "wall×bare", "wall×cProfile"]
    text = ["### Python %s, %s: %s (callgrind %s %ss, wall %s %ss)"
            % (version, name, wl.DESCRIPTION, "{:,}".format(units_cg), wl.UNIT,
               "{:,}".format(units_w), wl.UNIT), "",
            R.table(rows, head, "lrrrrrrr"), ""]
    goal = TARGET[name]
    verdict = []
    for k in ("instr", "wall"):
        t, c = get("timer", k), get("cprofile", k)
        if t and c:
            verdict.append("%s %.2f× cProfile (goal ≤ %.2f×: %s)"
                           % (k, t / c, goal, "met" if t / c <= goal else "MISSED"))
    if verdict:
        text += ["timer: " + "; ".join(verdict) + ".", ""]
    tc, cc = get("timer", "calls"), get("cprofile", "calls")
    if tc is not None and cc is not None:
        text += ["calls recorded: timer %s, cProfile %s." % ("{:,}".format(tc), "{:,}".format(cc)), ""]
    return "\n".join(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--build", help="build directory (default build/timer-rel-3XX)")
    ap.add_argument("--all", action="store_true", help="3.11, 3.12 and 3.13 from pyenv")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--wall-n", type=int, help="workload size for wall runs")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--no-wall", action="store_true")
    args = ap.parse_args()
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.variants = [v for v in args.variants.split(",") if v]
    for v in args.variants:
        if v not in VARIANTS:
            ap.error("unknown variant %r" % v)
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %r" % w)
    for must in ("bare", "cprofile"):
        if must not in args.variants:
            args.variants.insert(0, must)
    R = shared()
    pythons = []
    if args.all:
        for minor in ("3.11", "3.12", "3.13"):
            p = R.find_python(minor)
            if p:
                pythons.append(p)
    else:
        pythons.append(args.python)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    print("# timer overhead (%s%s)\n" % (
        R.machine_note(),
        "; load average %.1f at start: wall times are only as good as the "
        "machine is quiet, instructions do not depend on it" % load
        if load is not None else ""))
    for py in pythons:
        info = R.interp_info(py)
        ver = "".join(info["version"].split(".")[:2])
        build = args.build if (args.build and not args.all) else \
            os.path.join(REPO, "build", "timer-rel-" + ver)
        print(bench(py, build, args, R), flush=True)


if __name__ == "__main__":
    main()
