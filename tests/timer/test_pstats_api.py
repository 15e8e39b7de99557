"""pstats loads timer.pstats, and print_stats, print_callers, print_callees
and sort_stats work on it with every sort key; the figures are those of
timer.json."""
import io
import os
import pstats

import ptk_timer_util as U


def main():
    script = U.program("methods.py")
    outdir, _ = U.run_timer(script)
    path = os.path.join(outdir, "timer.pstats")
    out = io.StringIO()
    st = pstats.Stats(path, stream=out)
    for key in ("calls", "cumulative", "cumtime", "file", "filename", "line",
                "module", "name", "ncalls", "nfl", "pcalls", "stdname", "time",
                "tottime"):
        st.sort_stats(key).print_stats(5)
    st.sort_stats(pstats.SortKey.CUMULATIVE, pstats.SortKey.NAME)
    st.print_stats()
    st.print_callers("twice")
    st.print_callees("main")
    text = out.getvalue()
    for want in ("twice", "<lambda>", "main", "function calls"):
        U.check(want in text, "%r missing from pstats output" % want)
    # pstats' totals are the JSON totals.
    meta = U.load_json(outdir)
    U.check(st.total_calls == meta["calls"], "total_calls %d != json %d" % (st.total_calls, meta["calls"]))
    U.check(st.prim_calls == meta["primitive_calls"], "prim_calls %d != json %d" % (st.prim_calls, meta["primitive_calls"]))
    U.check(abs(st.total_tt - meta["total_ns"] * 1e-9) < 1e-6, "total_tt %r != json %r" % (st.total_tt, meta["total_ns"]))
    # Every function of the JSON, with the same counts and times.
    raw = U.load_pstats(path)
    U.check(len(raw) == len(meta["functions"]), "%d pstats entries, %d json functions" % (len(raw), len(meta["functions"])))
    ids = {}
    for f in meta["functions"]:
        key = (f["file"], f["line"], f["name"])
        ids[f["id"]] = key
        cc, nc, tt, ct, _ = raw[key]
        U.check((cc, nc) == (f["primitive_calls"], f["calls"]), "%s counts differ" % (key,))
        U.check(abs(tt - f["own_ns"] * 1e-9) < 1e-9 and abs(ct - f["inclusive_ns"] * 1e-9) < 1e-9,
                "%s times differ" % (key,))
    nedges = sum(len(v[4]) for v in raw.values())
    U.check(nedges == len(meta["edges"]), "%d pstats edges, %d json edges" % (nedges, len(meta["edges"])))
    for e in meta["edges"]:
        got = raw[ids[e["callee"]]][4][ids[e["caller"]]]
        U.check(tuple(got[:2]) == (e["calls"], e["primitive_calls"]), "edge %s counts differ" % e)
    print("OK: %d functions, %d edges" % (len(raw), nedges))


main()
