"""The report figures against coverage.py's own reports of the same program.

    test_figures.py [--branch]

corpus/figures.py has no construct whose denominator differs by design
(docstrings, multi-line statements, one-line loops), so the figures must be
equal: coverage.json's per-file "summary" and "totals" against `coverage
json`, the summary table's row against `coverage report --precision=1`
(Stmts, Miss, Branch, BrPart, Cover), and the Cobertura rates against
`coverage xml`. Skips (exit 77) where coverage.py is not importable.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

import ptk_coverage_util as u

KEYS = ("covered_lines", "num_statements", "missing_lines")
BRANCH_KEYS = ("num_branches", "num_partial_branches", "covered_branches",
               "missing_branches")


def coveragepy_reports(wd, script, branch):
    datafile = os.path.join(wd, ".coverage-oracle")
    env = {"COVERAGE_RCFILE": os.devnull}
    cmd = [u.python(), "-m", "coverage", "run", "--data-file=" + datafile, "--source=" + wd]
    u.run(cmd + (["--branch"] if branch else []) + [script], wd, env_extra=env)
    base = [u.python(), "-m", "coverage"]
    u.run(base + ["json", "--data-file=" + datafile, "-o", "cov.json"], wd, env_extra=env)
    u.run(base + ["xml", "--data-file=" + datafile, "-o", "cov.xml"], wd, env_extra=env)
    rep = u.run(base + ["report", "--data-file=" + datafile, "--precision=1"], wd,
                env_extra=env)
    with open(os.path.join(wd, "cov.json")) as f:
        js = json.load(f)
    return js, ET.parse(os.path.join(wd, "cov.xml")).getroot(), rep.stdout


def table(text):
    """{name: [columns...]} of a coverage.py-style summary table."""
    head = None
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["Name"]:
            head = parts
        elif head and len(parts) == len(head) and not line.startswith("-"):
            rows[parts[0]] = dict(zip(head[1:], parts[1:]))
    return rows


def main():
    ok, why = u.coveragepy_available()
    if not ok:
        u.skip(why)
    branch = "--branch" in sys.argv[1:]
    wd = u.workdir("figures" + ("-branch" if branch else ""))
    u.copy_corpus(wd, "figures.py")
    script = os.path.join(wd, "figures.py")
    p, data = u.run_ptk(wd, [script], spec="coverage:branch=true" if branch else "coverage")
    js, xml, report = coveragepy_reports(wd, script, branch)
    errors = []
    keys = KEYS + (BRANCH_KEYS if branch else ())
    ours, theirs = data["files"][script]["summary"], js["files"]["figures.py"]["summary"]
    for what, a, b in (("figures.py", ours, theirs), ("totals", data["totals"], js["totals"])):
        for k in keys:
            if a.get(k) != b.get(k):
                errors.append("json %s %s: ours %r, coverage.py %r" % (what, k, a.get(k), b.get(k)))
        if abs(a["percent_covered"] - b["percent_covered"]) > 1e-9:
            errors.append("json %s percent_covered: ours %r, coverage.py %r"
                          % (what, a["percent_covered"], b["percent_covered"]))
    ours_t, theirs_t = table(p.stderr), table(report)
    for name in ("figures.py", "TOTAL"):
        if ours_t.get(name) != theirs_t.get(name):
            errors.append("summary row %s: ours %r, coverage.py %r"
                          % (name, ours_t.get(name), theirs_t.get(name)))
    ours_x = ET.parse(os.path.join(wd, "out", "coverage.xml")).getroot()
    for attr in ("line-rate", "branch-rate", "lines-valid", "lines-covered",
                 "branches-valid", "branches-covered"):
        a, b = ours_x.get(attr), xml.get(attr)
        if attr.startswith("branches-") and not branch:
            continue  # coverage.py writes 0 for both without branch data
        if a != b:
            errors.append("cobertura <coverage %s>: ours %r, coverage.py %r" % (attr, a, b))
    ours_c = {c.get("filename"): c for c in ours_x.iter("class")}
    theirs_c = {c.get("filename"): c for c in xml.iter("class")}
    for attr in ("line-rate", "branch-rate"):
        a = ours_c["figures.py"].get(attr)
        b = theirs_c["figures.py"].get(attr)
        if a != b:
            errors.append("cobertura <class %s>: ours %r, coverage.py %r" % (attr, a, b))
    if errors:
        u.fail("\n".join(errors) + "\nours:\n" + p.stderr + "\ncoverage.py:\n" + report)
    print(p.stderr)
    print("ok: figures equal coverage.py %s's (json, summary, Cobertura)" % why)


main()
