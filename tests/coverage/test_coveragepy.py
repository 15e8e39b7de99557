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
    handlers = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.ExceptHandler):
            handlers.add(node.lineno)
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    exits = parser.exit_counts()
    out[path] = {"statements": sorted(statements), "docstrings": sorted(docs),
                 "handlers": sorted(handlers),
                 "branch_lines": sorted(l for l, n in exits.items() if n > 1),
                 "first": {str(k): v for k, v in getattr(  # multiline_map: 7.10+
                     parser, "multiline_map", getattr(parser, "multiline", getattr(
                         parser, "_multiline", {}))).items()},
                 "instr": sorted(instr)}
print(json.dumps(out))
'''


def yield_lines(path):
    import ast
    with open(path) as src:
        tree = ast.parse(src.read())
    return {n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Yield, ast.YieldFrom))}


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
    by_events = data["meta"].get("measured") == "branch events"
    # Arcs from branch events are compared with coverage.py's sysmon core,
    # which measures branches the same way on 3.14+ (BRANCH_LEFT /
    # BRANCH_RIGHT); line transitions with its trace core.
    core = "sysmon" if by_events else "ctrace"
    if by_events and sys.version_info < (3, 14):
        core = None
    theirs = u.run_coveragepy(wd, [script] + args, branch=branch, core=core or "ctrace")
    files = sorted(set(data["files"]) | set(theirs))
    cov_lines = {f: set(theirs.get(f, {}).get("lines", set())) for f in files}
    if core == "sysmon":
        # 3.14+: no LINE for the first line after a loop that has a break,
        # reached by the loop's exit; coverage.py's sysmon core counts it
        # from the branch event (docs/events.md).
        ours_arcs = u.arcs(data)
        for f in files:
            for line in sorted(cov_lines[f] - u.executed(data).get(f, set())):
                if any(b == line for a, b in ours_arcs.get(f, ())):
                    print("lines: %s:%d only coverage.py: the destination of a loop's exit "
                          "branch, which gives no LINE" % (os.path.basename(f), line))
                    cov_lines[f].discard(line)
    u.compare_sets("executed lines", u.executed(data), cov_lines, "coverage.py")
    if branch and by_events:
        if core is None:
            print("branches from branch events: coverage.py measures branches from "
                  "sys.monitoring only on 3.14+; arcs compared by coverage.oracle.*")
        else:
            # The branches taken: (line, destination) for each branch line
            # and destination we list, on both sides.
            dests = {f: {line: set(d) for line, d in data["files"][f]["branches"]}
                     for f in data["files"]}
            def taken(arcs, f):
                return {a for a in arcs if a[0] in dests.get(f, {}) and a[1] in dests[f][a[0]]}
            ours = {f: taken(set(a), f) for f, a in u.arcs(data).items()}
            cov = {f: taken(theirs.get(f, {}).get("arcs") or set(), f) for f in files}
            u.compare_sets("branches taken", ours, cov, "coverage.py (sysmon)")
            if not any(dests.values()):
                u.fail("the program has no branches to compare")
    elif branch:
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
            # coverage.py 7.16 records an exit from a generator closed (or
            # collected) while suspended at a yield; we, like the settrace
            # oracle, record none (docs/coverage.md).
            yields = yield_lines(f) if os.path.exists(f) else set()
            for arc in sorted(b - a):
                if arc[1] < 0 and arc[0] in yields:
                    print("arcs: %s: %r only in coverage.py: a generator closed at a yield"
                          % (os.path.basename(f), arc))
                    b.discard(arc)
        u.compare_sets("arcs", ours, cov, "coverage.py")

    # The denominator: classify every difference.
    import json
    p = u.run([u.python(), "-c", ANALYSE] + list(data["files"]), wd, oracle=True)
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
                if line in a["handlers"]:
                    # coverage.py 7.x gives an except clause one exit
                    print("branches: %s:%d is a branch line only here: an except clause's "
                          "type test" % (os.path.basename(f), line))
                    continue
                problems.append("%s:%d is a branch line here, not in coverage.py" % (f, line))
            for line in sorted(theirs_b - ours_b):
                print("branches: %s:%d is a branch line only in coverage.py"
                      % (os.path.basename(f), line))
    if problems:
        u.fail("denominator differences of no documented kind:\n  " + "\n  ".join(problems))
    print("ok: %d files match coverage.py %s, Python %s"
          % (len(files), u.coveragepy_available()[1], u.python_version()))


main()
