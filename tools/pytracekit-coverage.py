#!/usr/bin/env python3
"""pytracekit-coverage: combine and convert coverage data of pytracekit.

    pytracekit-coverage combine [-o DIR] [--no-summary] [--coveragepy] [--html]
                                FILE_OR_DIR...
    pytracekit-coverage report FILE_OR_DIR...

`combine` merges coverage.json files (from separate runs, threads or
processes; a directory stands for DIR/coverage.json) and writes
coverage.json, coverage.lcov and coverage.xml into DIR (default: the current
directory), with --coveragepy also DIR/.coverage (through coverage.py), with
--html the HTML report in DIR/html, then prints the per-file summary on
stderr. `report` prints the summary only.

This file is also the report writer of the coverage plugin, which compiles
it in, and of `pytracekit combine` (installed in the Python package as
pytracekit/_coverage_format.py), which merges coverage together with the
other plugins' reports and remaps paths: the plugin's files and the combined
files come from the same code.
Only the standard library is used.
"""

import json
import os
import sys
import time

FORMAT = "pytracekit-coverage"
VERSION = 1


class DataError(Exception):
    pass


# ---- the data ------------------------------------------------------------
#
# {"meta": {"format": "pytracekit-coverage", "version": 1, "branch": bool,
#           "python": "3.11.7", "runs": 1},
#  "files": {"/abs/path.py": {
#      "lines":     [line, ...],            lines that could run
#      "hits":      [[line, count], ...],   lines that ran
#      "functions": [[qualname, first line, calls], ...]
#      "branches":  [[line, [dest, ...]], ...]  possible branch destinations
#      "arcs":      [[from, to, count], ...]}}} observed transitions
# A negative line -N in an arc or a branch is the exit of (or the entry to)
# the code object whose first line is N.


def _check(data, where):
    if not isinstance(data, dict) or not isinstance(data.get("meta"), dict) \
            or data["meta"].get("format") != FORMAT:
        raise DataError("%s: not a pytracekit coverage file" % where)
    if data["meta"].get("version") != VERSION:
        raise DataError("%s: format version %r, expected %d"
                        % (where, data["meta"].get("version"), VERSION))
    if not isinstance(data.get("files"), dict):
        raise DataError("%s: no 'files' table" % where)
    for path, rec in data["files"].items():
        try:
            for key in ("lines", "hits", "functions", "branches", "arcs"):
                if not isinstance(rec.get(key, []), list):
                    raise TypeError(key)
            [int(n) for n in rec.get("lines", [])]
            [(int(a), int(b)) for a, b in rec.get("hits", [])]
            [(str(n), int(a), int(b)) for n, a, b in rec.get("functions", [])]
            [(int(a), [int(d) for d in b]) for a, b in rec.get("branches", [])]
            [(int(a), int(b), int(c)) for a, b, c in rec.get("arcs", [])]
        except (TypeError, ValueError, AttributeError) as e:
            raise DataError("%s: malformed record for %s (%s)" % (where, path, e))
    return data


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "coverage.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise DataError("%s: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise DataError("%s: not JSON (%s)" % (path, e))
    return _check(data, path)


def merge(datas):
    """One data set from several: lines are united, counts added."""
    files = {}
    branch = False
    runs = 0
    python = []
    for data in datas:
        meta = data["meta"]
        branch = branch or bool(meta.get("branch"))
        runs += int(meta.get("runs", 1))
        if meta.get("python") and meta["python"] not in python:
            python.append(meta["python"])
        for path, rec in data["files"].items():
            acc = files.setdefault(path, {"lines": set(), "hits": {}, "functions": {},
                                          "branches": {}, "arcs": {}})
            acc["lines"].update(int(n) for n in rec.get("lines", []))
            for line, count in rec.get("hits", []):
                acc["hits"][int(line)] = acc["hits"].get(int(line), 0) + int(count)
            for name, line, calls in rec.get("functions", []):
                key = (name, int(line))
                acc["functions"][key] = acc["functions"].get(key, 0) + int(calls)
            for line, dests in rec.get("branches", []):
                have = acc["branches"].setdefault(int(line), [])
                have.extend(int(d) for d in dests if int(d) not in have)
            for a, b, count in rec.get("arcs", []):
                key = (int(a), int(b))
                acc["arcs"][key] = acc["arcs"].get(key, 0) + int(count)
    out = {}
    for path in sorted(files):
        acc = files[path]
        out[path] = {
            "lines": sorted(acc["lines"]),
            "hits": [[n, acc["hits"][n]] for n in sorted(acc["hits"])],
            "functions": [[k[0], k[1], acc["functions"][k]]
                          for k in sorted(acc["functions"], key=lambda k: (k[1], k[0]))],
            "branches": [[n, _order(acc["branches"][n])] for n in sorted(acc["branches"])],
            "arcs": [[k[0], k[1], acc["arcs"][k]] for k in sorted(acc["arcs"])],
        }
    return {"meta": {"format": FORMAT, "version": VERSION, "branch": branch,
                     "python": ",".join(python), "runs": runs},
            "files": out}


def _order(dests):
    return sorted(set(dests), key=lambda d: (d < 0, d))


# ---- per-file figures ------------------------------------------------------


