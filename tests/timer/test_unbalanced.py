"""A C function reached through classmethod(repr) — on 3.12.0 to 3.12.4 a
C_RETURN comes without its C_CALL — leaves the figures consistent and the
other counts equal to cProfile's."""
import os

import ptk_timer_util as U


def main():
    script = U.program("unbalanced.py")
    outdir, _ = U.run_timer(script)
    ours = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    U.check_consistent(ours)
    theirs = U.run_cprofile(script)
    # Whether repr is seen differs by version, for cProfile and for us.
    problems, nfuncs, _, _ = U.compare_with_cprofile(ours, theirs, script, ("repr",))
    for p in problems:
        print("MISMATCH:", p)
    U.check(not problems, "%d mismatches" % len(problems))
    U.check(nfuncs >= 3, "compared %d functions" % nfuncs)
    work = U.one(ours, "work", script)
    U.check(work[1] == 4, "work called %d times" % work[1])
    ln = ours.get(("~", 0, "<built-in method builtins.len>"))
    U.check(ln is not None and ln[4].get(next(iter(U.by_name(ours, "work", script)))) [0] == 40,
            "len called from work: %r" % (ln,))
    meta = U.load_json(outdir)
    U.check(meta["resynced_frames"] == 0, "resynced %d frames" % meta["resynced_frames"])
    print("OK: unmatched returns %d" % meta["unmatched_returns"])


main()
