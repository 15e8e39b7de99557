"""Measured code that excluded code calls back, against the settrace oracle.

    test_callbacks.py lines|branch|calls

corpus/callbacks: main.py is measured (include=), helper.py is not, and
helper calls main's functions back every way a frame starts or ends: a call,
a generator driven from either side, an exception raised through it,
recursion across it, threads it starts, the program's own sys.setprofile.
On the legacy backend with its frame hook (CPython 3.11) the thread runs
helper's frames with no trace or profile function and gets them back for
each measured frame inside (lib/backends/frame_hook.c); elsewhere helper's frames
are skipped by the hooks as any excluded code.

Checked: main.py's executed lines (lines), its arcs and line hit counts
from every LINE event (branch; counts=true on sys.monitoring, where plain
branch mode takes branch events), its calls per function (calls) -- each
equal to the oracle's; the program's output equal to its bare run's (its
own profiler saw the same calls); and, where the frame hook exists, the
whole coverage data equal with it switched off (PYTRACEKIT_FRAME_HOOK=0).
"""
import sys

import ptk_coverage_util as u


def main():
    mode = sys.argv[1]
    wd, script, lib = u.program_corpus("callbacks", "callbacks-" + mode)
    opts = ["include='*/callbacks/main.py'"]
    if mode == "branch":
        opts.append("branch=true")
        if u.MONITORING:
            opts.append("counts=true")
    elif mode == "calls":
        opts.append("calls=true")
    spec = "coverage:" + ",".join(opts)
    p, data = u.run_ptk(wd, [script, lib], spec=spec, threads="all")
    u.check_bare_output(p, [script, lib], wd)
    if sorted(data["files"]) != [script]:
        u.fail("measured %r, expected only %s" % (sorted(data["files"]), script))
    oracle = u.run_oracle(wd, [script, lib], threads=True)
    files = [script]
    u.compare_sets("executed lines", u.executed(data), u.oracle_lines(oracle, files), "oracle")
    if mode == "branch":
        u.compare_maps("arcs", u.arcs(data), u.oracle_arcs(oracle, files), "oracle")
        hits = {script: {n: c for n, c in data["files"][script]["hits"]}}
        theirs = {script: {int(n): c for n, c in oracle[script]["lines"].items()}}
        u.compare_maps("line hit counts", hits, theirs, "oracle")
    if mode == "calls":
        ran = {script: {k: c for k, c in u.functions(data)[script].items() if c}}
        u.compare_maps("function calls", ran, u.oracle_starts(oracle, files), "oracle")
    how = "frame hook on" if u.FRAME_HOOK else "no frame hook"
    if u.FRAME_HOOK:
        _, off = u.run_ptk(wd, [script, lib], spec=spec, threads="all", outdir="out-nohook",
                           env_extra={"PYTRACEKIT_FRAME_HOOK": "0"})
        if off["files"] != data["files"]:
            u.fail("coverage data differs with the frame hook switched off:\n  on:  %r\n"
                   "  off: %r" % (data["files"], off["files"]))
        how += ", equal with it off"
    print("ok: %s: %d lines executed, equal to the oracle's (%s, %s)"
          % (mode, len(u.executed(data)[script]), u.BACKEND, how))


main()
