"""reftrack and the hub's reference tracer; one case per CTest test:
`test_reftrack.py CASE`."""
import gc
import os
import platform
import sys
import threading

from ptk_reftrack_util import (MONITORING, balanced, check, eq, fail, leaks_of, load,
                               marker_line, no_row, probe, program, row,
                               run_cli, session)

WIDGET = "__main__.Widget"


class Widget:
    pass


LOCAL_WIDGET = __name__ + ".Widget"


def widgets_report(outdir):
    report = load(outdir)
    balanced(report)
    return report


# ---- counts and leaks ------------------------------------------------------

def case_counts_cli():
    n, k = 5000, 37
    path = program("counts.py")
    out, proc = run_cli(["reftrack"], path, (n, k))
    eq(proc.stdout, "kept %d\n" % k, "program output")
    rep = widgets_report(out)
    w = row(rep, WIDGET)
    eq((w["created"], w["destroyed"], w["alive"], w["peak"], w["untracked"]),
       (n, n - k, k, n, 0), "Widget created/destroyed/alive/peak/untracked")
    groups = leaks_of(rep, WIDGET)
    eq(groups, [{"type": WIDGET, "count": k, "file": path,
                 "line": marker_line(path, "CREATE-LINE"), "function": "make"}],
       "Widget leak groups")
    counts = [g["count"] for g in rep["leaks"]]
    eq(counts, sorted(counts, reverse=True), "largest leak groups first")
    eq((rep["evicted"], rep["chained"], rep["overflow"]), (False, False, 0),
       "evicted, chained, overflow")
    check("reftrack:" in proc.stderr and "alive at stop" in proc.stderr,
          "summary on stderr:\n" + proc.stderr)


def case_tie():
    # Groups equal in everything the sort looked at but the function: the
    # report is still written, ordered by function name.
    path = program("tie.py")
    out, proc = run_cli(["reftrack"], path)
    eq(proc.stdout, "kept 2\n", "program output")
    check("failed" not in proc.stderr, "reftrack failed:\n" + proc.stderr)
    line = marker_line(path, "TIE-LINE")
    eq([(g["count"], g["file"], g["line"], g["function"])
        for g in leaks_of(widgets_report(out), "__main__.Widget")],
       [(1, path, line, "make"), (1, path, line, "make.<locals>.<lambda>")],
       "the tied groups, by function")


def case_counts_cli_nosites():
    n, k = 3000, 11
    out, proc = run_cli(["reftrack:sites=false"], program("counts.py"), (n, k))
    rep = widgets_report(out)
    w = row(rep, WIDGET)
    eq((w["created"], w["destroyed"], w["alive"], w["peak"]), (n, n - k, k, n),
       "Widget created/destroyed/alive/peak")
    eq(leaks_of(rep, WIDGET), [{"type": WIDGET, "count": k, "file": None,
                                "line": None, "function": None}],
       "Widget leak group without sites")
    eq(rep["sites"], False, "sites")
    # No shadow stack, so no profile hook, so no frame materialised by it.
    eq(rep["tracing"]["created"], 0, "objects made by tracing without sites")


def _make_some(n, k, keep, tmp):
    # Called after start: the hub's shadow stack has this frame (frames that
    # were already running at start are not on it).
    for i in range(n):
        (keep if i < k else tmp).append(Widget())  # SESSION-LINE


def case_counts_session():
    n, k = 2000, 25
    s, out = session(["reftrack:top=3"])
    keep, tmp = [], []
    with s:
        _make_some(n, k, keep, tmp)
        tmp.clear()
    rep = widgets_report(out)
    w = row(rep, LOCAL_WIDGET)
    eq((w["created"], w["destroyed"], w["alive"], w["peak"]), (n, n - k, k, n),
       "Widget created/destroyed/alive/peak")
    eq(leaks_of(rep, LOCAL_WIDGET),
       [{"type": LOCAL_WIDGET, "count": k, "file": os.path.abspath(__file__),
         "line": marker_line(__file__, "SESSION-LINE"),
         "function": "_make_some"}], "leak group")
    check(len(rep["leaks"]) <= 3, "top=3 lists %d groups" % len(rep["leaks"]))
    del keep


