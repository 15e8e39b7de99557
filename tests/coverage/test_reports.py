"""The report files: lcov read by genhtml and lcov, Cobertura XML, JSON,
the summary, and the combine command.

    test_reports.py CASE

CASE is one of: genhtml, lcov-summary, cobertura, summary, combine,
combine-errors.
"""
import json
import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET

import ptk_coverage_util as u


def branch_run(name, prog="basic.py", args=()):
    wd = u.workdir(name)
    u.copy_corpus(wd, prog.split("/")[0])
    p, data = u.run_ptk(wd, [os.path.join(wd, prog)] + list(args), spec="coverage:branch=true")
    return wd, p, u.modeled(data)


def totals(data):
    """Our figures, from coverage.json in the statement model: lines,
    functions, branches."""
    lf = lh = ff = fh = bf = bh = 0
    for rec in data["files"].values():
        hits = {n for n, c in rec["hits"]}
        lines = set(rec["lines"]) | hits
        lf += len(lines)
        lh += len(hits)
        funcs = [f for f in rec["functions"] if f[0] != "<module>"]
        ff += len(funcs)
        fh += sum(1 for f in funcs if f[2])
        arcs = {(a, b): c for a, b, c in rec["arcs"]}
        for line, dests in rec["branches"]:
            bf += len(dests)
            if line in hits:
                bh += sum(1 for d in dests if arcs.get((line, d)))
    return {"lines": (lh, lf), "functions": (fh, ff), "branches": (bh, bf)}


def pct(hit, total):
    return "%.1f%%" % (100.0 * hit / total) if total else None


def check_tool_summary(text, data, tool):
    """genhtml and lcov --summary print 'lines......: 90.9% (20 of 22 lines)'."""
    want = totals(data)
    for kind in ("lines", "functions", "branches"):
        m = re.search(r"%s\.*: ([0-9.]+%%) \((\d+) of (\d+) " % kind, text)
        hit, total = want[kind]
        if not m:
            u.fail("%s printed no %s summary:\n%s" % (tool, kind, text))
        got = (m.group(1), int(m.group(2)), int(m.group(3)))
        if got != (pct(hit, total), hit, total):
            u.fail("%s %s: %s, ours %s (%d of %d)" % (tool, kind, got, pct(hit, total), hit, total))
        print("%s %s: %s (%d of %d), same as ours" % (tool, kind, got[0], hit, total))


def case_genhtml():
    if not shutil.which("genhtml"):
        u.skip("genhtml is not installed")
    wd, _, data = branch_run("genhtml")
    html = os.path.join(wd, "html")
    p = u.run(["genhtml", "--branch-coverage", "--function-coverage", "-o", html,
               os.path.join(wd, "out", "coverage.lcov")], wd)
    check_tool_summary(p.stdout + p.stderr, data, "genhtml")
    if not os.path.exists(os.path.join(html, "index.html")):
        u.fail("genhtml wrote no index.html")


def case_lcov_summary():
    if not shutil.which("lcov"):
        u.skip("lcov is not installed")
    wd, _, data = branch_run("lcov-summary", "app/main.py", ["b"])
    # lcov 2 renamed the option (the old one is an error there)
    version = u.run(["lcov", "--version"], wd).stdout
    m = re.search(r"version (\d+)", version)
    if not m:
        u.fail("lcov --version says %r" % version)
    branches = (["--rc", "lcov_branch_coverage=1"] if int(m.group(1)) < 2
                else ["--rc", "branch_coverage=1"])
    p = u.run(["lcov"] + branches + ["--summary",
               os.path.join(wd, "out", "coverage.lcov")], wd)
    check_tool_summary(p.stdout + p.stderr, data, "lcov --summary")


