"""timer vs cProfile on the same program and interpreter: for every function
defined in the program, and every edge leaving one, the call and primitive
call counts must be equal. Also checks the figures are consistent.

usage: test_oracle.py PROGRAM MIN_FUNCS MIN_EDGES MIN_C_EDGES [IGNORE_C...]"""
import os
import sys

import ptk_timer_util as U


def main():
    name, min_funcs, min_edges, min_c = sys.argv[1], *map(int, sys.argv[2:5])
    ignore_c = tuple(sys.argv[5:])
    script = U.program(name)
    outdir, _ = U.run_timer(script)
    ours = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    theirs = U.run_cprofile(script)
    U.check_consistent(ours, "timer.pstats")
    problems, nfuncs, nedges, nc = U.compare_with_cprofile(
        ours, theirs, script, ignore_c)
    for p in problems:
        print("MISMATCH:", p)
    U.check(not problems, "%d mismatches with cProfile" % len(problems))
    # Guard against comparing nothing: the program is known to have these.
    U.check(nfuncs >= min_funcs, "compared %d functions, expected >= %d" % (nfuncs, min_funcs))
    U.check(nedges >= min_edges, "compared %d edges, expected >= %d" % (nedges, min_edges))
    U.check(nc >= min_c, "compared %d edges to C functions, expected >= %d" % (nc, min_c))
    print("OK: %s: %d functions, %d edges (%d to C) equal to cProfile's"
          % (name, nfuncs, nedges, nc))


main()
