"""Runs one workload under one variant, once, in this process, and prints
one JSON line: {"wall": s, "cpu": s, "result": ..., "events": {...}}.

    python driver.py WORKLOAD VARIANT N FLOOR_DIR OUT_DIR

WORKLOAD is a module in this directory (call_heavy, c_call_heavy); VARIANT
one of bare, floor, hub, hub4, pyprofile. FLOOR_DIR holds the _ptkfloor
extension built by bench/run.py; the pytracekit module comes from
PYTHONPATH. Only the workload call is timed, and only it runs inside
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
    sys.path.insert(0, here)
    sys.path.insert(0, floor_dir)
    import _ptkfloor

    wl = importlib.import_module(workload)
    wl.run(min(n, wl.CALLGRIND_N))  # warm up (specialisation) untraced

    def work():
        return wl.run(n)

    events = None
    session = None
    py_counts = None
    if variant == "bare":
        pass
    elif variant == "floor":
        _ptkfloor.install()
    elif variant in ("hub", "hub4"):
        import pytracekit
        plugins = ["counter"] * (4 if variant == "hub4" else 1)
        session = pytracekit.Session(plugins, output_dir=out_dir,
                                     threads="current")
        session.start()
    elif variant == "pyprofile":
        py_counts = {}

        def prof(frame, event, arg, counts=py_counts):
            counts[event] = counts.get(event, 0) + 1

        sys.setprofile(prof)
    else:
        raise SystemExit("driver: unknown variant %r" % variant)

    c0 = time.process_time()
    t0 = time.perf_counter()
    result = _ptkfloor.run(work)
    t1 = time.perf_counter()
    c1 = time.process_time()

    if variant == "floor":
        _ptkfloor.uninstall()
    elif session is not None:
        session.stop()
        session.report()
        with open(os.path.join(out_dir, "counter.json")) as f:
            events = json.load(f).get("events")
    elif variant == "pyprofile":
        sys.setprofile(None)
        events = dict(py_counts)

    print(json.dumps({"wall": t1 - t0, "cpu": c1 - c0, "result": result,
                      "events": events,
                      "units": wl.units(n)}))


if __name__ == "__main__":
    main()