def case_preexisting():
    # A class and its instances made before the session, destroyed in it.
    m = 400
    ns = {"__name__": "oldmod"}
    exec("class Old:\n    pass\n", ns)
    old_cls = ns.pop("Old")
    olds = [old_cls() for _ in range(m)]
    name = old_cls.__module__ + ".Old"
    del old_cls
    s, out = session(["reftrack"])
    s.start()
    olds.clear()          # m DESTROYs with no CREATE
    gc.collect()          # the class itself dies (it is in a cycle)
    fresh = [Widget() for _ in range(7)]
    s.stop()
    s.report()
    rep = widgets_report(out)
    o = row(rep, name)
    eq((o["created"], o["destroyed"], o["alive"], o["peak"],
        o["destroyed_untracked"]), (0, 0, 0, 0, m),
       "pre-existing Old: created/destroyed/alive/peak/destroyed_untracked")
    t = row(rep, "type")
    check(t["destroyed_untracked"] >= 1, "the class Old was destroyed: %r" % t)
    eq(row(rep, LOCAL_WIDGET)["alive"], 7, "Widgets alive at stop")
    check(rep["destroyed_untracked"] >= m + 1,
          "destroyed_untracked total %r" % rep["destroyed_untracked"])
    del fresh


def _exec_many(keep, n):
    for i in range(n):
        code = compile("keep.append(Widget())", "<gen %d>" % i, "exec")
        exec(code, {"keep": keep, "Widget": Widget})


def case_code_reuse():
    # Code objects that die (on 3.13.0 often without a DESTROY) and new ones
    # at the same address: each site must keep its own file name.
    n = 200
    keep = []
    s, out = session(["reftrack:top=0"])
    s.start()
    _exec_many(keep, n)
    s.stop()
    s.report()
    rep = widgets_report(out)
    found = sorted((g["file"], g["line"], g["function"], g["count"])
                   for g in leaks_of(rep, LOCAL_WIDGET))
    eq(found, sorted(("<gen %d>" % i, 1, "<module>", 1) for i in range(n)),
       "one leak group per compiled code object")
    del keep


def _short_lived_classes(n):
    for i in range(n):
        ns = {"__name__": "tmpmod"}
        exec("class T%d:\n    pass\n" % i, ns)
        objs = [ns["T%d" % i]() for _ in range(3)]
        objs.clear()
        ns.clear()
        gc.collect()     # the class dies; the next may take its address


def case_dead_types():
    # Classes made and destroyed while tracing: each keeps its own row, under
    # the name it had, even when a later class reuses its address.
    n = 40
    s, out = session(["reftrack"])
    s.start()
    _short_lived_classes(n)
    s.stop()
    s.report()
    rep = widgets_report(out)
    for i in range(n):
        r = row(rep, "tmpmod.T%d" % i)
        eq((r["created"], r["destroyed"], r["alive"]), (3, 3, 0),
           "tmpmod.T%d created/destroyed/alive" % i)


def _fifty():
    return [Widget() for _ in range(50)]  # STOP-LINE


def case_alive_at_stop():
    # Objects alive at stop whose DESTROY comes after the tracer is gone.
    s, out = session(["reftrack"])
    s.start()
    objs = _fifty()
    s.stop()
    s.report()
    del objs
    rep = widgets_report(out)
    w = row(rep, LOCAL_WIDGET)
    eq((w["created"], w["destroyed"], w["alive"], w["peak"]), (50, 0, 50, 50),
       "Widget created/destroyed/alive/peak")
    eq([(g["count"], g["line"]) for g in leaks_of(rep, LOCAL_WIDGET)],
       [(50, marker_line(__file__, "STOP-LINE"))], "leak group")


