"""coveragepy=: the .coverage data file written through coverage.py's API.

    test_datafile.py CASE

lines, branch   `coverage report` and `coverage json` on our .coverage equal
                the same commands on coverage.py's own measurement of the
                same run; `coverage html` renders it
lines-deferred, branch-deferred
                the same with reports=false (the run writes the data only)
combine         `coverage combine` of two of our runs equals coverage.py's
                combination of its two runs; so does `pytracekit-coverage
                combine --coveragepy`
contexts        contexts=true's data (lines per context) written as .coverage
                reads back through coverage.py's CoverageData line for line
                and context for context, written straight into its tables
                where the file is of the schema known here, and else
                through add_lines in one connection to the database
                (coverage.py opens one per add_lines otherwise: 0.8 s of
                the report for networkx's 3,321 test contexts);
                and the plugin's own .coverage of a run with contexts
                (immediate and deferred) holds coverage.json's contexts
arc_contexts    contexts=true with branch=true (arcs per context), merged from
                two halves by pytracekit-coverage's merge, written as .coverage:
                reads back through CoverageData arc for arc per context, in
                one connection
missing         coveragepy=yes is refused (exit 2) where coverage.py is not
                importable; coveragepy=auto then says so and writes no .coverage
Cases but `missing` skip (77) where coverage.py is not importable, `missing`
where it is.
"""
import json
import os
import shutil
import sys

import ptk_coverage_util as u

ENV = {"COVERAGE_RCFILE": os.devnull}


def cov(wd, *args):
    return u.run([u.python(), "-m", "coverage"] + list(args), wd, env_extra=ENV)


def their_run(wd, argv, datafile, branch):
    cmd = [u.python(), "-m", "coverage", "run", "--data-file=" + datafile,
           "--source=" + wd] + (["--branch"] if branch else [])
    u.run(cmd + argv, wd, env_extra=ENV)


def figures(wd, datafile):
    """`coverage report` text and `coverage json` figures of a data file."""
    rep = cov(wd, "report", "--data-file=" + datafile, "--precision=1", "--show-missing")
    out = datafile + ".json"
    cov(wd, "json", "--data-file=" + datafile, "-o", out)
    with open(out) as f:
        js = json.load(f)
    # meta differs (timestamp, and ours has no coverage.py version stamp)
    return rep.stdout, {"files": js["files"], "totals": js["totals"]}


def compare(what, ours, theirs):
    if ours[0] != theirs[0]:
        u.fail("%s: coverage report differs\nours:\n%s\ncoverage.py's:\n%s"
               % (what, ours[0], theirs[0]))
    if ours[1] != theirs[1]:
        u.fail("%s: coverage json differs\nours: %s\ncoverage.py's: %s"
               % (what, json.dumps(ours[1])[:2000], json.dumps(theirs[1])[:2000]))


def case_run(branch, deferred=False):
    for n, (prog, args) in enumerate((("app/main.py", ["a"]), ("basic.py", []))):
        # One directory per program: coverage.py's --source= reports the
        # unexecuted files under it too.
        wd = u.workdir("datafile" + ("-branch" if branch else ""))
        u.copy_corpus(wd, prog.split("/")[0])
        argv = [os.path.join(wd, prog)] + args
        spec = "coverage:coveragepy=yes" + (",branch=true" if branch else "") \
            + (",reports=false" if deferred else "")
        out = "out%d" % n
        p, data = u.run_ptk(wd, argv, spec=spec, outdir=out)
        if deferred and (data["meta"].get("deferred") is not True
                         or os.path.exists(os.path.join(wd, out, "coverage.lcov"))):
            u.fail("reports=false: not deferred data, or reports written")
        ours = os.path.join(wd, out, ".coverage")
        if not os.path.exists(ours):
            u.fail("no %s" % ours)
        theirs = os.path.join(wd, ".coverage-theirs%d" % n)
        their_run(wd, argv, theirs, branch)
        compare(os.path.basename(argv[0]), figures(wd, ours), figures(wd, theirs))
        print(figures(wd, ours)[0])
    html = os.path.join(wd, "htmlcov")
    cov(wd, "html", "--data-file=" + os.path.join(wd, "out1", ".coverage"), "-d", html)
    pages = sorted(os.listdir(html))
    if "index.html" not in pages or not any(p.endswith("basic_py.html") for p in pages):
        u.fail("coverage html wrote %s" % pages)
    print("ok: coverage report/json on our .coverage equal coverage.py's own; "
          "coverage html wrote %d files" % len(pages))


