#!/usr/bin/env python3
"""The timer on real programs: CPython's own unittest suites, bare, under
cProfile and under the timer (defaults, and with calling contexts off).
Each run is run_suite.py SUITE: what `python -m unittest -q test.SUITE` runs,
less the tests whose work is bounded by the wall clock (test_email's
test_make_msgid_collisions), the same for every variant.

Whole-process CPU time (user + sys) and peak RSS come from os.wait4's
rusage of each run; the variants of a suite take turns (the order rotates
each round) and the median of the rounds is kept. A ratio (×) is the
median of the per-round ratios: the variants of a round run back to back,
so a machine that slows down or speeds up between rounds moves both sides
of each ratio alike. The sizes of the files each profiler wrote are
recorded too.

    python3 bench/realprog/bench_realprog.py --build build/bench-313 \
        [--build build/bench-312 ...] [--suites test_difflib,test_json] \
        [--reps 3] [--results FILE]
    python3 bench/realprog/bench_realprog.py --table FILE   # markdown table

Every run is appended to the results file (JSON lines) as it finishes, so
an interrupted measurement keeps what it has; --table reads that file.
Runs on any Python 3; the interpreter under test is the one each --build
directory was configured for (its CMakeCache.txt).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

SUITES = ["test_difflib", "test_argparse", "test_email", "test_json",
          "test_enum", "test_asyncio.test_tasks"]
VARIANTS = ["bare", "cprofile", "timer", "timer_noctx"]
# --variants versions: the coverage plugin (line, branch) and coverage.py
# (its default core: sys.monitoring on 3.12+ for lines, and for branches on
# 3.14+), both measuring the suite's module and its tests; the timer against
# cProfile (profiling.tracing where the interpreter has it, 3.15) and
# CPython's sampler (profiling.sampling, 3.15, its own default rate).
VERSION_VARIANTS = ["bare", "cov_line", "cov_branch", "covpy_line", "covpy_branch",
                    "cprofile", "timer", "sampling"]
# what the coverage variants measure, per suite: the module and its tests
MEASURED = {
    "test_difflib": "*/difflib.py,*/test_difflib.py",
    "test_argparse": "*/argparse.py,*/test_argparse.py",
    "test_enum": "*/enum.py,*/test_enum.py",
    "test_json": "*/json/*.py,*/test_json/*.py",
}


def cache_value(build, name):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"%s(:[A-Z]+)?=(.*)$" % re.escape(name), line.strip())
            if m:
                return m.group(2)
    raise SystemExit("%s: no %s in CMakeCache.txt" % (build, name))


def python_version(python):
    import subprocess
    out = subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def command(variant, python, build, suite, outdir):
    # run_suite.py: `-m unittest -q test.SUITE` without the tests whose work
    # is bounded by the wall clock (see there)
    test = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_suite.py"),
            suite]
    if variant == "bare":
        return [python] + test
    if variant == "cprofile":
        return [python, "-m", cprofile_module(python), "-o",
                os.path.join(outdir, "cprofile.pstats")] + test
    if variant == "sampling":
        return [python, "-m", "profiling.sampling", "run"] + test
    include = MEASURED.get(suite, "*/%s.py" % suite[5:])
    if variant.startswith("covpy_"):
        return ([python, "-m", "coverage", "run", "--data-file=" + os.path.join(outdir, "cov"),
                 "--include=" + include] + (["--branch"] if variant == "covpy_branch" else [])
                + test)
    if variant.startswith("cov_"):
        spec = "coverage:include='%s'%s" % (include, ",branch=true" if variant == "cov_branch"
                                            else "")
        return [os.path.join(build, "tools", "pytracekit"), "-o", outdir,
                "--plugin-path", os.path.join(build, "plugins"), "-p", spec] + test
    spec = "timer" if variant == "timer" else "timer:contexts=false"
    return [os.path.join(build, "tools", "pytracekit"), "-o", outdir,
            "--plugin-path", os.path.join(build, "plugins"), "-p", spec] + test


def cprofile_module(python, _known={}):
    """cProfile's command: profiling.tracing where the interpreter has it."""
    if python not in _known:
        import subprocess
        out = subprocess.run([python, "-c", "import importlib.util as u; print("
                              "u.find_spec('profiling') is not None and "
                              "u.find_spec('profiling.tracing') is not None)"],
                             capture_output=True, text=True)
        _known[python] = "profiling.tracing" if out.stdout.strip() == "True" else "cProfile"
    return _known[python]