# ---- coverage.py's statement model -------------------------------------------
#
# The data hold what ran and what could run as the interpreter sees it: every
# line with instructions. coverage.py counts statements instead, and its
# figures are the ones a project's gate is set on, so every report (the
# table, lcov, Cobertura, the JSON summary, HTML) goes through this model,
# computed from the source at report time (nothing changes while the program
# runs):
#
# * a statement over several physical lines (a logical line of the
#   tokenizer) counts once, at its first line, and ran when any of its lines
#   ran; so does a line inside a multi-line string;
# * docstrings (a string alone as the first statement of a module, class or
#   function) are not statements;
# * a line matching an exclusion pattern is excluded with its whole
#   statement; when that statement opens a block (its logical line ends with
#   `:`), the block goes too; an excluded decorator takes the decorated
#   definition with it;
# * branches are those of if/elif, while, for and case lines (not of an
#   except clause, a boolean operator, a conditional expression or a
#   comprehension); their destinations are mapped to statements the same
#   way; branches out of a line matching a partial-branch pattern (`# pragma: no
#   branch`) are not counted, a way into excluded code counts and is never
#   missing, and a line left with fewer than two destinations is no branch.
#
# The default patterns are coverage.py 7's; a coverage.py configuration file
# in the current directory changes them (report_patterns).

EXCLUDE = [r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER)",
           r"^\s*(((async )?def .*?)?[\])]+(\s*->.*?)?:\s*)?\.\.\.\s*(#|$)",
           r"if (typing\.)?TYPE_CHECKING:"]
PARTIAL = [r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(branch|BRANCH)"]


def _start(stmt):
    """The first line of a statement: its first decorator's, if any."""
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])


class SourceModel:
    """The statement structure of one source text (see above)."""

    def __init__(self, text, exclude=None, partial=None):
        import re
        import tokenize
        import io
        exclude = EXCLUDE if exclude is None else exclude
        partial = PARTIAL if partial is None else partial
        lines = text.splitlines()
        ex_re = re.compile("|".join("(?:%s)" % p for p in exclude)) if exclude else None
        pa_re = re.compile("|".join("(?:%s)" % p for p in partial)) if partial else None
        matched = {i for i, t in enumerate(lines, 1) if ex_re and ex_re.search(t)}
        self.no_branch = {i for i, t in enumerate(lines, 1) if pa_re and pa_re.search(t)}
        self.matched = matched
        self.first = {}          # physical line -> first line of its statement
        self.docstrings = set()
        self.excluded = set()
        # Lines that can branch in coverage.py's model: the header of an
        # if/elif, while, for and each case of a match. A jump elsewhere
        # (an except clause's match, a boolean operator, a conditional
        # expression, a comprehension) is no branch there.
        import ast
        self.branch_lines = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.If, ast.While, ast.For, ast.AsyncFor)):
                self.branch_lines.add(node.lineno)
            elif isinstance(node, getattr(ast, "match_case", ())):
                self.branch_lines.add(node.pattern.lineno)
        # A class or def with its body on its own line has two ways out of
        # that line in coverage.py's model: the end of the body (-line) and
        # what follows the definition. {line: (next, is_class, first line
        # of its code object)}
        self.oneliners = {}
        self.allowed = {}
        tree = ast.parse(text)
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
        # Logical lines: [first, last] and their tokens.
        logical = []
        cur = []
        for tok in toks:
            if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
                if tok.type in (tokenize.INDENT, tokenize.DEDENT):
                    logical.append(("indent" if tok.type == tokenize.INDENT else "dedent",))
                continue
            cur.append(tok)
            if tok.type == tokenize.NEWLINE:
                logical.append(("line", cur))
                cur = []
        if cur:
            logical.append(("line", cur))
        depth = 0
        block_start = True  # the next logical line opens a body (docstring place)
        skip_depth = None   # excluding a block deeper than this
        pending_decorated = False
        for item in logical:
            if item[0] == "indent":
                depth += 1
                continue
            if item[0] == "dedent":
                depth -= 1
                if skip_depth is not None and depth <= skip_depth:
                    skip_depth = None
                continue
            tl = item[1]
            a = tl[0].start[0]
            b = max(t.end[0] for t in tl)
            for n in range(a, b + 1):
                self.first[n] = a
            real = [t for t in tl if t.type != tokenize.NEWLINE]
            if block_start and real and all(t.type == tokenize.STRING for t in real):
                self.docstrings.update(range(a, b + 1))
            opens = len(real) > 0 and real[-1].type == tokenize.OP and real[-1].string == ":"
            # a compound statement with its body on the same line
            colon_inside = self._colon_at_depth0(real)
            block_start = opens
            if skip_depth is not None and depth > skip_depth:
                self.excluded.update(range(a, b + 1))
                continue
            is_decorator = real and real[0].type == tokenize.OP and real[0].string == "@"
            hit = any(n in matched for n in range(a, b + 1))
            if hit or pending_decorated:
                self.excluded.update(range(a, b + 1))
                if is_decorator:
                    pending_decorated = True
                    continue
                pending_decorated = False
                if opens:
                    skip_depth = depth
                elif colon_inside:
                    pass  # `if x: y` on one line: only that line
        self._oneliners(tree, -1, ())

    def _oneliners(self, node, exit_line, after):
        """Walks the statement lists; `after` is the chain of (statements
        following, loop header or None) of the enclosing blocks."""
        import ast
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, child in enumerate(block):
                if not isinstance(child, (ast.stmt, ast.excepthandler,
                                          getattr(ast, "match_case", ast.stmt))):
                    continue
                rest = block[i + 1:] if field != "handlers" and field != "cases" else []
                chain = ((rest, node if isinstance(node, (ast.For, ast.AsyncFor, ast.While))
                          and field == "body" else None),)
                if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                    # after a try's body: its else clause, then the finally
                    # clause; after a handler or the else: the finally
                    if field == "body" and node.orelse:
                        chain += ((node.orelse, None),)
                    elif field != "finalbody" and node.finalbody:
                        chain += ((node.finalbody, None),)
                chain += after
                nxt = None
                for stmts, loop in chain:
                    if stmts:
                        nxt = _start(stmts[0])
                        break
                    if loop is not None:
                        nxt = loop.lineno
                        break
                if nxt is None:
                    nxt = exit_line
                if isinstance(child, (ast.If, ast.For, ast.AsyncFor, ast.While)) \
                        and child.body and child.body[0].lineno != child.lineno:
                    # where the branch can go: into the body, or into the
                    # else clause, or past the statement (a body on the
                    # header's line goes where that statement goes)
                    self.allowed[child.lineno] = (
                        _start(child.body[0]),
                        _start(child.orelse[0]) if child.orelse else nxt)
                if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    if child.body and child.body[0].lineno == child.lineno:
                        first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                        self.oneliners[child.lineno] = (nxt, isinstance(child, ast.ClassDef),
                                                        first)
                    self._oneliners(child, -child.lineno, ())
                else:
                    self._oneliners(child, exit_line, chain)

    @staticmethod
    def _colon_at_depth0(toks):
        import tokenize
        nest = 0
        for t in toks:
            if t.type == tokenize.OP and t.string in "([{":
                nest += 1
            elif t.type == tokenize.OP and t.string in ")]}":
                nest -= 1
            elif t.string == ":" and nest == 0:
                return True
        return False

    def stmt(self, line):
        return self.first.get(line, line)

    def statements(self, raw_lines):
        """The statements among the lines with instructions."""
        out = set()
        for n in raw_lines:
            f = self.stmt(n)
            if f not in self.excluded and f not in self.docstrings:
                out.add(f)
        return out


