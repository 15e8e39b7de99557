"""Per-test coverage contexts on a real test suite: the cost, and the lines
per context against coverage.py's.

    python3 bench/pytest/contexts.py PYTHON BUILD_DIR PACKAGE_DIR TESTS [ROUNDS [VARIANTS]]

PYTHON must have pytest, pytest-cov and coverage.py; BUILD_DIR is a build
of this tree for it (a Release build for the figures); PACKAGE_DIR holds the
package under test (networkx/) and goes on PYTHONPATH; TESTS is what pytest
runs (a tests directory of it). Eight variants, each ROUNDS times (default
1, the rounds interleaved), whole-process CPU (user + system, of pytest and
its children):

    bare       pytest alone
    lines      -p pytracekit --ptk coverage:include=PACKAGE_DIR/*
    contexts   ... ,contexts=true,coveragepy=yes   (each test's setup/call/teardown)
    deferred   ... ,contexts=true,coveragepy=yes,reports=false  (the data only; the
               summary's table is built from it at the end of the session)
    data       ... ,reports=false, and --ptk-summary no: the data only, no table
               (what covpy does)
    data_json  data without coveragepy=yes: coverage.json alone (the per-test
               contexts in pytracekit's own file; `pytracekit report`, html and
               combine read it; no .coverage for coverage.py's commands)
    covpy      pytest-cov --cov-context=test on coverage.py's C tracer
               (COVERAGE_CORE=ctrace), --cov-report= (the data only)
    covpy_term the same with pytest-cov's default report, the terminal table

VARIANTS (comma-separated, default all) runs only those; bare and covpy are
always run (the ratios' bases). Then the lines of each context: coverage.json's and .coverage's (read by
coverage.py) against coverage.py's .coverage, pytest-cov's "|run" read as
"|call". Prints one table and the differing lines.
"""
import json
import os
import subprocess
import sys
import tempfile

from suite import best_cpu, environments


def contexts_of(python, data_file, cwd, pkg):
    out = os.path.join(cwd, "cj.json")
    subprocess.run([python, "-m", "coverage", "json", "--data-file", data_file,
                    "--show-contexts", "-o", out, "-q"], cwd=cwd, check=True,
                   capture_output=True)
    with open(out) as f:
        return norm(json.load(f)["files"], pkg)


def norm(files, pkg):
    r = {}
    for k, v in files.items():
        path = k if os.path.isabs(k) else os.path.join(pkg, k)
        r[os.path.realpath(path)] = {
            int(n): sorted(c.replace("|run", "|call") for c in names)
            for n, names in v.get("contexts", {}).items()}
    return r


def compare(got, want):
    lines = pairs = 0
    diff = []
    for f in sorted(set(got) | set(want)):
        g, w = got.get(f, {}), want.get(f, {})
        for n in sorted(set(g) | set(w)):
            lines += 1
            pairs += len(w.get(n, []))
            if set(g.get(n, [])) != set(w.get(n, [])):
                diff.append((f, n, sorted(set(g.get(n, [])) - set(w.get(n, []))),
                             sorted(set(w.get(n, [])) - set(g.get(n, [])))))
    return lines, pairs, diff


def main(argv):
    python, build, pkg, tests = argv[:4]
    rounds = int(argv[4]) if len(argv) > 4 else 1
    pkg = os.path.abspath(pkg)
    work = tempfile.mkdtemp(prefix="ptk-bench-ctx-")
    plain, ours = environments(build, pkg)
    pytest = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    include = f"coverage:include={pkg}/*"
    variants = {
        "bare": (pytest + ["-p", "no:pytracekit", tests], plain),
        "lines": (pytest + ["-p", "pytracekit", "--ptk", include, "--ptk-output", "lines",
                            tests], ours),
        "contexts": (pytest + ["-p", "pytracekit", "--ptk",
                               include + ",contexts=true,coveragepy=yes",
                               "--ptk-output", "ctx", tests], ours),
        "deferred": (pytest + ["-p", "pytracekit", "--ptk",
                               include + ",contexts=true,coveragepy=yes,reports=false",
                               "--ptk-output", "dfr", tests], ours),
        "data": (pytest + ["-p", "pytracekit", "--ptk",
                           include + ",contexts=true,coveragepy=yes,reports=false",
                           "--ptk-summary", "no", "--ptk-output", "data", tests], ours),
        "data_json": (pytest + ["-p", "pytracekit", "--ptk",
                                include + ",contexts=true,reports=false",
                                "--ptk-summary", "no", "--ptk-output", "dataj", tests], ours),
        "covpy": (pytest + ["-p", "no:pytracekit", "--cov=" + pkg, "--cov-context=test",
                            "--cov-report=", tests], dict(plain, COVERAGE_CORE="ctrace")),
        "covpy_term": (pytest + ["-p", "no:pytracekit", "--cov=" + pkg, "--cov-context=test",
                                 "--cov-report=term", tests],
                       dict(plain, COVERAGE_CORE="ctrace")),
    }
    if len(argv) > 5:
        keep = set(argv[5].split(",")) | {"bare", "covpy"}
        unknown = keep - set(variants)
        if unknown:
            sys.exit(f"unknown variants {sorted(unknown)} (known: {', '.join(variants)})")
        variants = {k: v for k, v in variants.items() if k in keep}
    best = best_cpu(variants, rounds, work)
    ver = subprocess.run([python, "-c", "import sys, coverage, pytest; print(sys.version.split()[0],"
                          " coverage.__version__, pytest.__version__)"],
                         capture_output=True, text=True).stdout.split()
    print(f"Python {ver[0]}, coverage.py {ver[1]}, pytest {ver[2]}; {tests}; "
          f"CPU s (best of {rounds})")
    term = best.get("covpy_term")
    print("| variant | CPU s | × bare | × covpy | × covpy_term |")
    print("|---|---|---|---|---|")
    for k in variants:
        vs_term = f"{best[k] / term:.2f}" if term else "–"
        print(f"| {k} | {best[k]:.2f} | {best[k] / best['bare']:.2f} | "
              f"{best[k] / best['covpy']:.2f} | {vs_term} |")
    want = contexts_of(python, os.path.join(work, ".coverage"), work, pkg)
    got = []
    if "contexts" in variants:
        with open(os.path.join(work, "ctx", "coverage.json")) as f:
            got.append(("coverage.json", norm(json.load(f)["files"], pkg)))
        got.append((".coverage", contexts_of(python, os.path.join(work, "ctx", ".coverage"),
                                             work, pkg)))
    for name, d in (("deferred", "dfr"), ("data", "data")):
        if name in variants:
            got.append((f"{name} .coverage", contexts_of(python, os.path.join(work, d, ".coverage"),
                                                         work, pkg)))
    if "data_json" in variants:
        with open(os.path.join(work, "dataj", "coverage.json")) as f:
            got.append(("data_json coverage.json", norm(json.load(f)["files"], pkg)))
    ncontexts = len({c for f in want.values() for cs in f.values() for c in cs})
    for what, got in got:
        lines, pairs, diff = compare(got, want)
        print(f"{what}: {ncontexts} contexts, {lines} lines, {pairs} (line, context) "
              f"pairs of coverage.py's; lines whose contexts differ: {len(diff)}")
        for f, n, only_ours, only_theirs in diff:
            print(f"  {os.path.relpath(f, pkg)}:{n} only ours {len(only_ours)} "
                  f"{only_ours[:1]}, only coverage.py's {len(only_theirs)} {only_theirs[:1]}")


if __name__ == "__main__":
    main(sys.argv[1:])
