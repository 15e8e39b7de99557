"""A C function reached through classmethod(repr) — on 3.12.0 to 3.12.4 a
C_RETURN comes without its C_CALL (gh-122029) — leaves the figures
consistent and the call counts right. The oracle is the program itself
(cProfile on 3.12+ loses work() and main() altogether on this program)."""
import os

import ptk_timer_util as U


def main():
    script = U.program("unbalanced.py")
    outdir, _ = U.run_timer(script)
    ours = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    U.check_consistent(ours)
    work_key = next(iter(U.by_name(ours, "work", script)), None)
    main_key = next(iter(U.by_name(ours, "main", script)), None)
    U.check(work_key and main_key, "work or main missing")
    work, main_ = ours[work_key], ours[main_key]
    U.check(work[:2] == (4, 4), "work (primitive, calls) %s, expected (4, 4)" % (work[:2],))
    U.check(main_[:2] == (1, 1), "main %s, expected (1, 1)" % (main_[:2],))
    U.check(work[4].get(main_key, (0,))[:2] == (4, 4), "edge main->work %s" % (work[4].get(main_key),))
    ln = ours.get(("~", 0, "<built-in method builtins.len>"))
    U.check(ln is not None and ln[4].get(work_key, (0,))[0] == 40,
            "len called from work: %r" % (ln and ln[4].get(work_key),))
    st = ours.get(("~", 0, "<built-in method builtins.repr>"))
    if st is not None:
        U.check(st[4].get(work_key, (0,))[0] == 40, "repr from work: %r" % (st[4].get(work_key),))
    # work's time includes its callees': nothing was charged to main instead.
    U.check(main_[3] >= work[3], "main inclusive < work inclusive")
    meta = U.load_json(outdir)
    print("OK: unmatched returns %d, resynced %d, repr seen: %s"
          % (meta["unmatched_returns"], meta["resynced_frames"], st is not None))


main()