_model_memo = {}


def _ini_list(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


def report_patterns(directory="."):
    """(exclude, partial, where): the exclusion and partial-branch patterns
    of the coverage.py configuration found in `directory`, in coverage.py's
    order: $COVERAGE_RCFILE, else .coveragerc, else the first of setup.cfg,
    tox.ini ([coverage:report]) and pyproject.toml ([tool.coverage.report])
    that has coverage settings. `exclude_lines` and `partial_branches`
    replace the defaults, `exclude_also` and `partial_also` add to them.
    `where` names the file read (None: the defaults)."""
    import configparser
    exclude, partial = list(EXCLUDE), list(PARTIAL)
    env = os.environ.get("COVERAGE_RCFILE")
    tries = ([(env, "")] if env else
             [(os.path.join(directory, ".coveragerc"), ""),
              (os.path.join(directory, "setup.cfg"), "coverage:"),
              (os.path.join(directory, "tox.ini"), "coverage:"),
              (os.path.join(directory, "pyproject.toml"), "toml")])
    for path, prefix in tries:
        if not os.path.isfile(path):
            continue
        if prefix == "toml":
            try:
                import tomllib
            except ImportError:  # before 3.11: no TOML reader in the stdlib
                continue
            try:
                with open(path, "rb") as f:
                    tool = tomllib.load(f).get("tool", {}).get("coverage")
            except (OSError, ValueError):
                continue
            if not isinstance(tool, dict):
                continue
            report = tool.get("report", {})
            get = report.get
        else:
            cp = configparser.RawConfigParser()
            try:
                cp.read(path, encoding="utf-8")
            except (configparser.Error, UnicodeDecodeError):
                continue
            if prefix and not any(sec.startswith(prefix) for sec in cp.sections()):
                continue
            sec = prefix + "report"
            report = dict(cp.items(sec)) if cp.has_section(sec) else {}

            def get(key, default=None, report=report):
                return _ini_list(report[key]) if key in report else default
        if get("exclude_lines") is not None:
            exclude = list(get("exclude_lines"))
        exclude += list(get("exclude_also") or [])
        if get("partial_branches") is not None:
            partial = list(get("partial_branches"))
        partial += list(get("partial_also") or [])
        return exclude, partial, path
    return exclude, partial, None


_patterns_memo = {}


def source_model(path):
    """The SourceModel of the file at path, or None when its source cannot be
    read or tokenized (the raw figures are reported then). The patterns are
    the defaults, or those of the coverage.py configuration of the current
    directory (report_patterns)."""
    cwd = os.getcwd()
    if cwd not in _patterns_memo:
        _patterns_memo[cwd] = report_patterns(cwd)
    exclude, partial, _ = _patterns_memo[cwd]
    key = (path, tuple(exclude), tuple(partial))
    if key in _model_memo:
        return _model_memo[key]
    model = None
    try:
        import tokenize
        with tokenize.open(path) as f:
            text = f.read()
        model = SourceModel(text, exclude, partial)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as e:
        model = None
        _ = e
    except Exception:  # tokenize.TokenError and the like
        model = None
    _model_memo[key] = model
    return model


def model_record(path, rec, branch):
    """rec in coverage.py's statement model: lines are statements, hits
    their first lines, branches and arcs between statements. The record
    itself when the source is not available."""
    model = source_model(path)
    if model is None:
        return rec
    hits = {}
    for n, c in rec.get("hits", []):
        f = model.stmt(int(n))
        hits[f] = max(hits.get(f, 0), int(c))
    raw = set(int(n) for n in rec.get("lines", [])) | set(int(n) for n, _ in rec.get("hits", []))
    stmts = model.statements(raw)
    out = dict(rec)
    out["excluded"] = sorted({model.stmt(n) for n in model.excluded | model.matched})
    out["lines"] = sorted(stmts)
    out["hits"] = sorted([n, c] for n, c in hits.items() if n in stmts)
    if branch:
        def dest(d):
            return d if d < 0 else model.stmt(d)
        def way(f, d):
            """A branch line's destination d as coverage.py names it."""
            allowed = model.allowed.get(f)
            if allowed is None:
                return d
            # a conditional jump goes into the body or the other way; the
            # compiler may lay that way out through another line (a with
            # statement's exit, a copy of a finally clause)
            return allowed[0] if d == allowed[0] else allowed[1]

        # the recorded destinations of each branch line, as named there
        ways = {}
        for line, dests in rec.get("branches", []):
            f = model.stmt(int(line))
            for d in dests:
                ways[(f, dest(int(d)))] = way(f, dest(int(d)))
        arcs = {}
        for a, b, c in rec.get("arcs", []):
            a, b = int(a), int(b)
            a = a if a < 0 else model.stmt(a)
            b = dest(b)
            key = (a, ways.get((a, b), b))
            if key[0] != key[1]:
                arcs[key] = arcs.get(key, 0) + int(c)
        out["arcs"] = sorted([a, b, c] for (a, b), c in arcs.items())
        branches = {}
        for line, dests in rec.get("branches", []):
            f = model.stmt(int(line))
            if f not in stmts or f in model.no_branch or f not in model.branch_lines:
                continue
            for d in dests:
                d = way(f, dest(int(d)))
                if d == f or (d > 0 and d not in stmts and d not in model.excluded):
                    continue
                if d > 0 and d in model.excluded and f in hits:
                    # a way into excluded code counts, and is never missing
                    arcs[(f, d)] = arcs.get((f, d), 0) or 1
                branches.setdefault(f, set()).add(d)
        ran_from = {int(first) for _, first, n in rec.get("functions", []) if int(n)}
        for line, (nxt, is_class, first) in model.oneliners.items():
            if line not in stmts or line in model.no_branch or nxt is None:
                continue
            nxt = dest(nxt)
            branches[line] = {-line, nxt}
            if line in hits:
                if is_class or any(first <= f <= line for f in ran_from):
                    arcs[(line, -line)] = arcs.get((line, -line), 0) or 1
                if nxt < 0 or nxt in hits:
                    arcs[(line, nxt)] = arcs.get((line, nxt), 0) or 1
        out["arcs"] = sorted([a, b, c] for (a, b), c in arcs.items())
        out["branches"] = sorted([n, sorted(ds)] for n, ds in branches.items() if len(ds) > 1)
    return out


class FileStats:
    def __init__(self, path, rec, branch):
        self.path = path
        rec = model_record(path, rec, branch)
        self.excluded = rec.get("excluded", [])
        self.hits = {int(n): int(c) for n, c in rec.get("hits", [])}
        self.lines = sorted(set(int(n) for n in rec.get("lines", [])) | set(self.hits))
        self.missed = [n for n in self.lines if n not in self.hits]
        self.functions = [(str(n), int(a), int(b)) for n, a, b in rec.get("functions", [])]
        arcs = {}
        for a, b, c in rec.get("arcs", []):
            key = (int(a), int(b))
            arcs[key] = arcs.get(key, 0) + int(c)
        # Per branch line: [(dest, taken count or None when the line never ran)].
        self.branches = {}
        if branch:
            for line, dests in rec.get("branches", []):
                line = int(line)
                ran = line in self.hits
                self.branches[line] = [(int(d), arcs.get((line, int(d)), 0) if ran else None)
                                       for d in _order(dests)]
        self.nbranches = sum(len(v) for v in self.branches.values())
        self.nbranches_taken = sum(1 for v in self.branches.values() for d, t in v if t)
        # coverage.py's partial branches: the destinations not taken from
        # branch lines that ran (its BrPart column and num_partial_branches).
        self.nbranches_partial = sum(1 for v in self.branches.values()
                                     for d, t in v if t == 0)

    @property
    def nlines(self):
        return len(self.lines)

    @property
    def nhit(self):
        return len(self.lines) - len(self.missed)

    @property
    def nbranches_missed(self):
        return self.nbranches - self.nbranches_taken


# The writers of one report (JSON, lcov, Cobertura, the summary, HTML) are
# called one after the other with the same data, which none of them changes:
# its figures are computed once (a third of the report step on test_enum).
_stats_memo = [None, None]


def _stats(data):
    if _stats_memo[0] is data:
        return _stats_memo[1]
    branch = bool(data["meta"].get("branch"))
    stats = [FileStats(p, data["files"][p], branch) for p in sorted(data["files"])]
    _stats_memo[:] = [data, stats]
    return stats


def percent(hit, total):
    """coverage.py's rounding: 100.0 only when everything ran, 0.0 only for none."""
    if total == 0:
        return 100.0
    pc = 100.0 * hit / total
    return _round(pc)


def _round(pc):
    if 0 < pc < 0.1:
        return 0.1
    if 99.9 < pc < 100:
        return 99.9
    return round(pc, 1)


def percent_covered(lines_hit, lines, branches_hit=0, branches=0):
    """coverage.py's Cover: statements and branches counted together."""
    if lines == 0:
        return 100.0
    return 100.0 * (lines_hit + branches_hit) / (lines + branches)


def _rate(hit, total):
    return "%.4g" % (hit / total) if total else "1"


def _branch_rate(hit, total, branch):
    """coverage.py's Cobertura branch-rate: "0" when branches were not measured."""
    return _rate(hit, total) if branch else "0"


def _summary(nlines, nhit, nb, nbhit, npartial):
    pc = percent_covered(nhit, nlines, nbhit, nb)
    out = {"covered_lines": nhit, "num_statements": nlines,
           "percent_covered": pc, "percent_covered_display": "%.1f" % _round(pc),
           "missing_lines": nlines - nhit}
    out.update({"num_branches": nb, "num_partial_branches": npartial,
                "covered_branches": nbhit, "missing_branches": nb - nbhit})
    return out


def with_summary(data):
    """The data with coverage.py's JSON figures added: "summary" in each
    file's record and "totals" for all of them (ignored when read back)."""
    stats = _stats(data)
    files = {}
    for fs in stats:
        rec = dict(data["files"][fs.path])
        rec["summary"] = _summary(fs.nlines, fs.nhit, fs.nbranches, fs.nbranches_taken,
                                  fs.nbranches_partial)
        rec["missing_lines"] = fs.missed
        rec["excluded_lines"] = fs.excluded
        files[fs.path] = rec
    out = dict(data)
    out["files"] = files
    out["totals"] = _summary(sum(fs.nlines for fs in stats), sum(fs.nhit for fs in stats),
                             sum(fs.nbranches for fs in stats),
                             sum(fs.nbranches_taken for fs in stats),
                             sum(fs.nbranches_partial for fs in stats))
    return out


# ---- lcov ------------------------------------------------------------------


def _function_names(functions):
    """Unique lcov names: the qualname, with @line where two share one."""
    count = {}
    for name, line, calls in functions:
        count[name] = count.get(name, 0) + 1
    seen = {}
    out = []
    for name, line, calls in functions:
        label = name if count[name] == 1 else "%s@%d" % (name, line)
        n = seen.get(label, 0)
        seen[label] = n + 1
        if n:
            label = "%s#%d" % (label, n + 1)
        out.append((label, line, calls))
    return out


def lcov_text(data, test_name=""):
    out = []
    for fs in _stats(data):
        out.append("TN:%s\n" % test_name)
        out.append("SF:%s\n" % _printable(fs.path, keep="\t"))
        funcs = [f for f in _function_names(fs.functions) if f[0] != "<module>"]
        for name, line, calls in funcs:
            out.append("FN:%d,%s\n" % (line, name))
        for name, line, calls in funcs:
            out.append("FNDA:%d,%s\n" % (calls, name))
        out.append("FNF:%d\n" % len(funcs))
        out.append("FNH:%d\n" % sum(1 for f in funcs if f[2]))
        for line in sorted(fs.branches):
            for index, (dest, taken) in enumerate(fs.branches[line]):
                out.append("BRDA:%d,0,%d,%s\n" % (line, index, "-" if taken is None else taken))
        if fs.branches:
            out.append("BRF:%d\n" % fs.nbranches)
            out.append("BRH:%d\n" % fs.nbranches_taken)
        for line in fs.lines:
            out.append("DA:%d,%d\n" % (line, fs.hits.get(line, 0)))
        out.append("LF:%d\n" % fs.nlines)
        out.append("LH:%d\n" % fs.nhit)
        out.append("end_of_record\n")
    return "".join(out)


# ---- Cobertura -----------------------------------------------------------


def _common_root(paths):
    dirs = [os.path.dirname(p) for p in paths]
    if not dirs:
        return os.getcwd()
    return os.path.commonpath(dirs)


def cobertura_text(data, timestamp=None):
    stats = _stats(data)
    branch = bool(data["meta"].get("branch"))
    root = _common_root([fs.path for fs in stats])
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    packages = {}
    for fs in stats:
        rel = os.path.relpath(fs.path, root)
        pkg = os.path.dirname(rel).replace(os.sep, ".") or "."
        packages.setdefault(pkg, []).append((rel, fs))
    lv = sum(fs.nlines for fs in stats)
    lc = sum(fs.nhit for fs in stats)
    bv = sum(fs.nbranches for fs in stats)
    bc = sum(fs.nbranches_taken for fs in stats)
    out = ['<?xml version="1.0" ?>\n',
           "<!DOCTYPE coverage SYSTEM 'http://cobertura.sourceforge.net/xml/coverage-04.dtd'>\n",
           '<coverage version="pytracekit" timestamp="%d" lines-valid="%d" lines-covered="%d"'
           ' line-rate="%s" branches-valid="%d" branches-covered="%d" branch-rate="%s"'
           ' complexity="0">\n' % (timestamp, lv, lc, _rate(lc, lv), bv, bc,
                                       _branch_rate(bc, bv, branch)),
           "\t<sources>\n\t\t<source>%s</source>\n\t</sources>\n" % _xml_text(root),
           "\t<packages>\n"]
    for pkg in sorted(packages):
        files = packages[pkg]
        plv = sum(fs.nlines for _, fs in files)
        plc = sum(fs.nhit for _, fs in files)
        pbv = sum(fs.nbranches for _, fs in files)
        pbc = sum(fs.nbranches_taken for _, fs in files)
        out.append('\t\t<package name=%s line-rate="%s" branch-rate="%s" complexity="0">\n'
                   % (quoteattr(pkg), _rate(plc, plv), _branch_rate(pbc, pbv, branch)))
        out.append("\t\t\t<classes>\n")
        for rel, fs in files:
            out.append('\t\t\t\t<class name=%s filename=%s complexity="0" line-rate="%s"'
                       ' branch-rate="%s">\n'
                       % (quoteattr(os.path.basename(rel)), quoteattr(rel),
                          _rate(fs.nhit, fs.nlines),
                          _branch_rate(fs.nbranches_taken, fs.nbranches, branch)))
            out.append("\t\t\t\t\t<methods/>\n\t\t\t\t\t<lines>\n")
            for line in fs.lines:
                attrs = 'number="%d" hits="%d"' % (line, fs.hits.get(line, 0))
                if line in fs.branches:
                    dests = fs.branches[line]
                    taken = sum(1 for d, t in dests if t)
                    attrs += ' branch="true" condition-coverage="%d%% (%d/%d)"' % (
                        100 * taken // len(dests), taken, len(dests))
                out.append("\t\t\t\t\t\t<line %s/>\n" % attrs)
            out.append("\t\t\t\t\t</lines>\n\t\t\t\t</class>\n")
        out.append("\t\t\t</classes>\n\t\t</package>\n")
    out.append("\t</packages>\n</coverage>\n")
    return "".join(out)


def _printable(s, keep=""):
    """`s` with what a line-based or XML report cannot carry shown as \\xNN:
    C0 controls but those in `keep`, DEL, and the bytes of a name that is
    not UTF-8 (os.fsdecode's surrogates \\udc80-\\udcff). A newline in a
    file name ended an lcov record early; \\x01 made coverage.xml
    ill-formed (XML 1.0 cannot carry it even as &#1;)."""
    if s.isprintable():
        return s
    out = []
    for c in s:
        o = ord(c)
        if (o < 0x20 and c not in keep) or o == 0x7f:
            out.append("\\x%02x" % o)
        elif 0xdc80 <= o <= 0xdcff:
            out.append("\\x%02x" % (o - 0xdc00))
        elif 0xd800 <= o <= 0xdfff:
            out.append("\\u%04x" % o)
        else:
            out.append(c)
    return "".join(out)


def _xml_text(s):
    s = _printable(s, keep="\t\n\r")
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def quoteattr(s):
    """An XML attribute value, quoted (xml.sax.saxutils.quoteattr without its
    import, which pulls in urllib, http and email)."""
    return '"%s"' % _xml_text(s).replace('"', "&quot;").replace("\n", "&#10;") \
        .replace("\r", "&#13;").replace("\t", "&#9;")


# ---- the summary -----------------------------------------------------------


def _display_name(path):
    cwd = os.getcwd()
    if path.startswith(cwd + os.sep):
        path = path[len(cwd) + 1:]
    return _printable(path)


def _cover(lines_hit, lines, branches_hit, branches):
    return _round(percent_covered(lines_hit, lines, branches_hit, branches))


SHORT_ROWS = 20


def summary_short(data):
    """The summary for a terminal: with more than SHORT_ROWS files, the
    SHORT_ROWS least covered (the most missed first among equals) and a
    line saying where the whole table is (coverage.txt)."""
    return summary_text(data, SHORT_ROWS)


def summary_text(data, limit=None):
    stats = _stats(data)
    branch = bool(data["meta"].get("branch"))
    rows = []
    shown = stats
    if limit is not None and len(stats) > limit:
        order = sorted(stats, key=lambda fs: (
            _cover(fs.nhit, fs.nlines, fs.nbranches_taken, fs.nbranches),
            -len(fs.missed), _display_name(fs.path)))
        shown = order[:limit]
    for fs in shown:
        row = [_display_name(fs.path), str(fs.nlines), str(len(fs.missed))]
        if branch:
            row += [str(fs.nbranches), str(fs.nbranches_partial)]
        row.append("%.1f%%" % _cover(fs.nhit, fs.nlines, fs.nbranches_taken, fs.nbranches))
        rows.append(row)
    lv = sum(fs.nlines for fs in stats)
    lh = sum(fs.nhit for fs in stats)
    bv = sum(fs.nbranches for fs in stats)
    bh = sum(fs.nbranches_taken for fs in stats)
    total = ["TOTAL", str(lv), str(lv - lh)]
    if branch:
        total += [str(bv), str(sum(fs.nbranches_partial for fs in stats))]
    total.append("%.1f%%" % _cover(lh, lv, bh, bv))
    head = ["Name", "Stmts", "Miss"] + (["Branch", "BrPart"] if branch else []) + ["Cover"]
    table = [head] + rows + [total]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]

    def fmt(r):
        return "  ".join([r[0].ljust(widths[0])]
                         + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]).rstrip()

    rule = "-" * len(fmt(head))
    lines = [fmt(head), rule] + [fmt(r) for r in rows] + [rule, fmt(total)]
    if len(shown) < len(stats):
        lines[1:1] = ["(the %d least covered of %d files; all of them in "
                      "coverage.txt)" % (len(shown), len(stats))]
    return "".join(line + "\n" for line in lines)


