"""Times are consistent: own <= inclusive everywhere; a 50 ms sleep shows
>= 50 ms inclusive under clock=wall and about 0 under clock=cpu; the sum of
own times covers the traced run; main()'s inclusive time agrees with the
program's own measure of it.

usage: test_timing.py wall|cpu"""
import json
import os
import sys

import ptk_timer_util as U


def main():
    clock = sys.argv[1]
    script = U.program("timing.py")
    measure = os.path.join(U.tempdir(), "measure.json")
    outdir, _ = U.run_timer(script, "clock=" + clock, args=[measure])
    with open(measure) as f:
        own_measure = json.load(f)
    stats = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    meta = U.load_json(outdir)
    U.check(meta["clock"] == clock, "json clock %r, expected %r" % (meta["clock"], clock))
    U.check_consistent(stats)

    sleep_ct = U.one(stats, "sleeper", script)[3]
    main_ct = U.one(stats, "main", script)[3]
    spin = U.one(stats, "spin", script)
    caller = U.one(stats, "caller", script)
    U.check(spin[1] == 60, "spin called %d times, expected 60" % spin[1])
    # caller's inclusive time is its own plus its callees'.
    U.check(abs(caller[3] - (caller[2] + spin[3])) <= 1e-6,
            "caller inclusive %.9f != own %.9f + spin %.9f" % (caller[3], caller[2], spin[3]))
    total_s = meta["total_ns"] * 1e-9
    own_sum = sum(v[2] for v in stats.values())
    U.check(abs(own_sum - total_s) <= 1e-6 * max(1, len(stats)),
            "sum of own times %.9f != total %.9f" % (own_sum, total_s))
    if clock == "wall":
        U.check(sleep_ct >= 0.050, "sleeper inclusive %.6f s < 50 ms" % sleep_ct)
        ref = own_measure["main_wall_s"]
        # main's frame encloses the program's own perf_counter() pair.
        U.check(main_ct >= ref * 0.999, "main %.6f s < its own measure %.6f s" % (main_ct, ref))
        U.check(main_ct <= ref * 1.05 + 0.05, "main %.6f s >> its own measure %.6f s" % (main_ct, ref))
        # Everything the session timed is in some frame: the sum of own
        # times is the traced wall time, less the moments outside any frame.
        elapsed = meta["elapsed_s"]
        U.check(total_s <= elapsed * 1.001 + 1e-4,
                "sum of own times %.6f s > session %.6f s" % (total_s, elapsed))
        U.check(total_s >= main_ct, "sum of own %.6f < main %.6f" % (total_s, main_ct))
        # Outside any frame: the hub starting and stopping, the program
        # being compiled. A few percent, or a scheduling delay on a busy
        # machine (50 ms).
        gap = elapsed - total_s
        U.check(gap <= max(0.03 * elapsed, 0.05),
                "sum of own times %.6f s is %.6f s short of the session's %.6f s"
                % (total_s, gap, elapsed))
        print("sum of own times / session wall time = %.4f" % (total_s / elapsed))
    else:
        U.check(sleep_ct < 0.010, "sleeper cpu time %.6f s, expected about 0" % sleep_ct)
        ref = own_measure["main_cpu_s"]
        U.check(main_ct >= ref * 0.95, "main cpu %.6f s < its own measure %.6f s" % (main_ct, ref))
        U.check(main_ct <= ref * 1.05 + 0.005, "main cpu %.6f s >> its own measure %.6f s" % (main_ct, ref))
        U.check(spin[3] > 0, "spin has no CPU time")
    print("OK: clock=%s sleeper %.6f s, main %.6f s (own measure %.6f s), total %.6f s"
          % (clock, sleep_ct, main_ct, ref, total_s))


main()
