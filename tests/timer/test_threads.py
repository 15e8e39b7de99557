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
    # each file says whose it is: timer.thread-INDEX-NAME
    by_name = {}
    for path in files:
        name = os.path.basename(path)[len("timer.thread-"):-len(".pstats")]
        by_name[name.split("-", 1)[1] if "-" in name else ""] = \
            counts(U.load_pstats(path), script)
    # "worker b/2 (ü)": what a file name should not hold (a '/', spaces,
    # brackets, the two bytes of the ü) as '_'
    for thread, want in (("thread-a", (1000, 0)), ("worker_b_2_____", (0, 700)),
                         ("MainThread", (300, 0))):
        U.check(by_name.get(thread) == want, "%s: %s (files: %s)"
                % (thread, by_name.get(thread), [os.path.basename(f) for f in files]))
    meta = U.load_json(outdir)
    U.check(len(meta["threads"]) == len(files),
            "%d threads in json, %d files" % (len(meta["threads"]), len(files)))
    U.check(sum(t["total_ns"] for t in meta["threads"]) == meta["total_ns"],
            "per-thread totals do not add up to the merged total")
    print("OK: %d thread files, counts %s" % (len(files), sorted(per)))


main()