def case_report_unimportable():
    # A report while the interpreter finalizes, when builtins has lost
    # __import__ (a followed fork server ending under load): checking which
    # instances alive at stop are really alive (this CPython frees some
    # without telling the tracer) must import nothing. It failed with
    # KeyError: '__import__'.
    s, out = session(["reftrack"])
    s.start()
    objs = _fifty()
    s.stop()
    import builtins
    saved = builtins.__import__
    del builtins.__import__
    try:
        failed = s.report()
    finally:
        builtins.__import__ = saved
    eq(failed, 0, "plugins whose report failed")
    rep = widgets_report(out)
    w = row(rep, LOCAL_WIDGET)
    eq((w["created"], w["destroyed"], w["alive"]), (50, 0, 50),
       "Widget created/destroyed/alive")
    del objs


def case_apart():
    m = 500
    out, proc = run_cli(["reftrack"], program("apart.py"), (m,))
    eq(proc.stdout, "%d\n" % m, "program output")
    rep = widgets_report(out)
    if MONITORING:
        # sys.monitoring callbacks get no frame and the hub makes none; with
        # no C-event subscriber no CALL events are enabled, so no bound
        # methods either: tracing makes nothing per call here
        check(no_row(rep, "frame", "tracing"), "no frame made by tracing")
        check(no_row(rep, "builtin_function_or_method", "tracing"),
              "no bound method made by tracing")
        check(rep["tracing"]["created"] < m, "tracing total %r" % rep["tracing"])
        # (frames the program's own exceptions make for their tracebacks are
        # the program's here; under the legacy hooks they already existed)
        return
    fr = row(rep, "frame", "tracing")
    check(fr["created"] >= m, "frames made by tracing: %r" % fr)
    bm = row(rep, "builtin_function_or_method", "tracing")
    check(bm["created"] >= m, "bound methods made for C_CALL: %r" % bm)
    check(no_row(rep, "frame"), "no frame object counted as the program's")
    check(rep["tracing"]["created"] >= 2 * m, "tracing total %r" % rep["tracing"])
    check("exist only because tracing is on" in proc.stderr,
          "summary says how many were kept apart:\n" + proc.stderr)


def case_overflow():
    n, cap = 1000, 50
    out, proc = run_cli(["reftrack:max_tracked=%d" % cap], program("overflow.py"),
                        (n,))
    rep = widgets_report(out)
    w = row(rep, WIDGET)
    eq(w["created"], n, "Widgets created")
    eq(w["alive"] + w["untracked"], n, "alive + untracked")
    check(w["untracked"] >= n - cap, "untracked %r" % w)
    every = rep["types"] + rep["tracing"]["types"]
    eq(rep["overflow"], sum(r["untracked"] for r in every), "overflow total")
    check(sum(r["alive"] for r in every) <= cap, "table stayed within max_tracked")
    eq(rep["max_tracked"], cap, "max_tracked")
    check("max_tracked=%d" % cap in proc.stderr, "summary reports the overflow")


def case_options():
    for spec, word in (("reftrack:top=-1", "top"),
                       ("reftrack:max_tracked=0", "max_tracked"),
                       ("reftrack:bogus=1", "bogus"),
                       ("reftrack:sites=maybe", "sites")):
        _, proc = run_cli([spec], ("-c", "print('ran')"), expect_rc=2)
        check(word in proc.stderr, "%s: error names %r:\n%s" % (spec, word,
                                                               proc.stderr))
        eq(proc.stdout, "", "%s: program must not run" % spec)
    out, _ = run_cli(["reftrack:top=1"], program("counts.py"), (100, 5))
    rep = load(out)
    eq(len(rep["leaks"]), 1, "top=1 lists one group")
    check(rep["leak_groups"] >= 1, "leak_groups %r" % rep["leak_groups"])


# ---- the tracer slot ---------------------------------------------------------

