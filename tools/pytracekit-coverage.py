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

import itertools
import os
import sys
import time

# json, contextlib (and re, configparser...) are imported where they are
# used: the command reads the project's configuration through this module
# before every run (run_plugin_spec), where importing json and its re
# cost more than the interpreter's own start (15 ms on 3.14).

FORMAT = "pytracekit-coverage"
VERSION = 1
# deferred data (reports=false): a version of its own, so that a reader that
# does not know how to complete it refuses it instead of reporting the lines
# that ran as all there is
DEFERRED_VERSION = 2


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
#      "arcs":      [[from, to, count], ...]   observed transitions
#      "contexts":  {"line": [name, ...]}      (contexts=true) contexts it ran in
#      "arc_contexts": [[from, to, [name, ...]], ...]}}}  (and branch=true)
#                                              contexts each arc was taken in
# A negative line -N in an arc or a branch is the exit of (or the entry to)
# the code object whose first line is N.
#
# Deferred data (the coverage plugin's reports=false) is what ran only:
# meta has "version": 2, "deferred": true and "calls" (the plugin's calls=),
# and each file
# has "hits", "functions" (those that ran), "arcs", contexts, and "source":
# [size, hash] of the source at the end of the run, but no "lines" and
# no "branches". load() completes it (complete()): the source is analysed
# then, as the plugin would have analysed it at the end of the run.


def _check(data, where):
    if not isinstance(data, dict) or not isinstance(data.get("meta"), dict) \
            or data["meta"].get("format") != FORMAT:
        raise DataError("%s: not a pytracekit coverage file" % where)
    want = DEFERRED_VERSION if data["meta"].get("deferred") else VERSION
    if data["meta"].get("version") != want:
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
            if not isinstance(rec.get("contexts", {}), dict):
                raise TypeError("contexts")
            [(int(n), [str(c) for c in names]) for n, names in rec.get("contexts", {}).items()]
            if not isinstance(rec.get("arc_contexts", []), list):
                raise TypeError("arc_contexts")
            [(int(a), int(b), [str(c) for c in names])
             for a, b, names in rec.get("arc_contexts", [])]
            if rec.get("source") is not None:
                size, digest = rec["source"]
                int(size), str(digest)
        except (TypeError, ValueError, AttributeError) as e:
            raise DataError("%s: malformed record for %s (%s)" % (where, path, e))
    return data


def _data_path(path):
    """coverage.json `path`, or DIR/coverage.json when `path` is a directory."""
    return os.path.join(path, "coverage.json") if os.path.isdir(path) else path


