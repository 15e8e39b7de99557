"""Overhead of reftrack on an allocation-heavy workload, next to
tracemalloc, on one interpreter. Prints ratios to a bare run.

    PYTHONPATH=BUILD/python PTK_TEST_PLUGIN_DIR=BUILD/tests/plugins \
        python bench_reftrack.py [--n N] [--repeat R]

The "hub only" row uses the test plugin rtbad (tests/reftrack/rtbad.c) as a
subscriber that does nothing: the cost of the reference-event path itself.

Each measurement runs in a fresh process of the same interpreter; the
configurations are interleaved and the fastest of R runs is kept. Only the
workload is timed (not start-up, session start or the report).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

CONFIGS = [
    ("bare", "no tracing"),
    ("hub", "hub only: a REF subscriber doing nothing"),
    ("counts", "reftrack:sites=false (counts only)"),
    ("sites", "reftrack (counts + leak sites)"),
    ("tracemalloc", "tracemalloc.start() (1 frame)"),
]


class Obj:
    def __init__(self, i):
        self.i = i


def workload(n):
    """Mostly allocation: tuples, dicts, lists, instances, strings."""
    kept = []
    for i in range(n):
        t = (i, i + 1)
        d = {"k": i, "t": t}
        s = str(i)
        o = Obj(i)
        row = [t, d, s, o]
        if i % 1000 == 0:
            kept.append(row)
    return len(kept)


def one(config, n):
    outdir = tempfile.mkdtemp(prefix="ptk-bench-reftrack-")
    stop = None
    if config in ("counts", "sites", "hub"):
        import pytracekit
        spec = {"counts": "reftrack:sites=false", "sites": "reftrack",
                # the test-only rule breaker, set never to misbehave
                "hub": "rtbad:after=1000000000000"}[config]
        s = pytracekit.Session(plugins=[spec], output_dir=outdir,
                               threads="current",
                               plugin_path=os.path.abspath(
                                   os.environ.get("PTK_TEST_PLUGIN_DIR", ".")))
        s.start()
        stop = s.stop
    elif config == "tracemalloc":
        import tracemalloc
        tracemalloc.start()
        stop = tracemalloc.stop
    t0 = time.perf_counter()
    workload(n)
    dt = time.perf_counter() - t0
    if stop is not None:
        stop()
    print("%.6f" % dt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--one", choices=[c for c, _ in CONFIGS])
    ns = ap.parse_args()
    if ns.one:
        one(ns.one, ns.n)
        return
    best = {c: float("inf") for c, _ in CONFIGS}
    for _ in range(ns.repeat):
        for c, _ in CONFIGS:
            out = subprocess.run([sys.executable, __file__, "--one", c,
                                  "--n", str(ns.n)], capture_output=True,
                                 text=True, check=True, env=os.environ)
            best[c] = min(best[c], float(out.stdout.split()[-1]))
    bare = best["bare"]
    print("Python %s, workload n=%d, best of %d"
          % (sys.version.split()[0], ns.n, ns.repeat))
    print("%-38s %10s %8s" % ("configuration", "seconds", "x bare"))
    for c, label in CONFIGS:
        print("%-38s %10.4f %8.2f" % (label, best[c], best[c] / bare))
    tm = best["tracemalloc"] / bare - 1
    print("overhead of leak sites / overhead of tracemalloc: %.2f"
          % ((best["sites"] / bare - 1) / tm if tm > 0 else float("nan")))


if __name__ == "__main__":
    main()