def case_slot_lifecycle():
    P = probe()
    eq(P.slot(), (0, 0), "slot before any session")
    c, _ = session(["counter"])
    with c:
        eq(P.slot(), (0, 0), "a session without REF subscribers installs nothing")
    a, out_a = session(["reftrack"])
    b, out_b = session(["reftrack"])
    a.start()
    hub = P.slot()
    check(hub[0] != 0, "hub's tracer installed")
    b.start()
    eq(P.slot(), hub, "one tracer for every subscriber")
    both = [Widget() for _ in range(30)]
    a.stop()
    eq(P.slot(), hub, "still installed while one subscriber remains")
    only_b = [Widget() for _ in range(20)]
    b.stop()
    eq(P.slot(), (0, 0), "removed when no subscriber remains")
    a.report()
    b.report()
    eq(row(widgets_report(out_a), LOCAL_WIDGET)["created"], 30, "A's Widgets")
    eq(row(widgets_report(out_b), LOCAL_WIDGET)["created"], 50, "B's Widgets")
    del both, only_b


def case_third_party():
    offered = tracker_removed_offered()
    P = probe()
    P.install(Widget)
    mine = P.slot()
    eq(mine[0], P.tracer_address(), "probe installed")
    s, out = session(["reftrack"])
    s.start()
    check(P.slot() != mine, "hub installed over the probe")
    objs = [Widget() for _ in range(120)]
    del objs[:45]
    s.stop()
    eq(P.slot(), mine, "probe's tracer put back at stop")
    eq(P.counts()[:2], (120, 45), "every event forwarded to the earlier tracer")
    # 3.15: CPython told the probe each time it was replaced
    # (PyRefTracer_TRACKER_REMOVED): by reftrack's one-off probe tracer
    # (rt_destroy_is_missed, which puts it back) and by the hub. The hub
    # does not forward the notice it gets itself when it puts the probe back.
    eq(P.others(), 2 if offered else 0, "TRACKER_REMOVED notices the probe received")
    s.report()
    rep = widgets_report(out)
    eq(rep["chained"], True, "chained")
    w = row(rep, LOCAL_WIDGET)
    eq((w["created"], w["destroyed"], w["alive"]), (120, 45, 75), "our counts")
    extra = [Widget() for _ in range(3)]
    eq(P.counts()[:2], (123, 45), "probe still counting after the session")
    P.uninstall()
    del objs, extra


def tracker_removed_offered():
    """Does this runtime tell a reference tracer it is replaced
    (PyRefTracer_TRACKER_REMOVED, 3.15)? Found by behaviour: the probe
    installed and taken out again."""
    P = probe()
    before = P.slot()
    P.save()
    P.install(object)
    P.restore()
    told = P.others()
    eq(P.slot(), before, "slot restored after the TRACKER_REMOVED probe")
    return told == 1


def case_evicted_told():
    # Where CPython sends PyRefTracer_TRACKER_REMOVED (3.15), the hub knows
    # it was evicted the moment it happens; elsewhere at its next look at
    # the slot (here: the stop). The report says when it was noticed.
    import time
    offered = tracker_removed_offered()
    P = probe()
    s, out = session(["reftrack"])
    s.start()
    seen = [Widget() for _ in range(4)]
    t0 = time.monotonic()
    P.install(Widget)           # evicts the hub
    time.sleep(0.5)
    unseen = [Widget() for _ in range(3)]
    waited = time.monotonic() - t0
    s.stop()
    s.report()
    rep = widgets_report(out)
    eq((rep["evicted"], row(rep, LOCAL_WIDGET)["created"]), (True, 4),
       "evicted, Widgets seen")
    gap = rep["evicted_after_s"] - rep["last_event_s"]
    if offered:
        check(0 <= gap < 0.25, "TRACKER_REMOVED: eviction noticed %.3f s after the last "
              "event, expected at once" % gap)
    else:
        check(gap >= 0.45, "no TRACKER_REMOVED: eviction noticed %.3f s after the last "
              "event, expected at the stop, %.3f s later" % (gap, waited))
    eq(P.counts()[:2], (3, 0), "the probe saw the Widgets made after it")
    P.uninstall()
    print("TRACKER_REMOVED offered: %s; eviction noticed %.3f s after the last event"
          % (offered, gap))
    del seen, unseen