# ---- HTML ------------------------------------------------------------------

_CSS = """body{font-family:sans-serif;margin:1em 2em;color:#222}
table.index{border-collapse:collapse}
table.index th,table.index td{padding:.2em .8em;text-align:right}
table.index th:first-child,table.index td:first-child{text-align:left}
table.index tr.total{font-weight:bold;border-top:1px solid #888}
.source{font-family:monospace;white-space:pre}
.source p{margin:0;padding:0 .5em}
.source .n{display:inline-block;width:4em;color:#888;text-align:right;margin-right:1em}
.source p.run{background:#dfd}
.source p.mis{background:#fdd}
.source p.par{background:#ffa}
.source .ann{float:right;color:#666;font-family:sans-serif;font-size:85%}
"""


def _h(text):
    return _xml_text(text).replace('"', "&quot;")


def _page_names(stats):
    """A unique, readable page name per file."""
    out = {}
    used = set()
    for fs in stats:
        base = "".join(c if c.isalnum() else "_" for c in _display_name(fs.path).lstrip("/"))
        if len(base.encode("utf-8", "surrogatepass")) > 120:
            # a file name has at most 255 bytes: the path's end, told
            # apart by a digest of the whole
            import hashlib
            digest = hashlib.sha1(fs.path.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            base = digest + "_" + base[-40:]
        name = base + ".html"
        n = 2
        while name in used or name == "index.html":
            name = "%s_%d.html" % (base, n)
            n += 1
        used.add(name)
        out[fs.path] = name
    return out


def _read_source(path):
    import io
    import stat
    import tokenize
    try:
        # never what is not a regular file (a FIFO would block for ever)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as raw:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            os.set_blocking(fd, True)
            data = raw.read()
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(enc).splitlines()
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _dest_text(dest):
    return "exit" if dest < 0 else "line %d" % dest


def html_pages(data):
    """{file name: text} of the HTML report: index.html (the files sorted by
    coverage, lowest first) and one page per file with each line marked as
    run, missed (mis) or partial (par: a branch destination not taken)."""
    stats = _stats(data)
    branch = bool(data["meta"].get("branch"))
    names = _page_names(stats)
    rows = []
    for fs in stats:
        pc = percent_covered(fs.nhit, fs.nlines, fs.nbranches_taken, fs.nbranches)
        rows.append((pc, _display_name(fs.path), fs))
    rows.sort(key=lambda r: (r[0], r[1]))
    head = "<th>File</th><th>Statements</th><th>Missing</th>"
    if branch:
        head += "<th>Branches</th><th>Partial</th>"
    head += "<th>Coverage</th>"

    def cells(nlines, nmiss, nb, npart, pc):
        out = "<td class=\"stmts\">%d</td><td class=\"miss\">%d</td>" % (nlines, nmiss)
        if branch:
            out += "<td class=\"branches\">%d</td><td class=\"partial\">%d</td>" % (nb, npart)
        return out + "<td class=\"pc\">%.1f%%</td>" % _round(pc)

    body = []
    for pc, name, fs in rows:
        body.append("<tr class=\"file\"><td class=\"name\"><a href=\"%s\">%s</a></td>%s</tr>"
                    % (_h(names[fs.path]), _h(name),
                       cells(fs.nlines, len(fs.missed), fs.nbranches, fs.nbranches_partial, pc)))
    lv = sum(fs.nlines for fs in stats)
    lh = sum(fs.nhit for fs in stats)
    bv = sum(fs.nbranches for fs in stats)
    bh = sum(fs.nbranches_taken for fs in stats)
    bp = sum(fs.nbranches_partial for fs in stats)
    body.append("<tr class=\"total\"><td class=\"name\">Total</td>%s</tr>"
                % cells(lv, lv - lh, bv, bp, percent_covered(lh, lv, bh, bv)))
    pages = {"index.html": _html_doc(
        "Coverage report",
        "<h1>Coverage report</h1>\n<p>%d files, sorted by coverage (lowest first).</p>\n"
        "<table class=\"index\" id=\"index\">\n<thead><tr>%s</tr></thead>\n<tbody>\n%s\n"
        "</tbody>\n</table>" % (len(stats), head, "\n".join(body)))}
    for fs in stats:
        pages[names[fs.path]] = _html_file(fs, branch, cells, head)
    return pages


def _html_file(fs, branch, cells, head):
    src = _read_source(fs.path)
    maxline = max([len(src or [])] + fs.lines)
    lines = set(fs.lines)
    out = []
    for n in range(1, maxline + 1):
        text = src[n - 1] if src and n <= len(src) else ""
        cls = ""
        ann = ""
        if n in lines:
            cls = "run" if n in fs.hits else "mis"
            missed = [d for d, t in fs.branches.get(n, []) if t == 0]
            if cls == "run" and missed:
                cls = "par"
                ann = "<span class=\"ann\">%s</span>" % _h(
                    "line %d didn't jump to %s" % (n, ", ".join(_dest_text(d) for d in missed)))
        out.append("<p id=\"t%d\"%s><span class=\"n\">%d</span>%s%s</p>"
                   % (n, " class=\"%s\"" % cls if cls else "", n, _h(text) or " ", ann))
    pc = percent_covered(fs.nhit, fs.nlines, fs.nbranches_taken, fs.nbranches)
    # the index's columns, their names above the figures
    summary = ("<table class=\"index\" id=\"summary\"><thead><tr>%s</tr></thead>"
               "<tr>%s</tr></table>"
               % (head.replace("<th>File</th>", ""),
                  cells(fs.nlines, len(fs.missed), fs.nbranches, fs.nbranches_partial, pc)))
    note = "" if src is not None else "<p class=\"nosource\">The source is not readable.</p>"
    return _html_doc(
        _display_name(fs.path),
        "<p><a href=\"index.html\">index</a></p>\n<h1>%s</h1>\n%s\n%s\n"
        "<div class=\"source\" id=\"source\">\n%s\n</div>"
        % (_h(_display_name(fs.path)), summary, note, "\n".join(out)))


def _html_doc(title, body):
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>%s</title>\n<style>\n%s</style>\n</head>\n<body>\n%s\n</body>\n</html>\n"
            % (_h(title), _CSS, body))


