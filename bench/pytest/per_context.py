"""Per-test profiles on a real test suite: what `per_context=true` costs the
counter, the timer and the lines plugin, beside cProfile, and whether each
test's figures add up to the whole run's.

    python3 bench/pytest/per_context.py PYTHON BUILD_DIR PACKAGE_DIR TESTS [ROUNDS]

The arguments are contexts.py's (PYTHON needs pytest; BUILD_DIR a Release
build of this tree for it; PACKAGE_DIR goes on PYTHONPATH; TESTS is what
pytest runs). Variants, each ROUNDS times (default 1, the rounds
interleaved), whole-process CPU (user + system):

    bare              pytest alone
    cprofile          python -m cProfile -o F -m pytest   (the whole run's profile)
    timer             -p pytracekit --ptk timer
    timer_ctx         ... timer:per_context=true          (a profile per test phase)
    counter           -p pytracekit --ptk counter
    counter_ctx       ... counter:per_context=true
    lines             -p pytracekit --ptk lines:modules=M,html=false (M: the package
                      TESTS is in, networkx.classes for networkx/classes/tests)
    lines_ctx         ... lines:modules=M,html=false,per_context=true

Then, from the last round's reports:
  - timer_ctx: per function, the calls of every context's pstats add up to
    the run's timer.pstats, and the contexts' "calls" to the run's;
  - counter_ctx: per function and per event kind, the contexts add up to the
    run's figures;
  - lines_ctx: per line, the contexts' hits and time add up to the run's;
  - the timer's whole-run calls per function against cProfile's (the same
    hash seed; a suite whose tests take different paths from run to run
    shows those functions, which are printed).
"""
import json
import marshal
import os
import subprocess
import sys
import tempfile

from suite import best_cpu, environments


def report(out, plugin):
    with open(os.path.join(out, plugin + ".json")) as f:
        return json.load(f)


def check_timer(out):
    r = report(out, "timer")
    whole = calls_of(os.path.join(out, "timer.pstats"))
    total = {}
    for c in r["contexts"]:
        with open(os.path.join(out, c["pstats"]), "rb") as f:
            for k, v in marshal.load(f).items():
                total[k] = total.get(k, 0) + v[1]
    diff = [k for k in set(total) | set(whole) if total.get(k) != whole.get(k)]
    calls = sum(c["calls"] for c in r["contexts"])
    print(f"timer_ctx: {len(r['contexts'])} contexts, {len(whole)} functions, "
          f"{sum(whole.values())} calls; functions whose contexts' calls do not add up "
          f"to the run's: {len(diff)}; contexts' calls {calls} against the run's {r['calls']}")
    return not diff and calls == r["calls"]


def check_counter(out):
    r = report(out, "counter")

    def key(f):
        return (f["kind"], f["file"], f["qualname"], f["line"], f.get("label"))
    total, events = {}, {}
    for rec in r["contexts"].values():
        for f in rec["functions"]:
            total[key(f)] = total.get(key(f), 0) + f["calls"]
        for e, n in rec["events"].items():
            events[e] = events.get(e, 0) + n
    # two C functions can have one name (3.14's Generic.__init_subclass__
    # and object's are both "<method '__init_subclass__' of 'object'
    # objects>", as cProfile names them): their rows are added up here
    whole, rows = {}, {}
    for f in r["functions"]:
        whole[key(f)] = whole.get(key(f), 0) + f["calls"]
        rows[key(f)] = rows.get(key(f), 0) + 1
    diff = [k for k in set(total) | set(whole) if total.get(k) != whole.get(k)]
    same = sum(1 for n in rows.values() if n > 1)
    print(f"counter_ctx: {len(r['contexts'])} contexts, {len(r['functions'])} functions "
          f"({same} names on more than one), "
          f"{sum(r['events'].values())} events; functions that do not add up: {len(diff)}; "
          f"event kinds that do not add up: "
          f"{sum(1 for e in set(events) | set(r['events']) if events.get(e) != r['events'].get(e))}")
    return not diff and events == r["events"]