def case_stale_copy():
    # Another tool keeps a copy of the slot from an earlier session and puts
    # it back while a later session runs: the hub must not take those events
    # for its current install, must say it was evicted, and must not leave
    # its tracer behind.
    P = probe()
    s1, _ = session(["reftrack"])
    s1.start()
    P.save()
    s1.stop()
    eq(P.slot(), (0, 0), "slot empty after the first session")
    s2, out = session(["reftrack"])
    s2.start()
    current = P.slot()
    check(current[0] != 0, "second session installed")
    seen = [Widget() for _ in range(6)]
    P.restore()                 # the first session's (function, data)
    check(P.slot() != current, "stale copy in the slot")
    unseen = [Widget() for _ in range(4)]
    s2.stop()
    eq(P.slot(), (0, 0), "the hub's stale tracer is not left in the slot")
    s2.report()
    rep = widgets_report(out)
    eq((rep["evicted"], row(rep, LOCAL_WIDGET)["created"]), (True, 6),
       "evicted, Widgets seen")
    s1.report()
    del seen, unseen


def _floats_stale_site():
    junk = [float(i) + 0.5 for i in range(300)]  # STALE-LINE
    del junk


def _floats_here():
    return [float(i) + 0.25 for i in range(40)]  # FLOAT-LINE


def _float_lines(floats):
    import tracemalloc
    lines = set()
    for f in floats:
        tb = tracemalloc.get_object_traceback(f)
        lines.add(tb[0].lineno if tb else None)
    return lines


def case_tracemalloc_before():
    import tracemalloc
    P = probe()
    here = marker_line(__file__, "FLOAT-LINE")
    stale = marker_line(__file__, "STALE-LINE")
    tracemalloc.start()
    tm = P.slot()
    check(tm[0] != 0, "tracemalloc's tracer in the slot")
    # Control: with tracemalloc's tracer evicted, floats from the free list
    # keep the traceback of their first allocation. This is what forwarding
    # must prevent.
    _floats_stale_site()
    P.install(float)
    check(stale in _float_lines(_floats_here()),
          "control: evicting tracemalloc leaves stale tracebacks")
    P.uninstall()
    tracemalloc.stop()
    tracemalloc.start()
    eq(P.slot(), tm, "tracemalloc back in the slot")
    _floats_stale_site()
    s, out = session(["reftrack"])
    s.start()
    check(P.slot() != tm, "hub installed over tracemalloc")
    eq(_float_lines(_floats_here()), {here},
       "tracemalloc's tracebacks while the hub forwards to it")
    snap0 = tracemalloc.take_snapshot()
    bufs = [bytearray(1000) for _ in range(100)]  # TM-LINE
    snap1 = tracemalloc.take_snapshot()
    keep = [Widget() for _ in range(60)]
    s.stop()
    eq(P.slot(), tm, "tracemalloc's tracer put back at stop")
    _floats_stale_site()
    eq(_float_lines(_floats_here()), {here}, "tracemalloc works after the session")
    tm_line = marker_line(__file__, "TM-LINE")
    grown = [st for st in snap1.compare_to(snap0, "lineno")
             if st.traceback[0].lineno == tm_line]
    check(grown and grown[0].size_diff >= 100 * 1000 and grown[0].count_diff >= 100,
          "tracemalloc measured the bytearrays: %r" % grown)
    tracemalloc.stop()
    s.report()
    rep = widgets_report(out)
    eq((rep["chained"], rep["evicted"]), (True, False), "chained, evicted")
    eq(row(rep, LOCAL_WIDGET)["created"], 60, "our Widgets")
    eq(len(bufs), 100, "program state")
    del keep, bufs


# tracemalloc.stop() empties the slot on 3.14+, whoever is in it (its
# tracer, or one that replaced its tracer); on 3.13 it leaves its idle
# tracer there and does not touch a slot it no longer holds.
# docs/reference-tracer.md.
TM_STOP_EMPTIES = sys.version_info >= (3, 14)
EMPTY = (0, 0)