def case_cobertura():
    wd, _, data = branch_run("cobertura", "app/main.py", ["a"])
    root = ET.parse(os.path.join(wd, "out", "coverage.xml")).getroot()
    if root.tag != "coverage":
        u.fail("root element is %r" % root.tag)
    for attr in ("line-rate", "branch-rate", "lines-valid", "lines-covered",
                 "branches-valid", "branches-covered", "timestamp", "version"):
        if attr not in root.attrib:
            u.fail("<coverage> lacks %s" % attr)
    sources = [s.text for s in root.findall("./sources/source")]
    if len(sources) != 1 or not os.path.isdir(sources[0]):
        u.fail("sources: %r" % sources)
    t = totals(data)
    lh, lf = t["lines"]
    bh, bf = t["branches"]
    if (int(root.get("lines-valid")), int(root.get("lines-covered"))) != (lf, lh):
        u.fail("lines-valid/covered %s/%s, ours %d/%d"
               % (root.get("lines-valid"), root.get("lines-covered"), lf, lh))
    if (int(root.get("branches-valid")), int(root.get("branches-covered"))) != (bf, bh):
        u.fail("branches-valid/covered %s/%s, ours %d/%d"
               % (root.get("branches-valid"), root.get("branches-covered"), bf, bh))
    if abs(float(root.get("line-rate")) - lh / lf) > 1e-4:
        u.fail("line-rate %s, ours %.4f" % (root.get("line-rate"), lh / lf))
    seen = set()
    for pkg in root.findall("./packages/package"):
        for attr in ("name", "line-rate", "branch-rate"):
            if attr not in pkg.attrib:
                u.fail("<package> lacks %s" % attr)
        for cls in pkg.findall("./classes/class"):
            for attr in ("name", "filename", "line-rate", "branch-rate"):
                if attr not in cls.attrib:
                    u.fail("<class> lacks %s" % attr)
            path = os.path.join(sources[0], cls.get("filename"))
            if path not in data["files"]:
                u.fail("class filename %s is not a measured file" % path)
            seen.add(path)
            rec = data["files"][path]
            hits = dict(map(tuple, rec["hits"]))
            lines = {}
            for ln in cls.findall("./lines/line"):
                lines[int(ln.get("number"))] = int(ln.get("hits"))
                if ln.get("branch") == "true":
                    m = re.match(r"(\d+)% \((\d+)/(\d+)\)$", ln.get("condition-coverage", ""))
                    if not m:
                        u.fail("bad condition-coverage %r" % ln.get("condition-coverage"))
            want = {n: hits.get(n, 0) for n in rec["lines"]}
            if lines != want:
                u.fail("%s: <line> elements differ from coverage.json" % path)
            rate = float(cls.get("line-rate"))
            if abs(rate - sum(1 for v in want.values() if v) / len(want)) > 1e-4:
                u.fail("%s: line-rate %s" % (path, rate))
            if pkg.get("name") != (os.path.dirname(cls.get("filename")).replace("/", ".") or "."):
                u.fail("class %s in package %s" % (cls.get("filename"), pkg.get("name")))
    if seen != set(data["files"]):
        u.fail("classes %s, measured %s" % (sorted(seen), sorted(data["files"])))
    print("ok: %d classes, line-rate %s, branch-rate %s"
          % (len(seen), root.get("line-rate"), root.get("branch-rate")))


def case_summary():
    wd = u.workdir("summary")
    u.copy_corpus(wd, "app")
    p, data = u.run_ptk(wd, [os.path.join(wd, "app", "main.py"), "b"])
    data = u.modeled(data)
    rows = {}
    for line in p.stderr.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3].endswith("%") and parts[1].isdigit():
            rows[parts[0]] = (int(parts[1]), int(parts[2]), parts[3])
    for path, rec in data["files"].items():
        name = os.path.relpath(path, wd)
        hits = {n for n, c in rec["hits"]}
        stmts = len(set(rec["lines"]) | hits)
        missed = stmts - len(hits)
        want = (stmts, missed, "%.1f%%" % (100.0 * (stmts - missed) / stmts))
        if rows.get(name) != want:
            u.fail("summary row for %s: %r, expected %r\n%s" % (name, rows.get(name), want, p.stderr))
    if "TOTAL" not in rows:
        u.fail("no TOTAL row:\n" + p.stderr)
    print(p.stderr)