def run_once(argv, cwd):
    """(cpu seconds, peak RSS in kB, wall seconds, exit status)."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, wall, os.waitstatus_to_exitcode(status)


def measure(args):
    for build in args.build:
        build = os.path.abspath(build)
        python = cache_value(build, "Python3_EXECUTABLE")
        version = python_version(python)
        for rnd in range(args.reps):
            for suite in args.suites:
                variants = args.variants
                order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
                for variant in order:
                    work = tempfile.mkdtemp(prefix="ptk-realprog-")
                    outdir = os.path.join(work, "out")
                    os.mkdir(outdir)
                    argv = command(variant, python, build, suite, outdir)
                    cpu, rss, wall, rc = run_once(argv, work)
                    sizes = {f: os.path.getsize(os.path.join(outdir, f))
                             for f in sorted(os.listdir(outdir))}
                    shutil.rmtree(work, ignore_errors=True)
                    rec = {"python": version, "suite": suite, "variant": variant,
                           "round": rnd, "cpu_s": round(cpu, 3), "maxrss_kb": rss,
                           "wall_s": round(wall, 3), "rc": rc, "sizes": sizes}
                    with open(args.results, "a") as f:
                        f.write(json.dumps(rec) + "\n")
                    print("%s %-24s %-12s cpu %6.2f s  rss %6.1f MB  files %6.1f MB  rc %d"
                          % (version, suite, variant, cpu, rss / 1024,
                             sum(sizes.values()) / 1e6, rc), flush=True)


def table(path):
    runs = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            runs.setdefault((r["python"], r["suite"], r["variant"]), []).append(r)

    def med(key, field):
        v = [r[field] for r in runs.get(key, [])]
        return statistics.median(v) if v else None

    def ratio(key, base, field):
        """Median over rounds of key's figure / base's in the same round (the
        i-th record of each: one per round and measuring run, in order)."""
        a, b = runs.get(key, []), runs.get(base, [])
        v = [x[field] / y[field] for x, y in zip(a, b) if y[field]]
        return statistics.median(v) if v else None

    def nrounds(key):
        return len(runs.get(key, []))

    rows = sorted({(p, s) for p, s, _ in runs})
    print("| Python | suite | bare CPU / RSS | cProfile CPU / RSS | timer CPU (× cProfile) / RSS (×) "
          "| timer, contexts off: CPU (×) / RSS (×) | timer files (speedscope) | rounds |")
    print("|---|---|---|---|---|---|---|---|")
    for p, s in rows:
        def cell(v, base=None):
            key = (p, s, v)
            cpu, rss = med(key, "cpu_s"), med(key, "maxrss_kb")
            if cpu is None:
                return "–"
            if base is None:
                return "%.2f s / %.0f MB" % (cpu, rss / 1024)
            rc_, rr = ratio(key, (p, s, base), "cpu_s"), ratio(key, (p, s, base), "maxrss_kb")
            return "%.2f s (%.2f×) / %.0f MB (%.2f×)" % (cpu, rc_, rss / 1024, rr)
        tk = (p, s, "timer")
        files = "–"
        if runs.get(tk):
            total = statistics.median(sum(r["sizes"].values()) for r in runs[tk])
            ss = statistics.median(r["sizes"].get("timer.speedscope.json", 0) for r in runs[tk])
            files = "%.1f MB (%.1f MB)" % (total / 1e6, ss / 1e6)
        bad = sorted({r["rc"] for v in VARIANTS for r in runs.get((p, s, v), [])} - {0})
        n = min(nrounds((p, s, v)) for v in VARIANTS)
        print("| %s | %s | %s | %s | %s | %s | %s | %d%s |" % (
            p, s, cell("bare"), cell("cprofile"), cell("timer", "cprofile"),
            cell("timer_noctx", "cprofile"), files, n,
            " (exit %s)" % bad if bad else ""))


def table_versions(path):
    """The --variants versions table: each variant's CPU as the median of
    its per-round ratios to bare (and the timer's to cProfile and to the
    sampler)."""
    runs = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["variant"] in VERSION_VARIANTS:
                runs.setdefault((r["python"], r["suite"], r["variant"]), []).append(r)

    def ratio(key, base):
        a = {x["round"]: x["cpu_s"] for x in runs.get(key, [])}
        b = {x["round"]: x["cpu_s"] for x in runs.get(base, [])}
        v = [a[k] / b[k] for k in a if k in b and b[k]]
        return statistics.median(v) if v else None

    def fmt(v):
        return "–" if v is None else "%.2f×" % v
    print("| Python | suite | bare CPU | coverage line | coverage branch | coverage.py line "
          "| coverage.py branch | cProfile | timer | timer ÷ cProfile | sampler "
          "| timer ÷ sampler | rounds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p, s in sorted({(p, s) for p, s, _ in runs}):
        bare = runs.get((p, s, "bare"), [])
        cells = [fmt(ratio((p, s, v), (p, s, "bare")))
                 for v in ("cov_line", "cov_branch", "covpy_line", "covpy_branch", "cprofile",
                           "timer")]
        bad = sorted({r["rc"] for v in VERSION_VARIANTS for r in runs.get((p, s, v), [])} - {0})
        print("| %s | %s | %.2f s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d%s |" % (
            p, s, statistics.median(r["cpu_s"] for r in bare) if bare else 0, *cells,
            fmt(ratio((p, s, "timer"), (p, s, "cprofile"))),
            fmt(ratio((p, s, "sampling"), (p, s, "bare"))),
            fmt(ratio((p, s, "timer"), (p, s, "sampling"))), len(bare),
            " (exit %s)" % bad if bad else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", default=[])
    ap.add_argument("--suites", default=",".join(SUITES[:5]))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--results", default="realprog-results.jsonl")
    ap.add_argument("--table", metavar="FILE")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated, of %s; 'versions' for %s"
                    % (", ".join(VARIANTS), ", ".join(VERSION_VARIANTS)))
    ap.add_argument("--table-versions", metavar="FILE",
                    help="the table of the 'versions' variants")
    ap.add_argument("--cpu", type=int, metavar="N",
                    help="run everything on CPU N only (os.sched_setaffinity): on a "
                         "machine whose CPUs differ in speed (a shared VM), a run that "
                         "moves between them is what the ratios measure otherwise")
    args = ap.parse_args()
    if args.table:
        table(args.table)
        return
    if args.table_versions:
        table_versions(args.table_versions)
        return
    args.variants = (VERSION_VARIANTS if args.variants == "versions"
                     else [v for v in args.variants.split(",") if v])
    if not args.build:
        ap.error("give at least one --build")
    args.suites = [s for s in args.suites.split(",") if s]
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})  # the children inherit it
    measure(args)


if __name__ == "__main__":
    main()