def case_tracemalloc_inside():
    import tracemalloc
    P = probe()
    s, out = session(["reftrack"])
    s.start()
    hub = P.slot()
    before = [Widget() for _ in range(10)]
    tracemalloc.start()      # evicts the hub
    tm = P.slot()
    check(tm != hub and tm[0] != 0, "tracemalloc took the slot")
    after = [Widget() for _ in range(20)]  # INSIDE-LINE
    tb = tracemalloc.get_object_traceback(after[0])
    eq(tb[0].lineno if tb else None, marker_line(__file__, "INSIDE-LINE"),
       "tracemalloc's traceback of an object made after its start")
    s.stop()
    eq(P.slot(), tm, "the hub leaves tracemalloc in the slot at stop")
    s.report()
    rep = widgets_report(out)
    eq(rep["evicted"], True, "evicted")
    check(isinstance(rep["evicted_after_s"], float) and rep["evicted_after_s"] >= 0,
          "evicted_after_s %r" % rep["evicted_after_s"])
    check(rep["events_before_eviction"] > 0, "events before eviction")
    check(isinstance(rep["last_event_s"], float)
          and 0 <= rep["last_event_s"] <= rep["evicted_after_s"],
          "last event %r before the eviction was noticed %r"
          % (rep["last_event_s"], rep["evicted_after_s"]))
    eq(row(rep, LOCAL_WIDGET)["created"], 10, "Widgets seen before eviction")
    tracemalloc.stop()
    if TM_STOP_EMPTIES:
        eq(P.slot(), EMPTY, "tracemalloc.stop() empties the slot (3.14+)")
    else:
        eq(P.slot(), tm, "tracemalloc.stop() leaves its idle tracer in the slot")
    del before, after


def case_tracemalloc_stop_inside():
    # tracemalloc first, the hub chained to it, tracemalloc stopped inside.
    # On 3.13.0 tracemalloc.stop() does not touch a slot it no longer holds.
    import tracemalloc
    P = probe()
    tracemalloc.start()
    tm = P.slot()
    s, out = session(["reftrack"])
    s.start()
    hub = P.slot()
    check(hub != tm and hub[0] != 0, "hub installed over tracemalloc")
    first = [Widget() for _ in range(5)]
    tracemalloc.stop()
    if TM_STOP_EMPTIES:
        # the hub is evicted: it sees no more, and puts nothing back
        eq(P.slot(), EMPTY, "tracemalloc.stop() empties the slot, the hub's too (3.14+)")
    else:
        eq(P.slot(), hub, "tracemalloc.stop() left the hub in the slot")
    later = [Widget() for _ in range(8)]
    s.stop()
    eq(P.slot(), EMPTY if TM_STOP_EMPTIES else tm, "the slot is given back as found")
    s.report()
    rep = widgets_report(out)
    eq((rep["evicted"], rep["chained"], row(rep, LOCAL_WIDGET)["created"]),
       (True, True, 5) if TM_STOP_EMPTIES else (False, True, 13),
       "evicted, chained, Widgets")
    # tracemalloc can start again and works as if the hub had never been.
    tracemalloc.start()
    eq(P.slot(), tm, "tracemalloc in the slot again")
    _floats_stale_site()
    eq(_float_lines(_floats_here()), {marker_line(__file__, "FLOAT-LINE")},
       "tracemalloc's tracebacks after the session")
    tracemalloc.stop()
    del first, later


