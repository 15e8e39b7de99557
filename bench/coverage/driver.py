"""Runs one workload under one variant, once, in this process, and prints
one JSON line {"wall": seconds, "result": ..., "iterations": n}.

    python driver.py WORKLOAD VARIANT N NULL_DIR OUT_DIR

Variants: bare, nulltrace, coveragepy, coveragepy_branch, ptk, ptk_calls,
ptk_branch, ptk_branch_counts.
Only the workload call is timed, and only it runs inside _ptkcovnull.run,
the region callgrind collects.
"""
import importlib
import json
import os
import sys
import time


def main():
    workload, variant, n, null_dir, out_dir = sys.argv[1:6]
    n = int(n)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(0, null_dir)
    import _ptkcovnull

    wl = importlib.import_module(workload)
    wl.run(min(n, wl.CALLGRIND_N))  # warm up (specialisation) untraced

    def work():
        return wl.run(n)

    stop = None
    if variant == "bare":
        pass
    elif variant == "nulltrace":
        _ptkcovnull.install()
        stop = _ptkcovnull.uninstall
    elif variant.startswith("coveragepy"):
        import coverage
        cov = coverage.Coverage(data_file=None, branch=variant.endswith("branch"),
                                config_file=False)
        cov.start()
        collector = getattr(cov, "_collector", None)
        tracer = collector.tracer_name() if collector else "?"
        if tracer != "CTracer":
            raise SystemExit("driver: coverage.py runs with %s, not its C tracer" % tracer)
        stop = cov.stop
    elif variant.startswith("ptk"):
        import pytracekit
        spec = {"ptk": "coverage", "ptk_branch": "coverage:branch=true",
                "ptk_branch_counts": "coverage:branch=true,counts=true",
                "ptk_calls": "coverage:calls=true"}[variant]
        session = pytracekit.Session([spec], output_dir=out_dir, threads="current")
        session.start()

        def stop():
            session.stop()
            session.report()
    else:
        raise SystemExit("driver: unknown variant %r" % variant)

    # The first pass, traced and outside the measured region: each line
    # and each direction of each branch of the workload runs once here, so
    # what is measured is the cost once a tool has seen everything.
    wl.run(min(n, wl.CALLGRIND_N))
    t0 = time.perf_counter()
    result = _ptkcovnull.run(work)
    t1 = time.perf_counter()
    if stop:
        stop()
    print(json.dumps({"wall": t1 - t0, "result": result, "iterations": n}))


if __name__ == "__main__":
    main()
