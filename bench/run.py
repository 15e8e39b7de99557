#!/usr/bin/env python3
"""pytracekit overhead benchmark.

Prints, per Python version, one table per workload with the cost of

  bare       no profile function
  floor      a do-nothing C Py_tracefunc (bench/floor): the least a C
             profile function on PyEval_SetProfile can cost
  hub        the pytracekit hub with the counter plugin
  hub4       the hub with 4 counter instances in one session
  pyprofile  a Python-level sys.setprofile function that counts events

in instructions (callgrind, the workload only) and wall time (min of N
runs), as ratios to bare, and each variant's overhead (cost above bare) as a
multiple of the floor's overhead.

    python3 bench/run.py --python /root/.pyenv/versions/3.11.7/bin/python3 \\
                         --build build/bench-311
    python3 bench/run.py --all          # build/bench-311, -312, -313

Each run of a variant is a fresh process (bench/workloads/driver.py). This
script needs only the Python it runs on; the interpreter under test is
--python. See bench/README.md.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DRIVER = os.path.join(HERE, "workloads", "driver.py")
FLOOR_SRC = os.path.join(HERE, "floor", "floor.c")

VARIANTS = ["bare", "floor", "hub", "hub4", "pyprofile"]
VARIANT_LABEL = {
    "bare": "(a) bare",
    "floor": "(b) floor: do-nothing C profile fn",
    "hub": "(c) hub + counter",
    "hub4": "(d) hub + 4 counters",
    "pyprofile": "(e) sys.setprofile counter (Python)",
}
WORKLOADS = ["call_heavy", "c_call_heavy"]
# name: (target for hub, target for hub4), overhead as a multiple of floor's
TARGETS = {"hub": 1.15, "hub4": 1.3}
ALL_VERSIONS = ["3.11", "3.12", "3.13"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---- interpreters and builds ------------------------------------------------

def interp_info(python):
    src = ("import json, sys, sysconfig; print(json.dumps({"
           "'version': '%d.%d.%d' % sys.version_info[:3],"
           "'include': sysconfig.get_paths()['include'],"
           "'ext_suffix': sysconfig.get_config_var('EXT_SUFFIX')}))")
    out = subprocess.run([python, "-c", src], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def cache_value(build, name):
    cache = os.path.join(build, "CMakeCache.txt")
    if not os.path.exists(cache):
        return None
    with open(cache) as f:
        for line in f:
            m = re.match(re.escape(name) + r":[A-Z]+=(.*)", line.strip())
            if m:
                return m.group(1)
    return None


def cache_python(build):
    return cache_value(build, "Python3_EXECUTABLE")


def git_rev(src):
    """The commit a source tree is at ("abc1234", "+ changes" if dirty), or
    what a .rev file next to an exported tree says."""
    try:
        p = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            rev = p.stdout.strip()
            d = subprocess.run(["git", "-C", src, "status", "--porcelain",
                                "--", "lib", "include", "plugins/counter",
                                "python"], capture_output=True, text=True)
            return rev + (" + uncommitted changes" if d.stdout.strip() else "")
    except OSError:
        pass
    try:
        with open(os.path.join(src, ".rev")) as f:
            return f.read().strip()
    except OSError:
        return ""


def find_python(minor):
    cands = sorted(glob.glob(os.path.expanduser(
        "~/.pyenv/versions/%s.*/bin/python3" % minor)))
    cands = [c for c in cands if re.search(r"/%s\.\d+/bin" % re.escape(minor), c)]
    if cands:
        return cands[-1]
    return shutil.which("python" + minor)


def ensure_build(python, build):
    """Configures and builds `build` for `python` if it has no module yet."""
    if glob.glob(os.path.join(build, "python", "pytracekit", "_pytracekit*.so")) \
            and os.path.exists(os.path.join(build, "plugins", "counter.so")):
        return
    log("bench: building %s for %s" % (build, python))
    subprocess.run(["cmake", "-S", REPO, "-B", build,
                    "-DCMAKE_BUILD_TYPE=Release", "-DPTK_BUILD_TESTS=OFF",
                    "-DPython3_EXECUTABLE=" + python],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j2"], check=True,
                   stdout=subprocess.DEVNULL)


def build_floor(info, python, build):
    """Compiles bench/floor/floor.c for `python` into <build>/bench/floor."""
    out_dir = os.path.join(build, "bench", "floor")
    os.makedirs(out_dir, exist_ok=True)
    so = os.path.join(out_dir, "_ptkfloor" + info["ext_suffix"])
    if (not os.path.exists(so)
            or os.path.getmtime(so) < os.path.getmtime(FLOOR_SRC)):
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I" + info["include"],
                        FLOOR_SRC, "-o", so], check=True)
    return out_dir


# ---- running one variant ------------------------------------------------------

def env_for(build):
    env = dict(os.environ)
    py_dir = os.path.join(build, "python")
    env["PYTHONPATH"] = py_dir + (os.pathsep + env["PYTHONPATH"]
                                  if env.get("PYTHONPATH") else "")
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTRACEKIT_PLUGIN_PATH", None)
    return env


def driver_cmd(python, workload, variant, n, floor_dir, out_dir):
    return [python, DRIVER, workload, variant, str(n), floor_dir, out_dir]


def run_wall(python, env, workload, variant, n, floor_dir):
    with tempfile.TemporaryDirectory(prefix="ptkbench-") as out_dir:
        p = subprocess.run(driver_cmd(python, workload, variant, n, floor_dir,
                                      out_dir),
                           env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s/%s failed:\n%s" % (workload, variant, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_callgrind(python, env, workload, variant, n, floor_dir, out_file):
    with tempfile.TemporaryDirectory(prefix="ptkbench-") as out_dir:
        cmd = ["valgrind", "--tool=callgrind",
               "--callgrind-out-file=" + (out_file or "/dev/null"),
               "--collect-atstart=no", "--toggle-collect=ptkbench_region"]
        cmd += driver_cmd(python, workload, variant, n, floor_dir, out_dir)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("callgrind %s/%s failed:\n%s"
                           % (workload, variant, p.stderr))
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    if not m:
        raise RuntimeError("no 'Collected' line from callgrind:\n" + p.stderr)
    return int(m.group(1)), json.loads(p.stdout.strip().splitlines()[-1])


def check_events(workload, variant, res, units):
    """A warning if the counting variants did not see one event per unit."""
    ev = res.get("events")
    if not ev:
        return None
    key = "call" if workload == "call_heavy" else "c_call"
    seen = ev.get(key, 0)
    if not (units <= seen <= units + 16):
        return ("%s/%s: expected about %d %s events, counted %d"
                % (workload, variant, units, key, seen))
    return None


# ---- tables ---------------------------------------------------------------------

def fmt_int(v):
    return "{:,}".format(v) if v is not None else "-"


def fmt_ratio(v, digits=2):
    return ("%.*f×" % (digits, v)) if v is not None else "-"


def ratio(a, b):
    return a / b if (a is not None and b) else None


def overhead(v, bare, floor):
    if v is None or bare is None or floor is None or floor == bare:
        return None
    return (v - bare) / (floor - bare)


def table(rows, headers, align):
    widths = [max(len(h), *(len(r[i]) for r in rows))
              for i, h in enumerate(headers)]

    def line(cells):
        out = []
        for c, w, a in zip(cells, widths, align):
            out.append(c.rjust(w) if a == "r" else c.ljust(w))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else
                         ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def render(version, workload, mod_units, res, variants):
    instr = {v: res[v].get("instr") for v in variants}
    wall = {v: res[v].get("wall") for v in variants}
    cpu = {v: res[v].get("cpu") for v in variants}
    units_cg = res.get("_units_cg")
    units_wall = res.get("_units_wall")
    b_i, f_i = instr.get("bare"), instr.get("floor")
    b_w, f_w = wall.get("bare"), wall.get("floor")
    b_c, f_c = cpu.get("bare"), cpu.get("floor")
    rows = []
    for v in variants:
        per = None
        if instr[v] is not None and b_i is not None and units_cg:
            per = (instr[v] - b_i) / units_cg
        oi = overhead(instr[v], b_i, f_i)
        ow = overhead(wall[v], b_w, f_w)
        oc = overhead(cpu[v], b_c, f_c)
        rows.append([
            VARIANT_LABEL[v],
            fmt_int(instr[v]),
            fmt_ratio(ratio(instr[v], b_i)),
            "%.0f" % per if per is not None else "-",
            fmt_ratio(oi) if v != "bare" else "-",
            "%.3f" % wall[v] if wall[v] is not None else "-",
            fmt_ratio(ratio(wall[v], b_w)),
            fmt_ratio(ow) if v != "bare" else "-",
            fmt_ratio(ratio(cpu[v], b_c)),
            fmt_ratio(oc) if v != "bare" else "-",
        ])
    head = ["variant", "instr", "instr×bare",
            "instr/%s above bare" % mod_units, "overhead vs floor (instr)",
            "wall s", "wall×bare", "overhead vs floor (wall)",
            "cpu×bare", "overhead vs floor (cpu)"]
    text = ["### Python %s, %s (callgrind: %s %ss; wall: %s %ss)"
            % (version, workload, fmt_int(units_cg), mod_units,
               fmt_int(units_wall), mod_units), "",
            table(rows, head, "lrrrrrrrrr"), ""]
    verdicts = []
    for v, target in TARGETS.items():
        if v in variants:
            oi = overhead(instr[v], b_i, f_i)
            if oi is not None:
                verdicts.append("%s %.2f× floor overhead (target ≤ %.2f×: %s)"
                                % (v, oi, target,
                                   "met" if oi <= target else "MISSED"))
    if verdicts:
        text += ["Target, instructions: " + "; ".join(verdicts) + ".", ""]
    return "\n".join(text)


# ---- profiling the hub -------------------------------------------------------------

# Functions worth naming in a profile of the hub: ours, the plugin's, and
# what they call in libpython and libc on the hot path.
PTK_FUNCS = re.compile(r"((^|/)lib/[a-z_]+\.[ch]:|(^|/)plugins/|floor_profile|"
                       r"__tls_get_addr|PyErr_Occurred|PyErr_Fetch|"
                       r"PyErr_Restore|PyFrame_GetCode|PyFrame_GetLasti|"
                       r"clock_gettime|call_trace|sys_profile|"
                       r"call_profile_func|_PyEval_SetProfile)")


def annotate_costs(out_file, inclusive, src=REPO):
    """{function: Ir} from callgrind_annotate (self, or inclusive)."""
    p = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100",
                        "--inclusive=" + ("yes" if inclusive else "no"),
                        out_file], capture_output=True, text=True)
    costs = {}
    for line in p.stdout.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.%]+\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r"/tmp/python-build[^ ]*/Python-[\d.]+/", "", m.group(2))
        name = re.sub(r" \[.*", "", name).replace(src + "/", "")
        ir = int(m.group(1).replace(",", ""))
        # the same function can be listed under two spellings of its file:
        # self costs add up, inclusive ones are the same calls counted twice
        costs[name] = max(costs.get(name, 0), ir) if inclusive else \
            costs.get(name, 0) + ir
    return costs


def profile_table(files, nevents, src=REPO):
    """Per-event self and inclusive Ir of the hot-path functions in the
    floor, hub and hub4 runs."""
    cols = [v for v in ("floor", "hub", "hub4") if v in files]
    selfc = {v: annotate_costs(files[v], False, src) for v in cols}
    incl = {v: annotate_costs(files[v], True, src) for v in cols}
    names = set()
    for v in cols:
        names |= {k for k in selfc[v] if PTK_FUNCS.search(k)}
    def key(k):
        return -max(incl[v].get(k, 0) for v in cols)
    rows = []
    for k in sorted(names, key=key):
        if max(selfc[v].get(k, 0) for v in cols) < nevents / 4:
            continue
        cells = [k]
        for v in cols:
            cells.append("%.1f" % (selfc[v].get(k, 0) / nevents))
            cells.append("%.1f" % (incl[v].get(k, 0) / nevents))
        rows.append(cells)
    head = ["function"]
    for v in cols:
        head += ["%s self" % v, "%s incl" % v]
    return table(rows, head, "l" + "r" * (2 * len(cols)))


# ---- main -------------------------------------------------------------------------

def bench_one(python, build, args):
    build = os.path.abspath(build)
    ensure_build(python, build)
    info = interp_info(python)
    floor_dir = build_floor(info, python, build)
    env = env_for(build)
    version = info["version"]
    src = cache_value(build, "CMAKE_HOME_DIRECTORY") or REPO
    rev = git_rev(src)
    sys.path.insert(0, os.path.join(HERE, "workloads"))
    import importlib
    out = ["Python %s (%s); build %s from %s%s.\n"
           % (version, python, build, src, " at " + rev if rev else "")]
    warnings = []
    profile_events = {}
    for wl_name in args.workloads:
        wl = importlib.import_module(wl_name)
        n_wall = args.wall_n.get(wl_name, wl.WALL_N)
        n_cg = args.callgrind_n.get(wl_name, wl.CALLGRIND_N)
        res = {v: {} for v in args.variants}
        res["_units_cg"] = wl.units(n_cg) if not args.no_callgrind else None
        res["_units_wall"] = wl.units(n_wall) if not args.no_wall else None
        for v in args.variants if not args.no_callgrind else []:
            prof = None
            if args.profile and v in ("hub", "hub4", "floor"):
                prof = os.path.join(build, "bench",
                                    "callgrind.%s.%s.out" % (wl_name, v))
            log("bench %s %s/%s: callgrind n=%d" % (version, wl_name, v, n_cg))
            instr, r = run_callgrind(python, env, wl_name, v, n_cg,
                                     floor_dir, prof)
            res[v]["instr"] = instr
            if v == "hub" and r.get("events"):
                profile_events[wl_name] = sum(r["events"].values())
            w = check_events(wl_name, v, r, wl.units(n_cg))
            if w:
                warnings.append(w)
        # Wall time: the variants take turns, so that a burst of load on
        # the machine falls on all of them alike; the min of the runs is kept.
        for i in range(args.reps if not args.no_wall else 0):
            for v in args.variants:
                r = run_wall(python, env, wl_name, v, n_wall, floor_dir)
                for k in ("wall", "cpu"):
                    prev = res[v].get(k)
                    res[v][k] = r[k] if prev is None else min(prev, r[k])
                w = check_events(wl_name, v, r, wl.units(n_wall))
                if w and i == 0:
                    warnings.append(w)
            log("bench %s %s: wall round %d/%d: %s" % (
                version, wl_name, i + 1, args.reps,
                ", ".join("%s %.3f/%.3f" % (v, res[v]["wall"], res[v]["cpu"])
                          for v in args.variants)))
        out.append(render(version, wl_name, wl.UNIT, res, args.variants))
    if warnings:
        out.append("Warnings:\n" + "\n".join("  " + w for w in warnings) + "\n")
    if args.profile and not args.no_callgrind:
        for wl_name in args.workloads:
            files = {}
            for v in ("floor", "hub", "hub4"):
                f = os.path.join(build, "bench",
                                 "callgrind.%s.%s.out" % (wl_name, v))
                if v in args.variants and os.path.exists(f):
                    files[v] = f
            nev = profile_events.get(wl_name)
            if files and nev:
                out.append("#### Where the instructions go: %s, Python %s "
                           "(Ir per profile event, %s events; files in %s)\n\n%s\n"
                           % (wl_name, version, fmt_int(nev),
                              os.path.join(build, "bench"),
                              profile_table(files, nev, src)))
    return "\n".join(out)


def machine_note():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    vg = subprocess.run(["valgrind", "--version"], capture_output=True,
                        text=True).stdout.strip() if shutil.which("valgrind") else "no valgrind"
    return "%s UTC; %s, %d CPUs, %s %s; %s" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        cpu, os.cpu_count() or 0, platform.system(), platform.release(), vg)


def parse_sizes(items):
    d = {}
    for it in items or []:
        k, _, v = it.partition("=")
        if k not in WORKLOADS or not v.isdigit():
            raise SystemExit("bad size %r: expected WORKLOAD=N" % it)
        d[k] = int(v)
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help="interpreter under test")
    ap.add_argument("--build", action="append",
                    help="build directory for that interpreter (configured "
                    "and built if it has no module yet); may be repeated, "
                    "each build then runs with the Python it was configured "
                    "for")
    ap.add_argument("--all", action="store_true",
                    help="run for 3.11, 3.12, 3.13 in build/bench-311 … "
                    "(built with pyenv's interpreters if missing)")
    ap.add_argument("--reps", type=int, default=5,
                    help="wall-time runs per variant (min is kept); default 5")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--wall-n", action="append", metavar="WORKLOAD=N",
                    help="workload size for wall-time runs")
    ap.add_argument("--callgrind-n", action="append", metavar="WORKLOAD=N",
                    help="workload size for callgrind runs")
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--no-wall", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="keep callgrind files of floor/hub/hub4 in "
                    "<build>/bench and print callgrind_annotate's inclusive "
                    "counts")
    args = ap.parse_args()
    args.workloads = [w for w in args.workloads.split(",") if w]
    args.variants = [v for v in args.variants.split(",") if v]
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %r (have %s)" % (w, ", ".join(WORKLOADS)))
    for v in args.variants:
        if v not in VARIANTS:
            ap.error("unknown variant %r (have %s)" % (v, ", ".join(VARIANTS)))
    if "bare" not in args.variants:
        args.variants.insert(0, "bare")
    args.wall_n = parse_sizes(args.wall_n)
    args.callgrind_n = parse_sizes(args.callgrind_n)
    if not args.no_callgrind and not shutil.which("valgrind"):
        ap.error("valgrind not found (or pass --no-callgrind)")

    targets = []
    if args.all:
        for minor in ALL_VERSIONS:
            build = os.path.join(REPO, "build", "bench-" + minor.replace(".", ""))
            python = cache_python(build) or find_python(minor)
            if python is None:
                log("bench: no Python %s found, skipped" % minor)
                continue
            targets.append((python, build))
    else:
        builds = args.build or [None]
        if len(builds) > 1 and args.python:
            ap.error("--python goes with one --build")
        for build in builds:
            python = args.python or (cache_python(build) if build else None)
            if python is None:
                ap.error("give --python (and --build), or --all")
            if build is None:
                info = interp_info(python)
                v = "".join(info["version"].split(".")[:2])
                build = os.path.join(REPO, "build", "bench-" + v)
            targets.append((python, build))

    print("## pytracekit overhead benchmark\n\n%s\n" % machine_note())
    print("Ratios are to the bare run; overhead vs floor = (variant − bare) / "
          "(floor − bare). Instructions count only the workload call "
          "(callgrind --toggle-collect); wall and cpu (process) time are the "
          "min of %d runs of the workload call, the variants taking turns.\n"
          % args.reps, flush=True)
    for python, build in targets:
        print(bench_one(python, build, args), flush=True)


if __name__ == "__main__":
    main()