def case_combine():
    """Two runs taking different paths, combined, equal the oracle's union."""
    wd = u.workdir("combine")
    u.copy_corpus(wd, "app")
    main = os.path.join(wd, "app", "main.py")
    _, a = u.run_ptk(wd, [main, "a"], spec="coverage:branch=true", outdir="run-a")
    _, b = u.run_ptk(wd, [main, "b"], spec="coverage:branch=true", outdir="run-b")
    oa = u.run_oracle(wd, [main, "a"])
    ob = u.run_oracle(wd, [main, "b"])
    p = u.run([u.python(), u.COMBINE, "combine", "-o", "merged", "run-a",
               os.path.join("run-b", "coverage.json")], wd)
    with open(os.path.join(wd, "merged", "coverage.json")) as f:
        m = json.load(f)
    files = sorted(m["files"])
    if files != sorted(set(a["files"]) | set(b["files"])):
        u.fail("merged files %s" % files)
    union = {f: u.oracle_lines(oa, [f])[f] | u.oracle_lines(ob, [f])[f] for f in files}
    u.compare_sets("combined executed lines", u.executed(m), union, "oracle union")
    # Counts add up: hits, calls and arcs.
    for f in files:
        def counts(d, key):
            return {tuple(x[:-1]): x[-1] for x in d["files"].get(f, {}).get(key, [])}
        for key in ("hits", "functions", "arcs"):
            ca, cb, cm = counts(a, key), counts(b, key), counts(m, key)
            want = {k: ca.get(k, 0) + cb.get(k, 0) for k in set(ca) | set(cb)}
            if cm != want:
                u.fail("%s: combined %s are not the sums" % (f, key))
    for name in ("coverage.lcov", "coverage.xml"):
        if not os.path.getsize(os.path.join(wd, "merged", name)):
            u.fail("combine wrote an empty %s" % name)
    # Combining one file reproduces what the plugin wrote (same writer).
    u.run([u.python(), u.COMBINE, "combine", "--no-summary", "-o", "single", "run-a"], wd)
    with open(os.path.join(wd, "run-a", "coverage.lcov")) as f1, \
            open(os.path.join(wd, "single", "coverage.lcov")) as f2:
        if f1.read() != f2.read():
            u.fail("combine of one run does not reproduce its coverage.lcov")
    if m["meta"]["runs"] != 2:
        u.fail("meta.runs = %r" % m["meta"]["runs"])
    if shutil.which("lcov"):
        u.run(["lcov", "--summary", os.path.join(wd, "merged", "coverage.lcov")], wd)
    print("ok: combined %d files; summary:\n%s" % (len(files), p.stderr))


def case_combine_errors():
    wd = u.workdir("combine-errors")
    with open(os.path.join(wd, "bad.json"), "w") as f:
        f.write("{not json")
    with open(os.path.join(wd, "other.json"), "w") as f:
        json.dump({"meta": {"format": "something-else"}, "files": {}}, f)
    for args, needle in ((["combine", "missing.json"], "No such file"),
                         (["combine", "bad.json"], "not JSON"),
                         (["combine", "other.json"], "not a pytracekit coverage file"),
                         (["combine"], "no input files"),
                         (["frobnicate", "x"], "unknown command")):
        p = u.run([u.python(), u.COMBINE] + args, wd, expect=None)
        if p.returncode == 0 or needle not in p.stderr:
            u.fail("%s: exit %d, stderr %r (wanted %r)" % (args, p.returncode, p.stderr, needle))
    print("ok: bad input is refused with a message")


def case_program_fails():
    """Reports are written when the program raises or calls sys.exit()."""
    wd = u.workdir("program-fails")
    for name, body, status in (("raises.py", "def f():\n    raise ValueError(1)\n\nx = 1\nf()\ny = 2\n", 1),
                               ("exits.py", "import sys\nx = 1\nsys.exit(3)\ny = 2\n", 3)):
        path = os.path.join(wd, name)
        with open(path, "w") as f:
            f.write(body)
        p, data = u.run_ptk(wd, [path], outdir="out-" + name, expect=status)
        if data is None:
            u.fail("%s: no coverage.json after exit status %d" % (name, status))
        oracle = u.run_oracle(wd, [path])
        u.compare_sets("executed lines", u.executed(data), u.oracle_lines(oracle, [path]),
                       "oracle")
        for other in ("coverage.lcov", "coverage.xml"):
            if not os.path.exists(os.path.join(wd, "out-" + name, other)):
                u.fail("%s: no %s" % (name, other))
    print("ok: reports written on an exception and on sys.exit")


CASES = {"program-fails": case_program_fails, "genhtml": case_genhtml, "lcov-summary": case_lcov_summary,
         "cobertura": case_cobertura, "summary": case_summary, "combine": case_combine,
         "combine-errors": case_combine_errors}

CASES[sys.argv[1]]()
