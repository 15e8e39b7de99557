"""Executed lines, arcs and function starts against the settrace oracle.

    test_oracle.py PROGRAM [--branch] [--counts] [--calls] [--threads] [ARGS...]

PROGRAM is a file or a package directory's main module in the corpus
(e.g. basic.py, app/main.py). The oracle is a pure-Python sys.settrace
collector run on the same interpreter (tests/python/ptk_coverage_tracer.py):
it sees the LINE events CPython gives any trace function, so the sets must
be equal exactly, on every Python version.

Branch mode measures in one of two ways, and each is checked for itself:
on sys.monitoring (3.12+) without counts=, from BRANCH events (each line
and each branch direction once, then switched off): the branches taken must
be the oracle's transitions out of each branch line; elsewhere (the legacy
backend, or --counts), from every LINE event: every transition and every
count must be the oracle's. By default (calls=false) functions are reported
as run or not, from their lines, and no CALL event is taken -- except where
branches come from every LINE, which needs each call (the session adds
CALL and RETURN there, the subscription's fallback kinds); --calls
(calls=true): the calls of each function must be the oracle's.
"""
import os
import sys

import ptk_coverage_util as u

# Branch events come from sys.monitoring: CPython 3.12+ on its backend.
MONITORING_BRANCHES = u.MONITORING and sys.version_info >= (3, 12)
# No LINE for the first line after a loop that has a break, reached by the
# loop's exit (3.14, 3.15).
LOOP_EXIT_UNSEEN = sys.version_info >= (3, 14)


# Branches from BRANCH_LEFT / BRANCH_RIGHT: 3.14+ on the monitoring backend.
BRANCH_DIRECTIONS = MONITORING_BRANCHES and sys.version_info >= (3, 14)


def conditional_jumps(path):
    """The conditional jumps of every code object compiled from path."""
    import dis
    import types
    with open(path) as src:
        todo = [compile(src.read(), path, "exec")]
    n = 0
    while todo:
        c = todo.pop()
        n += sum(1 for ins in dis.get_instructions(c)
                 if ins.opname.startswith(("POP_JUMP_IF", "FOR_ITER", "END_ASYNC_FOR")))
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return n


