#!/usr/bin/env python3
"""pytracekit's two event backends side by side: legacy (PyEval_SetProfile /
PyEval_SetTrace) and monitoring (sys.monitoring, PEP 669), in one run.

Per Python version (3.12+), in instructions (callgrind, the workload call
only):

 (a) the hub's cost against the floors: bare; a do-nothing C profile
     function (bench/floor, call workload) or trace function
     (bench/coverage/nulltrace.c, line workload); a do-nothing C
     sys.monitoring callback (bench/backends/monfloor.c); hub + counter on
     each backend (counter:events=line on the line workload). The figure of
     merit is monitoring hub+counter overhead / legacy floor overhead
     (overhead = instructions above bare), target <= 0.5.
 (b) the timer plugin on each backend against cProfile, total instructions
     of the run, on fib, method_heavy and c_call_heavy; target timer on
     monitoring / cProfile <= 0.85.
 (c) the coverage plugin (default, and branch=true) on each backend, on a
     tight loop after its first pass: instructions per iteration as the
     difference of an N and a 2N run, as a ratio to bare; target <= 1.1.
     coverage.py too, where the interpreter has it.

    python3 bench/backends/bench_backends.py --build build/bb-312 --build build/bb-313

Each build runs with the Python in its CMakeCache.txt (configured and built
with --python if it does not exist yet). Every run is a fresh process
(driver.py). See bench/README.md.
"""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)
DRIVER = os.path.join(HERE, "driver.py")
SOURCES = {
    "_ptkfloor": os.path.join(BENCH, "floor", "floor.c"),
    "_ptkcovnull": os.path.join(BENCH, "coverage", "nulltrace.c"),
    "_ptkmonfloor": os.path.join(HERE, "monfloor.c"),
}

# workload: (n for the callgrind runs, what one unit of n is)
WORKLOADS = {
    "fib": (20, "call"),
    "method_heavy": (7000, "iteration"),
    "c_call_heavy": (5000, "iteration"),
    "line_heavy": (20000, "iteration"),
    "line_partial": (20000, "iteration"),
}
LABEL = {
    "bare": "bare",
    "floor_profile": "legacy floor: do-nothing C profile fn",
    "floor_trace": "legacy floor: do-nothing C trace fn",
    "floor_mon": "monitoring floor: do-nothing C callback",
    "floor_mon_prof": "monitoring floor, + CALL, C_RETURN, C_RAISE",
    "counter_legacy": "hub + counter, legacy",
    "counter_mon": "hub + counter, monitoring",
    "counter_mon_py": "hub + counter:events=call,return, monitoring",
    "cprofile": "cProfile",
    "timer_legacy": "hub + timer, legacy",
    "timer_mon": "hub + timer, monitoring",
    "cov_legacy": "coverage, legacy",
    "cov_mon": "coverage, monitoring",
    "covbranch_legacy": "coverage branch=true, legacy",
    "covbranch_mon": "coverage branch=true, monitoring",
    "coveragepy": "coverage.py (C tracer)",
    "coveragepy_branch": "coverage.py branch=True",
}
A_WORKLOADS = ["fib", "line_heavy"]
A_VARIANTS = ["bare", "<legacy floor>", "floor_mon", "counter_legacy",
              "counter_mon"]
# call workload only: what the CALL event (C calls) costs on monitoring
A_EXTRA = {"fib": ["floor_mon_prof", "counter_mon_py"]}
B_WORKLOADS = ["fib", "method_heavy", "c_call_heavy"]
B_VARIANTS = ["bare", "floor_profile", "floor_mon", "cprofile",
              "timer_legacy", "timer_mon"]
C_WORKLOADS = ["line_heavy", "line_partial"]
C_VARIANTS = ["bare", "cov_legacy", "cov_mon", "covbranch_legacy",
              "covbranch_mon", "coveragepy", "coveragepy_branch"]
