"""A program that raises the recursion limit and recurses deep in pure
Python runs to its end under coverage, and its lines are measured.

corpus/deep: 30,000 levels in measured code, and 30,000 in excluded code
that calls the measured code back at the bottom, on the main thread and on
a threading thread. CPython 3.11 runs such recursion in one C frame; with
the legacy backend's frame hook installed every level costs C stack (about
600 bytes), so the hook takes itself out half way down a thread's stack
(lib/backends/frame_hook.c) -- without that, the run crashed at about 15,000 levels
on an 8 MB stack. The executed lines must equal the settrace oracle's and
the output the bare run's.
"""

import ptk_coverage_util as u


def main():
    wd, script, lib = u.program_corpus("deep")
    p, data = u.run_ptk(wd, [script, lib], spec="coverage:include='*/deep/main.py'",
                        threads="all")
    u.check_bare_output(p, [script, lib], wd)
    oracle = u.run_oracle(wd, [script, lib], threads=True)
    u.compare_sets("executed lines", u.executed(data), u.oracle_lines(oracle, [script]),
                   "oracle")
    print("ok: %d lines after 30,000 levels on two threads (%s)"
          % (len(u.executed(data)[script]), u.BACKEND))


main()
