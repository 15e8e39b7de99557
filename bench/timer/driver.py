"""Runs one workload under one profiler, once, in this process, and prints
one JSON line: {"wall": seconds, "result": ..., "units": ...}.

    python driver.py WORKLOAD VARIANT N FLOOR_DIR OUT_DIR

WORKLOAD is call_heavy or c_call_heavy (bench/workloads) or method_heavy
(here). VARIANT: bare, floor (do-nothing C profile function), cprofile
(cProfile.Profile, builtins on), hub (pytracekit + counter), timer,
timer_cpu (timer with clock=cpu). Only the workload call is timed, inside
_ptkfloor.run, the region callgrind collects (--toggle-collect).
"""
import importlib
import json
import os
import sys
import time


def main():
    workload, variant, n, floor_dir, out_dir = sys.argv[1:6]
    n = int(n)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.join(os.path.dirname(here), "workloads"),
                    floor_dir]
    import _ptkfloor

    wl = importlib.import_module(workload)
    wl.run(min(n, wl.CALLGRIND_N))  # warm up (specialisation) untraced

    def work():
        return wl.run(n)

    prof = session = None
    if variant == "floor":
        _ptkfloor.install()
    elif variant == "cprofile":
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    elif variant in ("hub", "timer", "timer_cpu"):
        import pytracekit
        spec = {"hub": "counter", "timer": "timer:top=0",
                "timer_cpu": "timer:top=0,clock=cpu"}[variant]
        session = pytracekit.Session([spec], output_dir=out_dir,
                                     threads="current")
        session.start()
    elif variant != "bare":
        raise SystemExit("driver: unknown variant %r" % variant)

    t0 = time.perf_counter()
    result = _ptkfloor.run(work)
    t1 = time.perf_counter()

    calls = None
    if variant == "floor":
        _ptkfloor.uninstall()
    elif prof is not None:
        prof.disable()
        prof.create_stats()
        calls = sum(v[1] for v in prof.stats.values())
    elif session is not None:
        session.stop()
        session.report()
        if variant.startswith("timer"):
            with open(os.path.join(out_dir, "timer.json")) as f:
                calls = json.load(f)["calls"]
    print(json.dumps({"wall": t1 - t0, "result": result, "calls": calls,
                      "units": wl.units(n)}))


if __name__ == "__main__":
    main()