def write_html(data, directory):
    """Writes the HTML report into `directory`: the pages are written into a
    new directory made next to it, which becomes `directory` if there is
    none (a planted symlink there is replaced, never followed); if there is
    a real directory of ours, each page is moved into it by name, through
    directory descriptors (nothing else in it is touched)."""
    import stat
    import tempfile
    parent, base = os.path.split(os.path.abspath(directory))
    pages = html_pages(data)
    new = tempfile.mkdtemp(prefix=".pytracekit-tmp.%s." % base, dir=parent)
    try:
        os.chmod(new, 0o777 & ~_umask())
        for name, text in pages.items():
            _write(os.path.join(new, name), text)
        try:
            st = os.lstat(directory)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            os.unlink(directory)  # a symlink at our report's name
            st = None
        if st is None:
            os.rename(new, directory)
            return
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise OSError("%s exists and is not a directory of this user's" % directory)
        dst = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        src = os.open(new, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            if (os.fstat(dst).st_ino, os.fstat(dst).st_dev) != (st.st_ino, st.st_dev):
                raise OSError("%s changed while the report was written" % directory)
            for name in pages:
                os.replace(name, name, src_dir_fd=src, dst_dir_fd=dst)
        finally:
            os.close(src)
            os.close(dst)
    finally:
        if os.path.isdir(new) and not os.path.islink(new):
            for name in os.listdir(new):
                os.unlink(os.path.join(new, name))
            os.rmdir(new)


# ---- writing ---------------------------------------------------------------


def _umask():
    """The process's umask, read without changing it (another thread may be
    creating files)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _write(path, data):
    """Writes `path` (text, or bytes) atomically: a new temporary file
    (O_EXCL, never through a symlink) next to it, renamed over it. Also
    pytracekit combine's writer."""
    import tempfile
    d, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=".pytracekit-tmp.%s." % base, dir=d or ".")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        binary = isinstance(data, bytes)
        with open(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def json_text(data):
    """coverage.json: the data with its figures, compact (json's C encoder
    only serves calls without indent=, and the file can be large)."""
    return json.dumps(with_summary(data), separators=(",", ":")) + "\n"


def write_coveragepy(data, path):
    """Writes `data` as coverage.py's data file `path` (.coverage) through
    coverage.py's own API (coverage.CoverageData), so that `coverage report`,
    `coverage html`, `coverage combine` and the tools built on them read it:
    the executed lines, or in branch mode the arcs (coverage.py's
    convention: -N enters or leaves the code object starting at line N)."""
    import coverage
    import tempfile
    # in a new directory of its own: coverage.py opens the file by name
    d, base = os.path.split(os.path.abspath(path))
    tmpdir = tempfile.mkdtemp(prefix=".pytracekit-tmp.%s." % base, dir=d)
    tmp = os.path.join(tmpdir, base)
    cd = coverage.CoverageData(basename=tmp)
    if data["meta"].get("branch"):
        # coverage.py takes the executed lines of branch data from its arcs;
        # measured by branch events, the arcs are those of the branches
        # only, so each executed line also goes in as (n, n), the entry
        # coverage.py's own sys.monitoring core makes for a line (it leaves
        # such arcs out of its branch figures).
        arcs = {}
        for f, rec in data["files"].items():
            have = {(int(a), int(b)) for a, b, c in rec.get("arcs", [])}
            ends = {n for arc in have for n in arc}
            have |= {(int(n), int(n)) for n, c in rec.get("hits", []) if c and int(n) not in ends}
            arcs[f] = sorted(have)
        cd.add_arcs(arcs)
    else:
        cd.add_lines({f: [int(n) for n, c in rec.get("hits", [])]
                      for f, rec in data["files"].items()})
    cd.write()
    close = getattr(cd, "close", None)
    if close:
        close()
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        for name in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, name))
        os.rmdir(tmpdir)