def case_lines():
    case_run(False)


def case_branch():
    case_run(True)


def case_combine():
    wd = u.workdir("datafile-combine")
    u.copy_corpus(wd, "app")
    main = os.path.join(wd, "app", "main.py")
    ours_dir = os.path.join(wd, "ours")
    theirs_dir = os.path.join(wd, "theirs")
    os.makedirs(ours_dir)
    os.makedirs(theirs_dir)
    for arg in ("a", "b"):
        u.run_ptk(wd, [main, arg], spec="coverage:coveragepy=yes,branch=true",
                  outdir="out-" + arg)
        shutil.copy(os.path.join(wd, "out-" + arg, ".coverage"),
                    os.path.join(ours_dir, ".coverage." + arg))
        their_run(wd, [main, arg], os.path.join(theirs_dir, ".coverage." + arg), True)
    for d in (ours_dir, theirs_dir):
        cov(wd, "combine", "--data-file=" + os.path.join(d, ".coverage"), d)
    ours = figures(wd, os.path.join(ours_dir, ".coverage"))
    compare("coverage combine", ours, figures(wd, os.path.join(theirs_dir, ".coverage")))
    # Our own combine, writing .coverage too.
    u.run([u.python(), u.COMBINE, "combine", "--coveragepy", "-o", "merged",
           "out-a", "out-b"], wd)
    compare("pytracekit-coverage combine --coveragepy",
            figures(wd, os.path.join(wd, "merged", ".coverage")), ours)
    print(ours[0])
    print("ok: coverage combine of our two runs equals coverage.py's; so does "
          "pytracekit-coverage combine --coveragepy")


