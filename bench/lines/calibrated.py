"""Whose time per line is right: the lines plugin's or line_profiler's, on a
function whose lines' costs are known without any tracer.

    python3 bench/lines/calibrated.py --build build/r313 [--calls 20000] [--rounds 5]

`work()` below has seven lines of very different cost (a `len`, a few
additions, sums and a sort of slices, a `max`). Each line's cost alone is
measured with `timeit` (its statement, the same locals, no tracer): that is
the truth, as a share of the function's total. Then `work()` runs CALLS
times under line_profiler (LineProfiler.add_function, the build's Python's
venv) and under `pytracekit -p lines:functions=work`, and each line's share
of the function's time is set beside the truth: the largest difference in
points over the lines above 5% of the truth, and each tool's time per hit
above the truth's (what the tool's own cost adds to every line it times).
Least of ROUNDS runs of each (the machine is shared). The tests'
comparison with line_profiler (tests/lines/test_oracle.py, docs/lines.md)
has no truth of its own; this one has.
"""
import argparse
import json
import os
import subprocess
import tempfile
import textwrap

from line_floor import python_of  # the build's interpreter, from its CMakeCache.txt

PROGRAM = textwrap.dedent('''\
    import random, sys
    DATA = list(range(600))
    random.Random(7).shuffle(DATA)


    def work(data):
        a = len(data)
        b = sum(data[:20])
        c = sum(data[:400])
        d = sorted(data[:120])
        e = a + b + c
        f = max(data)
        return e + f + len(d)


    def main(calls):
        for _ in range(calls):
            work(DATA)


    if __name__ == "__main__":
        main(int(sys.argv[1]))
''')

# the body's statements, as timeit times them alone (the locals before each
# are set up as work() has them there)
SETUP = "from __main__ import DATA as data; a = len(data); b = sum(data[:20]); " \
        "c = sum(data[:400]); d = sorted(data[:120]); e = a + b + c; f = max(data)"
STATEMENTS = ["a = len(data)", "b = sum(data[:20])", "c = sum(data[:400])",
              "d = sorted(data[:120])", "e = a + b + c", "f = max(data)",
              "e + f + len(d)"]
FIRST = 7  # the line of `a = len(data)` in PROGRAM

LP = r'''
import json, runpy, sys, time
from line_profiler import LineProfiler
prog, calls, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ns = runpy.run_path(prog, run_name="prog")
prof = LineProfiler()
work = prof(ns["work"])
data = ns["DATA"]
prof.enable_by_count()
for _ in range(calls):
    work(data)
prof.disable_by_count()
st = prof.get_stats()
rows = {}
for (fname, first, name), lines in st.timings.items():
    for lineno, hits, t in lines:
        rows[lineno] = [hits, t * st.unit * 1e9]
json.dump(rows, open(out, "w"))
'''


def truth(python, prog, tmp):
    """ns per execution of each line alone, least of 7 timeit repeats."""
    code = ("import sys, timeit, json, runpy\n"
            "ns = runpy.run_path(%r, run_name='prog')\n"
            "import __main__; __main__.DATA = ns['DATA']\n"
            "out = []\n"
            "for s in %r:\n"
            "    t = timeit.Timer(s, setup=%r)\n"
            "    n, _ = t.autorange()\n"
            "    out.append(min(t.repeat(7, n)) / n * 1e9)\n"
            "print(json.dumps(out))\n") % (prog, STATEMENTS, SETUP)
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def line_profiler_run(python, prog, calls, tmp):
    out = os.path.join(tmp, "lp.json")
    subprocess.run([python, "-c", LP, prog, str(calls), out], check=True)
    with open(out) as f:
        rows = json.load(f)
    return {int(k): v for k, v in rows.items()}


def lines_run(build, python, prog, calls, tmp):
    out = os.path.join(tmp, "ours")
    cli = os.path.join(build, "tools", "pytracekit")
    env = dict(os.environ, PTK_PLUGIN_DIR=os.path.join(build, "plugins"))
    subprocess.run([cli, "-o", out, "-p",
                    "lines:functions=work,html=false,top=0", prog, str(calls)],
                   check=True, env=env, capture_output=True)
    with open(os.path.join(out, "lines.json")) as f:
        files = json.load(f)["files"]
    (rec,) = files.values()
    return {int(k): [v["hits"], v["time_ns"]] for k, v in rec["lines"].items()}


def shares(per_line):
    total = sum(per_line)
    return [100.0 * t / total for t in per_line]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    python = python_of(a.build)
    tmp = tempfile.mkdtemp(prefix="ptk-calibrated-")
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    nlines = len(STATEMENTS)
    best = {"truth": None, "line_profiler": None, "lines": None}
    for _ in range(a.rounds):
        got = {"truth": truth(python, prog, tmp)}
        for name, run in (("line_profiler", line_profiler_run),
                          ("lines", lambda p, pr, c, t: lines_run(a.build, p, pr, c, t))):
            rows = run(python, prog, a.calls, tmp)
            hits = [rows[FIRST + i][0] for i in range(nlines)]
            if hits != [a.calls] * nlines:
                raise SystemExit("%s: hits %s, not %d on each line" % (name, hits, a.calls))
            got[name] = [rows[FIRST + i][1] / a.calls for i in range(nlines)]
        for k, v in got.items():  # least per line over the rounds
            best[k] = v if best[k] is None else [min(x, y) for x, y in zip(best[k], v)]
    want = shares(best["truth"])
    ver = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                         capture_output=True, text=True).stdout.strip()
    print("Python %s, %d calls of work(), least of %d rounds; ns per hit and %% of the "
          "function" % (ver, a.calls, a.rounds))
    print("| line | truth (timeit) | line_profiler | lines |")
    print("|---|---:|---:|---:|")
    lp, ours = shares(best["line_profiler"]), shares(best["lines"])
    for i, s in enumerate(STATEMENTS):
        print("| `%s` | %.0f ns, %.1f%% | %.0f ns, %.1f%% | %.0f ns, %.1f%% |" % (
            s, best["truth"][i], want[i], best["line_profiler"][i], lp[i],
            best["lines"][i], ours[i]))
    for name, got in (("line_profiler", lp), ("lines", ours)):
        worst = max(abs(g - w) for g, w in zip(got, want) if w > 5)
        extra = (sum(best[name]) - sum(best["truth"])) / nlines
        print("%s: largest difference from the truth over the lines above 5%%: %.1f points; "
              "%.0f ns a hit above the truth on average" % (name, worst, extra))


if __name__ == "__main__":
    main()