def check_lines(out):
    r = report(out, "lines")
    total = {}
    for c in r["contexts"].values():
        for path, rec in c["files"].items():
            for n, v in rec["lines"].items():
                h, t = total.get((path, n), (0, 0))
                total[(path, n)] = (h + v["hits"], t + v["time_ns"])
    whole = {(path, n): (v["hits"], v["time_ns"])
             for path, rec in r["files"].items() for n, v in rec["lines"].items()}
    diff = [k for k in set(total) | set(whole) if total.get(k) != whole.get(k)]
    print(f"lines_ctx: {len(r['contexts'])} contexts, {len(whole)} lines, "
          f"{sum(h for h, _ in whole.values())} hits; lines whose contexts do not add up "
          f"to the run's (hits and time): {len(diff)}")
    return not diff


def calls_of(pstats_file):
    """{function key: calls} of a pstats (marshal) file."""
    with open(pstats_file, "rb") as f:
        return {k: v[1] for k, v in marshal.load(f).items()}


def main(argv):
    python, build, pkg, tests = argv[:4]
    rounds = int(argv[4]) if len(argv) > 4 else 1
    pkg = os.path.abspath(pkg)
    work = tempfile.mkdtemp(prefix="ptk-bench-perctx-")
    plain, ours = environments(build, pkg)
    pytest = ["-m", "pytest", "-p", "no:cacheprovider", "-q"]
    cprof = os.path.join(work, "cprofile.pstats")
    # the package the tests are in: networkx/classes/tests -> networkx.classes
    rel = os.path.relpath(os.path.abspath(tests), pkg).split(os.sep)
    module = ".".join(rel[:-1] if rel[-1] == "tests" else rel)

    def ptk(spec, out):
        return ([python] + pytest + ["-p", "pytracekit", "--ptk", spec, "--ptk-output", out,
                                     tests], ours)
    variants = {
        "bare": ([python] + pytest + ["-p", "no:pytracekit", tests], plain),
        "cprofile": ([python, "-m", "cProfile", "-o", cprof] + pytest
                     + ["-p", "no:pytracekit", tests], plain),
        "timer": ptk("timer", "timer"),
        "timer_ctx": ptk("timer:per_context=true", "timer_ctx"),
        "counter": ptk("counter", "counter"),
        "counter_ctx": ptk("counter:per_context=true", "counter_ctx"),
        "lines": ptk(f"lines:modules={module},html=false", "lines"),
        "lines_ctx": ptk(f"lines:modules={module},html=false,per_context=true", "lines_ctx"),
    }
    best = best_cpu(variants, rounds, work)
    ver = subprocess.run([python, "-c", "import sys, pytest; print(sys.version.split()[0], "
                          "pytest.__version__)"], capture_output=True, text=True).stdout.split()
    print(f"Python {ver[0]}, pytest {ver[1]}; {tests}; CPU s (best of {rounds})")
    print("| variant | CPU s | × bare | × cprofile |")
    print("|---|---|---|---|")
    for k in variants:
        print(f"| {k} | {best[k]:.2f} | {best[k] / best['bare']:.2f} | "
              f"{best[k] / best['cprofile']:.2f} |")
    ok = check_timer(os.path.join(work, "timer_ctx"))
    ok = check_counter(os.path.join(work, "counter_ctx")) and ok
    ok = check_lines(os.path.join(work, "lines_ctx")) and ok
    # the same program under both; the tools' own start-up differs, so only
    # the functions of the package under test are compared
    mine = calls_of(os.path.join(work, "timer", "timer.pstats"))
    theirs = calls_of(cprof)
    keys = {k for k in set(mine) | set(theirs) if k[0].startswith(pkg + os.sep)}
    diff = sorted(k for k in keys if mine.get(k) != theirs.get(k))
    print(f"timer against cProfile: {len(keys)} functions of {pkg}, "
          f"{sum(theirs.get(k, 0) for k in keys)} calls in cProfile's profile; "
          f"functions whose calls differ: {len(diff)}")
    for k in diff[:20]:
        print(f"  {os.path.relpath(k[0], pkg)}:{k[1]}({k[2]}) ours {mine.get(k)} "
              f"cProfile's {theirs.get(k)}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
