"""Every frame the timer opened was closed by its own RETURN / C_RETURN /
C_EXCEPTION: none was closed because an outer frame returned first
(json resynced_frames), so C functions get their own time, not their
caller's. Python code running inside a C call (str.join over a generator,
sorted(key=...), map) is the case that tests it.

usage: test_balanced.py PROGRAM"""
import os
import sys

import ptk_timer_util as U


def main():
    script = U.program(sys.argv[1])
    outdir, _ = U.run_timer(script)
    meta = U.load_json(outdir)
    U.check_consistent(U.load_pstats(os.path.join(outdir, "timer.pstats")))
    U.check(meta["resynced_frames"] == 0,
            "%d frames were closed by an outer return, not their own "
            "(a C_RETURN or RETURN event went missing)" % meta["resynced_frames"])
    U.check(meta["unmatched_returns"] == 0,
            "%d returns matched no frame" % meta["unmatched_returns"])
    print("OK: balanced, max depth %d" % meta["max_depth"])


main()
