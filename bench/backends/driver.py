"""Runs one workload under one variant, once, in this process, and prints one
JSON line: {"wall": s, "result": ..., "events": {...}, "calls": n,
"tools": [...]}.

    python driver.py WORKLOAD VARIANT N FLOOR_DIR OUT_DIR

WORKLOAD: fib, c_call_heavy (bench/workloads), method_heavy (bench/timer),
line_heavy, line_partial (bench/coverage). VARIANT: see VARIANTS below.
FLOOR_DIR holds the extensions bench_backends.py builds (_ptkfloor,
_ptkcovnull, _ptkmonfloor); the pytracekit module comes from PYTHONPATH.
The workload call runs inside _ptkfloor.run, the region callgrind collects
(--toggle-collect=ptkbench_region), after one untraced warm-up run.
"""
import importlib.util
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
WORKLOAD_FILES = {
    "fib": os.path.join(BENCH, "workloads", "call_heavy.py"),
    "c_call_heavy": os.path.join(BENCH, "workloads", "c_call_heavy.py"),
    "method_heavy": os.path.join(BENCH, "timer", "method_heavy.py"),
    "line_heavy": os.path.join(BENCH, "coverage", "line_heavy.py"),
    "line_partial": os.path.join(BENCH, "coverage", "line_partial.py"),
}
LINE_WORKLOADS = ("line_heavy", "line_partial")

# variant: (backend, plugin spec) for the pytracekit ones
PTK = {
    "counter_legacy": ("legacy", "counter"),
    "counter_mon": ("monitoring", "counter"),
    "counter_mon_py": ("monitoring", "counter:events=call;return"),
    "timer_legacy": ("legacy", "timer:top=0"),
    "timer_mon": ("monitoring", "timer:top=0"),
    "cov_legacy": ("legacy", "coverage"),
    "cov_mon": ("monitoring", "coverage"),
    "covbranch_legacy": ("legacy", "coverage:branch=true"),
    "covbranch_mon": ("monitoring", "coverage:branch=true"),
}
VARIANTS = ["bare", "floor_profile", "floor_trace", "floor_mon",
            "floor_mon_prof", "cprofile",
            "coveragepy", "coveragepy_branch"] + list(PTK)


def load(name):
    spec = importlib.util.spec_from_file_location("ptkbb_" + name,
                                                  WORKLOAD_FILES[name])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tools_in_use():
    """Names of the sys.monitoring tools registered (ids 0-5), [] before
    3.12. The legacy hooks use CPython's own ids 6 and 7, not listed."""
    mon = getattr(sys, "monitoring", None)
    if mon is None:
        return []
    return [mon.get_tool(i) for i in range(6) if mon.get_tool(i)]


def install_monfloor(workload, cb, profile_events=False):
    """The do-nothing callback for the events this workload makes; with
    profile_events, for all those a profiler of Python and C calls needs
    (PY_START, PY_RETURN, CALL, C_RETURN, C_RAISE)."""
    mon = sys.monitoring
    E = mon.events
    if profile_events:
        evs = [E.PY_START, E.PY_RETURN, E.CALL, E.C_RETURN, E.C_RAISE]
    elif workload in LINE_WORKLOADS:
        evs = [E.LINE]
    elif workload == "c_call_heavy":
        # C_RETURN (and C_RAISE) come only with CALL
        evs = [E.CALL, E.C_RETURN, E.C_RAISE]
    else:
        evs = [E.PY_START, E.PY_RETURN]
    tool = 5
    mon.use_tool_id(tool, "ptkbench-floor")
    mask = 0
    for ev in evs:
        mon.register_callback(tool, ev, cb)
        mask |= ev
    mon.set_events(tool, mask)

    def stop():
        mon.set_events(tool, 0)
        for ev in evs:
            mon.register_callback(tool, ev, None)
        mon.free_tool_id(tool)
    return stop


def start_session(backend, spec, workload, out_dir):
    import pytracekit
    if spec == "counter" and workload in LINE_WORKLOADS:
        spec = "counter:events=line"
    os.environ["PYTRACEKIT_BACKEND"] = backend
    kw = dict(output_dir=out_dir, threads="current")
    try:
        session = pytracekit.Session([spec], backend=backend, **kw)
    except TypeError:
        # a pytracekit without backend=: only the legacy backend exists
        if backend != "legacy":
            raise
        session = pytracekit.Session([spec], **kw)
    session.start()
    return session


def main():
    workload, variant, n, floor_dir, out_dir = sys.argv[1:6]
    n = int(n)
    sys.path.insert(0, floor_dir)
    import _ptkfloor

    wl = load(workload)
    wl.run(min(n, wl.CALLGRIND_N))  # warm up (specialisation) untraced

    def work():
        return wl.run(n)

    stop = session = prof = None
    if variant == "bare":
        pass
    elif variant == "floor_profile":
        _ptkfloor.install()
        stop = _ptkfloor.uninstall
    elif variant == "floor_trace":
        import _ptkcovnull
        _ptkcovnull.install()
        stop = _ptkcovnull.uninstall
    elif variant in ("floor_mon", "floor_mon_prof"):
        import _ptkmonfloor
        stop = install_monfloor(workload, _ptkmonfloor.null,
                                variant == "floor_mon_prof")
    elif variant == "cprofile":
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    elif variant.startswith("coveragepy"):
        import coverage
        cov = coverage.Coverage(data_file=None, config_file=False,
                                branch=variant.endswith("branch"))
        cov.start()
        collector = getattr(cov, "_collector", None)
        if collector is None or collector.tracer_name() != "CTracer":
            raise SystemExit("driver: coverage.py is not using its C tracer")
        stop = cov.stop
    elif variant in PTK:
        session = start_session(*PTK[variant], workload, out_dir)
    else:
        raise SystemExit("driver: unknown variant %r" % variant)
    tools = tools_in_use()

    t0 = time.perf_counter()
    result = _ptkfloor.run(work)
    t1 = time.perf_counter()

    events = calls = None
    if stop is not None:
        stop()
    elif prof is not None:
        prof.disable()
        prof.create_stats()
        calls = sum(v[1] for v in prof.stats.values())
    elif session is not None:
        session.stop()
        session.report()
        if variant.startswith("counter"):
            with open(os.path.join(out_dir, "counter.json")) as f:
                events = json.load(f).get("events")
        elif variant.startswith("timer"):
            with open(os.path.join(out_dir, "timer.json")) as f:
                calls = json.load(f)["calls"]
    print(json.dumps({"wall": t1 - t0, "result": result, "events": events,
                      "calls": calls, "tools": tools}))


if __name__ == "__main__":
    main()
