#!/usr/bin/env python3
"""timeline plugin: cost per event against the timer plugin on the same
workloads and events, and the file size per million events.

For each workload, one table, side by side from one run:

  bare              no profile function
  cprofile          cProfile.Profile, stats dumped after the region (the peer
                    whose ratio viztracer publishes its own against)
  timer             pytracekit timer (calls and C calls)
  timeline          pytracekit timeline, Perfetto format, the same events
                    (exceptions=false, gc=false, counters=false)
  timeline_json     the same, format=json
  timeline_default  the timeline with every default (exception instants,
                    GC spans, the events/s counter)
  timeline_ring     as timeline, into the flight recorder (ring=5): spans
                    kept in memory, written only by the report

in instructions (callgrind, the workload only: the writer thread's write(2)
calls are outside the region and not counted), instructions per event above
bare, × timer's and × cProfile's overhead, wall time (min of --reps runs), and the bytes of the file per
million events.

    python3 bench/timeline/bench_timeline.py --python /root/.pyenv/versions/3.13.0/bin/python3
    python3 bench/timeline/bench_timeline.py --all --reps 3
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
VARIANTS = ["bare", "cprofile", "timer", "timeline", "timeline_json", "timeline_default",
            "timeline_ring"]
WORKLOADS = ["call_heavy", "c_call_heavy"]
# wall-run sizes: smaller than the other benches' (every event is written;
# fib(27) is 1.26 M events, a 100 MB JSON file)
WALL_N = {"call_heavy": 27, "c_call_heavy": 100000}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def shared():
    spec = importlib.util.spec_from_file_location("ptk_bench_run", os.path.join(BENCH, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def workload(name):
    path = os.path.join(BENCH, "workloads", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ensure_build(python, build):
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        log("bench: configuring %s for %s" % (build, python))
        subprocess.run(["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                        "-DPTK_BUILD_TESTS=OFF", "-DPython3_EXECUTABLE=" + python],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j2"], check=True, stdout=subprocess.DEVNULL)


def run(python, env, wl, variant, n, floor_dir, callgrind):
    with tempfile.TemporaryDirectory(prefix="ptk-timeline-bench-") as out_dir:
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
        res = {}
        for v in args.variants:
            r = {}
            if not args.no_callgrind:
                log("bench %s %s/%s: callgrind" % (info["version"], name, v))
                x = run(python, env, name, v, wl.CALLGRIND_N, floor_dir, True)
                r["instr"] = x["instr"]
                r["cg_events"] = x.get("events")
            walls = []
            for _ in range(args.reps):
                x = run(python, env, name, v, WALL_N[name], floor_dir, False)
                walls.append(x["wall"])
                for k in ("events", "bytes", "dropped"):
                    if k in x:
                        r[k] = x[k]
            r["wall"] = min(walls)
            log("bench %s %s/%s: wall %.3f s" % (info["version"], name, v, r["wall"]))
            res[v] = r
        out.append(render(info["version"], name, wl, res, R))
    return "\n".join(out)


def render(version, name, wl, res, R):
    # events per workload run: what the timeline saw in the callgrind run
    nev = res["timeline"].get("cg_events") or 2 * wl.units(wl.CALLGRIND_N)
    rows = []
    ib, wb = res["bare"].get("instr"), res["bare"]["wall"]
    it, wt = res["timer"].get("instr"), res["timer"]["wall"]
    ic = res["cprofile"].get("instr")
    for v in VARIANTS:
        if v not in res:
            continue
        r = res[v]
        i, w = r.get("instr"), r["wall"]
        per = (i - ib) / nev if i is not None and ib is not None else None
        over_t = (i - ib) / (it - ib) if i and ib and it and it > ib else None
        over_c = (i - ib) / (ic - ib) if i and ib and ic and ic > ib else None
        size = r["bytes"] * 1e6 / r["events"] if r.get("events") else None
        rows.append([v, "{:,}".format(i) if i else "-",
                     "%.0f" % per if per is not None else "-",
                     "%.2f×" % over_t if over_t is not None else "-",
                     "%.2f×" % over_c if over_c is not None else "-",
                     "%.3f" % w, "%.2f×" % (w / wb), "%.2f×" % (w / wt),
                     "%.1f MB" % (size / 1e6) if size else "-",
                     "{:,}".format(r["dropped"]) if "dropped" in r else "-"])
    head = ["variant", "instr", "instr/event above bare", "overhead × timer's",
            "overhead × cProfile's",
            "wall s", "wall×bare", "wall×timer", "file per 1M events", "dropped"]
    return "\n".join(["### Python %s, %s: %s (callgrind %s events, wall %s %ss)"
                      % (version, name, wl.DESCRIPTION, "{:,}".format(nev),
                         "{:,}".format(wl.units(WALL_N[name])), wl.UNIT), "",
                      R.table(rows, head, "lrrrrrrrrr"), ""])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--build", help="build directory (default build/timeline-rel-3XX)")
    ap.add_argument("--all", action="store_true", help="3.11, 3.12 and 3.13 from pyenv")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="a subset (bare, timer and timeline are always run: the ratios need them)")
    args = ap.parse_args()
    args.variants = [v for v in VARIANTS
                     if v in args.variants.split(",") or v in ("bare", "timer", "timeline", "cprofile")]
    args.workloads = [w for w in args.workloads.split(",") if w]
    R = shared()
    pythons = [R.find_python(m) for m in ("3.11", "3.12", "3.13")] if args.all else [args.python]
    for py in pythons:
        ver = subprocess.run([py, "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
        build = args.build or os.path.join(REPO, "build", "timeline-rel-" + ver)
        print(bench(py, build, args, R), flush=True)


if __name__ == "__main__":
    main()