TARGET_A = 0.5    # counter_mon overhead / legacy floor overhead
TARGET_B = 0.85   # timer_mon / cProfile, total instructions
TARGET_C = 1.1    # cov_mon / bare, instructions per iteration after pass 1
# what --profile breaks down: (section, workload, variant, reference)
PROFILES = [("a", "fib", "counter_mon", "floor_mon_prof"),
            ("a", "line_heavy", "counter_mon", "floor_mon"),
            ("b", "fib", "timer_mon", "cprofile"),
            ("b", "method_heavy", "timer_mon", "cprofile"),
            ("b", "c_call_heavy", "timer_mon", "cprofile"),
            ("c", "line_heavy", "covbranch_mon", "cov_mon")]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def shared():
    """bench/run.py: interpreter info, tables, callgrind_annotate parsing."""
    spec = importlib.util.spec_from_file_location("ptk_bench_run",
                                                  os.path.join(BENCH, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def legacy_floor(wl):
    return "floor_trace" if wl.startswith("line") else "floor_profile"


def has_coveragepy(python):
    p = subprocess.run([python, "-c", "import coverage; print(coverage.__version__)"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def source_rev(R, src):
    """What an exported tree's .rev file says, else the commit of the
    checkout (bench/run.py)."""
    try:
        with open(os.path.join(src, ".rev")) as f:
            return f.read().strip()
    except OSError:
        return R.git_rev(src)


def ensure_build(python, build):
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        if python is None:
            raise SystemExit("%s is not configured: give --python" % build)
        log("bench: configuring %s for %s" % (build, python))
        subprocess.run(["cmake", "-S", REPO, "-B", build,
                        "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS=-g",
                        "-DPTK_BUILD_TESTS=OFF", "-DPython3_EXECUTABLE=" + python],
                       check=True, stdout=subprocess.DEVNULL)
    log("bench: building %s" % build)
    subprocess.run(["cmake", "--build", build, "-j2", "--target", "ptk_python",
                    "ptk_plugin_counter", "ptk_plugin_timer",
                    "ptk_plugin_coverage"], check=True, stdout=subprocess.DEVNULL)


def build_floors(info, build):
    """The three do-nothing extensions, for this interpreter, in
    <build>/bench/backends (the monitoring one on 3.12+ only)."""
    out_dir = os.path.join(build, "bench", "backends")
    os.makedirs(out_dir, exist_ok=True)
    for mod, src in SOURCES.items():
        if mod == "_ptkmonfloor" and tuple(map(int, info["version"].split(".")[:2])) < (3, 12):
            continue
        so = os.path.join(out_dir, mod + info["ext_suffix"])
        if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
            subprocess.run([os.environ.get("CC", "cc"), "-O2", "-g", "-shared",
                            "-fPIC", "-I" + info["include"], src, "-o", so],
                           check=True)
    return out_dir


def run_callgrind(python, env, wl, variant, n, floor_dir, out_file):
    with tempfile.TemporaryDirectory(prefix="ptk-bb-") as out_dir:
        cmd = ["valgrind", "--tool=callgrind",
               "--callgrind-out-file=" + (out_file or "/dev/null"),
               "--collect-atstart=no", "--toggle-collect=ptkbench_region",
               python, DRIVER, wl, variant, str(n), floor_dir, out_dir]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if not l.startswith("==")]
        return {"error": (lines[-1] if lines else "exit %d" % p.returncode)[:200]}
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    if not m:
        return {"error": "no 'Collected' line from callgrind"}
    res = json.loads(p.stdout.strip().splitlines()[-1])
    res["instr"] = int(m.group(1))
    backend = None
    if variant.startswith(("counter_", "timer_", "cov_", "covbranch_")):
        backend = "mon" if "_mon" in variant else "legacy"
    ptk_tools = [t for t in res.get("tools", []) if t != "ptkbench-floor"
                 and not t.startswith("cProfile") and "coverage" not in t.lower()]
    if backend == "mon" and not ptk_tools:
        return {"error": "no sys.monitoring tool registered: not the "
                "monitoring backend"}
    if backend == "legacy" and res.get("tools"):
        return {"error": "sys.monitoring tool %r registered on legacy"
                % res["tools"]}
    return res


# ---- measuring ----------------------------------------------------------------

def plan(versions_ok, covpy):
    """The (workload, variant, n) runs one target needs."""
    jobs = set()
    for wl in A_WORKLOADS:
        n = WORKLOADS[wl][0]
        for v in A_VARIANTS + A_EXTRA.get(wl, []):
            v = legacy_floor(wl) if v == "<legacy floor>" else v
            jobs.add((wl, v, n))
    for wl in B_WORKLOADS:
        for v in B_VARIANTS:
            jobs.add((wl, v, WORKLOADS[wl][0]))
    for wl in C_WORKLOADS:
        n = WORKLOADS[wl][0]
        for v in C_VARIANTS:
            if v.startswith("coveragepy") and not covpy:
                continue
            jobs.add((wl, v, n))
            jobs.add((wl, v, 2 * n))
    if not versions_ok:  # before 3.12: no monitoring floor
        jobs = {j for j in jobs if not j[1].startswith("floor_mon")}
    return sorted(jobs)


def measure(target, args):
    python, build, info, floor_dir, env, covpy = target
    jobs = plan(tuple(map(int, info["version"].split(".")[:2])) >= (3, 12), covpy)
    prof_dir = os.path.join(build, "bench", "backends", "callgrind")
    os.makedirs(prof_dir, exist_ok=True)

    def one(job):
        wl, v, n = job
        out = os.path.join(prof_dir, "%s.%s.%d.out" % (wl, v, n)) if args.profile else None
        log("bench %s: %s/%s n=%d" % (info["version"], wl, v, n))
        r = run_callgrind(python, env, wl, v, n, floor_dir, out)
        if "error" in r:
            log("bench %s: %s/%s n=%d: %s" % (info["version"], wl, v, n, r["error"]))
        r["file"] = out
        return job, r

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        return dict(ex.map(one, jobs))


# ---- tables ---------------------------------------------------------------------

def fmt_i(v):
    return "{:,}".format(v) if isinstance(v, int) else "-"


def fmt_r(v, d=2):
    return "%.*f×" % (d, v) if v is not None else "-"


def verdict(v, target):
    if v is None:
        return "n/a"
    return "met" if v <= target else "**missed**"


def get(res, wl, v, n=None):
    r = res.get((wl, v, n or WORKLOADS[wl][0]), {})
    return r.get("instr")


def err(res, wl, v, n=None):
    r = res.get((wl, v, n or WORKLOADS[wl][0]))
    if r is None:
        return "not run"
    return r.get("error")


def section_a(R, ver, res, summary):
    out = ["#### (a) hub + counter against the floors (instructions in the workload call)", ""]
    for wl in A_WORKLOADS:
        n, unit = WORKLOADS[wl]
        lf = legacy_floor(wl)
        bare, floor = get(res, wl, "bare"), get(res, wl, lf)
        units = WORKLOADS_UNITS[wl](n)
        rows = []
        for v in [lf if x == "<legacy floor>" else x
                  for x in A_VARIANTS + A_EXTRA.get(wl, [])]:
            i = get(res, wl, v)
            ev = (res.get((wl, v, n)) or {}).get("events") or {}
            above = (i - bare) if i is not None and bare is not None else None
            rows.append([
                LABEL[v], fmt_i(i), fmt_r(i / bare if i and bare else None),
                "%.0f" % (above / units) if above is not None else "-",
                fmt_r(above / (floor - bare)) if above is not None and floor and v != "bare" else "-",
                ", ".join("%s %s" % (k, fmt_i(c)) for k, c in sorted(ev.items()) if c) or
                (err(res, wl, v) or ""),
            ])
        out += ["%s (n=%d: %s %ss)" % (wl, n, fmt_i(units), unit), "",
                R.table(rows, ["variant", "instr", "×bare", "instr/%s above bare" % unit,
                               "overhead / legacy floor's", "events counted / error"],
                        "lrrrrl"), ""]
        for v, what, tgt in (
                ("counter_mon", "(a) monitoring hub+counter overhead / legacy floor overhead", TARGET_A),
                ("counter_mon_py", "(a') the same, counter:events=call,return (no CALL event)", None),
                ("floor_mon", "(a'') monitoring floor overhead / legacy floor overhead", None),
                ("floor_mon_prof", "(a'') the same, floor + CALL, C_RETURN, C_RAISE", None)):
            if v not in A_VARIANTS + A_EXTRA.get(wl, []):
                continue
            i = get(res, wl, v)
            val = (i - bare) / (floor - bare) if i and bare and floor else None
            summary.append((ver, what, wl, val, tgt))
    return out


def section_b(R, ver, res, summary):
    out = ["#### (b) timer against cProfile (total instructions of the workload call)", ""]
    for wl in B_WORKLOADS:
        n, unit = WORKLOADS[wl]
        units = WORKLOADS_UNITS[wl](n)
        bare, cp = get(res, wl, "bare"), get(res, wl, "cprofile")
        rows = []
        for v in B_VARIANTS:
            i = get(res, wl, v)
            calls = (res.get((wl, v, n)) or {}).get("calls")
            rows.append([
                LABEL[v], fmt_i(i), fmt_r(i / bare if i and bare else None),
                "%.0f" % ((i - bare) / units) if i and bare else "-",
                fmt_r(i / cp if i and cp else None),
                fmt_i(calls) if calls is not None else (err(res, wl, v) or ""),
            ])
        out += ["%s (n=%d: %s %ss)" % (wl, n, fmt_i(units), unit), "",
                R.table(rows, ["variant", "instr", "×bare", "instr/%s above bare" % unit,
                               "×cProfile", "calls recorded / error"], "lrrrrl"), ""]
        t = get(res, wl, "timer_mon")
        summary.append((ver, "(b) timer (monitoring) / cProfile, total instr", wl,
                        t / cp if t and cp else None, TARGET_B))
        t = get(res, wl, "timer_legacy")
        summary.append((ver, "(b') timer (legacy) / cProfile, total instr", wl,
                        t / cp if t and cp else None, None))
    return out


def per_iter(res, wl, v):
    n = WORKLOADS[wl][0]
    a, b = get(res, wl, v, n), get(res, wl, v, 2 * n)
    return (b - a) / n if a is not None and b is not None else None


def section_c(R, ver, res, summary, covpy):
    out = ["#### (c) coverage after the first pass (instructions per iteration: "
           "(run(2N) − run(N)) / N)", ""]
    for wl in C_WORKLOADS:
        n = WORKLOADS[wl][0]
        bare = per_iter(res, wl, "bare")
        rows = []
        for v in C_VARIANTS:
            if v.startswith("coveragepy") and not covpy:
                rows.append([LABEL[v], "-", "-", "coverage.py is not installed for this Python"])
                continue
            p = per_iter(res, wl, v)
            rows.append([LABEL[v], "%.1f" % p if p is not None else "-",
                         fmt_r(p / bare if p is not None and bare else None),
                         err(res, wl, v) or err(res, wl, v, 2 * n) or ""])
        out += ["%s (N=%d iterations)" % (wl, n), "",
                R.table(rows, ["variant", "instr/iteration", "×bare", "note"], "lrrl"), ""]
        for v, tgt in (("cov_mon", TARGET_C), ("covbranch_mon", TARGET_C),
                       ("cov_legacy", None), ("covbranch_legacy", None),
                       ("coveragepy", None)):
            if v.startswith("coveragepy") and not covpy:
                continue
            p = per_iter(res, wl, v)
            summary.append((ver, "(c) %s / bare, per iteration after pass 1" % LABEL[v],
                            wl, p / bare if p is not None and bare else None, tgt))
    return out


def units_fn(wl):
    if wl == "fib":
        def f(n):
            a, b = 0, 1
            for _ in range(n + 1):
                a, b = b, a + b
            return 2 * a - 1
        return f
    return lambda n: n


WORKLOADS_UNITS = {wl: units_fn(wl) for wl in WORKLOADS}

def costs_by_function(R, path, inclusive, src, names=None):
    """{function: Ir} from callgrind_annotate, merged per function name:
    code inlined from headers is listed under the header's file, so one
    function can appear two or three times. Self costs add up; inclusive
    ones are the same calls counted again, the largest is kept. `names`,
    if given, gets {function: spelling with the largest cost}, without the
    source tree's prefix."""
    merged, best = {}, {}
    for name, ir in R.annotate_costs(path, inclusive, src).items():
        for prefix in (src + "/", os.path.relpath(src) + "/", REPO + "/"):
            name = name.replace(prefix, "")
        fn = name.rsplit(":", 1)[-1]
        merged[fn] = max(merged.get(fn, 0), ir) if inclusive else merged.get(fn, 0) + ir
        if ir > best.get(fn, (0, ""))[0]:
            best[fn] = (ir, name)
    if names is not None:
        names.update({fn: b[1] for fn, b in best.items()})
    return merged


def profile_section(R, ver, res, src):
    """Per unit, the functions whose self instructions grew most: the
    variant's run minus the bare run (sections a, b), or for (c) the
    difference of the 2N and N runs minus that of bare (the cost per
    iteration after the first pass). Inclusive counts of recursive
    functions (the interpreter loop) are not meaningful."""
    out = ["#### Where the instructions go (Python %s, callgrind_annotate; Ir per unit "
           "above bare, self and inclusive)" % ver, ""]
    cache = {}

    def costs(path, inclusive, names=None):
        key = (path, inclusive)
        if key not in cache:
            nm = {}
            cache[key] = (costs_by_function(R, path, inclusive, src, nm), nm)
        if names is not None:
            names.update(cache[key][1])
        return cache[key][0]

    def delta(files, inclusive, units, names=None):
        """sum of sign * cost over [(sign, file)], per unit"""
        d = {}
        for sign, f in files:
            for fn, ir in costs(f, inclusive, names if sign > 0 else None).items():
                d[fn] = d.get(fn, 0) + sign * ir
        return {fn: v / units for fn, v in d.items()}

    def file_of(wl, v, n):
        r = res.get((wl, v, n)) or {}
        f = r.get("file")
        return f if f and os.path.exists(f) and r.get("instr") else None

    for sec, wl, v, ref in PROFILES:
        n, unit = WORKLOADS[wl]
        if sec == "c":
            sets = {x: [(1, file_of(wl, x, 2 * n)), (-1, file_of(wl, x, n)),
                        (-1, file_of(wl, "bare", 2 * n)), (1, file_of(wl, "bare", n))]
                    for x in (v, ref) if x}
            units = n
            total = (per_iter(res, wl, v) or 0) - (per_iter(res, wl, "bare") or 0)
        else:
            sets = {x: [(1, file_of(wl, x, n)), (-1, file_of(wl, "bare", n))]
                    for x in (v, ref) if x}
            units = WORKLOADS_UNITS[wl](n)
            total = ((get(res, wl, v) or 0) - (get(res, wl, "bare") or 0)) / units
        if not all(f for _, f in sets[v]):
            continue
        names = {}
        ts, ti = delta(sets[v], False, units, names), delta(sets[v], True, units)
        refs = ri = None
        if ref and all(f for _, f in sets[ref]):
            refs, ri = delta(sets[ref], False, units), delta(sets[ref], True, units)
        rows = []
        for fn in sorted(ts, key=lambda k: -ts[k])[:args_top]:
            if ts[fn] < 0.5:
                break
            row = [names.get(fn, fn), "%.1f" % ts[fn], "%.1f" % ti.get(fn, 0)]
            if refs is not None:
                row += ["%.1f" % refs.get(fn, 0), "%.1f" % ri.get(fn, 0)]
            rows.append(row)
        head = ["function", "%s self" % v, "%s incl" % v]
        if refs is not None:
            head += ["%s self" % ref, "%s incl" % ref]
        out += ["%s, %s: %.1f Ir per %s above bare%s (files in %s)" % (
                    wl, v, total, unit, " after the first pass" if sec == "c" else "",
                    os.path.relpath(os.path.dirname(sets[v][0][1]), REPO)), "",
                R.table(rows, head, "l" + "r" * (len(head) - 1)), ""]
    return out


args_top = 25


def main():
    global args_top
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append",
                    help="build directory (repeatable); runs with the Python in its "
                    "CMakeCache.txt; default build/bb-312 and build/bb-313")
    ap.add_argument("--python", help="interpreter to configure a new --build with")
    ap.add_argument("--no-build", action="store_true",
                    help="use the builds as they are (no cmake --build)")
    ap.add_argument("--jobs", type=int, default=2,
                    help="callgrind runs at a time (counts do not depend on it)")
    ap.add_argument("--profile", action="store_true",
                    help="keep the callgrind files in <build>/bench/backends/callgrind "
                    "and print where the monitoring runs' instructions go")
    ap.add_argument("--top", type=int, default=25, help="rows per profile table")
    args = ap.parse_args()
    args_top = args.top
    if not shutil.which("valgrind"):
        ap.error("valgrind not found")
    R = shared()
    builds = args.build or [os.path.join(REPO, "build", "bb-312"),
                            os.path.join(REPO, "build", "bb-313")]
    if args.python and len(builds) > 1:
        ap.error("--python goes with one --build")
    print("## pytracekit backends: legacy and sys.monitoring\n\n%s\n" % R.machine_note())
    print("Instructions count the workload call only (callgrind --toggle-collect); "
          "overhead = instructions above bare.\n", flush=True)
    summary = []
    for build in builds:
        build = os.path.abspath(build)
        python = R.cache_python(build) or args.python
        if not args.no_build:
            ensure_build(python, build)
        python = R.cache_python(build)
        info = R.interp_info(python)
        floor_dir = build_floors(info, build)
        env = R.env_for(build)
        env.pop("PYTRACEKIT_BACKEND", None)
        env["PYTRACEKIT_PLUGIN_PATH"] = os.path.join(build, "plugins")
        covpy = has_coveragepy(python)
        src = R.cache_value(build, "CMAKE_HOME_DIRECTORY") or REPO
        rev = source_rev(R, src)
        res = measure((python, build, info, floor_dir, env, covpy), args)
        ver = info["version"]
        out = ["### Python %s (%s), build %s from %s%s; coverage.py: %s\n"
               % (ver, python, os.path.relpath(build, REPO), os.path.relpath(src, REPO) or ".",
                  " at " + rev if rev else "", covpy or "not installed")]
        out += section_a(R, ver, res, summary)
        out += section_b(R, ver, res, summary)
        out += section_c(R, ver, res, summary, covpy)
        if args.profile:
            out += profile_section(R, ver, res, src)
        print("\n".join(out), flush=True)
    rows = [[ver, what, wl, fmt_r(v), ("≤ %.2f×" % t) if t else "-",
             verdict(v, t) if t else ""] for ver, what, wl, v, t in summary]
    print("### Summary\n")
    print(R.table(rows, ["Python", "ratio", "workload", "value", "target", ""], "lllrrl"))


if __name__ == "__main__":
    main()
