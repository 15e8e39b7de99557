"""A session started inside nested functions, from the pytracekit module:
the frames already running return without a CALL of ours. They must be
ignored (counted in json unmatched_returns), and leave the figures of the
functions called while tracing exact and consistent."""
import os
import sys

import ptk_timer_util as U

try:
    import pytracekit
except ImportError as e:
    U.skip("the pytracekit module is not built: %s" % e)


def inner():
    return sum(range(10))


def outer(out):
    s = pytracekit.Session(["timer:top=0"], output_dir=out, threads="current")
    s.start()
    inner()
    return s          # RETURN of a frame that started before tracing


def level2(out):
    s = outer(out)
    inner()
    return s          # and another one


def main():
    out = U.tempdir("ptk-timer-session-")
    s = level2(out)
    inner()
    s.stop()
    s.report()
    stats = U.load_pstats(os.path.join(out, "timer.pstats"))
    meta = U.load_json(out)
    U.check_consistent(stats)
    me = os.path.abspath(__file__)
    U.check(U.one(stats, "inner", me)[:2] == (3, 3),
            "inner %s, expected (3, 3)" % (U.one(stats, "inner", me)[:2],))
    for name in ("outer", "level2"):
        U.check(not U.by_name(stats, name, me),
                "%s is in the stats but its CALL came before tracing" % name)
    U.check(meta["unmatched_returns"] >= 2,
            "unmatched_returns %d, expected >= 2 (outer, level2)" % meta["unmatched_returns"])
    U.check(meta["resynced_frames"] == 0, "resynced %d" % meta["resynced_frames"])
    # The sum function was called by inner 3 times: the edge is exact.
    sm = stats.get(("~", 0, "<built-in method builtins.sum>"))
    inner_key = next(iter(U.by_name(stats, "inner", me)))
    U.check(sm is not None and sm[4][inner_key][:2] == (3, 3), "edge inner->sum %r" % (sm,))
    print("OK: unmatched returns %d" % meta["unmatched_returns"])


main()
