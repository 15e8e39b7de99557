"""One set of figures per thread (per_thread=true) plus the merged total,
checked against the counts the program makes by construction."""
import glob
import os

import ptk_timer_util as U


def counts(stats, script):
    a = U.by_name(stats, "work_a", script)
    b = U.by_name(stats, "work_b", script)
    return (sum(v[1] for v in a.values()), sum(v[1] for v in b.values()))


def main():
    script = U.program("threads.py")
    outdir, _ = U.run_timer(script, "per_thread=true,folded=true", threads="all")
    merged = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    U.check_consistent(merged, "merged")
    U.check(counts(merged, script) == (1300, 700),
            "merged (work_a, work_b) = %s, expected (1300, 700)" % (counts(merged, script),))
    files = sorted(glob.glob(os.path.join(outdir, "timer.thread-*.pstats")))
    per = []
    for path in files:
        st = U.load_pstats(path)
        U.check_consistent(st, os.path.basename(path))
        c = counts(st, script)
        if c != (0, 0):
            per.append(c)
        folded = path[:-len(".pstats")] + ".folded"
        U.check(os.path.exists(folded), "%s missing" % folded)
        U.parse_folded(folded)
    U.check(sorted(per) == [(0, 700), (300, 0), (1000, 0)],
            "per-thread (work_a, work_b) = %s" % sorted(per))
    meta = U.load_json(outdir)
    U.check(len(meta["threads"]) == len(files),
            "%d threads in json, %d files" % (len(meta["threads"]), len(files)))
    U.check(sum(t["total_ns"] for t in meta["threads"]) == meta["total_ns"],
            "per-thread totals do not add up to the merged total")
    print("OK: %d thread files, counts %s" % (len(files), sorted(per)))


main()
