"""Executed lines (and arcs) against coverage.py on the same interpreter.

    test_coveragepy.py PROGRAM [--branch] [ARGS...]

coverage.py's measured data (CoverageData.lines()/arcs(), what its C tracer
recorded, before its AST analysis maps lines to statements) must equal
ours exactly. The denominators differ by design (coverage.py counts
statements from the AST, we count lines from the code objects): every
difference must be one of the documented kinds (docs/coverage.md), and the
test prints them.
Skips (exit 77) where coverage.py is not importable by the interpreter.
"""
import os
import sys

import ptk_coverage_util as u

ANALYSE = r'''
import ast, json, sys, types
import coverage
from coverage.parser import PythonParser
out = {}
for path in sys.argv[1:]:
    cov = coverage.Coverage(data_file=None, config_file=False)
    _, statements, excluded, missing, _ = cov.analysis2(path)
    parser = PythonParser(filename=path)
    parser.parse_source()
    code = compile(open(path).read(), path, "exec")
    instr = set()
    todo = [code]
    while todo:
        c = todo.pop()
        instr.update(l for _, _, l in c.co_lines() if l)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    docs = set()
    for node in ast.walk(ast.parse(open(path).read())):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    exits = parser.exit_counts()
    out[path] = {"statements": sorted(statements), "docstrings": sorted(docs),
                 "branch_lines": sorted(l for l, n in exits.items() if n > 1),
                 "first": {str(k): v for k, v in getattr(  # multiline_map: 7.10+
                     parser, "multiline_map", getattr(parser, "multiline", getattr(
                         parser, "_multiline", {}))).items()},
                 "instr": sorted(instr)}
print(json.dumps(out))
'''


def main():
    ok, why = u.coveragepy_available()
    if not ok:
        u.skip(why + "; the settrace oracle test (coverage.oracle.*) covers this version")
    args = sys.argv[1:]
    prog = args.pop(0)
    branch = "--branch" in args
    args = [a for a in args if a != "--branch"]
    name = "covpy-" + prog.replace("/", "_").replace(".py", "") + ("-branch" if branch else "")
    wd = u.workdir(name)
    u.copy_corpus(wd, prog.split("/")[0])
    script = os.path.join(wd, prog)
    _, data = u.run_ptk(wd, [script] + args,
                        spec="coverage:branch=true" if branch else "coverage")
    theirs = u.run_coveragepy(wd, [script] + args, branch=branch)
    files = sorted(set(data["files"]) | set(theirs))
    u.compare_sets("executed lines", u.executed(data),
                   {f: theirs.get(f, {}).get("lines", set()) for f in files}, "coverage.py")
    if branch:
        ours = {f: set(a) for f, a in u.arcs(data).items()}
        cov = {f: theirs.get(f, {}).get("arcs") or set() for f in files}
        for f in files:
            # coverage.py enters a generator resumed by throw() from its
            # entry (-first line), we (like the settrace oracle) from the
            # line it was suspended at: pair those differences off.
            a, b = ours.get(f, set()), cov.get(f, set())
            only_ours = sorted(a - b)
            for arc in only_ours:
                twin = [t for t in b - a if t[0] < 0 and t[1] == arc[1]]
                if arc[0] > 0 and twin:
                    print("arcs: %s: %r here, %r in coverage.py (a resume by throw())"
                          % (os.path.basename(f), arc, twin[0]))
                    a.discard(arc)
                    b.discard(twin[0])
        u.compare_sets("arcs", ours, cov, "coverage.py")

    # The denominator: classify every difference.
    import json
    p = u.run([u.python(), "-c", ANALYSE] + list(data["files"]), wd)
    analysis = json.loads(p.stdout)
    problems = []
    for f in sorted(data["files"]):
        ours = set(data["files"][f]["lines"])
        a = analysis[f]
        stmts = set(a["statements"])
        first = {int(k): v for k, v in a["first"].items()}
        instr = set(a["instr"])
        docs = set(a["docstrings"])
        for line in sorted(ours - stmts):
            if line in docs:
                kind = "a module or class docstring (it runs: __doc__ is stored)"
            elif first.get(line, line) != line:
                kind = "continuation line of the statement at %d" % first[line]
            elif line in first.values():
                kind = "first line of a multi-line construct coverage.py counts elsewhere"
                problems.append("%s:%d ours only, %s" % (f, line, kind))
                continue
            else:
                problems.append("%s:%d ours only, unexplained" % (f, line))
                continue
            print("denominator: %s:%d ours only: %s" % (os.path.basename(f), line, kind))
        for line in sorted(stmts - ours):
            if line not in instr:
                print("denominator: %s:%d coverage.py only: no instruction (removed by the "
                      "compiler)" % (os.path.basename(f), line))
            else:
                problems.append("%s:%d coverage.py only, but has instructions" % (f, line))
        if branch:
            # Our branch lines (from the bytecode) are a subset of coverage.py's
            # (from the AST, which also counts one-line loops such as
            # comprehensions, lambdas and decorated definitions).
            ours_b = {line for line, dests in data["files"][f]["branches"]}
            theirs_b = set(a["branch_lines"])
            for line in sorted(ours_b - theirs_b):
                problems.append("%s:%d is a branch line here, not in coverage.py" % (f, line))
            for line in sorted(theirs_b - ours_b):
                print("branches: %s:%d is a branch line only in coverage.py"
                      % (os.path.basename(f), line))
    if problems:
        u.fail("denominator differences of no documented kind:\n  " + "\n  ".join(problems))
    print("ok: %d files match coverage.py %s, Python %s"
          % (len(files), u.coveragepy_available()[1], u.python_version()))


main()
