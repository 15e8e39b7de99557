"""The lines plugin's reports, made from what the plugin measured
(embedded in the plugin; docs/lines.md).

render(funcs, calls, top, html, threads=None, contexts=None) takes one tuple
per code object seen, (file, qualname, first line, calls, {line: (hits,
time_ns)}[, thread index[, context index]]), with per_thread=true `threads`,
{index: (ident, name)}, and with per_context=true `contexts`, the contexts'
names by index; it returns
(the lines.json object, lines.txt as bytes, lines.html as bytes or None,
the summary text). from_json(data) gives those tuples back from a
lines.json object (or one context of it), and contexts_json(tuples, names)
makes lines.json's `contexts`, for `pytracekit combine`."""
import os

_UNIT = 1e-6  # the text and HTML reports' time unit: microseconds
_PARTS = 10  # threads or contexts listed under a function, by time
_LINE_PARTS = 3  # and named in a line's tooltip in lines.html


def _text(s):
    """`s` for a UTF-8 text report: a byte os.fsdecode turned into a lone
    surrogate is written \\xNN, as the other plugins' text reports do."""
    if s.isascii():
        return s  # nearly every line of every source
    try:
        s.encode("utf-8")
        return s  # no surrogate
    except UnicodeEncodeError:
        pass
    out = []
    for ch in s:
        o = ord(ch)
        if 0xDC80 <= o <= 0xDCFF:
            out.append("\\x%02x" % (o - 0xDC00))
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    return "".join(out)


def _h(s):
    return (_text(s).replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;").replace('"', "&quot;"))


def _read_source(path):
    """The file's lines, or None when it is not a readable regular file."""
    import io
    import stat
    import tokenize
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as raw:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            os.set_blocking(fd, True)
            data = raw.read()
        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        # split as Python numbers lines (as the coverage report writer's
        # _read_source, tools/pytracekit-coverage.py, says why)
        return [line.rstrip("\n") for line in io.TextIOWrapper(io.BytesIO(data), enc)]
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _block_ends(src):
    """{first line: last line} of each def and class of a file's source, the
    block inspect.getblock() reads for line_profiler: from its first
    decorator or its def (its code's first line) to its last statement, and the
    comments after it indented as its body. From one parse of the file (ast,
    in C): getblock tokenizes each function in Python after importing
    inspect, 64 M instructions of a 360 M run of test_textwrap under
    `lines:modules=textwrap` (lines.blocks compares the two on every def
    and class of the standard library). Other code (a module, a lambda, a
    comprehension, a `type` alias) shows its measured lines: getblock's
    block there is whatever def follows, or one line where the tokenizer
    stops."""
    import _ast  # ast.py's nodes, without importing ast.py where the program has not
    try:
        tree = compile("\n".join(src) + "\n", "<lines>", "exec", _ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    ends = {}
    for node in _statements(tree.body):
        if isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)):
            last, col = node.end_lineno, node.body[0].col_offset
            for n in range(last + 1, len(src) + 1):  # the comments after it
                code = src[n - 1].lstrip()
                if code and not code.startswith("#"):
                    break
                if code and len(src[n - 1]) - len(code) >= col:
                    last = n
            # its code's first line: its first decorator's, or the def's
            # (a generic function's, with type parameters, on 3.12+)
            for first in {node.lineno, min([node.lineno] +
                                           [d.lineno for d in node.decorator_list])}:
                ends[first] = max(ends.get(first, 0), last)
    return ends