def main():
    args = sys.argv[1:]
    prog = args.pop(0)
    branch = "--branch" in args
    counts = "--counts" in args
    threads = "--threads" in args
    nocalls = "--calls" not in args
    args = [a for a in args if a not in ("--branch", "--counts", "--threads", "--calls")]
    name = prog.replace("/", "_").replace(".py", "") + ("-branch" if branch else "") \
        + ("-counts" if counts else "") + ("-threads" if threads else "") \
        + ("" if nocalls else "-calls")
    wd = u.workdir(name)
    u.copy_corpus(wd, prog.split("/")[0])
    script = os.path.join(wd, prog)
    opts = [o for o, on in (("branch=true", branch), ("counts=true", counts),
                            ("calls=true", not nocalls)) if on]
    spec = "coverage:" + ",".join(opts) if opts else "coverage"
    _, data = u.run_ptk(wd, [script] + args, spec=spec,
                        threads="all" if threads else None)
    if data is None:
        u.fail("no coverage.json written")
    oracle = u.run_oracle(wd, [script] + args, threads=threads)
    # What the oracle saw under the work directory is what we must measure.
    files = sorted(f for f in oracle if f.startswith(wd + os.sep))
    ours = u.executed(data)
    measured = sorted(data["files"])
    missing = [f for f in files if f not in measured]
    if missing:
        u.fail("files the oracle saw run but we did not measure: %s" % missing)
    extra = [f for f in measured if not f.startswith(wd + os.sep)]
    if extra:
        u.fail("files measured outside the program's directory: %s" % extra)

    seen = u.oracle_lines(oracle, measured)
    if LOOP_EXIT_UNSEEN and branch and MONITORING_BRANCHES and not counts:
        # 3.14+: the line after a loop with a break, reached by the loop's
        # exit, gives no LINE (docs/events.md); the exit's BRANCH_RIGHT shows
        # it ran, and the plugin counts it as coverage.py does. Allowed
        # exactly where the oracle saw the frame leave from the loop line.
        theirs = u.oracle_arcs(oracle, measured)
        for f in measured:
            leave = {a for a, b in theirs[f] if b < 0}
            for a, b in u.arcs(data)[f]:
                if b > 0 and b in ours[f] - seen[f] and a in leave:
                    print("executed lines: %s: %d, reached by the loop exit at %d "
                          "(no LINE after the loop)" % (os.path.basename(f), b, a))
                    seen[f].add(b)
    u.compare_sets("executed lines", ours, seen, "oracle")

    # The denominator holds everything that ran.
    poss = u.possible(data)
    for f in measured:
        if not ours[f] <= poss[f]:
            u.fail("%s: executed lines not among the possible ones: %s"
                   % (f, sorted(ours[f] - poss[f])))

    # Function starts (generator resumes are not calls).
    starts = u.oracle_starts(oracle, measured)
    funcs = u.functions(data)
    for f in measured:
        ran = {k: c for k, c in funcs[f].items() if c}
        if nocalls:  # whether each function ran: 1 or 0
            u.compare_maps("functions run", {f: ran}, {f: {k: 1 for k in starts[f]}}, "oracle")
            continue
        u.compare_maps("function calls", {f: ran}, {f: starts[f]}, "oracle")
        for (qual, line), calls in funcs[f].items():
            if calls == 0 and (qual, line) in starts[f]:
                u.fail("%s: %s reported as never called" % (f, qual))

    # How the run measured, and so what it must have received: each
    # (code object, line) once where lines are switched off after their
    # first run (PTK_DISABLE); every LINE event where counts or arcs need them.
    by_events = branch and MONITORING_BRANCHES and not counts
    want_how = ("branch events" if by_events else "line transitions") if branch \
        else ("line counts" if counts else "lines")
    how = data["meta"].get("measured")
    if how != want_how:
        u.fail("measured by %r, expected %r" % (how, want_how))
    every = counts or (branch and not by_events)
    calls_in = data["meta"]["events"]["call"]
    if nocalls and not (branch and every) and calls_in:
        u.fail("calls=false, and %d CALL events were taken" % calls_in)
    if (not nocalls or (branch and every)) and not calls_in:
        u.fail("no CALL event taken, and %s needs them"
               % ("counting calls" if not nocalls else "branches from every LINE"))
    events = data["meta"]["events"]["line"]
    if every:
        want = sum(sum(rec["lines"].values()) for fn, rec in oracle.items() if fn in measured)
    else:
        want = sum(oracle[fn]["code_lines"] for fn in measured if fn in oracle)
    if events != want:
        u.fail("LINE events delivered: %d, expected %d (%s)"
               % (events, want, "every event" if every else "one per code object and line"))

    if by_events:
        # The branches taken: the oracle's transitions out of each branch
        # line to one of its destinations, against the arcs the branch
        # events made.
        theirs = u.oracle_arcs(oracle, measured)
        taken_ours, taken_theirs = {}, {}
        nbranch = 0
        for f in measured:
            ours_arcs = set(u.arcs(data)[f])
            dests = {line: set(d) for line, d in data["files"][f]["branches"]}
            nbranch += len(dests)
            taken_ours[f] = {a for a in ours_arcs if a[0] in dests and a[1] in dests[a[0]]}
            taken_theirs[f] = {a for a in theirs[f] if a[0] in dests and a[1] in dests[a[0]]}
            # Every arc a branch event made is a transition that happened.
            stray = sorted(ours_arcs - set(theirs[f]))
            if LOOP_EXIT_UNSEEN:
                # 3.14+: the loop's exit branch points at the first line
                # after a loop that has a `break`, and CPython gives no LINE
                # for it there, so a trace function sees the frame leave
                # from the `for` line (docs/events.md, "The line after a
                # loop that has a break").
                for a, b in list(stray):
                    exits = [x for x in theirs[f] if x[0] == a and x[1] < 0]
                    if b > 0 and exits:
                        print("arcs: %s: %r from the branch event, %r in the oracle "
                              "(no LINE after the loop)" % (os.path.basename(f), (a, b),
                                                           exits[0]))
                        stray.remove((a, b))
                        taken_theirs[f].add((a, b))
            if stray:
                u.fail("%s: arcs the oracle never saw: %s" % (f, stray))
        u.compare_sets("branches taken", taken_ours, taken_theirs, "oracle")
        if nbranch == 0:
            u.fail("the program has no branches to compare")
        if data["meta"]["events"]["branch"] == 0:
            u.fail("no BRANCH event was received")
        if BRANCH_DIRECTIONS:
            # 3.14+: each direction of each conditional jump is delivered
            # once at most (BRANCH_LEFT / BRANCH_RIGHT, each switched off
            # once taken), however often the program runs it.
            bound = 2 * sum(conditional_jumps(f) for f in measured)
            got = data["meta"]["events"]["branch"]
            if got > bound:
                u.fail("%d branch events, more than the %d directions of the measured "
                       "code's conditional jumps" % (got, bound))
            print("branch events: %d, directions: %d" % (got, bound))
        for f in measured:
            bad = [n for n, c in data["files"][f]["hits"] if c != 1]
            if bad:
                u.fail("%s: hit counts are not 1 without counts=: %s" % (f, bad))
    elif branch:
        u.compare_maps("arcs", u.arcs(data), u.oracle_arcs(oracle, measured), "oracle")
        hits = {f: {n: c for n, c in data["files"][f]["hits"]} for f in measured}
        theirs = {f: {int(n): c for n, c in oracle.get(f, {}).get("lines", {}).items()}
                  for f in measured}
        u.compare_maps("line hit counts", hits, theirs, "oracle")
    elif counts:
        hits = {f: {n: c for n, c in data["files"][f]["hits"]} for f in measured}
        theirs = {f: {int(n): c for n, c in oracle.get(f, {}).get("lines", {}).items()}
                  for f in measured}
        u.compare_maps("line hit counts", hits, theirs, "oracle")
    else:
        for f in measured:
            bad = [n for n, c in data["files"][f]["hits"] if c != 1]
            if bad:
                u.fail("%s: line mode hit counts are not 1: %s" % (f, bad))
    print("ok: %d files, %d executed lines, %d LINE events, %d BRANCH events, measured by %s, "
          "Python %s" % (len(measured), sum(len(v) for v in ours.values()), events,
                         data["meta"]["events"].get("branch", 0), how, u.python_version()))


main()
