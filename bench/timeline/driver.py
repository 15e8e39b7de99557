"""Runs one workload under one variant, once, in this process, and prints
one JSON line: {"wall": s, "units": ..., "events": ..., "bytes": ...}.

    python driver.py WORKLOAD VARIANT N FLOOR_DIR OUT_DIR

VARIANT: bare, cprofile (cProfile.Profile, enabled around the same region,
its stats dumped after it, as the plugins' reports are), timer (timer:top=0), timeline (Perfetto, the same events as
the timer: calls and C calls, no exception instants, no GC, no counters),
timeline_json (the same, format=json), timeline_default (every default:
exception instants, GC, counters), timeline_ring (the timeline's events as
timeline, into the flight recorder: ring=5, nothing written until the
report). Only the workload call is timed, inside
_ptkfloor.run, the region callgrind collects (--toggle-collect).
"""
import importlib
import json
import os
import sys
import time

SPECS = {
    "timer": "timer:top=0",
    "timeline": "timeline:exceptions=false,gc=false,counters=false",
    "timeline_json": "timeline:format=json,exceptions=false,gc=false,counters=false",
    "timeline_default": "timeline",
    "timeline_ring": "timeline:exceptions=false,gc=false,counters=false,ring=5",
}


def main():
    workload, variant, n, floor_dir, out_dir = sys.argv[1:6]
    n = int(n)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [os.path.join(os.path.dirname(here), "workloads"), floor_dir]
    import _ptkfloor

    wl = importlib.import_module(workload)
    wl.run(min(n, wl.CALLGRIND_N))  # warm up (specialisation) untraced
    session = prof = None
    if variant == "cprofile":
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    elif variant != "bare":
        import pytracekit
        session = pytracekit.Session([SPECS[variant]], output_dir=out_dir,
                                     threads="current")
        session.start()
    t0 = time.perf_counter()
    _ptkfloor.run(lambda: wl.run(n))
    t1 = time.perf_counter()
    if prof is not None:
        prof.disable()
        prof.dump_stats(os.path.join(out_dir, "cprofile.pstats"))
    res = {"wall": t1 - t0, "units": wl.units(n)}
    if session is not None:
        session.stop()
        session.report()
        if variant.startswith("timeline"):
            with open(os.path.join(out_dir, "timeline.summary.json")) as f:
                s = json.load(f)
            res.update(events=s["events"], bytes=s["bytes"], dropped=s["dropped"])
    print(json.dumps(res))


if __name__ == "__main__":
    main()