def case_contexts():
    import sqlite3
    import coverage
    fmt = u.format_module()
    wd = u.workdir("datafile-contexts")
    files = [os.path.join(wd, "m%d.py" % i) for i in range(5)]
    # 300 contexts: context k ran lines 1..(k % 7 + 1) of files k % 5 and (k + 1) % 5
    want = {}
    for k in range(300):
        name = "t.py::test_%d[a-b]|call" % k
        for f in (files[k % 5], files[(k + 1) % 5]):
            for n in range(1, k % 7 + 2):
                want.setdefault((f, n), set()).add(name)
    data = {"meta": {"format": fmt.FORMAT, "version": fmt.VERSION, "branch": False},
            "files": {}}
    for (f, n), names in want.items():
        rec = data["files"].setdefault(f, {"lines": [], "hits": [], "contexts": {}})
        rec["lines"].append(n)
        rec["hits"].append([n, len(names)])
        rec["contexts"][str(n)] = sorted(names)
    real = sqlite3.connect
    fill, filled = fmt._fill_lines, []
    fmt._fill_lines = lambda *a: filled.append(fill(*a)) or filled[-1]
    # the rows straight into coverage.py's tables (its schema 7), and through
    # CoverageData.add_lines per context where the file's schema is another
    for schema, how in ((fmt.LINE_BITS_SCHEMA, "its tables filled"),
                        (-1, "add_lines per context")):
        connects = []

        def counting(*a, **k):
            connects.append(a[0] if a else k.get("database"))
            return real(*a, **k)
        sqlite3.connect = counting
        known, fmt.LINE_BITS_SCHEMA = fmt.LINE_BITS_SCHEMA, schema
        try:
            fmt.write_coveragepy(data, os.path.join(wd, ".coverage"))
        finally:
            sqlite3.connect = real
            fmt.LINE_BITS_SCHEMA = known
        cd = coverage.CoverageData(os.path.join(wd, ".coverage"))
        cd.read()
        got = {(f, n): set(c) for f in cd.measured_files()
               for n, c in cd.contexts_by_lineno(f).items()}
        if got != want:
            u.fail("%s: contexts read back differ: %d of %d lines"
                   % (how, sum(got.get(k) != v for k, v in want.items()), len(want)))
        if len(cd.measured_contexts()) != 300:
            u.fail("%s: %d contexts, not 300" % (how, len(cd.measured_contexts())))
        if cd.has_arcs():
            u.fail("%s: the file says it holds arcs" % how)
        if filled != [schema == known]:
            u.fail("%s: _fill_lines returned %s" % (how, filled))
        filled.clear()
        if len(connects) > 5:
            u.fail("%s: the data file was opened %d times for 300 contexts"
                   % (how, len(connects)))
        print("ok: 300 contexts read back (%s), %d connections" % (how, len(connects)))
    # The plugin's own .coverage (its contexts given per context by the C
    # side, not pivoted from coverage.json): each context's lines equal
    # coverage.json's, in an immediate and a deferred run. The program
    # enters a context twice, and runs lines outside any.
    prog = os.path.join(wd, "prog.py")
    with open(prog, "w") as f:
        f.write("from pytracekit import set_context\n"
                "def f(n):\n"
                "    if n % 2:\n"
                "        return n * 3\n"
                "    return n - 1\n"
                "for name in ['a|call', 'b|setup', 'a|call', 'c']:\n"
                "    set_context(name)\n"
                "    f(len(name))\n"
                "    if name == 'c':\n"
                "        f(0)\n"
                "set_context(None)\n"
                "x = f(7)\n")
    for extra in ("", ",reports=false"):
        out = "ctx" + extra.replace(",reports=false", "-deferred")
        p, data = u.run_ptk(wd, [prog], spec="coverage:contexts=true,coveragepy=yes" + extra,
                            outdir=out)
        want = {(f, int(n)): set(names) for f, rec in data["files"].items()
                for n, names in rec.get("contexts", {}).items()}
        if {c for names in want.values() for c in names} != {"", "a|call", "b|setup", "c"}:
            u.fail("%s: coverage.json's contexts: %s" % (out, sorted(want.items())))
        cd = coverage.CoverageData(os.path.join(wd, out, ".coverage"))
        cd.read()
        got = {(f, n): set(c) for f in cd.measured_files()
               for n, c in cd.contexts_by_lineno(f).items()}
        if got != want:
            u.fail("%s: .coverage's contexts differ from coverage.json's:\n%s\n%s"
                   % (out, sorted(got.items()), sorted(want.items())))
        print("ok: %s: .coverage's %d (line, context) pairs equal coverage.json's"
              % (out, sum(len(v) for v in want.values())))


