"""Executed lines, arcs and function starts against the settrace oracle.

    test_oracle.py PROGRAM [--branch] [--threads] [ARGS...]

PROGRAM is a file or a package directory's main module in the corpus
(e.g. basic.py, app/main.py). The oracle is a pure-Python sys.settrace
collector run on the same interpreter (tests/python/ptk_coverage_tracer.py):
it sees the LINE events CPython gives any trace function, so the sets must
be equal exactly, on every Python version.
"""
import os
import sys

import ptk_coverage_util as u


def main():
    args = sys.argv[1:]
    prog = args.pop(0)
    branch = "--branch" in args
    threads = "--threads" in args
    args = [a for a in args if a not in ("--branch", "--threads")]
    name = prog.replace("/", "_").replace(".py", "") + ("-branch" if branch else "") \
        + ("-threads" if threads else "")
    wd = u.workdir(name)
    u.copy_corpus(wd, prog.split("/")[0])
    script = os.path.join(wd, prog)
    spec = "coverage:branch=true" if branch else "coverage"
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

    u.compare_sets("executed lines", ours, u.oracle_lines(oracle, measured), "oracle")

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
        u.compare_maps("function calls", {f: ran}, {f: starts[f]}, "oracle")
        for (qual, line), calls in funcs[f].items():
            if calls == 0 and (qual, line) in starts[f]:
                u.fail("%s: %s reported as never called" % (f, qual))

    # Each (code object, line) reaches the plugin once in line mode
    # (PTK_DISABLE); in branch mode every LINE event arrives.
    events = data["meta"]["events"]["line"]
    if branch:
        want = sum(sum(rec["lines"].values()) for fn, rec in oracle.items() if fn in measured)
    else:
        want = sum(oracle[fn]["code_lines"] for fn in measured if fn in oracle)
    if events != want:
        u.fail("LINE events delivered: %d, expected %d (%s)"
               % (events, want, "every event" if branch else "one per code object and line"))

    if branch:
        u.compare_maps("arcs", u.arcs(data), u.oracle_arcs(oracle, measured), "oracle")
        counts = {f: {n: c for n, c in data["files"][f]["hits"]} for f in measured}
        theirs = {f: {int(n): c for n, c in oracle.get(f, {}).get("lines", {}).items()}
                  for f in measured}
        u.compare_maps("line hit counts", counts, theirs, "oracle")
    else:
        for f in measured:
            bad = [n for n, c in data["files"][f]["hits"] if c != 1]
            if bad:
                u.fail("%s: line mode hit counts are not 1: %s" % (f, bad))
    print("ok: %d files, %d executed lines, %d LINE events, Python %s"
          % (len(measured), sum(len(v) for v in ours.values()), events, u.python_version()))


main()
