"""Options: bad ones are load errors; top=, sort= and builtins= do what they
say.

usage: test_options.py CASE"""
import os
import re
import sys

import ptk_timer_util as U

ROW = re.compile(r"^\s*(\d+)(?:/(\d+))?\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\S.*)$")


def summary_rows(stderr):
    lines = stderr.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if re.search(r"timer: top \d+ by ", l))
    except StopIteration:
        U.fail("no summary table on stderr:\n" + stderr)
    rows = []
    for line in lines[start + 2:]:
        m = ROW.match(line)
        if not m:
            break
        rows.append((int(m.group(1)), float(m.group(3)), float(m.group(4)), m.group(5)))
    return rows


def rejected(opts, word):
    outdir, proc = U.run_timer(U.program("recursion.py"), opts, check_rc=False)
    U.check(proc.returncode != 0, "-p timer:%s was accepted" % opts)
    U.check(word in proc.stderr, "error for %r does not name %r:\n%s" % (opts, word, proc.stderr))
    U.check(not os.path.exists(os.path.join(outdir, "timer.pstats")),
            "a report was written despite the bad option")
    print("OK: %s rejected: %s" % (opts, proc.stderr.strip().splitlines()[-1]))


def main():
    case = sys.argv[1]
    script = U.program("recursion.py")
    if case == "unknown_key":
        rejected("bogus=1", "bogus")
    elif case == "bad_clock":
        rejected("clock=sundial", "clock")
    elif case == "bad_sort":
        rejected("sort=size", "sort")
    elif case == "bad_bool":
        rejected("builtins=maybe", "builtins")
    elif case == "negative_top":
        rejected("top=-1", "top")
    elif case.startswith("sort_"):
        key = case[len("sort_"):]
        _, proc = U.run_timer(script, "sort=%s,top=8" % key)
        rows = summary_rows(proc.stderr)
        U.check(len(rows) == 8, "%d rows, expected 8:\n%s" % (len(rows), proc.stderr))
        col = {"calls": 0, "tottime": 1, "cumtime": 2}[key]
        values = [r[col] for r in rows]
        U.check(values == sorted(values, reverse=True),
                "rows not sorted by %s: %s" % (key, values))
        U.check("by %s" % key in proc.stderr, "summary does not say the order")
        if key == "calls":
            # fib(16) makes 3193 calls: the most of any function.
            U.check(rows[0][0] == 3193 and rows[0][3].startswith("fib ("),
                    "first row by calls: %r" % (rows[0],))
        print("OK: sorted by", key)
    elif case == "top":
        _, proc = U.run_timer(script, "top=3")
        rows = summary_rows(proc.stderr)
        U.check(len(rows) == 3, "top=3 gave %d rows" % len(rows))
        _, proc = U.run_timer(script, "top=0")
        U.check("timer: top" not in proc.stderr, "top=0 still printed a table")
        U.check("timer:" in proc.stderr, "top=0 dropped the summary line")
        print("OK: top")
    elif case == "builtins_false":
        outdir, _ = U.run_timer(script, "builtins=false")
        stats = U.load_pstats(os.path.join(outdir, "timer.pstats"))
        c = [k for k in stats if k[0] == "~"]
        U.check(not c, "builtins=false still has C functions: %s" % c[:5])
        U.check(U.one(stats, "fib", script)[1] == 3193, "fib count changed")
        outdir, _ = U.run_timer(script, "builtins=true")
        stats = U.load_pstats(os.path.join(outdir, "timer.pstats"))
        U.check(("~", 0, "<built-in method builtins.sum>") in stats,
                "builtins=true has no builtins.sum")
        print("OK: builtins")
    else:
        U.fail("unknown case " + case)


main()