def case_arc_contexts():
    import re
    import sqlite3
    import coverage
    fmt = u.format_module()
    wd = u.workdir("datafile-arc-contexts")
    files = [os.path.join(wd, "m%d.py" % i) for i in range(4)]
    # 200 contexts: context k took the arcs (-1, 1), 1 -> 2 .. (k % 5 + 1) and
    # its exit (, -1) in files k % 4 and (k + 1) % 4; each arc's contexts are
    # split between two data sets, which merge() must unite
    want = {}
    for k in range(200):
        name = "t.py::test_%d|call" % k
        last = k % 5 + 2
        arcs = [(-1, 1)] + [(n, n + 1) for n in range(1, last)] + [(last, -1)]
        for f in (files[k % 4], files[(k + 1) % 4]):
            for a in arcs:
                want.setdefault(name, {}).setdefault(f, set()).add(a)
    halves = []
    for half in (0, 1):
        by_arc = {}
        for name, per_file in want.items():
            if int(name.split("_")[1].split("|")[0]) % 2 != half:
                continue
            for f, arcs in per_file.items():
                for a in arcs:
                    by_arc.setdefault(f, {}).setdefault(a, []).append(name)
        data = {"meta": {"format": fmt.FORMAT, "version": fmt.VERSION, "branch": True},
                "files": {}}
        for f, arcs in by_arc.items():
            lines = sorted({n for a in arcs for n in a if n > 0})
            data["files"][f] = {
                "lines": lines, "hits": [[n, 1] for n in lines],
                "arcs": [[a, b, len(names)] for (a, b), names in sorted(arcs.items())],
                "arc_contexts": [[a, b, sorted(names)] for (a, b), names in sorted(arcs.items())],
                "contexts": {}}
        halves.append(fmt._check(data, "half %d" % half))
    merged = fmt.merge(halves)
    for f, rec in merged["files"].items():
        for a, b, names in rec["arc_contexts"]:
            if names != sorted(names) or len(names) != len(set(names)):
                u.fail("merged arc_contexts of %s (%d, %d) not sorted and unique" % (f, a, b))
    connects = []
    real = sqlite3.connect

    def counting(*a, **k):
        connects.append(a[0] if a else k.get("database"))
        return real(*a, **k)
    sqlite3.connect = counting
    try:
        fmt.write_coveragepy(merged, os.path.join(wd, ".coverage"))
    finally:
        sqlite3.connect = real
    cd = coverage.CoverageData(os.path.join(wd, ".coverage"))
    cd.read()
    if not cd.has_arcs():
        u.fail("the .coverage has no arcs")
    if len(cd.measured_contexts()) != 200:
        u.fail("%d contexts, not 200" % len(cd.measured_contexts()))
    got = {}
    for name in cd.measured_contexts():
        cd.set_query_contexts(["^" + re.escape(name) + "$"])
        for f in cd.measured_files():
            arcs = set(cd.arcs(f) or ())
            if arcs:
                got.setdefault(name, {})[f] = arcs
    if got != want:
        u.fail("arcs per context read back differ: %d of %d contexts"
               % (sum(got.get(k) != v for k, v in want.items()), len(want)))
    if len(connects) > 5:
        u.fail("the data file was opened %d times for 200 contexts" % len(connects))
    print("ok: 200 contexts' arcs merged and read back, %d connections" % len(connects))


def case_missing():
    ok, why = u.coveragepy_available()
    if ok:
        u.skip("coverage.py %s is importable here; the case needs an interpreter "
               "without it" % why)
    wd = u.workdir("datafile-missing")
    u.copy_corpus(wd, "basic.py")
    p, data = u.run_ptk(wd, [os.path.join(wd, "basic.py")], spec="coverage:coveragepy=yes",
                        expect=2)
    if "coveragepy=yes: coverage.py is not importable" not in p.stderr:
        u.fail("coveragepy=yes without coverage.py:\n" + p.stderr)
    p, data = u.run_ptk(wd, [os.path.join(wd, "basic.py")], spec="coverage:coveragepy=auto",
                        outdir="auto")
    if "coverage.py is not importable; no .coverage written" not in p.stderr \
            or os.path.exists(os.path.join(wd, "auto", ".coverage")) or not data["files"]:
        u.fail("coveragepy=auto without coverage.py:\n" + p.stderr)
    print("ok: yes refused (exit 2), auto reports without .coverage")


def main():
    case = sys.argv[1]
    if case != "missing":
        ok, why = u.coveragepy_available()
        if not ok:
            u.skip(why)
    if case.endswith("-deferred"):
        case_run(case.startswith("branch"), deferred=True)
        return
    globals()["case_" + case]()


main()