def write_all(data, outdir, coveragepy=False, html=False):
    os.makedirs(outdir, exist_ok=True)
    _write(os.path.join(outdir, "coverage.json"), json_text(data))
    _write(os.path.join(outdir, "coverage.lcov"), lcov_text(data))
    _write(os.path.join(outdir, "coverage.xml"), cobertura_text(data))
    if coveragepy:
        write_coveragepy(data, os.path.join(outdir, ".coverage"))
    if html:
        write_html(data, os.path.join(outdir, "html"))


USAGE = """usage: pytracekit-coverage combine [-o DIR] [--no-summary] [--coveragepy] [--html]
                                   FILE_OR_DIR...
       pytracekit-coverage report FILE_OR_DIR...

combine  merge coverage.json files (a directory means DIR/coverage.json) and
         write coverage.json, coverage.lcov and coverage.xml into DIR
         (default: the current directory); prints the summary on stderr;
         --coveragepy: also DIR/.coverage, through coverage.py's data API;
         --html: also the HTML report in DIR/html (index.html)
report   print the summary of the merged files on stdout
"""


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in ("combine", "report"):
        sys.stderr.write("pytracekit-coverage: unknown command %r\n%s" % (cmd, USAGE))
        return 2
    outdir = "."
    show = True
    coveragepy = False
    html = False
    inputs = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("-o", "--output") and cmd == "combine":
            if i + 1 >= len(rest):
                sys.stderr.write("pytracekit-coverage: %s needs a directory\n" % a)
                return 2
            outdir = rest[i + 1]
            i += 2
            continue
        if a == "--no-summary":
            show = False
        elif a == "--coveragepy" and cmd == "combine":
            coveragepy = True
        elif a == "--html" and cmd == "combine":
            html = True
        elif a.startswith("-") and a != "-":
            sys.stderr.write("pytracekit-coverage: unknown option %r\n%s" % (a, USAGE))
            return 2
        else:
            inputs.append(a)
        i += 1
    if not inputs:
        sys.stderr.write("pytracekit-coverage: no input files\n%s" % USAGE)
        return 2
    try:
        data = merge([load(p) for p in inputs])
    except DataError as e:
        sys.stderr.write("pytracekit-coverage: %s\n" % e)
        return 1
    if cmd == "report":
        sys.stdout.write(summary_text(data))
        return 0
    if coveragepy:
        try:
            import coverage  # noqa: F401
        except ImportError:
            sys.stderr.write("pytracekit-coverage: --coveragepy: coverage.py is not "
                             "importable by %s\n" % sys.executable)
            return 2
    try:
        write_all(data, outdir, coveragepy, html)
    except OSError as e:
        sys.stderr.write("pytracekit-coverage: cannot write to %s: %s\n" % (outdir, e))
        return 1
    if show:
        sys.stderr.write(summary_text(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
