"""A measured frame whose RETURN the hub never sees, because the program
took the trace function away inside it, must not lend its code object to a
later frame at the same address.

corpus/displaced: main.py's displaced() calls sys.settrace(None) and returns
untraced; helper.restore() (not measured), started while nothing traces,
puts the hub back with sys.settrace(hub) and runs more lines. Its frame
object is made after displaced()'s was freed, at the same size, so CPython
usually gives it the same address. The legacy backend's shadow stack still
held displaced()'s entry there, and lines of restore() were counted as
main.py's lines 14 and 15, which never ran traced. The hub now drops
entries whose frames no longer run when it is put back (hub_call).

Checked: main.py's executed lines are exactly the traced ones, equal to the
settrace oracle's (which the program displaces the same way), and the
program runs to its end. On sys.monitoring nothing is displaced: every line
that ran is measured.
"""

import ptk_coverage_util as u

# Legacy: the module's lines but 23 (it runs after displaced() took the
# trace function, before restore() puts it back), displaced()'s line before
# sys.settrace(None); never() and the rest of displaced() run untraced.
WANT = {1, 2, 3, 6, 12, 13, 20, 21, 22, 24}
# sys.monitoring is not the settrace slot: the program's sys.settrace(None)
# takes nothing away from it (docs/backends.md), and every line that runs is
# measured.
WANT_MONITORING = WANT | {14, 15, 16, 17, 23}


def main():
    wd, script, lib = u.program_corpus("displaced")
    p, data = u.run_ptk(wd, [script, lib], spec="coverage:include='*/displaced/main.py'")
    if p.stdout.strip() != "done":
        u.fail("the program printed %r" % p.stdout)
    got = u.executed(data).get(script, set())
    want = WANT_MONITORING if u.MONITORING else WANT
    if got != want:
        u.fail("main.py lines executed: %s\n  expected %s\n  extra %s, missing %s"
               % (sorted(got), sorted(want), sorted(got - want), sorted(want - got)))
    if u.MONITORING:
        print("ok: %d lines, every line that ran (monitoring: not displaced)" % len(got))
        return
    oracle = u.run_oracle(wd, [script, lib])
    u.compare_sets("executed lines", {script: got}, u.oracle_lines(oracle, [script]),
                   "oracle")
    print("ok: %d lines, as traced (%s)" % (len(got), u.BACKEND))


main()