def case_tracemalloc_restart():
    # tracemalloc started and stopped inside a session, then a new session.
    import tracemalloc
    P = probe()
    s1, out1 = session(["reftrack"])
    s1.start()
    seen = [Widget() for _ in range(3)]
    tracemalloc.start()
    tm = P.slot()
    tracemalloc.stop()
    if TM_STOP_EMPTIES:
        eq(P.slot(), EMPTY, "tracemalloc.stop() empties the slot (3.14+)")
        tm = EMPTY
    else:
        eq(P.slot(), tm, "tracemalloc's idle tracer stays in the slot")
    lost = [Widget() for _ in range(4)]
    s1.stop()
    eq(P.slot(), tm, "the hub does not take back a slot that is not its own")
    s1.report()
    rep1 = widgets_report(out1)
    eq((rep1["evicted"], row(rep1, LOCAL_WIDGET)["created"]), (True, 3),
       "first session: evicted, Widgets seen")
    # A new session installs afresh (chaining to what is there) and starts
    # with a clean state.
    s2, out2 = session(["reftrack"])
    s2.start()
    check(P.slot() != tm, "hub installed again")
    fresh = [Widget() for _ in range(9)]
    s2.stop()
    eq(P.slot(), tm, "given back at stop")
    s2.report()
    rep = widgets_report(out2)
    eq((rep["evicted"], rep["chained"], row(rep, LOCAL_WIDGET)["created"]),
       (False, not TM_STOP_EMPTIES, 9), "second session: evicted, chained, Widgets")
    del seen, lost, fresh


# ---- on_ref that breaks the rules ------------------------------------------------

def _bad(mode, needle):
    # exit 3: the program ended with 0, but rtbad's report is lost
    out, proc = run_cli(["reftrack", "rtbad:mode=%s,after=50" % mode],
                        program("bad.py"), expect_rc=3)
    eq(proc.stdout, "caught 300 parsed 300 kept 300\n", "program output")
    check("plugin 'rtbad' failed (PTK_EPLUGIN" in proc.stderr,
          "rtbad detached with its error:\n" + proc.stderr)
    check(needle in proc.stderr, "error says %r:\n%s" % (needle, proc.stderr))
    check("must not create Python objects" in proc.stderr, "rules quoted")
    check("rtbad: " not in proc.stderr.replace("rtbad: boom", ""),
          "a detached plugin is not asked for its report:\n" + proc.stderr)
    rep = widgets_report(out)
    w = row(rep, WIDGET)
    eq((w["created"], w["alive"]), (300, 300), "the other plugin's counts")


def case_bad_raise():
    _bad("raise", "set an exception (RuntimeError: rtbad: boom)")


def case_bad_clear():
    _bad("clear", "cleared the pending exception (ValueError)")


def case_bad_create():
    _bad("create", "created 1 Python object (the first a 'int')")


# ---- churn -----------------------------------------------------------------------

def case_churn_threads():
    threads, per, keep_every = 4, 150000, 1000
    path = program("churn.py")
    out, proc = run_cli(["reftrack"], path, (threads, per, keep_every),
                        threads="all")
    kept = threads * len(range(0, per, keep_every))
    eq(proc.stdout, "kept %d\n" % kept, "program output")
    rep = widgets_report(out)
    w = row(rep, WIDGET)
    eq((w["created"], w["destroyed"], w["alive"]),
       (threads * per, threads * per - kept, kept), "Widgets")
    eq(leaks_of(rep, WIDGET), [{"type": WIDGET, "count": kept, "file": path,
                                "line": marker_line(path, "CHURN-LINE"),
                                "function": "work"}], "Widget leak group")
    check(rep["events"] >= 2 * 3 * threads * per, "events %r" % rep["events"])


# ---- no reference tracer ---------------------------------------------------------

def case_unavailable():
    running = platform.python_version()
    _, proc = run_cli(["reftrack"], ("-c", "print('ran')"), expect_rc=2)
    for word in ("3.13", "PyRefTracer", running, "reftrack"):
        check(word in proc.stderr, "load error names %r:\n%s" % (word, proc.stderr))
    eq(proc.stdout, "", "the program must not run")
    import pytracekit
    try:
        pytracekit.Session(plugins=["reftrack"], output_dir="unused")
    except pytracekit.Error as e:
        check("3.13" in str(e) and running in str(e), "Session error: %s" % e)
    else:
        fail("Session(plugins=['reftrack']) loaded on Python %s" % running)


def main():
    if len(sys.argv) != 2 or "case_" + sys.argv[1] not in globals():
        fail("usage: test_reftrack.py CASE")
    globals()["case_" + sys.argv[1]]()
    print("ok", sys.argv[1])


if __name__ == "__main__":
    main()