def _statements(body):
    """Every statement in `body` and in the blocks of each (a def is a
    statement: the expressions, nine nodes in ten, are never visited), and
    the except and case clauses that hold blocks."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                yield from _statements(sub)


def _last_line(ends, first, measured):
    """The function's last line: the end of its block in the source
    (_block_ends(): as line_profiler shows it), at least its last measured
    line."""
    return max([first, ends.get(first, first)] + list(measured))


class _Func:
    def __init__(self, file, qualname, first, ncalls, lines):
        self.file = file
        self.qualname = qualname
        self.first = first
        self.calls = ncalls
        self.lines = lines  # {line: (hits, time_ns)}
        self.time_ns = sum(t for _, t in lines.values())
        self.key = qualname
        # per_thread / per_context: [(label, _Func of that thread or
        # context)], by time, set by _attach_parts
        self.parts = []
        self.parts_of = ""  # "thread" or "context"


def _merge(funcs):
    """One _Func per (file, qualname, first line): code objects made again
    for the same function (a module imported twice) are added up."""
    merged = {}
    for file, qualname, first, ncalls, lines in (t[:5] for t in funcs):
        k = (file, qualname, first)
        f = merged.get(k)
        if f is None:
            merged[k] = _Func(file, qualname, first, ncalls, dict(lines))
            continue
        f.calls += ncalls
        for n, (hits, t) in lines.items():
            h0, t0 = f.lines.get(n, (0, 0))
            f.lines[n] = (h0 + hits, t0 + t)
        f.time_ns = sum(t for _, t in f.lines.values())
    out = sorted(merged.values(), key=lambda f: (f.file, f.first, f.qualname))
    # a qualified name twice in one file (two lambdas, a redefinition):
    # each keyed with its first line
    seen = {}
    for f in out:
        seen.setdefault((f.file, f.qualname), []).append(f)
    for group in seen.values():
        if len(group) > 1:
            for f in group:
                f.key = "%s:%d" % (f.qualname, f.first)
    return out


def _json(funcs, calls):
    files = {}
    for f in funcs:
        entry = files.setdefault(f.file, {"lines": {}, "functions": {}})
        entry["functions"][f.key] = {
            "line": f.first, "calls": f.calls, "time_ns": f.time_ns,
            "lines": {str(n): {"hits": h, "time_ns": t}
                      for n, (h, t) in sorted(f.lines.items())}}
        lines = entry["lines"]
        for n, (hits, t) in f.lines.items():
            old = lines.get(n)
            lines[n] = (hits, t) if old is None else (old[0] + hits, old[1] + t)
    for entry in files.values():
        entry["lines"] = {str(n): {"hits": h, "time_ns": t}
                          for n, (h, t) in sorted(entry["lines"].items())}
    return {"calls": bool(calls), "files": files}


def from_json(data, remap=None):
    """The tuples render() takes, read back from a lines.json object (its
    functions' own lines), each file name passed through `remap`: what
    `pytracekit combine` adds up."""
    out = []
    for path, entry in data["files"].items():
        path = remap(path) if remap is not None else path
        for key, fn in entry["functions"].items():
            first = int(fn["line"])
            suffix = ":%d" % first
            qualname = key[:-len(suffix)] if key.endswith(suffix) else key
            lines = {int(n): (int(v["hits"]), int(v["time_ns"]))
                     for n, v in fn["lines"].items()}
            out.append((path, qualname, first, int(fn["calls"]), lines))
    return out


def _fmt_time(ns):
    return f"{ns * 1e-9 / _UNIT:.1f}"


# lines.txt's row: line number, hits, time, per hit, % time, the line; and
# what follows the number in the row of a line that did not run
_TEXT_ROW = "%6s %9s %12s %8s %8s  %-s"
_TEXT_BLANK = (_TEXT_ROW % ("", "", "", "", "", ""))[6:]


class _Source:
    """A file's lines as the reports show them, each made once per file
    (functions and the class around them show the same lines)."""

    def __init__(self, lines):
        self.lines = lines  # the file's lines, or None when not readable
        self._text = self._html = None

    def text(self):
        """The lines for lines.txt (_text), [] without a source."""
        if self._text is None:
            self._text = [_text(s) for s in self.lines] if self.lines else []
        return self._text

    def html(self):
        """The lines for lines.html (_h), " " for an empty one."""
        if self._html is None:
            self._html = [_h(s) or " " for s in self.lines] if self.lines else []
        return self._html


def _text_report(funcs, sources, blocks, calls):
    header = _TEXT_ROW % ("Line #", "Hits", "Time", "Per Hit", "% Time", "Line Contents")
    out = ["Timer unit: %g s" % _UNIT, ""]
    if not calls:
        out += ["(calls=false: the time of the calls each line makes is left out)", ""]
    for f in funcs:
        src = sources[f.file].text()
        nsrc = len(src)
        last = _last_line(blocks[f.file], f.first, f.lines)
        out.append("Total time: %g s" % (f.time_ns * 1e-9))
        out.append("File: %s" % _text(f.file))
        out.append("Function: %s at line %d" % (_text(f.qualname), f.first))
        out.append("")
        out.append(header)
        out.append("=" * len(header))
        lines, total = f.lines, f.time_ns
        for n in range(min([f.first] + list(lines)), last + 1):
            text = src[n - 1] if 0 < n <= nsrc else ""
            v = lines.get(n)
            if v is None or (not v[0] and not v[1]):
                out.append(f"{n:6d}{_TEXT_BLANK}{text}")
                continue
            hits, t = v
            per = _fmt_time(t / hits) if hits else ""
            pc = f"{100.0 * t / total:.1f}" if total else ""
            out.append(_TEXT_ROW % (n, hits, _fmt_time(t), per, pc, text))
        if f.parts:
            out.append("")
            out.append("By %s:" % f.parts_of)
            out.append("%12s %9s %9s %8s  %s" % ("Time", "Hits", "Calls", "% Time", f.parts_of))
            for label, part in f.parts[:_PARTS]:
                out.append("%12s %9d %9d %8s  %s" % (
                    _fmt_time(part.time_ns), sum(h for h, _ in part.lines.values()), part.calls,
                    "%.1f" % (100.0 * part.time_ns / f.time_ns) if f.time_ns else "",
                    _text(label)))
            if len(f.parts) > _PARTS:
                out.append("%12s %9s %9s %8s  (%d more %ss)" % ("", "", "", "",
                                                             len(f.parts) - _PARTS, f.parts_of))
        out.append("")
        out.append("")
    return "\n".join(out).encode("utf-8")


_CSS = """
body { font-family: sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table.index { border-collapse: collapse; }
table.index td, table.index th { padding: 0.2em 0.8em; border-bottom: 1px solid #ddd; }
table.index td.num, table.index th.num { text-align: right; }
.source { font-family: monospace; font-size: 0.9em; white-space: pre; }
.source p { margin: 0; padding: 0 0.3em; display: flex; }
.source span.n { display: inline-block; width: 4em; text-align: right; color: #888;
                 padding-right: 0.8em; }
.source span.hits, .source span.time, .source span.pc { display: inline-block;
  text-align: right; padding-right: 0.8em; color: #555; }
.source span.hits { width: 6em; } .source span.time { width: 9em; }
.source span.pc { width: 4.5em; }
.source p.head { font-weight: bold; border-bottom: 1px solid #888; }
.source p.hottest span.t { font-weight: bold; }
"""


def _heat(t, tmax):
    """The background of a line that took `t` of its function's hottest
    line's `tmax`: white to red."""
    if tmax <= 0 or t <= 0:
        return ""
    a = min(1.0, t / tmax)
    g = int(round(255 - 190 * a))
    return " style=\"background: rgb(255,%d,%d)\"" % (g, g)


def _parts_by_line(f):
    """{line: [(time_ns, hits, label)]} of a function's threads or contexts:
    one pass over them, not one per line (thousands of contexts)."""
    by_line = {}
    for label, part in f.parts:
        for n, (h, t) in part.lines.items():
            by_line.setdefault(n, []).append((t, h, label))
    return by_line


def _line_title(f, parts):
    """A line's tooltip in lines.html with per_thread / per_context: the
    threads or contexts that took most of its time (`parts`: the line's
    entry of _parts_by_line)."""
    if not parts:
        return ""
    parts = sorted(parts, key=lambda p: (-p[0], -p[1], p[2]))
    text = "; ".join("%s: %s \u00b5s, %d hit%s" % (_text(label), _fmt_time(t), h,
                                                   "" if h == 1 else "s")
                     for t, h, label in parts[:_LINE_PARTS])
    if len(parts) > _LINE_PARTS:
        text += "; %d more %ss" % (len(parts) - _LINE_PARTS, f.parts_of)
    return " title=\"%s\"" % _h(text)


def _parts_table(f):
    """A function's threads or contexts by time, under its source in
    lines.html."""
    if not f.parts:
        return ""
    rows = ["<tr><td class=\"num\">%s</td><td class=\"num\">%d</td><td class=\"num\">%d</td>"
            "<td class=\"num\">%s</td><td>%s</td></tr>"
            % (_fmt_time(part.time_ns), sum(h for h, _ in part.lines.values()), part.calls,
               "%.1f%%" % (100.0 * part.time_ns / f.time_ns) if f.time_ns else "",
               _h(label))
            for label, part in f.parts[:_PARTS]]
    if len(f.parts) > _PARTS:
        rows.append("<tr><td colspan=\"5\">%d more %ss</td></tr>"
                    % (len(f.parts) - _PARTS, f.parts_of))
    return ("\n<table class=\"index parts\"><thead><tr><th class=\"num\">Time (\u00b5s)</th>"
            "<th class=\"num\">Hits</th><th class=\"num\">Calls</th><th class=\"num\">Share"
            "</th><th>By %s</th></tr></thead>\n<tbody>\n%s\n</tbody></table>"
            % (f.parts_of, "\n".join(rows)))


def _html_report(funcs, sources, blocks, calls):
    total = sum(f.time_ns for f in funcs)
    rows = []
    body = []
    ranked = sorted(range(len(funcs)), key=lambda i: -funcs[i].time_ns)
    for i in ranked:
        f = funcs[i]
        pc = 100.0 * f.time_ns / total if total else 0.0
        rows.append("<tr><td class=\"name\"><a href=\"#f%d\">%s</a></td><td>%s:%d</td>"
                    "<td class=\"num\">%d</td><td class=\"num\">%s</td>"
                    "<td class=\"num\">%.1f%%</td></tr>"
                    % (i, _h(f.qualname), _h(f.file), f.first, f.calls,
                       _fmt_time(f.time_ns), pc))
    for i, f in enumerate(funcs):
        source = sources[f.file]
        src = source.html()
        nsrc = len(src)
        last = _last_line(blocks[f.file], f.first, f.lines)
        lines, total = f.lines, f.time_ns
        tmax = max([t for _, t in lines.values()] + [0])
        by_line = _parts_by_line(f)
        out = ["<p class=\"head\"><span class=\"n\">Line</span><span class=\"hits\">Hits"
               "</span><span class=\"time\">Time (\u00b5s)</span><span class=\"pc\">% Time"
               "</span><span class=\"t\">Line Contents</span></p>"]
        for n in range(min([f.first] + list(lines)), last + 1):
            text = src[n - 1] if 0 < n <= nsrc else " "
            v = lines.get(n)
            if v is None and n not in by_line:  # a line that did not run
                out.append(f"<p id=\"f{i}l{n}\"><span class=\"n\">{n}</span><span "
                           "class=\"hits\"></span><span class=\"time\"></span><span "
                           f"class=\"pc\"></span><span class=\"t\">{text}</span></p>")
                continue
            hits, t = v if v is not None else (0, 0)
            cls = " class=\"hottest\"" if tmax > 0 and t == tmax else ""
            pc = f"{100.0 * t / total:.1f}" if total and hits else ""
            out.append(f"<p id=\"f{i}l{n}\"{cls}{_heat(t, tmax)}"
                       f"{_line_title(f, by_line.get(n))}><span class=\"n\">{n}</span>"
                       f"<span class=\"hits\">{hits if hits else ''}</span><span "
                       f"class=\"time\">{_fmt_time(t) if hits else ''}</span>"
                       f"<span class=\"pc\">{pc}</span><span class=\"t\">{text}</span></p>")
        note = ("" if source.lines is not None else
                "<p class=\"nosource\">The source is not readable.</p>")
        body.append("<h2 id=\"f%d\">%s</h2>\n<p>%s, line %d: %d calls, %s \u00b5s</p>\n%s"
                    "<div class=\"source\">\n%s\n</div>%s"
                    % (i, _h(f.qualname), _h(f.file), f.first, f.calls,
                       _fmt_time(f.time_ns), note, "\n".join(out), _parts_table(f)))
    what = ("time of each line with the calls it makes" if calls else
            "time of each line without the calls it makes")
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>Line timing</title>\n<style>%s</style>\n</head>\n<body>\n"
            "<h1>Line timing</h1>\n<p>%d functions, the %s; the redder a line, the more "
            "of its function's time it took.</p>\n"
            "<table class=\"index\" id=\"index\">\n<thead><tr><th>Function</th><th>Where</th>"
            "<th class=\"num\">Calls</th><th class=\"num\">Time (\u00b5s)</th>"
            "<th class=\"num\">Share</th></tr></thead>\n<tbody>\n%s\n</tbody>\n</table>\n"
            "%s\n</body>\n</html>\n"
            % (_CSS, len(funcs), what, "\n".join(rows), "\n".join(body)))
    return page.encode("utf-8")


def _summary(funcs, top):
    nlines = sum(len(f.lines) for f in funcs)
    out = ["%d functions, %d lines measured" % (len(funcs), nlines)]
    if top > 0:
        allines = []
        for f in funcs:
            for n, (hits, t) in f.lines.items():
                allines.append((t, hits, f, n))
        allines.sort(key=lambda r: (-r[0], r[2].file, r[3]))
        if allines:
            out.append("%12s %9s  %s" % ("time (us)", "hits", "line"))
        for t, hits, f, n in allines[:top]:
            out.append("%12s %9d  %s:%d (%s)" % (_fmt_time(t), hits, _text(f.file), n,
                                                _text(f.qualname)))
    return "\n".join(out) + "\n"


def _threads(merged, threads):
    """lines.json's `threads`: per thread (by index) its identity and the
    figures of its own frames (`merged`: _merged_by(funcs, 5)), in the shape
    of the whole run's `files`."""
    out = []
    for index in sorted(set(threads) | set(merged)):
        ident, name = threads.get(index, (None, None))
        files = _json(merged.get(index, []), True)["files"]
        out.append({"index": index, "ident": ident,
                    "name": name, "files": files})
    return out


def _merged_by(funcs, index):
    """{group: its _Funcs}: the tuples grouped by their field `index` (the
    thread's or the context's), each group merged."""
    groups = {}
    for t in funcs:
        groups.setdefault(t[index] if len(t) > index else 0, []).append(t)
    return {g: _merge(ts) for g, ts in groups.items()}


def contexts_json(funcs, names, merged=None):
    """lines.json's `contexts`: {name: {"files": ...}}, per context the
    figures of the lines that ran in it (a line's time goes with its hit),
    in the shape of the whole run's `files`; "" is the time outside any
    context. Contexts where no selected code ran are left out. `merged`:
    _merged_by(funcs, 6) when the caller has it."""
    if merged is None:
        merged = _merged_by(funcs, 6)
    return {names[i]: {"files": _json(merged[i], True)["files"]}
            for i in sorted(merged, key=lambda i: names[i])}


def _attach_parts(merged, groups, label_of, what):
    """Gives each merged function its figures per thread or context
    (`groups`, _merged_by's, named by label_of), hottest first."""
    by_key = {(f.file, f.qualname, f.first): f for f in merged}
    for g, parts in groups.items():
        for part in parts:
            f = by_key[(part.file, part.qualname, part.first)]
            f.parts.append((label_of(g), part))
            f.parts_of = what
    for f in merged:
        f.parts.sort(key=lambda p: (-p[1].time_ns, p[0]))


def render(funcs, calls, top, html, threads=None, contexts=None):
    by_thread = _merged_by(funcs, 5) if threads is not None else None
    per_thread = _threads(by_thread, threads) if threads is not None else None
    by_context = _merged_by(funcs, 6) if contexts is not None else None
    per_context = contexts_json(funcs, contexts, by_context) if contexts is not None else None
    merged = _merge(funcs)
    # the text and HTML reports break each function down by context, or
    # with per_thread only by thread
    if contexts is not None:
        _attach_parts(merged, by_context, lambda i: contexts[i] or "(no context)", "context")
    elif threads is not None:
        _attach_parts(merged, by_thread, lambda i: "%s (thread %d)" % (
            threads.get(i, (None, None))[1] or "?", i), "thread")
    funcs = merged
    sources, blocks = {}, {}
    for f in funcs:
        if f.file not in sources:
            sources[f.file] = src = _Source(_read_source(f.file))
            blocks[f.file] = _block_ends(src.lines) if src.lines else {}
    page = _html_report(funcs, sources, blocks, calls) if html else None
    doc = _json(funcs, calls)
    if per_thread is not None:
        doc["threads"] = per_thread
    if per_context is not None:
        doc["contexts"] = per_context
    return (doc, _text_report(funcs, sources, blocks, calls), page,
            _summary(funcs, top))