def load(path, completed=True):
    """The data of coverage.json `path` (or of DIR/coverage.json); deferred
    data completed from its sources (complete()) unless `completed` is
    false. Raises DataError."""
    import json
    path = _data_path(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise DataError("%s: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise DataError("%s: not JSON (%s)" % (path, e))
    data = _check(data, path)
    return complete(data, path) if completed else data


def is_deferred(path):
    """Whether coverage.json `path` (or DIR/coverage.json) holds a run's data
    whose reports were deferred (reports=false), read from its "meta",
    which both writers put first: only the file's head is parsed, not the
    whole file (tens of MB with per-test contexts). Raises DataError."""
    path = _data_path(path)
    try:
        with open(path, encoding="utf-8") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise DataError("%s: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise DataError("%s: not JSON (%s)" % (path, e))
    prefix = '{"meta":'
    if head.startswith(prefix):
        import json
        try:
            meta, _ = json.JSONDecoder().raw_decode(head, len(prefix))
            if isinstance(meta, dict):
                return bool(meta.get("deferred"))
        except ValueError:
            pass  # (a meta longer than the head: the whole file, below)
    return bool(load(path, completed=False)["meta"].get("deferred"))


def with_children(inputs):
    """The inputs, each directory followed by its followed children's data
    (pid-N/ below it, and theirs, where they wrote coverage.json): a run's
    children are part of it, as coverage.py's parallel files are `coverage
    combine`d before a report."""
    out = []
    for top in inputs:
        out.append(top)
        if not os.path.isdir(top):
            continue
        for d, subdirs, files in os.walk(top):
            subdirs[:] = sorted(n for n in subdirs if n.startswith("pid-") and n[4:].isdigit())
            if d != top and "coverage.json" in files:
                out.append(d)
    return out


# ---- deferred data (reports=false) -------------------------------------------


def _source_hash(path):
    """The hash of the file's bytes the import system gives hash-based .pyc
    files (importlib.util.source_hash: SipHash in C, keyed by the
    interpreter's magic number), as hex; None when it cannot be read."""
    from importlib.util import source_hash
    try:
        with open(path, "rb") as f:
            return source_hash(f.read()).hex()
    except OSError:
        return None


def source_stamp(path):
    """[size, hash] of the file at `path` (_source_hash), or None when it
    cannot be read: how a deferred run records its sources. Its bytes, not
    its modification time: the same file checked out elsewhere, or only
    touched, completes; an edit that keeps the size and the time does not."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    digest = _source_hash(path)
    return None if digest is None else [size, digest]


def _source_unchanged(path, stamp):
    """Whether the file at `path` has the bytes `stamp` recorded. Raises
    OSError when it is missing."""
    if os.stat(path).st_size != int(stamp[0]):
        return False
    return _source_hash(path) == stamp[1]


def deferred_text(data):
    """coverage.json of a run with reports=false: the data as recorded,
    each file with the stamp of its source."""
    import json
    data["meta"]["version"] = DEFERRED_VERSION
    for path, rec in data["files"].items():
        rec["source"] = source_stamp(path)
    return json.dumps(data, separators=(",", ":")) + "\n"


def _analysis():
    """The coverage plugin's static analysis (plugins/coverage/analysis.py):
    the plugin's own copy when this runs in it, else the Python package's
    (pytracekit/_coverage_analysis.py), else the source tree's."""
    mod = sys.modules.get("_ptk_coverage_analysis")
    if mod is not None:
        return mod
    here = os.path.dirname(os.path.abspath(globals().get("__file__") or "."))
    for cand in (os.path.join(here, "_coverage_analysis.py"),
                 os.path.join(here, os.pardir, "plugins", "coverage", "analysis.py")):
        if os.path.isfile(cand):
            import importlib.util
            spec = importlib.util.spec_from_file_location("_ptk_coverage_analysis", cand)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules["_ptk_coverage_analysis"] = mod
            return mod
    try:
        from pytracekit import _coverage_analysis as mod
    except ImportError:
        raise DataError("the coverage analysis (pytracekit/_coverage_analysis.py) is not "
                        "installed: deferred coverage data cannot be completed")
    return mod


def _c_analyze(an):
    """The plugin's C analysis (analyze.c) as analysis.py's analyze(), from
    the pytracekit module built for this interpreter (its
    _coverage_analyze); None without it (analysis.py's own, its reference,
    is the same analysis in Python). PYTRACEKIT_COVERAGE_ANALYSIS=python
    chooses the reference, as it does in the plugin."""
    if os.environ.get("PYTRACEKIT_COVERAGE_ANALYSIS") == "python":
        return None
    try:
        from pytracekit._pytracekit import _coverage_analyze
    except ImportError:
        return None
    flags, caches = an.c_optable()
    return lambda code, want_arcs: _coverage_analyze(code, bool(want_arcs), flags, caches)


def complete(data, where):
    """Deferred data (reports=false) completed: each file's source,
    unchanged since the run, analysed as the plugin analyses it at the end
    of an immediate run (the lines that could run, every function, the
    branch destinations), so that the result is what that run would have
    written. Other data is returned as it is. Raises DataError naming the
    file when a source is missing or changed, or when this is not the
    Python (major.minor) that ran the program: the analysis reads its
    bytecode."""
    meta = data["meta"]
    if not meta.get("deferred"):
        return data
    ran = str(meta.get("python", ""))
    mine = "%d.%d" % sys.version_info[:2]
    if ".".join(ran.split(".")[:2]) != mine:
        raise DataError("%s: deferred coverage data of Python %s: its reports need the same "
                        "Python version (this is %s, %s)"
                        % (where, ran, sys.version.split()[0], sys.executable))
    an = _analysis()
    analyze = _c_analyze(an) or an.analyze
    branch = bool(meta.get("branch"))
    calls = bool(meta.get("calls"))
    files = {}
    for path, rec in data["files"].items():
        try:
            same = rec.get("source") is not None and _source_unchanged(path, rec["source"])
        except OSError as e:
            raise DataError("%s: the source of %s is missing (%s): deferred coverage data "
                            "is completed from the sources the program ran"
                            % (where, path, e.strerror or e))
        if not same:
            raise DataError("%s: %s changed since the run (its size or its bytes differ): "
                            "its deferred coverage data cannot be completed"
                            % (where, path))
        seen = bool(rec.get("functions"))
        root = an.compile_file(path)
        if isinstance(root, str):
            sys.stderr.write("pytracekit coverage: warning: couldn't parse '%s' as Python: "
                             "%s%s\n" % (path, root, "" if seen else
                                         " (never ran; not reported)"))
            if not seen:
                continue
            lines, funcs, branches = [], [], {}
        else:
            lines, funcs, branches = analyze(root, branch)
        hit = {int(n) for n, c in rec.get("hits", []) if int(c)}
        ran_funcs = {(str(n), int(line)): int(c) for n, line, c in rec.get("functions", [])}
        own = {}
        for code, qualname, first, start, mine_lines in funcs:
            key = (qualname, first)
            if key not in own or (not own[key] and mine_lines):
                own[key] = mine_lines
        out_funcs = {}
        for key, ownl in own.items():
            if calls:
                out_funcs[key] = ran_funcs.get(key, 0)
            else:
                out_funcs[key] = 1 if any(n in hit for n in ownl) else 0
        for key, c in ran_funcs.items():
            out_funcs.setdefault(key, c)
        out = {"lines": sorted(n for n in lines if 0 < n <= 0x3FFFFFFF),
               "hits": rec.get("hits", []),
               "functions": [[k[0], k[1], out_funcs[k]]
                             for k in sorted(out_funcs, key=lambda k: (k[1], k[0]))]}
        if branch:
            out["branches"] = sorted([int(n), list(ds)] for n, ds in branches.items())
        else:
            out["branches"] = []
        out["arcs"] = rec.get("arcs", [])
        for key in ("contexts", "arc_contexts"):
            if key in rec:
                out[key] = rec[key]
        files[path] = out
    meta = {k: (VERSION if k == "version" else v) for k, v in meta.items()
            if k not in ("deferred", "calls")}
    return {"meta": meta, "files": files}


def merge(datas):
    """One data set from several: lines are united, counts added, and the
    contexts of each line and each arc (contexts=true) united."""
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
            if "contexts" in rec:
                # contexts=true: the contexts each line ran in, united
                ctx = acc.setdefault("contexts", {})
                for line, names in rec["contexts"].items():
                    ctx.setdefault(int(line), set()).update(str(n) for n in names)
            if "arc_contexts" in rec:
                # and with branch=true, the contexts each arc was taken in
                actx = acc.setdefault("arc_contexts", {})
                for a, b, names in rec["arc_contexts"]:
                    actx.setdefault((int(a), int(b)), set()).update(str(n) for n in names)
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
        if "contexts" in acc:
            out[path]["contexts"] = {str(n): sorted(acc["contexts"][n])
                                     for n in sorted(acc["contexts"])}
        if "arc_contexts" in acc:
            out[path]["arc_contexts"] = [[k[0], k[1], sorted(acc["arc_contexts"][k])]
                                         for k in sorted(acc["arc_contexts"])]
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
#   branch`) count and are never missing, a way into excluded code is none,
#   and a line left with fewer than two destinations is no branch.
#
# The default patterns are coverage.py 7's; a coverage.py configuration file
# in the current directory changes them (report_patterns).

EXCLUDE = [r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER)",
           r"^\s*(((async )?def .*?)?[\])]+(\s*->.*?)?:\s*)?\.\.\.\s*(#|$)",
           r"if (typing\.)?TYPE_CHECKING:"]
PARTIAL = [r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(branch|BRANCH)"]


# coverage.py 7.16 measures 3.14+ with its sysmon core (sys.monitoring's
# LINE, PY_RETURN and BRANCH_LEFT/RIGHT), and its figures there follow from
# that: an arc is only what a branch event or a return shows, so the way
# from a one-line `def`/`class` to the next statement is never taken, and a
# branch event's arc goes on to the next statement (SourceModel
# ._sysmon_rules). The model follows the interpreter it runs in, which is
# the measured one.
SYSMON_RULES = sys.version_info >= (3, 14)


def _start(stmt):
    """The first line of a statement: its first decorator's, if any."""
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])


def _lines_matching(text, patterns):
    """The lines that a match of any of the patterns touches, searched over
    the whole text (multi-line patterns included, ^ and $ at every line),
    as coverage.py 7.x does: one search of the text, not one per line."""
    import re
    if not patterns:
        return set()
    regex = re.compile("|".join("(?:%s)" % p for p in patterns), re.MULTILINE)
    found = set()
    last, line = 0, 1
    for m in regex.finditer(text):
        start, end = m.span()
        line += text.count("\n", last, start)
        last = start
        found.update(range(line, line + text.count("\n", start, end) + 1))
    return found


def _interpreter_code(path):
    """The module code object the import system has for the file at path:
    its __pycache__ .pyc when that is current for the file (checked as
    import checks it), else the file compiled; None when neither works.
    Writes no .pyc (a script run as __main__ has none, and gets none)."""
    import importlib.machinery
    import sys
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        loader = importlib.machinery.SourceFileLoader("_ptk_model", path)
        return loader.get_code("_ptk_model")
    except (ImportError, OSError, SyntaxError, ValueError, EOFError, TypeError):
        return None
    finally:
        sys.dont_write_bytecode = saved


def _tokens(text):
    """tokenize.generate_tokens's tokens of text, as plain tuples (type,
    string, start, end, line): on 3.12+ straight from the C tokenizer that
    generate_tokens wraps (whose TokenInfo tuples cost a third of the
    statement model's tokenizing), else generate_tokens's own."""
    import io
    import tokenize
    c = getattr(tokenize, "_tokenize", None)
    if c is None or not hasattr(c, "TokenizerIter") or sys.version_info < (3, 12):
        return tokenize.generate_tokens(io.StringIO(text).readline)
    try:
        return list(c.TokenizerIter(io.StringIO(text).readline, extra_tokens=True))
    except SyntaxError as e:
        raise tokenize.TokenError(e.msg, (e.lineno, e.offset)) from None


class SourceModel:
    """The statement structure of one source text (see above). path, when
    given, is the file the text was read from (for the code the import system
    already compiled of it)."""

    def __init__(self, text, exclude=None, partial=None, path=None):
        import tokenize
        exclude = EXCLUDE if exclude is None else exclude
        self._text = text
        self._partial = PARTIAL if partial is None else partial
        matched = _lines_matching(text, exclude)
        self.matched = matched
        # physical line -> first line of its statement, for the lines of
        # statements that span several (stmt() maps any other to itself)
        self.first = {}
        self.docstrings = set()
        self.excluded = set()
        # What only branch coverage reads (the partial patterns' lines, the
        # branch lines, the ways out of one-line definitions) needs the
        # syntax tree: built at the first read (_branch_model), so line
        # coverage parses no file (ast.parse and the walk over its
        # statements were half of the model on networkx's 292 files).
        self._branch = None
        # One pass over the tokens (each a tuple (type, string, start, end,
        # line) as tokenize's TokenInfo is), a logical line at a time: its
        # first token, its last but NEWLINE, whether all of them are
        # strings. No list of a line's tokens is made: appending each token
        # to one was a sixth of the model.
        NEWLINE, STRING, OP = tokenize.NEWLINE, tokenize.STRING, tokenize.OP
        INDENT, DEDENT = tokenize.INDENT, tokenize.DEDENT
        skip = {tokenize.NL, tokenize.COMMENT, INDENT, DEDENT, tokenize.ENDMARKER}
        first, docstrings, excluded = self.first, self.docstrings, self.excluded
        depth = 0
        block_start = True  # the next logical line opens a body (docstring place)
        skip_depth = None   # excluding a block deeper than this
        pending_decorated = False
        head = last = None  # the line's first token; its last but NEWLINE
        strings = True
        for tok in itertools.chain(_tokens(text), (None,)):
            if tok is not None:
                t = tok[0]
                if t in skip:
                    if t == INDENT:
                        depth += 1
                    elif t == DEDENT:
                        depth -= 1
                        if skip_depth is not None and depth <= skip_depth:
                            skip_depth = None
                    continue
                if head is None:
                    head, last, strings = tok, None, True
                if t != NEWLINE:
                    last = tok
                    strings = strings and t == STRING
                    continue
                end = tok
            elif head is None:
                break
            else:
                end = last  # (the text's last line, without a NEWLINE)
            # a logical line: [a, b]
            a = head[2][0]
            b = end[3][0]
            if b > a:
                for n in range(a, b + 1):
                    first[n] = a
            if block_start and last is not None and strings:
                docstrings.update(range(a, b + 1))
            opens = last is not None and last[0] == OP and last[1] == ":"
            block_start = opens
            is_decorator = head[0] == OP and head[1] == "@"
            head = None
            if skip_depth is not None and depth > skip_depth:
                excluded.update(range(a, b + 1))
                continue
            if pending_decorated or (matched and any(n in matched for n in range(a, b + 1))):
                excluded.update(range(a, b + 1))
                if is_decorator:
                    pending_decorated = True
                    continue
                pending_decorated = False
                if opens:
                    skip_depth = depth
                # (`if x: y` on one line, its body on the same line: only
                # that line)
        # 3.14+: coverage.py 7.16's rules there (see SYSMON_RULES)
        self.annotate_only = set()
        self._codes = []
        self._trail_more = None if SYSMON_RULES else {}
        if SYSMON_RULES:
            self._annotations(text, path)

    def _branch_model(self):
        """The branch part of the model, built once; its no_branch."""
        if self._branch is None:
            import ast
            # a pragma on any line of a statement is the statement's
            # (coverage.py maps what the partial patterns match through its
            # multi-line map)
            no_branch = {self.first.get(n, n)
                         for n in _lines_matching(self._text, self._partial)}
            # Lines that can branch in coverage.py's model: the header of an
            # if/elif, while, for and each case of a match. A jump elsewhere
            # (an except clause's match, a boolean operator, a conditional
            # expression, a comprehension) is no branch there. Filled by
            # _oneliners, which visits every statement (an ast.walk over
            # every expression node too cost as much as the rest of the
            # model on test_difflib).
            self._branch_lines = set()
            # A class or def with its body on its own line has two ways out
            # of that line in coverage.py's model: the end of the body
            # (-line) and what follows the definition. {line: (next,
            # is_class, first line of its code object)}
            self._oneliner_exits = {}
            # {branch line: (its body's first line, where else it goes)}
            self._allowed = {}
            self._oneliners(ast.parse(self._text), -1, ())
            self._branch = no_branch
        return self._branch

    @property
    def no_branch(self):
        """The statements a partial pattern (`# pragma: no branch`) marks."""
        return self._branch_model()

    @property
    def branch_lines(self):
        self._branch_model()
        return self._branch_lines

    @property
    def allowed(self):
        self._branch_model()
        return self._allowed

    @property
    def oneliners(self):
        self._branch_model()
        return self._oneliner_exits

    def _annotations(self, text, path):
        """The code the running interpreter compiles of the text (kept for
        trail_more) and its annotate_only lines (see _sysmon_rules): the
        import system's own for the file when it has it (a .pyc read instead
        of a second compile: about a sixth of the model on test_enum)."""
        import types
        top = _interpreter_code(path) if path is not None else None
        try:
            if top is None:
                top = compile(text, "<model>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return
        stack, codes = [top], []
        while stack:
            code = stack.pop()
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
            codes.append(code)
        lines, annotate = set(), set()
        for code in codes:
            target = annotate if code.co_name == "__annotate__" else lines
            target.update(ln for _, _, ln in code.co_lines() if ln)
        self.annotate_only = annotate - lines
        self._codes = codes

    @property
    def trail_more(self):
        """Only branch records read it, and it takes every instruction of
        the file through dis: computed on first use, not for line
        coverage (on 3.14 test_difflib most of the statement model's cost)."""
        if self._trail_more is None:
            self._trail_more = {}
            self._sysmon_rules()
        return self._trail_more

    def _sysmon_rules(self):
        """What coverage.py 7.16 does differently on 3.14+, from the code the
        running interpreter compiles of the text:

        * a line whose only code is in an `__annotate__` function (PEP 649: a
          bare `a: int` in a class or module body) is no statement: those
          functions are neither analysed nor measured there;
        * its sysmon core turns a branch event into an arc by following the
          instructions from the destination to the first one on another
          *statement* (its multi-line map), where the plugin (and a line
          tracer) stop at another *line*. A direction that ends on another
          line of the same multi-line statement (the exit of a
          comprehension's loop, back on the statement's first line) goes on
          there to the next statement, which coverage.py then counts as run
          (a line an arc reaches is a line that ran), even when the
          statement it left raised first. trail_more: {(raw line, raw
          destination): {coverage.py's destination}}."""
        import dis
        codes = self._codes
        conds = {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE",
                 "POP_JUMP_IF_NOT_NONE", "FOR_ITER"}
        always = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}
        returns = {"RETURN_VALUE", "RETURN_GENERATOR", "RETURN_CONST"}
        stops = {"RAISE_VARARGS", "RERAISE"}
        jumps = set(getattr(dis, "hasjump", ())) | set(dis.hasjrel) | set(dis.hasjabs)
        cond_ops = {dis.opmap[n] for n in conds if n in dis.opmap}
        for code in codes:
            if code.co_name == "__annotate__":
                continue
            # An entry needs a conditional jump on a line a and a line b != a
            # of the same statement, so one of them not its first line: a
            # code object without both adds nothing, and skipping it spares
            # dis over most of a file (co_code is the unspecialised
            # bytecode, its caches CACHE units).
            if not any(ln and self.first.get(ln, ln) != ln for _, _, ln in code.co_lines()) \
                    or not any(op in cond_ops for op in code.co_code[::2]):
                continue
            ins = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
            at = {i.offset: k for k, i in enumerate(ins)}

            def follow(start, frm, mapped):
                k = at.get(start)
                seen = set()
                while k is not None and k < len(ins) and k not in seen:
                    seen.add(k)
                    i = ins[k]
                    ln = i.positions.lineno if i.positions else None
                    if ln:
                        ln = self.first.get(ln, ln) if mapped else ln
                        if ln != frm:
                            return ln
                    if i.opname in returns:
                        return -code.co_firstlineno
                    if i.opname in always:
                        k = at.get(i.argval)
                        continue
                    if i.opcode in jumps or (not mapped and i.opname in stops):
                        return None
                    k += 1
                return None

            for k, i in enumerate(ins):
                if i.opname not in conds or not i.positions or not i.positions.lineno:
                    continue
                a = i.positions.lineno
                fa = self.first.get(a, a)
                starts = [i.argval] + ([ins[k + 1].offset] if k + 1 < len(ins) else [])
                for start in starts:
                    b = follow(start, a, False)
                    if b is None or b < 0 or self.first.get(b, b) != fa:
                        continue
                    c = follow(start, fa, True)
                    if c is not None:
                        self._trail_more.setdefault((a, b), set()).add(c)

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
                if isinstance(child, (ast.If, ast.While, ast.For, ast.AsyncFor)):
                    self._branch_lines.add(child.lineno)
                elif isinstance(child, getattr(ast, "match_case", ())):
                    self._branch_lines.add(child.pattern.lineno)
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
                    self._allowed[child.lineno] = (
                        _start(child.body[0]),
                        _start(child.orelse[0]) if child.orelse else nxt)
                if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    if child.body and child.body[0].lineno == child.lineno:
                        first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                        self._oneliner_exits[child.lineno] = (
                            nxt, isinstance(child, ast.ClassDef), first)
                    self._oneliners(child, -child.lineno, ())
                else:
                    self._oneliners(child, exit_line, chain)

    def stmt(self, line):
        return self.first.get(line, line)

    def statements(self, raw_lines):
        """The statements among the lines with instructions."""
        out = set()
        for n in raw_lines:
            if n in self.annotate_only:
                continue
            f = self.stmt(n)
            if f not in self.excluded and f not in self.docstrings:
                out.add(f)
        return out


_model_memo = {}


# ---- coverage.py's configuration -------------------------------------------
#
# A project's coverage settings live in its coverage.py configuration; they
# are read here as coverage.py 7 reads them (the standard library's
# configparser and, on 3.11+, tomllib), in its order: the file named by
# --rcfile (or `rcfile=` of the plugin), else $COVERAGE_RCFILE, else
# .coveragerc, .coveragerc.toml, setup.cfg and tox.ini ([coverage:SECTION]),
# pyproject.toml ([tool.coverage.SECTION]); the first of the last three
# that has coverage settings. `read_config` gives the values; the run (the
# pytracekit command and `python -m pytracekit`) turns [run] into the
# plugin's options (run_plugin_spec), the report commands use [report],
# [html], [xml], [json], [lcov], and `pytracekit combine` [paths].


class ConfigError(Exception):
    """A configuration file that cannot be used: the message says why."""


# coverage.py 7's options (section -> {option: type}), so that its own
# options are recognised and any other is warned about, as it does.
CONFIG_OPTIONS = {
    "run": {"branch": "boolean", "command_line": "", "concurrency": "list",
            "context": "", "core": "", "cover_pylib": "boolean", "data_file": "file",
            "debug": "list", "debug_file": "file", "disable_warnings": "list",
            "dynamic_context": "", "parallel": "boolean", "patch": "list",
            "plugins": "list", "relative_files": "boolean", "include": "list",
            "omit": "list", "sigterm": "boolean", "source": "list",
            "source_pkgs": "list", "source_dirs": "list", "timid": "boolean",
            "_crash": ""},
    "report": {"exclude_lines": "regexlist", "exclude_also": "regexlist",
               "fail_under": "float", "format": "", "ignore_errors": "boolean",
               "include_namespace_packages": "boolean",
               "partial_branches_always": "regexlist", "partial_branches": "regexlist",
               "partial_also": "regexlist", "precision": "int", "contexts": "list",
               "include": "list", "omit": "list", "show_missing": "boolean",
               "skip_covered": "boolean", "skip_empty": "boolean", "sort": ""},
    "html": {"extra_css": "", "directory": "file", "skip_covered": "boolean",
             "skip_empty": "boolean", "title": "", "show_contexts": "boolean"},
    "xml": {"output": "file", "package_depth": "int"},
    "json": {"output": "file", "pretty_print": "boolean", "show_contexts": "boolean"},
    "lcov": {"output": "file", "line_checksums": "boolean"},
}

# The options pytracekit applies; any other of coverage.py's is said to be
# ignored when it is set.
USED_OPTIONS = {
    "run": {"branch", "concurrency", "include", "omit", "source", "source_pkgs"},
    "report": {"exclude_lines", "exclude_also", "partial_branches", "partial_also",
               "fail_under", "precision", "include", "omit", "show_missing",
               "skip_covered", "skip_empty", "sort"},
    "html": {"directory", "title"},
    "xml": {"output"}, "json": {"output", "pretty_print"}, "lcov": {"output"},
}

# Why a few of coverage.py's options do nothing here.
IGNORED_WHY = {
    ("run", "plugins"): "coverage.py plugins are not loaded",
    ("run", "dynamic_context"): "contexts are not recorded",
    ("run", "parallel"): "each run writes its own -o directory; "
                         "`pytracekit combine` merges them",
    ("run", "data_file"): "the data is written into the -o directory",
}

DEFAULTS = {
    ("run", "branch"): False, ("run", "concurrency"): [], ("run", "include"): [],
    ("run", "omit"): [], ("run", "source"): [], ("run", "source_pkgs"): [],
    ("report", "fail_under"): 0.0, ("report", "precision"): 0,
    ("report", "include"): [], ("report", "omit"): [],
    ("report", "show_missing"): False, ("report", "skip_covered"): False,
    ("report", "skip_empty"): False, ("report", "sort"): None,
    ("html", "directory"): "htmlcov", ("html", "title"): "Coverage report",
    ("xml", "output"): "coverage.xml", ("json", "output"): "coverage.json",
    ("json", "pretty_print"): False, ("lcov", "output"): "coverage.lcov",
}


def _substitute(text):
    """coverage.py's $VAR, ${VAR}, ${VAR-default}, ${VAR?} and $$ in values."""
    import re

    def one(m):
        word = m.group("dollar") or m.group("word1") or m.group("word2")
        if word == "$":
            return "$"
        if word in os.environ:
            return os.environ[word]
        if m.group("strict"):
            raise ConfigError("Variable %s is undefined: %r" % (word, text))
        return m.group("defval") or ""
    return re.sub(r"\$(?:(?P<dollar>\$)|(?P<word1>\w+)|\{(?P<word2>\w+)"
                  r"(?:(?P<strict>\?)|-(?P<defval>[^}]*))?\})", one, text)


class Config:
    """The coverage.py settings in force: `file` is the configuration file
    read (None: coverage.py's defaults), `values` {(section, option): value}
    holds what it sets, `paths` its [paths] ({name: [canonical, pattern...]})
    and `warnings` what it has that pytracekit does not use."""

    def __init__(self):
        self.file = None
        self.values = {}
        self.paths = {}
        self.warnings = []

    def get(self, section, option):
        return self.values.get((section, option), DEFAULTS.get((section, option)))

    def is_set(self, section, option):
        return (section, option) in self.values

    def patterns(self):
        """(exclude, partial): the exclusion and partial-branch regexes."""
        exclude = list(self.values.get(("report", "exclude_lines"), EXCLUDE))
        exclude += self.values.get(("report", "exclude_also"), [])
        partial = list(self.values.get(("report", "partial_branches"), PARTIAL))
        partial += self.values.get(("report", "partial_also"), [])
        return exclude, partial


class _Ini:
    """An ini file as coverage.py reads it: [coverage:SECTION], and for its
    own files also [SECTION]."""

    def __init__(self, path, ours):
        import configparser
        self.cp = configparser.ConfigParser(interpolation=None)
        self.prefixes = ["coverage:"] + ([""] if ours else [])
        try:
            self.read = self.cp.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as e:
            raise ConfigError("Couldn't read config file %s: %s" % (path, e))

    def section(self, name):
        for p in self.prefixes:
            if self.cp.has_section(p + name):
                return p + name
        return None

    def options(self, name):
        return self.cp.options(self.section(name))

    def value(self, name, option, type_):
        real = self.section(name)
        text = _substitute(self.cp.get(real, option))
        if type_ == "boolean":
            return self.cp._convert_to_boolean(text)
        if type_ == "int":
            return int(text)
        if type_ == "float":
            return float(text)
        if type_ == "list":
            return [v.strip() for line in text.split("\n") for v in line.split(",")
                    if v.strip()]
        if type_ == "regexlist":  # named as coverage.py names it here
            return _regexlist(name, option, text.splitlines())
        if type_ == "file":
            return os.path.expanduser(text)
        return text

    def other_sections(self):
        """Sections in coverage.py's namespace that it does not know."""
        out = []
        for sec in self.cp.sections():
            for p in self.prefixes:
                if sec.startswith(p) and (p or not sec.startswith("coverage:")):
                    if sec[len(p):] not in CONFIG_OPTIONS and sec[len(p):] != "paths":
                        out.append(sec)
                    break
        return out


class _Toml:
    """A TOML file as coverage.py reads it: [tool.coverage.SECTION], and for
    its own files also [SECTION]."""

    def __init__(self, path, ours):
        self.prefixes = ["tool.coverage."] + ([""] if ours else [])
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError:
            self.read, self.data = [], {}
            return
        try:
            import tomllib
        except ImportError:  # before 3.11
            import re
            if ours or re.search(r"^\[tool\.coverage(\.|])", text, flags=re.MULTILINE):
                raise ConfigError("Can't read %r without TOML support (Python 3.11+)"
                                  % path)
            self.read, self.data = [], {}
            return
        try:
            self.data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError("Couldn't read config file %s: %s" % (path, e))
        self.read = [path]

    def _table(self, name):
        for p in self.prefixes:
            d = self.data
            for part in (p + name).split("."):
                d = d.get(part) if isinstance(d, dict) else None
            if isinstance(d, dict):
                return p + name, d
        return None, None

    def section(self, name):
        return self._table(name)[0]

    def options(self, name):
        return list(self._table(name)[1])

    def value(self, name, option, type_):
        real, table = self._table(name)
        v = table[option]

        def check(v, want, desc, conv=None):
            if isinstance(v, want) and not (want is int and isinstance(v, bool)):
                return v
            if isinstance(v, str) and conv is not None:
                try:
                    return conv(v)
                except Exception:
                    raise ValueError("Option [%s]%s couldn't convert to %s: %r"
                                     % (real, option, desc, v))
            raise ValueError("Option [%s]%s is not %s: %r" % (real, option, desc, v))
        if type_ in ("list", "regexlist"):
            v = [_substitute(check(x, str, "a list of strings"))
                 for x in check(v, list, "a list")]
            return _regexlist(real, option, v) if type_ == "regexlist" else v
        if isinstance(v, str):
            v = _substitute(v)
        if type_ == "boolean":
            return check(v, bool, "a boolean", {"true": True, "false": False}.__getitem__)
        if type_ == "int":
            return check(v, int, "an integer", int)
        if type_ == "float":
            return check(float(v) if isinstance(v, int) and not isinstance(v, bool) else v,
                         float, "a float", float)
        if type_ == "file":
            return os.path.expanduser(check(v, str, "a string"))
        return v

    def other_sections(self):
        out = []
        for p in self.prefixes:
            if p:
                base = self.data.get("tool", {}).get("coverage", {})
                base = base if isinstance(base, dict) else {}
            else:
                base = self.data
            for k, v in base.items():
                if isinstance(v, dict) and k not in CONFIG_OPTIONS and k != "paths" \
                        and not (not p and k == "tool"):
                    out.append(p + k)
        return out


def _regexlist(section, option, values):
    import re
    out = []
    for v in values:
        v = v.strip()
        try:
            re.compile(v)
        except re.error as e:
            raise ConfigError("Invalid [%s].%s value %r: %s" % (section, option, v, e))
        if v:
            out.append(v)
    return out


def _read_file(cfg, path, ours):
    """Reads one file into cfg; True if it is the one in force."""
    if not os.path.isfile(path):
        return False  # as a reader finds it (and without importing one)
    reader = (_Toml if os.path.splitext(path)[1] == ".toml" else _Ini)(path, ours)
    if not reader.read:
        return False
    values, warnings, any_set = {}, [], False
    try:
        for section, options in CONFIG_OPTIONS.items():
            real = reader.section(section)
            if real is None:
                continue
            for option in reader.options(section):
                if option not in options:
                    warnings.append("Unrecognized option '[%s] %s=' in config file %s"
                                    % (real, option, path))
                    continue
                values[(section, option)] = reader.value(section, option, options[option])
                any_set = True
                if option not in USED_OPTIONS.get(section, ()) and option != "_crash":
                    why = IGNORED_WHY.get((section, option), "not used by pytracekit")
                    warnings.append("Option '[%s] %s=' in config file %s is ignored: %s"
                                    % (real, option, path, why))
        paths = {}
        real = reader.section("paths")
        if real is not None:
            for option in reader.options("paths"):
                paths[option] = reader.value("paths", option, "list")
                any_set = True
    except ValueError as e:
        raise ConfigError("Couldn't read config file %s: %s" % (path, e))
    if not (ours or any_set):
        return False
    for sec in reader.other_sections():
        warnings.append("Unrecognized section '[%s]' in config file %s" % (sec, path))
    cfg.file = os.path.abspath(path)
    cfg.values, cfg.paths, cfg.warnings = values, paths, warnings
    return True


# The files coverage.py reads its configuration from, in this order (the
# first is what --rcfile and $COVERAGE_RCFILE replace). The command and
# `python -m pytracekit` run none of this module before a run when none of
# them is in the current directory (tools/cov_config_need.c, which has this
# list compiled in).
CONFIG_FILES = (".coveragerc", ".coveragerc.toml", "setup.cfg", "tox.ini", "pyproject.toml")


def read_config(rcfile=None, directory="."):
    """The coverage.py configuration in force in `directory`, found as
    coverage.py finds it (see above); `rcfile` is --rcfile's value. Raises
    ConfigError for a file that cannot be read or holds a bad value, and
    for an rcfile (or $COVERAGE_RCFILE) that is not there."""
    if rcfile == ".coveragerc":
        rcfile = None
    specified = rcfile is not None
    if not specified and os.environ.get("COVERAGE_RCFILE"):
        rcfile, specified = os.environ["COVERAGE_RCFILE"], True
    if not specified:
        rcfile = ".coveragerc"
    cfg = Config()
    tries = [(rcfile, True, specified)] + [(name, name.startswith(".coveragerc"), False)
                                           for name in CONFIG_FILES[1:]]
    for name, ours, must in tries:
        name = os.path.expanduser(name)
        path = name if directory in (".", "") else os.path.join(directory, name)
        if _read_file(cfg, path, ours):
            break
        if must:
            raise ConfigError("Couldn't read %r as a config file" % name)
    for opt in ("precision",):
        if cfg.get("report", opt) < 0:
            raise ConfigError("%s=%s is invalid. Must not be negative."
                              % (opt, cfg.get("report", opt)))
    return cfg


def report_patterns(directory="."):
    """(exclude, partial, where): the exclusion and partial-branch patterns
    of the coverage.py configuration found in `directory` (read_config):
    `exclude_lines` and `partial_branches` replace coverage.py's defaults,
    `exclude_also` and `partial_also` add to them. `where` names the file
    read (None: the defaults, also when the configuration cannot be read:
    the run said so before the program started)."""
    try:
        cfg = read_config(directory=directory)
    except ConfigError:
        return list(EXCLUDE), list(PARTIAL), None
    exclude, partial = cfg.patterns()
    return exclude, partial, cfg.file


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
        model = SourceModel(text, exclude, partial, path)
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
        if int(n) in model.annotate_only:
            continue
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
            for more in model.trail_more.get((a, b), ()):
                # 3.14+: coverage.py's arc goes on to the next statement,
                # and that statement counts as run (SourceModel._sysmon_rules)
                key = (model.stmt(a), dest(more))
                arcs[key] = arcs.get(key, 0) + int(c)
                if more > 0 and key[1] in stmts:
                    hits[key[1]] = hits.get(key[1], 0) or 1
            a = a if a < 0 else model.stmt(a)
            b = dest(b)
            key = (a, ways.get((a, b), b))
            if key[0] != key[1]:
                arcs[key] = arcs.get(key, 0) + int(c)
        out["arcs"] = sorted([a, b, c] for (a, b), c in arcs.items())
        branches = {}
        for line, dests in rec.get("branches", []):
            f = model.stmt(int(line))
            if f not in stmts or f not in model.branch_lines:
                continue
            for d in dests:
                d = way(f, dest(int(d)))
                if d == f or (d > 0 and d not in stmts):
                    continue  # (a way into excluded code is no branch)
                branches.setdefault(f, set()).add(d)
        ran_from = {int(first) for name, first, n in rec.get("functions", [])
                    if int(n) and not str(name).endswith("__annotate__")}
        for line, (nxt, is_class, first) in model.oneliners.items():
            if line not in stmts or nxt is None:
                continue
            nxt = dest(nxt)
            branches[line] = {-line, nxt}
            if line in hits:
                if is_class or any(first <= f <= line for f in ran_from):
                    arcs[(line, -line)] = arcs.get((line, -line), 0) or 1
                # coverage.py's sysmon core (3.14+) sees no arc to the next
                # statement, whatever ran: no event shows it (a return
                # shows the exit)
                if SYSMON_RULES and nxt > 0:
                    arcs.pop((line, nxt), None)
                elif nxt < 0 or nxt in hits:
                    arcs[(line, nxt)] = arcs.get((line, nxt), 0) or 1
        out["arcs"] = sorted([a, b, c] for (a, b), c in arcs.items())
        out["hits"] = sorted([n, c] for n, c in hits.items() if n in stmts)
        out["branches"] = sorted([n, sorted(ds)] for n, ds in branches.items() if len(ds) > 1)
        # coverage.py counts the branches of a `# pragma: no branch` line,
        # and never as missing (whether the line ran or not)
        out["no_branch"] = sorted(n for n, ds in branches.items()
                                  if len(ds) > 1 and n in model.no_branch)
    return out


class FileStats:
    def __init__(self, path, rec, branch):
        self.path = path
        rec = model_record(path, rec, branch)
        self.excluded = rec.get("excluded", [])
        self.no_branch = set(rec.get("no_branch", []))
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
            no_branch = set(rec.get("no_branch", []))
            for line, dests in rec.get("branches", []):
                line = int(line)
                ran = line in self.hits
                self.branches[line] = [(int(d), arcs.get((line, int(d)), 0) or 1
                                        if line in no_branch else
                                        arcs.get((line, int(d)), 0) if ran else None)
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
.source p.exc{color:#999}
.source .xb{float:right;color:#999;font-family:sans-serif;font-size:85%}
.source .k{color:#008;font-weight:bold}
.source .s{color:#a31515}
.source .c{color:#080;font-style:italic}
.source .m{color:#099}
.source p.exc .k,.source p.exc .s,.source p.exc .c,.source p.exc .m{color:inherit}
"""


def _highlight(src):
    """Each source line as HTML, its tokens marked for the colours: k a
    keyword, s a string, c a comment, m a number (the standard library's
    tokenize: no highlighter needed). What does not tokenize stays plain."""
    import io
    import keyword
    import tokenize
    kinds = {tokenize.COMMENT: "c", tokenize.NUMBER: "m", tokenize.STRING: "s"}
    for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END",
                 "TSTRING_START", "TSTRING_MIDDLE", "TSTRING_END"):
        if hasattr(tokenize, name):
            kinds[getattr(tokenize, name)] = "s"
    marks = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO("\n".join(src) + "\n").readline):
            cls = kinds.get(tok.type)
            if tok.type == tokenize.NAME and keyword.iskeyword(tok.string):
                cls = "k"
            if cls is None:
                continue
            (r1, c1), (r2, c2) = tok.start, tok.end
            for r in range(r1, min(r2, len(src)) + 1):
                marks.setdefault(r, []).append((c1 if r == r1 else 0,
                                                c2 if r == r2 else len(src[r - 1]), cls))
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    out = []
    for n, line in enumerate(src, 1):
        pos, parts = 0, []
        for a, b, cls in sorted(marks.get(n, [])):
            if a < pos or b <= a:
                continue
            parts.append(_h(line[pos:a]))
            parts.append("<span class=\"%s\">%s</span>" % (cls, _h(line[a:b])))
            pos = b
        parts.append(_h(line[pos:]))
        out.append("".join(parts))
    return out


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
        # its lines as Python numbers them: the universal newlines only
        # (str.splitlines() also splits at a form feed, \x1c-\x1e, \x85
        # and U+2028/U+2029, which Python reads as whitespace or inside
        # strings: each one moved every later line of the report)
        return [line.rstrip("\n") for line in io.TextIOWrapper(io.BytesIO(data), enc)]
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _dest_text(dest):
    return "exit" if dest < 0 else "line %d" % dest


def html_pages(data, title="Coverage report"):
    """{file name: text} of the HTML report: index.html (the files sorted by
    coverage, lowest first; `title` its title, [html] title) and one page
    per file with each line marked as run, missed (mis) or partial (par: a
    branch destination not taken)."""
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
        title,
        "<h1>%s</h1>\n<p>%d files, sorted by coverage (lowest first).</p>\n"
        "<table class=\"index\" id=\"index\">\n<thead><tr>%s</tr></thead>\n<tbody>\n%s\n"
        "</tbody>\n</table>" % (_h(title), len(stats), head, "\n".join(body)))}
    for fs in stats:
        pages[names[fs.path]] = _html_file(fs, branch, cells, head)
    return pages


def _html_file(fs, branch, cells, head):
    src = _read_source(fs.path)
    maxline = max([len(src or [])] + fs.lines)
    lines = set(fs.lines)
    shown = _highlight(src) if src else []
    excluded = set(fs.excluded)
    out = []
    for n in range(1, maxline + 1):
        text = shown[n - 1] if n <= len(shown) else ""
        cls = ""
        ann = ""
        if n in excluded and n not in lines:
            cls = "exc"  # excluded (a pattern of [report] exclude_lines)
        if n in fs.no_branch and n in lines:
            ann = "<span class=\"xb\">branches excluded</span>"
        if n in lines:
            cls = "run" if n in fs.hits else "mis"
            missed = [d for d, t in fs.branches.get(n, []) if t == 0]
            if cls == "run" and missed:
                cls = "par"
                ann = "<span class=\"ann\">%s</span>" % _h(
                    "line %d didn't jump to %s" % (n, ", ".join(_dest_text(d) for d in missed)))
        out.append("<p id=\"t%d\"%s><span class=\"n\">%d</span>%s%s</p>"
                   % (n, " class=\"%s\"" % cls if cls else "", n, text or " ", ann))
    pc = percent_covered(fs.nhit, fs.nlines, fs.nbranches_taken, fs.nbranches)
    # the index's columns, their names above the figures
    summary = ("<table class=\"index\" id=\"summary\"><thead><tr>%s</tr></thead>"
               "<tr>%s</tr></table>"
               % (head.replace("<th>File</th>", ""),
                  cells(fs.nlines, len(fs.missed), fs.nbranches, fs.nbranches_partial, pc)))
    note = "" if src is not None else "<p class=\"nosource\">The source is not readable.</p>"
    if excluded:
        note += "<p class=\"excluded\">%d excluded (grey)</p>" % len(excluded)
    return _html_doc(
        _display_name(fs.path),
        "<p><a href=\"index.html\">index</a></p>\n<h1>%s</h1>\n%s\n%s\n"
        "<div class=\"source\" id=\"source\">\n%s\n</div>"
        % (_h(_display_name(fs.path)), summary, note, "\n".join(out)))


def _html_doc(title, body):
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>%s</title>\n<style>\n%s</style>\n</head>\n<body>\n%s\n</body>\n</html>\n"
            % (_h(title), _CSS, body))


def write_html(data, directory, title="Coverage report"):
    """Writes the HTML report into `directory`: the pages are written into a
    new directory made next to it, which becomes `directory` if there is
    none (a planted symlink there is replaced, never followed); if there is
    a real directory of ours, each page is moved into it by name, through
    directory descriptors (nothing else in it is touched)."""
    import stat
    import tempfile
    parent, base = os.path.split(os.path.abspath(directory))
    pages = html_pages(data, title)
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
    import json
    return json.dumps(with_summary(data), separators=(",", ":")) + "\n"


def _by_context(files, items):
    """{context name: {file: [lines or arcs]}} from each file's record
    through `items(rec)`, which yields (line or arc, [context name, ...]).
    The lists are built per file first and put in place once each: 425,854
    (line, context) pairs of networkx's tests took 0.29 s through nested
    setdefault, 0.12 s this way."""
    by_context = {}
    for f, rec in files.items():
        per = {}
        for what, names in items(rec):
            for name in names:
                have = per.get(name)
                if have is None:
                    per[name] = [what]
                else:
                    have.append(what)
        for name, have in per.items():
            into = by_context.get(name)
            if into is None:
                by_context[name] = {f: have}
            else:
                into[f] = have
    return by_context


def _add_by_context(cd, by_context, add):
    """Adds {context name: {file: lines or arcs}} to coverage.py's
    CoverageData `cd` through `add` (its add_lines or add_arcs), each under
    its context's name: coverage.py's dynamic contexts (`coverage report
    --contexts`, `coverage html --show-contexts`)."""
    # in one connection and one transaction (coverage.py's CoverageData
    # opens, commits and closes its database in each add_lines unless a
    # connection is open: 3,321 contexts took 0.8 s that way)
    import contextlib
    add({})  # its first use empties the file, closing connections
    connect = getattr(cd, "_connect", None)
    with connect() if connect is not None else contextlib.nullcontext():
        for name in sorted(by_context):
            cd.set_context(name)
            add(by_context[name])


# The version of coverage.py's data file schema whose tables _fill_lines()
# fills (coverage.py's SCHEMA_VERSION from 5.0 to 7.16 at least; its
# documentation gives the schema for direct use, with coverage.numbits).
LINE_BITS_SCHEMA = 7
_LINE_BITS_TABLES = {"file": ["id", "path"], "context": ["id", "context"],
                     "line_bits": ["file_id", "context_id", "numbits"]}


def _fill_lines(path, by_context):
    """Writes {context name: {file: [lines]}} into the data file `path` that
    coverage.py's CoverageData has just made (its schema and meta, no
    lines), straight into its tables: one transaction, the files, the
    contexts, and a line_bits row per (file, context) in three executemany,
    the numbits made by coverage.numbits. CoverageData.add_lines per context
    runs a query and an insert per file and context, and hashes them: on
    networkx's tests (3,321 contexts, 15,281 such pairs) 0.33 s against
    0.07 s this way. False, having written nothing, unless the file is
    empty and of the schema known here (LINE_BITS_SCHEMA, the tables'
    columns as above): the caller then goes through add_lines."""
    import sqlite3
    from coverage.numbits import nums_to_numbits
    con = sqlite3.connect(path)
    try:
        with con:
            version = con.execute("SELECT version FROM coverage_schema").fetchall()
            columns = {t: [row[1] for row in con.execute("PRAGMA table_info(%s)" % t)]
                       for t in _LINE_BITS_TABLES}
            if (version != [(LINE_BITS_SCHEMA,)] or columns != _LINE_BITS_TABLES
                    or con.execute("SELECT count(*) FROM line_bits").fetchone()[0]
                    or con.execute("SELECT count(*) FROM arc").fetchone()[0]):
                return False
            paths = sorted({f for per in by_context.values() for f in per})
            con.executemany("INSERT OR IGNORE INTO file (path) VALUES (?)",
                            [(f,) for f in paths])
            con.executemany("INSERT OR IGNORE INTO context (context) VALUES (?)",
                            [(name,) for name in sorted(by_context)])
            file_id = dict(con.execute("SELECT path, id FROM file"))
            context_id = dict(con.execute("SELECT context, id FROM context"))
            con.executemany(
                "INSERT INTO line_bits (file_id, context_id, numbits) VALUES (?, ?, ?)",
                [(file_id[f], context_id[name], nums_to_numbits(lines))
                 for name, per in by_context.items() for f, lines in per.items()])
    finally:
        con.close()
    return True


def write_coveragepy(data, path, by_context=None):
    """Writes `data` as coverage.py's data file `path` (.coverage) through
    coverage.py's own API (coverage.CoverageData), so that `coverage report`,
    `coverage html`, `coverage combine` and the tools built on them read it:
    the executed lines, or in branch mode the arcs (coverage.py's
    convention: -N enters or leaves the code object starting at line N).
    by_context, when given (the plugin, with contexts and without branch
    data), is what the data's contexts give per context: {context name:
    {file: [lines]}}."""
    import coverage
    import tempfile
    # in a new directory of its own: coverage.py opens the file by name
    d, base = os.path.split(os.path.abspath(path))
    tmpdir = tempfile.mkdtemp(prefix=".pytracekit-tmp.%s." % base, dir=d)
    tmp = os.path.join(tmpdir, base)
    cd = coverage.CoverageData(basename=tmp)
    if data["meta"].get("branch") and any("arc_contexts" in rec
                                          for rec in data["files"].values()):
        # contexts=true with branch=true: each context's arcs under its name
        # (coverage.py's arc table has a context per row), all from line
        # transitions, so each executed line is an end of one of them
        by_context = _by_context(data["files"], lambda rec: (
            ((int(a), int(b)), names) for a, b, names in rec.get("arc_contexts", [])))
        _add_by_context(cd, by_context, cd.add_arcs)
    elif data["meta"].get("branch"):
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
    elif by_context or any("contexts" in rec for rec in data["files"].values()):
        # contexts=true: each context's lines under its name, as
        # coverage.py's dynamic contexts (`coverage report --contexts`,
        # `coverage html --show-contexts`)
        if not by_context:
            by_context = _by_context(data["files"], lambda rec: (
                (int(n), names) for n, names in rec.get("contexts", {}).items()))
        cd.add_lines({})  # coverage.py makes the file: its schema, its meta
        if not _fill_lines(tmp, by_context):
            _add_by_context(cd, by_context, cd.add_lines)
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


# ---- the configuration at run time -------------------------------------------
#
# [run] becomes the coverage plugin's options before the session starts, so
# that what is left out is never measured (the plugin's file filter is the
# bus filter: a file outside it costs nothing). An option given in the
# plugin's spec wins over the file.

_LIST_OPTIONS = ("include", "exclude")  # the coverage plugin's list options


def _split_spec(opts):
    """[(key, text)]: the options of a plugin spec, as lib/core/options.c splits
    them (a quoted value, a list's value running on across commas up to the
    next key=), each with its text as written."""
    out = []
    i, n = 0, len(opts)
    while i < n:
        j = i
        while j < n and opts[j] not in "=,":
            j += 1
        key = opts[i:j]
        if j < n and opts[j] == "=":
            j += 1
            if j < n and opts[j] in "'\"":
                k = opts.find(opts[j], j + 1)
                j = n if k < 0 else k + 1
            else:
                while True:
                    while j < n and opts[j] != ",":
                        j += 1
                    if key not in _LIST_OPTIONS or j >= n:
                        break
                    k = j + 1
                    while k < n and opts[k] not in ",=":
                        k += 1
                    if k < n and opts[k] == "=":
                        break
                    j = k
        if key:
            out.append((key, opts[i:j]))
        i = j + 1 if j < n else n
    return out


def _quote(value):
    return '"%s"' % value if ("," in value or ";" in value) else value


def _glob_in_bus(pattern):
    """A coverage.py file pattern as the plugin's fnmatch glob on absolute
    paths (where `*` also matches `/`): every path coverage.py's pattern
    matches, and possibly more (the report commands apply the exact
    pattern)."""
    if not pattern.startswith(("*", "?")):
        pattern = os.path.abspath(pattern) if "/" in pattern else "*/" + pattern
    import re
    return re.sub(r"\*+", "*", pattern)


def _omit_exact_in_bus(pattern):
    """Does the plugin's glob for this omit pattern leave out only files
    that coverage.py's pattern leaves out? Then it can be the bus filter;
    otherwise it is applied when the report is made."""
    parts = pattern.split("/")
    if "?" in pattern:
        return False
    for k, part in enumerate(parts):
        if "*" not in part:
            continue
        if part == "**" or (part == "*" and k in (0, len(parts) - 1)) or \
                (k == 0 and part.strip("*") == ""):
            continue
        return False
    return "/" in pattern


def _find_package(name):
    """The spec of a module or package by its dotted name, found on the
    current directory and sys.path without importing anything (the
    program has not started)."""
    from importlib.machinery import PathFinder
    spec, where = None, [os.getcwd()] + sys.path
    for part in name.split("."):
        if where is None:
            return None
        spec = PathFinder.find_spec(part, list(where))
        if spec is None:
            return None
        where = spec.submodule_search_locations
    return spec


def _source_dirs(cfg, warn):
    """The directories of [run] source (a directory, or a package's) and
    source_pkgs, absolute; what cannot be found is warned about."""
    out = []
    srcs = [(s, True) for s in cfg.get("run", "source")] + \
        [(s, False) for s in cfg.get("run", "source_pkgs")]
    for s, maybe_dir in srcs:
        if maybe_dir and os.path.isdir(s):
            out.append(os.path.abspath(s))
            continue
        try:
            spec = _find_package(s)
        except (ImportError, ValueError, OSError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            out.append(os.path.abspath(list(spec.submodule_search_locations)[0]))
        elif spec is not None and spec.origin and os.path.isfile(spec.origin):
            out.append(os.path.abspath(spec.origin))
        else:
            warn("Module %s was never imported: [run] %s=%s is neither a directory "
                 "nor a package found on sys.path" % (s, "source" if maybe_dir
                                                       else "source_pkgs", s))
    return out


def run_plugin_spec(spec, stderr=None):
    """(spec, follow): the coverage plugin's spec (`coverage[:OPTIONS]`)
    with the project's [run] settings added where the spec does not give
    them, and whether children are to be followed ([run] concurrency
    includes multiprocessing). The spec's `rcfile=FILE` names the
    configuration file (as --rcfile; it is taken out). Warnings go to
    `stderr`. Any other spec is returned as it is. Raises ConfigError."""
    stderr = sys.stderr if stderr is None else stderr
    name, sep, opts = spec.partition(":")
    if name != "coverage":
        return spec, False
    parts = _split_spec(opts)
    given = {k for k, _ in parts}
    rcfile = None
    for k, text in parts:
        if k == "rcfile":
            rcfile = text.partition("=")[2].strip("'\"")
            if not rcfile:
                raise ConfigError("coverage: rcfile= needs a file name")
    kept = [text for k, text in parts if k != "rcfile"]
    cfg = read_config(rcfile)

    def warn(msg):
        stderr.write("pytracekit coverage: warning: %s\n" % msg)
    for w in cfg.warnings:
        warn(w)
    add = []
    follow = False
    if cfg.file is not None:
        if "branch" not in given and cfg.is_set("run", "branch"):
            add.append("branch=%s" % ("true" if cfg.get("run", "branch") else "false"))
        sources = _source_dirs(cfg, warn)
        include = cfg.get("run", "include")
        if sources and include:
            warn("[run] include is ignored because [run] source is set")
        if "source" not in given and "include" not in given:
            if len(sources) == 1 and os.path.isdir(sources[0]):
                add.append("source=%s" % _quote(sources[0]))
            elif sources:
                warn("several [run] source entries: files under them that never "
                     "ran are not listed")
                add.append("include=%s" % _quote(";".join(
                    s + "/*" if os.path.isdir(s) else s for s in sources)))
            elif include:
                add.append("include=%s" % _quote(";".join(_glob_in_bus(p) for p in include)))
        omit = [p for p in cfg.get("run", "omit")]
        if omit and "exclude" not in given:
            bus = [_glob_in_bus(p) for p in omit if _omit_exact_in_bus(_glob_in_bus(p))]
            if bus:
                add.append("exclude=%s" % _quote(";".join(bus)))
        for c in cfg.get("run", "concurrency"):
            if c == "multiprocessing":
                follow = True
            elif c != "thread":
                warn("[run] concurrency=%s is not supported: only threads and "
                     "processes are measured" % c)
    opts = kept + add
    return ("coverage" + (":" + ",".join(opts) if opts else "")), follow


def config_spec(spec):
    """run_plugin_spec for the pytracekit command (tools/cov_config.c):
    (spec, follow, error message or None)."""
    try:
        new, follow = run_plugin_spec(spec)
        return new, follow, None
    except ConfigError as e:
        return spec, False, str(e)


def config_paths():
    """The [paths] of the configuration in force, as `pytracekit combine
    --paths` takes them: CANONICAL=PATTERN,... (coverage.py: the first
    entry is what the others become, made absolute as coverage.py does
    without relative_files)."""
    cfg = read_config()
    return ["%s=%s" % (os.path.abspath(v[0]), ",".join(v[1:]))
            for v in cfg.paths.values() if len(v) > 1]


# ---- the report commands -------------------------------------------------------
#
# `pytracekit report | html | xml | json | lcov` read a report directory's
# coverage.json (or a combined one) and write what coverage.py's commands of
# the same names write, with its options and configuration, and its exit
# statuses: 0; 1 when there is no data; 2 when the total is under
# fail_under (and for a usage or configuration error).


def _glob_regex(pattern):
    """coverage.py's file pattern as a regex: `*` and `?` within one path
    component, `**/` any directories, a leading `*/` any prefix and a
    trailing `/*` anything below; a pattern without `/` matches a file name
    in any directory."""
    import re
    if "/" not in pattern:
        pattern = "**/" + pattern
    out, i, n = [], 0, len(pattern)
    if pattern.startswith("*/") or pattern.startswith("**/"):
        out.append("(.*/)?")
        i = pattern.index("/") + 1
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(.*/)?")
            i += 3
        elif pattern.endswith("/*", i) and i == n - 2 or \
                (pattern.endswith("/**", i) and i == n - 3):
            out.append("/.*")
            i = n
        elif pattern[i] == "*":
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            k = pattern.find("]", i)
            if k < 0:
                raise ConfigError("bad file pattern %r" % pattern)
            out.append(pattern[i:k + 1])
            i = k + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _matcher(patterns):
    """A function path -> whether one of coverage.py's file patterns
    matches it (a pattern not starting with a wildcard is also taken
    relative to the current directory)."""
    import re
    if not patterns:
        return None
    prepped = []
    for p in patterns:
        prepped.append(p)
        if not p.startswith(("*", "?")):
            prepped.append(os.path.abspath(p))
    rx = re.compile("(?:%s)\\Z" % "|".join("(?:%s)" % _glob_regex(p) for p in prepped))
    return lambda path: rx.match(path) is not None


def report_filter(cfg, include=None, omit=None):
    """A function path -> reported?, from the configuration's [run] source,
    include and omit (what the run may have measured beyond them) and
    [report] include and omit, or the command's --include/--omit."""
    sources = []
    for s in cfg.get("run", "source"):
        if os.path.isdir(s):
            sources.append(os.path.abspath(s))
    run_inc = None if cfg.get("run", "source") else _matcher(cfg.get("run", "include"))
    run_omit = _matcher(cfg.get("run", "omit"))
    rep_inc = _matcher(include if include is not None else cfg.get("report", "include"))
    rep_omit = _matcher(omit if omit is not None else cfg.get("report", "omit"))

    def keep(path):
        if sources and not any(path.startswith(s + os.sep) for s in sources):
            return False
        if run_inc and not run_inc(path):
            return False
        if run_omit and run_omit(path):
            return False
        if rep_inc and not rep_inc(path):
            return False
        return not (rep_omit and rep_omit(path))
    return keep


def display_covered(pc, precision):
    """coverage.py's percentage text: 0 and 100 only when exact."""
    near0 = 1.0 / 10 ** precision
    if 0 < pc < near0:
        pc = near0
    elif 100.0 - near0 < pc < 100:
        pc = 100.0 - near0
    else:
        pc = round(pc, precision)
    return "%.*f" % (precision, pc)


def should_fail_under(total, fail_under, precision):
    """coverage.py's fail_under test (100 must be exactly 100)."""
    if not 0 <= fail_under <= 100.0:
        raise ConfigError("fail_under=%s is invalid. Must be between 0 and 100."
                          % fail_under)
    if fail_under == 100.0 and total != 100.0:
        return True
    return round(total, precision) < fail_under


def _format_lines(statements, missing, arcs):
    """coverage.py's Missing column: runs of missing statements, then
    the branches not taken from lines that ran (LINE->DEST)."""
    stmts, lines = sorted(statements), sorted(missing)
    pairs, start, end, k = [], None, None, 0
    for s in stmts:
        if k >= len(lines):
            break
        if s == lines[k]:
            k += 1
            if not start:
                start = s
            end = s
        elif start:
            pairs.append((start, end))
            start = None
    if start:
        pairs.append((start, end))
    items = [(a, "%d" % a if a == b else "%d-%d" % (a, b)) for a, b in pairs]
    lineset = set(missing)
    for line, exits in sorted(arcs.items()):
        for ex in sorted(exits):
            if line not in lineset and ex not in lineset:
                items.append((line, "%d->%s" % (line, ex if ex > 0 else "exit")))
    return ", ".join(t for _, t in sorted(items))


def _human_key(s):
    import re

    def tryint(c):
        try:
            return int(c)
        except ValueError:
            return c
    return ([tryint(c) for c in re.split(r"(\d+)", s)], s)


def report_table(data, precision=0, show_missing=False, skip_covered=False,
                 skip_empty=False, sort=None):
    """(text, total percentage, files reported or skipped): the table
    `coverage report` prints for the same data, column for column."""
    stats = _stats(data)
    branch = bool(data["meta"].get("branch"))
    rows, skipped, empty = [], 0, 0
    tot = [0, 0, 0, 0, 0]  # statements, hit, branches, taken, partial
    for fs in stats:
        tot[0] += fs.nlines
        tot[1] += fs.nhit
        tot[2] += fs.nbranches
        tot[3] += fs.nbranches_taken
        tot[4] += fs.nbranches_partial
        if skip_covered and not fs.missed and not fs.nbranches_partial:
            skipped += 1
            continue
        if skip_empty and fs.nlines == 0:
            empty += 1
            continue
        pc = percent_covered(fs.nhit, fs.nlines, fs.nbranches_taken, fs.nbranches)
        row = [_display_name(fs.path), fs.nlines, len(fs.missed)]
        if branch:
            row += [fs.nbranches, fs.nbranches_partial]
        row.append(display_covered(pc, precision))
        if show_missing:
            arcs = {}
            for line, dests in fs.branches.items():
                miss = [d for d, t in dests if not t]
                if miss:
                    arcs[line] = miss
            row.append(_format_lines(fs.lines, fs.missed, arcs))
        row.append(pc)
        rows.append(row)
    header = ["Name", "Stmts", "Miss"] + (["Branch", "BrPart"] if branch else []) + ["Cover"]
    if show_missing:
        header.append("Missing")
    order = {"name": 0, "stmts": 1, "miss": 2, "cover": -1}
    if branch:
        order.update(branch=3, brpart=4)
    key = (sort or "name").lower()
    reverse = key.startswith("-")
    key = key.lstrip("+-")
    if key not in order:
        raise ConfigError("Invalid sorting option: %r" % sort)
    if key == "name":
        rows.sort(key=lambda r: (_human_key(r[0]),) + tuple(r[1:]), reverse=reverse)
    else:
        rows.sort(key=lambda r: (r[order[key]], r[0]), reverse=reverse)
    total_pc = percent_covered(tot[1], tot[0], tot[3], tot[2])
    total = ["TOTAL", tot[0], tot[0] - tot[1]] + ([tot[2], tot[4]] if branch else [])
    total.append(display_covered(total_pc, precision))
    if show_missing:
        total.append("")
    cover = header.index("Cover")
    max_name = max([len(r[0]) for r in rows] + [5]) + 1
    max_n = max(len(total[cover]) + 2, len(" Cover")) + 1
    max_n = max([max_n] + [len(r[cover]) + 2 for r in rows])
    fmt = {"Name": "{:{name_len}}", "Stmts": "{:>7}", "Miss": "{:>7}", "Branch": "{:>7}",
           "BrPart": "{:>7}", "Cover": "{:>{n}}", "Missing": "{:>10}"}
    head = "".join(fmt[h].format(h, name_len=max_name, n=max_n) for h in header)
    rule = "-" * len(head)
    out = [head, rule]
    fmt.update(Cover="{:>{n}}%", Missing="   {:9}")

    def line(values):
        return "".join(fmt[h].format(str(v), name_len=max_name, n=max_n - 1)
                       for h, v in zip(header, values))
    out += [line(r) for r in rows]
    if rows:
        out.append(rule)
    out.append(line(total))
    if skip_covered and skipped:
        out.append("\n%d file%s skipped due to complete coverage."
                   % (skipped, "" if skipped == 1 else "s"))
    if skip_empty and empty:
        out.append("\n%d empty file%s skipped." % (empty, "" if empty == 1 else "s"))
    return "".join(s.rstrip() + "\n" for s in out), total_pc


REPORT_USAGE = """usage: pytracekit report [-m] [--skip-covered | --no-skip-covered] [--skip-empty]
                         [--precision N] [--sort COLUMN] [--fail-under MIN]
                         [--include PAT,...] [--omit PAT,...] [--rcfile FILE] [DIR|FILE...]
       pytracekit html [-d DIR] [--title TITLE] [options] [DIR|FILE...]
       pytracekit xml|json|lcov [-o FILE] [options] [DIR|FILE...]

Reads coverage.json of the report directories (default pytracekit-out; a
combined one too) and prints or writes coverage.py's report of the same
name, with the project's coverage.py configuration ([report], [html],
[xml], [json], [lcov]); an option given here wins over the file.
Exit status: 0; 1 when there is no data; 2 when the total is under
fail_under (as coverage.py), for a usage or a configuration error.
"""


def report_main(cmd, argv, stdout=None, stderr=None):
    """`pytracekit report|html|xml|json|lcov ARGS`: the exit status."""
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    prog = "pytracekit %s" % cmd
    opts = {}
    inputs = []
    takes = {"--fail-under": "fail_under", "--precision": "precision", "--sort": "sort",
             "--include": "include", "--omit": "omit", "--rcfile": "rcfile"}
    if cmd == "html":
        takes.update({"-d": "directory", "--directory": "directory", "--title": "title"})
    if cmd in ("xml", "json", "lcov"):
        takes["-o"] = "output"
    flags = {"-m": ("show_missing", True), "--show-missing": ("show_missing", True),
             "--skip-covered": ("skip_covered", True),
             "--no-skip-covered": ("skip_covered", False),
             "--skip-empty": ("skip_empty", True), "--pretty-print": ("pretty_print", True)}
    i = 0
    try:
        while i < len(argv):
            a = argv[i]
            name, eq, val = a.partition("=")
            if a in ("-h", "--help"):
                stdout.write(REPORT_USAGE)
                return 0
            if name in takes:
                if not eq:
                    if i + 1 >= len(argv):
                        raise ConfigError("%s needs a value (see %s --help)" % (a, prog))
                    i += 1
                    val = argv[i]
                opts[takes[name]] = val
            elif a in flags:
                opts[flags[a][0]] = flags[a][1]
            elif a.startswith("-") and a != "-":
                stderr.write("%s: unknown option %r (see %s --help)\n" % (prog, a, prog))
                return 2
            else:
                inputs.append(a)
            i += 1
        for k, conv in (("fail_under", float), ("precision", int)):
            if k in opts:
                try:
                    opts[k] = conv(opts[k])
                except ValueError:
                    raise ConfigError("--%s expects a number, found %r"
                                      % (k.replace("_", "-"), opts[k]))
        cfg = read_config(opts.get("rcfile"))
    except ConfigError as e:
        stderr.write("%s: %s\n" % (prog, e))
        return 2
    for w in cfg.warnings:
        stderr.write("pytracekit coverage: warning: %s\n" % w)

    def opt(key, section="report"):
        return opts[key] if key in opts else cfg.get(section, key)

    def split(v):
        return None if v is None else [p.strip() for p in v.split(",") if p.strip()]
    if not inputs:
        inputs = ["pytracekit-out"]
    try:
        data = merge([load(p) for p in with_children(inputs)])
    except DataError as e:
        stderr.write("%s: %s\n" % (prog, e))
        return 1
    try:
        keep = report_filter(cfg, split(opts.get("include")), split(opts.get("omit")))
        data = {"meta": data["meta"],
                "files": {p: r for p, r in data["files"].items() if keep(p)}}
        precision = opt("precision")
        if precision < 0:
            raise ConfigError("precision=%s is invalid. Must not be negative." % precision)
        if not data["files"]:
            stdout.write("No data to report.\n")
            return 1
        if cmd == "report":
            text, total = report_table(data, precision, opt("show_missing"),
                                       opt("skip_covered"), opt("skip_empty"), opt("sort"))
            stdout.write(text)
        else:
            stats = _stats(data)
            total = percent_covered(sum(fs.nhit for fs in stats),
                                    sum(fs.nlines for fs in stats),
                                    sum(fs.nbranches_taken for fs in stats),
                                    sum(fs.nbranches for fs in stats))
            if cmd == "html":
                d = opt("directory", "html")
                write_html(data, d, opt("title", "html"))
                stderr.write("Wrote HTML report to %s\n" % os.path.join(d, "index.html"))
            else:
                out = opt("output", cmd)
                if out != "-" and os.path.dirname(out):
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                if cmd == "json":
                    import json
                    text = json.dumps(with_summary(data),
                                      indent=4 if opt("pretty_print", "json") else None,
                                      separators=None if opt("pretty_print", "json")
                                      else (",", ":")) + "\n"
                else:
                    text = (cobertura_text if cmd == "xml" else lcov_text)(data)
                if out == "-":
                    stdout.write(text)
                else:
                    _write(out, text)
                    stderr.write("Wrote %s report to %s\n"
                                 % ({"xml": "XML", "json": "JSON", "lcov": "LCOV"}[cmd], out))
        fail_under = opt("fail_under")
        if should_fail_under(total, fail_under, precision):
            stdout.write("Coverage failure: total of %s is less than fail-under=%.*f\n"
                         % (display_covered(total, precision), precision, fail_under))
            return 2
    except ConfigError as e:
        stderr.write("%s: %s\n" % (prog, e))
        return 2
    except OSError as e:
        stderr.write("%s: %s\n" % (prog, e))
        return 1
    return 0


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
        data = merge([load(p) for p in with_children(inputs)])
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
