#!/usr/bin/env python3
"""3.14 and 3.15 side by side: every profiler and coverage tool on CPython's own
suites, whole-process, in instructions (callgrind) and in CPU time.

    tools/in-root python3 bench/realprog/current_pythons.py --build build/r314 \\
        --suites test_difflib,test_enum --results cp-314.jsonl [--keep DIR]
    tools/in-root python3 bench/realprog/current_pythons.py --build build/r315 ...
    python3 bench/realprog/current_pythons.py --table cp-314.jsonl cp-315.jsonl

Each variant runs run_suite.py SUITE (what `python -m unittest -q test.SUITE`
runs; the same command for every variant):

    bare          python run_suite.py SUITE
    counter       pytracekit -p counter run_suite.py SUITE
    timer         pytracekit -p timer run_suite.py SUITE           (defaults)
    cprofile      python -m cProfile -o F run_suite.py SUITE
    tracing       python -m profiling.tracing -o F ...             (3.15: cProfile's new name)
    sampling      python -m profiling.sampling run ...             (3.15; CPU time only)
    cov_line      pytracekit -p coverage:include=... run_suite.py SUITE
    cov_branch    pytracekit -p coverage:include=...,branch=true ...
    covpy_line    python -m coverage run --include=... run_suite.py SUITE
    covpy_branch  python -m coverage run --include=... --branch ...
    cov_line_d    cov_line with reports=false (the data only: reports deferred)
    cov_branch_d  cov_branch with reports=false
    cov_line_dj   cov_line_d, then python -m pytracekit json (the report made later)
    cov_branch_dj cov_branch_d, then python -m pytracekit json
    covpy_line_j  covpy_line, then python -m coverage json (its report)
    covpy_branch_j  covpy_branch, then python -m coverage json
    mon_floor     python monitoring_floor.py INCLUDE run_suite.py SUITE: what any
                  line-coverage tool on sys.monitoring costs, recording nothing

A "then" variant is two processes one after the other; its instructions (or
CPU) are their sum.

The coverage variants measure the suite's module and its tests (coverage.py
leaves the standard library, where CPython's tests live, out by default).
coverage.py is the one in /var/cache/pytracekit/venv/pyX.Y (7.16, default core:
sys.monitoring); every Python-run variant runs that venv's interpreter, so
all of them start the same way.

--mode callgrind: each run under `valgrind --tool=callgrind
--trace-children=yes`, the instructions summed over every process it made
(deterministic: one run each). The sampler is left out: what it costs is set
by the time it runs, and under valgrind it samples a program 50x slower.
--mode cpu: --reps rounds; in each, every variant once (the order rotating),
CPU = user + sys of the run and its children (os.wait4), the sampler's own
process included. --keep DIR keeps the callgrind files (for
callgrind_annotate).

Every run is appended to the results file (JSON lines) as it ends; --table
prints the ratios from one or more results files.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_realprog import MEASURED, cache_value, run_once  # noqa: E402

SUITES = ["test_difflib", "test_enum", "test_argparse", "test_json"]
VARIANTS = ["bare", "counter", "timer", "cprofile", "tracing", "sampling",
            "cov_line", "cov_branch", "covpy_line", "covpy_branch"]
# the same through `python -m pytracekit` (the interpreter itself, not the
# CLI, which embeds libpython: see bench/README.md)
MODULE_VARIANTS = ["counter_m", "timer_m", "cov_line_m", "cov_branch_m"]
# the command forced to embed libpython (PYTRACEKIT_LAUNCH=embed, through
# env(1)): what the command did before it ran statically linked interpreters
# by their own executable
EMBED_VARIANTS = ["timer_e", "cov_line_e"]
# reports=false (the data only), and the pairs run + report of both tools
DEFER_VARIANTS = ["cov_line_d", "cov_branch_d", "cov_line_dj", "cov_branch_dj",
                  "covpy_line_j", "covpy_branch_j"]
# the least any line-coverage tool on sys.monitoring does, recording nothing
# (monitoring_floor.py): PY_START everywhere, switched off where it fires, LINE
# on the measured files' code objects only, each line switched off at once
FLOOR_VARIANTS = ["mon_floor"]
VENV = os.environ.get("PTK_VENV_DIR", "/var/cache/pytracekit/venv")


def interp(build):
    """(python to run, X.Y.Z, has profiling)"""
    python = cache_value(build, "Python3_EXECUTABLE")
    out = subprocess.run([python, "-c", "import sys, importlib.util as u; "
                          "print('%d.%d.%d' % sys.version_info[:3], "
                          "u.find_spec('profiling') is not None)"],
                         capture_output=True, text=True, check=True).stdout.split()
    venv = os.path.join(VENV, "py%s" % ".".join(out[0].split(".")[:2]), "bin", "python")
    return (venv if os.path.exists(venv) else python), out[0], out[1] == "True"


def command(variant, python, build, suite, outdir):
    test = [os.path.join(HERE, "run_suite.py"), suite]
    cli = [os.path.join(build, "tools", "pytracekit"), "-o", outdir,
           "--plugin-path", os.path.join(build, "plugins")]
    if variant.endswith("_m"):
        variant = variant[:-2]
        cli = [python, "-m", "pytracekit"] + cli[1:]
    if variant.endswith("_e"):
        variant = variant[:-2]
        cli = ["/usr/bin/env", "PYTRACEKIT_LAUNCH=embed"] + cli
    include = MEASURED.get(suite, "*/%s.py" % suite[5:])
    if variant.endswith("_j"):  # then: the report, in a process of its own
        return [command(variant[:-2], python, build, suite, outdir),
                [python, "-m", "coverage", "json", "--data-file=" + os.path.join(outdir, "cov"),
                 "-o", os.path.join(outdir, "cov.json")]]
    if variant.endswith("_dj"):
        return [command(variant[:-1], python, build, suite, outdir),
                [python, "-m", "pytracekit", "json", "-o", os.path.join(outdir, "r.json"),
                 outdir]]
    deferred = ""
    if variant.endswith("_d"):
        variant, deferred = variant[:-2], ",reports=false"
    if variant == "bare":
        return [python] + test
    if variant == "mon_floor":
        return [python, os.path.join(HERE, "monitoring_floor.py"), include] + test
    if variant in ("cprofile", "tracing"):
        mod = "cProfile" if variant == "cprofile" else "profiling.tracing"
        return [python, "-m", mod, "-o", os.path.join(outdir, "prof.pstats")] + test
    if variant == "sampling":
        return [python, "-m", "profiling.sampling", "run"] + test
    if variant in ("counter", "timer"):
        return cli + ["-p", variant] + test
    if variant.startswith("covpy_"):
        return ([python, "-m", "coverage", "run", "--data-file=" + os.path.join(outdir, "cov"),
                 "--include=" + include] + (["--branch"] if variant == "covpy_branch" else [])
                + test)
    assert variant.startswith("cov_")
    return cli + ["-p", "coverage:include='%s'%s%s"
                  % (include, ",branch=true" if variant == "cov_branch" else "", deferred)] + test


def callgrind(argv, cwd, keep):
    """(instructions summed over every process, number of processes, exit
    status)"""
    outs = os.path.join(cwd, "cg")
    os.mkdir(outs)
    full = ["valgrind", "--tool=callgrind", "--trace-children=yes", "-q",
            "--callgrind-out-file=" + os.path.join(outs, "callgrind.out.%p")] + argv
    rc = subprocess.run(full, cwd=cwd, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    total, files = 0, sorted(glob.glob(os.path.join(outs, "callgrind.out.*")))
    for fn in files:
        with open(fn, errors="replace") as f:
            for line in f:
                m = re.match(r"(summary|totals): (\d+)", line)
                if m:
                    total += int(m.group(2))
                    break
    if keep:
        os.makedirs(keep, exist_ok=True)
        for fn in files:
            shutil.copy(fn, keep)
    return total, len(files), rc


def measure(args):
    build = os.path.abspath(args.build)
    python, version, has_profiling = interp(build)
    variants = [v for v in args.variants
                if has_profiling or v not in ("tracing", "sampling")]
    if args.mode == "callgrind":
        variants = [v for v in variants if v != "sampling"]
    reps = 1 if args.mode == "callgrind" else args.reps
    batch = time.strftime("%Y-%m-%dT%H:%M:%S")  # a ratio pairs runs of one batch and round
    for rnd in range(reps):
        for suite in args.suites:
            order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
            for variant in order:
                work = tempfile.mkdtemp(prefix="ptk-cp-")
                outdir = os.path.join(work, "out")
                os.mkdir(outdir)
                argv = command(variant, python, build, suite, outdir)
                steps = argv if isinstance(argv[0], list) else [argv]
                if variant.endswith(("_m", "_dj")):  # the build's package, for -m pytracekit
                    os.environ["PYTHONPATH"] = os.path.join(build, "python")
                else:
                    os.environ.pop("PYTHONPATH", None)
                rec = {"python": version, "suite": suite, "variant": variant,
                       "mode": args.mode, "batch": batch, "round": rnd, "argv": argv}
                t0 = time.monotonic()
                if args.mode == "callgrind":
                    keep = (os.path.join(args.keep, "%s-%s-%s" % (version, suite, variant))
                            if args.keep else None)
                    rec["instr"] = rec["procs"] = rec["rc"] = 0
                    for k, step in enumerate(steps):
                        cg = os.path.join(work, "step%d" % k)
                        os.mkdir(cg)
                        i, n, rc = callgrind(step, cg, keep)
                        rec["instr"] += i
                        rec["procs"] += n
                        rec["rc"] = rec["rc"] or rc
                    rec["wall_s"] = round(time.monotonic() - t0, 1)
                    print("%s %-14s %-13s %15d Ir  %d proc  %6.0f s  rc %d"
                          % (version, suite, variant, rec["instr"], rec["procs"],
                             rec["wall_s"], rec["rc"]), flush=True)
                else:
                    cpu = wall = rss = rc = 0
                    for step in steps:
                        c, r, w, x = run_once(step, work)
                        cpu, wall, rss, rc = cpu + c, wall + w, max(rss, r), rc or x
                    rec.update(cpu_s=round(cpu, 3), maxrss_kb=rss, wall_s=round(wall, 3),
                               rc=rc)
                    print("%s %-14s %-13s cpu %6.2f s  wall %6.2f s  rc %d"
                          % (version, suite, variant, cpu, wall, rc), flush=True)
                shutil.rmtree(work, ignore_errors=True)
                with open(args.results, "a") as f:
                    f.write(json.dumps(rec) + "\n")


def table(paths):
    runs = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                runs.setdefault((r["mode"], r["python"], r["suite"], r["variant"]),
                                []).append(r)

    def instr(p, s, v):
        r = runs.get(("callgrind", p, s, v))
        return r[-1]["instr"] if r and r[-1]["rc"] == 0 else None

    def cpu_ratio(p, s, v, base):
        """median and min over rounds of v's CPU / base's CPU in the same round"""
        a = {(x.get("batch"), x["round"]): x["cpu_s"] for x in runs.get(("cpu", p, s, v), [])}
        b = {(x.get("batch"), x["round"]): x["cpu_s"] for x in runs.get(("cpu", p, s, base), [])}
        q = [a[k] / b[k] for k in a if k in b and b[k]]
        return (statistics.median(q), min(q), max(q), len(q)) if q else None

    def ir(p, s, v, base):
        a, b = instr(p, s, v), instr(p, s, base)
        return None if a is None or b is None else a / b

    def f(x):
        return "–" if x is None else "%.2f" % x

    def c(t):
        return "–" if t is None else "%.2f (%.2f–%.2f, n=%d)" % t

    keys = sorted({(p, s) for _, p, s, _ in runs})
    names = {"counter": "counter", "timer": "timer", "cprofile": "cProfile",
             "tracing": "profiling.tracing", "sampling": "sampler", "cov_line": "cov line",
             "cov_branch": "cov branch", "covpy_line": "coverage.py line",
             "covpy_branch": "coverage.py branch", "counter_m": "-m counter",
             "timer_m": "-m timer", "cov_line_m": "-m cov line", "cov_branch_m": "-m cov branch",
             "timer_e": "embedded timer", "cov_line_e": "embedded cov line",
             "cov_line_d": "cov line deferred", "cov_branch_d": "cov branch deferred",
             "cov_line_dj": "cov line deferred + json",
             "cov_branch_dj": "cov branch deferred + json",
             "covpy_line_j": "coverage.py line + json",
             "covpy_branch_j": "coverage.py branch + json",
             "mon_floor": "sys.monitoring floor"}
    # the target ratios: (label, variant, base); "prof" is profiling.tracing
    # where there is one (3.15), else cProfile
    targets = [("timer ÷ cProfile", "timer", "prof"), ("timer ÷ sampler", "timer", "sampling"),
               ("cov line ÷ coverage.py", "cov_line", "covpy_line"),
               ("cov branch ÷ coverage.py", "cov_branch", "covpy_branch"),
               ("cov branch ÷ cov line", "cov_branch", "cov_line"),
               ("coverage.py branch ÷ line", "covpy_branch", "covpy_line"),
               ("-m timer ÷ cProfile", "timer_m", "prof"), ("-m timer ÷ sampler", "timer_m", "sampling"),
               ("-m cov line ÷ coverage.py", "cov_line_m", "covpy_line"),
               ("-m cov branch ÷ coverage.py", "cov_branch_m", "covpy_branch"),
               ("embedded timer ÷ cProfile", "timer_e", "prof"),
               ("embedded cov line ÷ coverage.py", "cov_line_e", "covpy_line"),
               ("cov line deferred ÷ coverage.py", "cov_line_d", "covpy_line"),
               ("cov branch deferred ÷ coverage.py", "cov_branch_d", "covpy_branch"),
               ("cov line ÷ coverage.py + json", "cov_line", "covpy_line_j"),
               ("cov branch ÷ coverage.py + json", "cov_branch", "covpy_branch_j"),
               ("cov line deferred + json ÷ coverage.py + json", "cov_line_dj", "covpy_line_j"),
               ("cov branch deferred + json ÷ coverage.py + json", "cov_branch_dj",
                "covpy_branch_j")]
    for mode in ("callgrind", "cpu"):
        rows = [(p, s) for p, s in keys if runs.get((mode, p, s, "bare"))]
        if not rows:
            continue
        if mode == "callgrind":
            print("Instructions (callgrind, whole process, summed over its processes):\n")
            val = lambda p, s, v, b: f(ir(p, s, v, b))  # noqa: E731
            base = lambda p, s: "%.2f G" % (instr(p, s, "bare") / 1e9)  # noqa: E731
        else:
            print("\nCPU time (user + sys, whole process): median of the per-round ratios "
                  "(min–max, rounds):\n")
            val = lambda p, s, v, b: c(cpu_ratio(p, s, v, b))  # noqa: E731
            base = lambda p, s: "%.2f s" % statistics.median(  # noqa: E731
                x["cpu_s"] for x in runs[("cpu", p, s, "bare")])
        present = [v for v in VARIANTS[1:] + MODULE_VARIANTS + EMBED_VARIANTS + DEFER_VARIANTS
                   + FLOOR_VARIANTS
                   if any(runs.get((mode, p, s, v)) for p, s in rows)]
        print("| Python | suite | bare | " + " | ".join("%s ÷ bare" % names[v] for v in present)
              + " |")
        print("|---|---|---:|" + "---:|" * len(present))
        for p, s in rows:
            print("| %s | %s | %s | %s |" % (p, s, base(p, s), " | ".join(
                val(p, s, v, "bare") for v in present)))
        print()
        print("| Python | suite | " + " | ".join(t[0] for t in targets) + " |")
        print("|---|---|" + "---:|" * len(targets))
        for p, s in rows:
            prof = "tracing" if runs.get((mode, p, s, "tracing")) else "cprofile"
            print("| %s | %s | %s |" % (p, s, " | ".join(
                val(p, s, v, prof if b == "prof" else b) for _, v, b in targets)))
        print()
    bad = sorted({(k[1], k[2], k[3], r["rc"]) for k, rs in runs.items() for r in rs
                  if r["rc"] != 0})
    for b in bad:
        print("\nnonzero exit: %s %s %s rc %d" % b)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build")
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--mode", choices=["callgrind", "cpu"], default="callgrind")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--results", default="current-pythons.jsonl")
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--table", nargs="+", metavar="FILE")
    args = ap.parse_args()
    if args.table:
        table(args.table)
        return
    if not args.build:
        ap.error("give --build")
    args.suites = [s for s in args.suites.split(",") if s]
    args.variants = [v for v in args.variants.split(",") if v]
    measure(args)


if __name__ == "__main__":
    main()
