"""pytracekit combine: merge the reports of many processes (and machines).

    pytracekit combine [-o DIR] [--paths CANONICAL=PATTERN[,PATTERN...]]...
                       [--no-summary] INPUT...
    python -m pytracekit combine ...
    pytracekit.combine(inputs, output_dir, paths=None)

Each INPUT is a report directory; the report sets in it and in the
directories below it (a followed child's pid-N/, CI shards unpacked side by
side) are merged: counter.json (calls and events added, per context too),
timer.pstats (with pstats.Stats.add), timer.folded and timer.speedscope.json
(the time of each calling context added), timer.json (functions and caller
edges added; the per-context timer.context-N.pstats it lists merged by the
context's name), coverage.json (through the coverage plugin's own merge,
which writes coverage.lcov and coverage.xml too, and .coverage when a set had
one; the contexts of each line and arc united) and lines.json (hits and time
of each line added, each function's calls and total too, per context too;
lines.txt, and lines.html when a set had one, written again from the sum by
the lines plugin's own writer). A report directory that has a run.json
contributes only the files that run.json lists, so the leftovers of an
earlier run are never mixed in.
What is not combined (a timeline, reftrack.json, per-thread timer
files), and a format that only some of a plugin's report sets have, is said
on stderr and listed in the output's run.json under "left_out".

--paths maps file names recorded on other machines onto this one, as the
[paths] section of coverage.py does: a recorded path that starts with one of
the PATTERNs (`*` matches within one path component) gets CANONICAL in place
of that part. The output directory gets run.json listing the runs combined.
"""
import contextlib
import json
import marshal
import math
import os
import pstats
import re
import sys
import time

from . import _coverage_format as covfmt
from . import _lines_format as linesfmt

REPORTS = ("counter.json", "timer.pstats", "timer.folded", "timer.speedscope.json",
           "timer.json", "coverage.json", "lines.json")
# written again from coverage.json, so combined with it; and a followed
# child's human summaries, which are no report
DERIVED = ("coverage.lcov", "coverage.xml", "coverage.txt", "summary.txt", ".coverage",
           "lines.txt", "lines.html")
# the timer's per_context=true files, combined with timer.json (which lists them)
TIMER_CONTEXT = re.compile(r"timer\.context-\d+\.pstats$")


class CombineError(Exception):
    """Bad input: a message for the user (the command exits 2)."""


# ---- what an input must look like --------------------------------------------
#
# Every report is checked against the shape the merge reads before it is
# merged, so that a crafted or damaged file ends the command with a message
# naming the file and the value (exit 2), never a traceback. A schema is
# "int" (a whole number, not a bool), "num" (a finite number), "str",
# "key" (str, int or None: usable as part of a key and sorted as text),
# "dict", "list", a dict {name: schema} ("name?" for a member that may be
# missing; other members are not looked at), or [schema] (a list of them).


def _shape_error(path, where, want):
    return CombineError("%s: %s is not %s" % (path, where or "the top level", want))


_KINDS = {
    "int": ("a whole number",
            lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "num": ("a finite number",
            lambda v: (isinstance(v, int) and not isinstance(v, bool))
            or (isinstance(v, float) and math.isfinite(v))),
    "str": ("a string", lambda v: isinstance(v, str)),
    "key": ("a string, a whole number or null",
            lambda v: v is None or isinstance(v, str)
            or (isinstance(v, int) and not isinstance(v, bool))),
    "dict": ("an object", lambda v: isinstance(v, dict)),
    "list": ("a list", lambda v: isinstance(v, list)),
}


def _check_shape(path, value, schema, where=""):
    """Raises CombineError unless `value` has the shape `schema`."""
    if isinstance(schema, str):
        want, ok = _KINDS[schema]
        if not ok(value):
            raise _shape_error(path, where, want)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            raise _shape_error(path, where, "a list")
        for i, item in enumerate(value):
            _check_shape(path, item, schema[0], "%s[%d]" % (where, i))
    else:
        if not isinstance(value, dict):
            raise _shape_error(path, where, "an object")
        for name, sub in schema.items():
            key = name.rstrip("?")
            if key in value:
                _check_shape(path, value[key], sub, "%s.%s" % (where, key) if where else key)
            elif not name.endswith("?"):
                raise CombineError("%s: %s has no %r" % (path, where or "the top level", key))


_RUN = {"format": "str", "files?": ["str"], "run?": "dict", "plugins?": "list",
        "failed_plugins?": "int"}
_COUNTER = {"events?": "dict", "threads?": ["dict"],
            "functions?": [{"calls": "int", "kind?": "key", "file?": "key", "line?": "key",
                            "qualname?": "key", "module?": "key", "name?": "key"}]}
_TIMER_SUMS = ("total_ns", "calls", "primitive_calls", "unmatched_returns", "resynced_frames")
_TIMER_COUNTS = {"calls": "int", "primitive_calls": "int", "own_ns": "int",
                 "inclusive_ns": "int"}
_TIMER = dict({k + "?": "int" for k in _TIMER_SUMS}, **{
    "max_depth?": "int", "elapsed_s?": "num", "clock?": "key", "threads?": ["dict"],
    "functions?": [dict(_TIMER_COUNTS, id="key", kind="key", file="key", line="key",
                        name="key")],
    "edges?": [dict(_TIMER_COUNTS, caller="key", callee="key")]})
_LINE = {"hits": "int", "time_ns": "int"}
_LINES = {"files": "dict"}
_LINES_FUNCTION = {"line": "int", "calls": "int", "time_ns": "int", "lines": "dict"}
_SPEEDSCOPE = {"shared": {"frames": [{"name": "str", "file?": "key", "line?": "key"}]},
               "profiles": [{"events": [{"type": "str", "at": "num"}]}]}


def _check_counter(path, data):
    _check_shape(path, data, _COUNTER)
    for k, v in data.get("events", {}).items():
        _check_shape(path, v, "int", "events.%s" % k)


def _check_timer(path, data):
    _check_shape(path, data, _TIMER)
    ids = {f["id"] for f in data.get("functions", [])}
    for i, e in enumerate(data.get("edges", [])):
        for end in ("caller", "callee"):
            if e[end] not in ids:
                raise CombineError("%s: edges[%d].%s is no function's id"
                                   % (path, i, end))


def _check_lines(path, data):
    _check_shape(path, data, _LINES)
    if not isinstance(data.get("calls", True), bool):
        raise _shape_error(path, "calls", "true or false")
    _check_lines_files(path, data["files"], "files")
    if "contexts" in data:
        _check_shape(path, data["contexts"], "dict", "contexts")
        for name, c in data["contexts"].items():
            where = "contexts[%r]" % name
            _check_shape(path, c, _LINES, where)
            _check_lines_files(path, c["files"], where + ".files")


def _check_lines_files(path, files, at):
    """lines.json's `files` (the whole run's, or a context's) at `at`."""
    for file, entry in files.items():
        where = "%s[%r]" % (at, file)
        _check_shape(path, entry, {"lines": "dict", "functions": "dict"}, where)
        for key, fn in entry["functions"].items():
            fwhere = "%s.functions[%r]" % (where, key)
            _check_shape(path, fn, _LINES_FUNCTION, fwhere)
            for n, v in fn["lines"].items():
                if not n.isdigit():
                    raise _shape_error(path, "%s.lines[%r]" % (fwhere, n), "a line number")
                _check_shape(path, v, _LINE, "%s.lines[%r]" % (fwhere, n))


def _check_speedscope(path, doc):
    _check_shape(path, doc, _SPEEDSCOPE)
    nframes = len(doc["shared"]["frames"])
    for p, prof in enumerate(doc["profiles"]):
        depth = 0
        for i, ev in enumerate(prof["events"]):
            where = "profiles[%d].events[%d]" % (p, i)
            if ev["type"] == "O":
                frame = ev.get("frame")
                if not (isinstance(frame, int) and not isinstance(frame, bool)
                        and 0 <= frame < nframes):
                    raise _shape_error(path, where + ".frame", "a frame's index")
                depth += 1
            elif depth == 0:
                raise CombineError("%s: %s closes a frame that is not open" % (path, where))
            else:
                depth -= 1


_PSTATS_KEY = (str, int, str)


def _check_pstats(path, stats):
    """pstats' table: {(file, line, name): (cc, nc, tt, ct, {caller key:
    (cc, nc, tt, ct)})}."""
    def key_ok(k):
        return (isinstance(k, tuple) and len(k) == 3
                and all(isinstance(x, t) and not isinstance(x, bool)
                        for x, t in zip(k, _PSTATS_KEY)))

    def counts_ok(v, n):
        return (isinstance(v, tuple) and len(v) == n
                and all(_KINDS["num"][1](x) for x in v[:4]))
    if not isinstance(stats, dict):
        raise CombineError("%s: not a pstats table" % path)
    for k, v in stats.items():
        if not key_ok(k) or not counts_ok(v, 5) or not isinstance(v[4], dict):
            raise CombineError("%s: %r is not a pstats entry" % (path, k))
        for k2, v2 in v[4].items():
            if not key_ok(k2) or not counts_ok(v2, 4):
                raise CombineError("%s: the callers of %r are not pstats entries"
                                   % (path, k))


@contextlib.contextmanager
def _malformed(name, paths):
    """Whatever the checks above let through and the merge of `name` still
    cannot read ends as bad input, naming the files, not as a traceback."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, IndexError,
            RecursionError, OverflowError) as e:
        raise CombineError("%s (%s): cannot be merged: %s: %s"
                           % (name, ", ".join(paths), type(e).__name__, e))


# ---- inputs and paths --------------------------------------------------------


class PathMap:
    """coverage.py-style remapping: [(canonical, [compiled patterns])]."""

    def __init__(self, rules=()):
        self.rules = []
        for canonical, patterns in rules:
            # a run of '*' is one '*'; matched by _glob, not a regex, whose
            # backtracking took minutes for patterns with many '*'
            res = [re.sub(r"\*+", "*", pat.rstrip("/\\")) for pat in patterns]
            self.rules.append((canonical.rstrip("/\\"), res))

    @classmethod
    def parse(cls, specs):
        rules = []
        for spec in specs or ():
            canonical, sep, pats = spec.partition("=")
            if not sep or not canonical or not pats:
                raise CombineError("--paths expects CANONICAL=PATTERN[,PATTERN...], "
                                   "found %r" % spec)
            rules.append((canonical, [p for p in pats.split(",") if p]))
        return cls(rules)

    def __call__(self, path):
        if not isinstance(path, str):
            return path
        ends = [i for i, c in enumerate(path) if c in "/\\"] + [len(path)]
        for canonical, res in self.rules:
            for pat in res:
                for end in ends:
                    if _glob(pat, path, end):
                        rest = path[end:].replace("\\", "/")
                        return canonical + rest
        return path


def _glob(pat, s, end):
    """Does `pat` match s[:end] whole, '*' matching any run of characters
    other than '/' and '\\'? Greedy with one backtrack point: time
    O(len(pat) * end) at worst, whatever the pattern."""
    i = j = 0
    star = -1
    mark = 0
    while j < end:
        if i < len(pat) and pat[i] == "*":
            star, mark = i, j
            i += 1
        elif i < len(pat) and pat[i] == s[j]:
            i += 1
            j += 1
        elif star >= 0 and s[mark] not in "/\\":
            mark += 1
            i, j = star + 1, mark
        else:
            return False
    while i < len(pat) and pat[i] == "*":
        i += 1
    return i == len(pat)


def find_sets(inputs, exclude=None):
    """Report directories under each input, with the files each contributes."""
    sets = []
    for top in inputs:
        if not os.path.isdir(top):
            raise CombineError("%s: not a directory" % top)
        for d, subdirs, files in os.walk(top):
            subdirs.sort()
            if exclude and os.path.realpath(d) == exclude:
                subdirs[:] = []
                continue
            run = None
            if "run.json" in files:
                try:
                    with open(os.path.join(d, "run.json"), encoding="utf-8") as f:
                        run = json.load(f)
                except (OSError, ValueError, RecursionError) as e:
                    raise CombineError("%s/run.json: %s" % (d, e))
                if not isinstance(run, dict) or run.get("format") != "pytracekit-run":
                    raise CombineError("%s/run.json: not a pytracekit run manifest" % d)
                _check_shape(os.path.join(d, "run.json"), run, _RUN)
                have = [n for n in REPORTS if n in run.get("files", ())
                        and n in files]
            else:
                have = [n for n in REPORTS if n in files]
            if have:
                sets.append((d, run, have))
    if not sets:
        raise CombineError("no reports found in %s" % ", ".join(inputs))
    return sets


def _left_out(sets):
    """What combining these report sets leaves out, one sentence each: the
    files nothing combines, and a format only some of its plugin's report
    sets have (its combined file covers those only)."""
    out = []
    others = {}
    for d, run, have in sets:
        listed = (run or {}).get("files")
        if listed is None:
            listed = [n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n))]
        for n in listed:
            if n not in REPORTS and n not in DERIVED and n != "run.json" \
                    and not TIMER_CONTEXT.match(n):
                others.setdefault(n, []).append(d)
    for n in sorted(others):
        out.append("%s is not combined (in %d report set%s)"
                   % (n, len(others[n]), "" if len(others[n]) == 1 else "s"))
    for n in REPORTS:
        plugin = n.split(".")[0]
        mine = [d for d, _, have in sets if n in have]
        theirs = [d for d, _, have in sets
                  if n not in have and any(h.split(".")[0] == plugin for h in have)]
        if mine and theirs:
            out.append("%s covers %d of the %d %s report sets (not in: %s)"
                       % (n, len(mine), len(mine) + len(theirs), plugin,
                          ", ".join(theirs)))
    return out


def failed_runs(inputs, exclude=None):
    """The runs under `inputs` whose run.json says a plugin failed there:
    (directory, pid, [plugin names]). Their figures are missing from any
    combination."""
    out = []
    for top in inputs:
        for d, subdirs, files in os.walk(top):
            subdirs.sort()
            if exclude and os.path.realpath(d) == exclude:
                subdirs[:] = []
                continue
            if "run.json" not in files:
                continue
            try:
                with open(os.path.join(d, "run.json"), encoding="utf-8") as f:
                    run = json.load(f)
            except (OSError, ValueError, RecursionError):
                continue  # find_sets says what is wrong with it
            if isinstance(run, dict) and run.get("failed_plugins"):
                names = [p.get("name", "?") for p in run.get("plugins", ())
                         if isinstance(p, dict) and p.get("failed")]
                ident = run.get("run")
                out.append((d, ident.get("pid") if isinstance(ident, dict) else None,
                            names))
    return out


def _load_json(path, check=None):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        raise CombineError("%s: %s" % (path, e))
    if check is not None:
        check(path, data)
    return data


# ---- counter -------------------------------------------------------------------


def _merge_functions(funcs, functions, remap):
    """Adds the counter's function records to funcs ({key: record})."""
    for f in functions:
        f = dict(f, file=remap(f.get("file")))
        key = (f.get("kind"), f.get("file"), f.get("line"), f.get("qualname"),
               f.get("module"), f.get("name"))
        if key in funcs:
            funcs[key]["calls"] += int(f["calls"])
        else:
            funcs[key] = f


def _by_calls(funcs):
    return sorted(funcs.values(), key=lambda f: (-f["calls"], str(f.get("qualname")),
                                                 str(f.get("file")), f.get("line") or 0))


def merge_counter(datas, remap):
    events, funcs, threads = {}, {}, []
    contexts = None  # per_context=true: {name: (events, funcs)}
    for data, run in datas:
        for k, v in data.get("events", {}).items():
            events[k] = events.get(k, 0) + int(v)
        _merge_functions(funcs, data.get("functions", []), remap)
        for t in data.get("threads", []):
            threads.append(dict(t, pid=(run or {}).get("pid")))
        if "contexts" in data:
            contexts = {} if contexts is None else contexts
            for name, rec in data["contexts"].items():
                ev, fs = contexts.setdefault(name, ({}, {}))
                for k, v in rec.get("events", {}).items():
                    ev[k] = ev.get(k, 0) + int(v)
                _merge_functions(fs, rec.get("functions", []), remap)
    out = {"events": events, "functions": _by_calls(funcs), "threads": threads}
    if contexts is not None:
        out["contexts"] = {name: {"events": ev, "functions": _by_calls(fs)}
                           for name, (ev, fs) in contexts.items()}
    return out


# ---- timer ---------------------------------------------------------------------


def _remap_stats(stats, remap):
    out = {}
    for (file, line, name), (cc, nc, tt, ct, callers) in stats.items():
        cs = {}
        for (f2, l2, n2), v in callers.items():
            k2 = (remap(f2), l2, n2)
            cs[k2] = tuple(a + b for a, b in zip(cs[k2], v)) if k2 in cs else v
        key = (remap(file), line, name)
        if key in out:
            o = out[key]
            for k2, v in o[4].items():
                cs[k2] = tuple(a + b for a, b in zip(cs[k2], v)) if k2 in cs else v
            out[key] = (o[0] + cc, o[1] + nc, o[2] + tt, o[3] + ct, cs)
        else:
            out[key] = (cc, nc, tt, ct, cs)
    return out


def merge_pstats(paths, remap):
    total = pstats.Stats()
    for path in paths:
        try:
            with open(path, "rb") as f:
                stats = marshal.load(f)
        except (EOFError, ValueError, TypeError) as e:
            raise CombineError("%s: not a pstats file (%s)" % (path, e))
        except OSError as e:
            raise CombineError("%s: %s" % (path, e))
        _check_pstats(path, stats)
        st = pstats.Stats()
        st.stats = _remap_stats(stats, remap)
        st.get_top_level_stats()
        total.add(st)
    return total.stats


_FRAME_FILE = re.compile(r"\((.*):(\d+)\)$")


def merge_folded(paths, remap):
    stacks = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise CombineError("%s: %s" % (path, e))
        except ValueError as e:
            raise CombineError("%s: not UTF-8 text (%s)" % (path, e))
        for line in lines:
            stack, _, value = line.rpartition(" ")
            if not stack or not (value.isascii() and value.isdigit()):
                raise CombineError("%s: not a folded-stacks line: %r" % (path, line))
            frames = []
            for fr in stack.split(";"):
                m = _FRAME_FILE.search(fr)
                if m:
                    fr = fr[:m.start(1)] + remap(m.group(1)) + fr[m.end(1):]
                frames.append(fr)
            key = ";".join(frames)
            stacks[key] = stacks.get(key, 0) + int(value)
    return "".join("%s %d\n" % (k, stacks[k]) for k in sorted(stacks))


def merge_speedscope(paths, remap):
    """The calling contexts of timer.speedscope.json files, the time of each
    context added, as one evented profile (frames: one per function, by
    file, line and name)."""
    frames, index = [], {}
    root = [0, {}]  # [inclusive ns, {frame index: node}]
    for path in paths:
        doc = _load_json(path, _check_speedscope)
        try:
            local = []
            for fr in doc["shared"]["frames"]:
                f = dict(fr)
                if f.get("file"):
                    f["file"] = remap(f["file"])
                base = f["name"].split(" (")[0] if f.get("file") else f["name"]
                key = (f.get("file"), f.get("line"), base)
                if key not in index:
                    index[key] = len(frames)
                    frames.append(f)
                local.append(index[key])
            for prof in doc["profiles"]:
                stack = [(root, None)]
                for ev in prof["events"]:
                    if ev["type"] == "O":
                        kids = stack[-1][0][1]
                        node = kids.setdefault(local[ev["frame"]], [0, {}])
                        stack.append((node, ev["at"]))
                    else:
                        node, at = stack.pop()
                        node[0] += ev["at"] - at
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise CombineError("%s: not a speedscope file of the timer (%s)" % (path, e))
    root[0] = sum(n[0] for n in root[1].values())
    return {"$schema": "https://www.speedscope.app/file-format-schema.json",
            "exporter": "pytracekit combine", "name": "timer (%d runs)" % len(paths),
            "shared": {"frames": frames},
            "profiles": [{"type": "evented", "name": "timer", "unit": "nanoseconds",
                          "startValue": 0, "endValue": root[0],
                          "events": _speedscope_events(root)}]}


def _speedscope_events(root):
    """Evented open/close events of a context tree ([ns, {frame: node}])."""
    events = []
    todo = [("walk", root, None, 0)]
    while todo:
        what, node, frame, at = todo.pop()
        if what == "close":
            events.append({"type": "C", "frame": frame, "at": at})
            continue
        if frame is not None:
            events.append({"type": "O", "frame": frame, "at": at})
            todo.append(("close", None, frame, at + node[0]))
        pending, t = [], at
        for k in sorted(node[1]):
            pending.append(("walk", node[1][k], k, t))
            t += node[1][k][0]
        todo.extend(reversed(pending))
    return events


def merge_timer_json(datas, remap):
    funcs, edges, threads = {}, {}, []
    out = {"plugin": "timer", "unit": "ns", "processes": len(datas)}
    sums = ("total_ns", "calls", "primitive_calls", "unmatched_returns", "resynced_frames")
    for k in sums:
        out[k] = 0
    out["max_depth"] = 0
    out["elapsed_s"] = 0.0
    clocks = set()
    for data, run in datas:
        clocks.add(data.get("clock"))
        for k in sums:
            out[k] += int(data.get(k, 0))
        out["max_depth"] = max(out["max_depth"], int(data.get("max_depth", 0)))
        out["elapsed_s"] += float(data.get("elapsed_s", 0.0))
        ids = {}
        for f in data.get("functions", []):
            key = (f["kind"], remap(f["file"]), f["line"], f["name"])
            ids[f["id"]] = key
            acc = funcs.setdefault(key, dict(f, file=key[1], calls=0, primitive_calls=0,
                                             own_ns=0, inclusive_ns=0))
            for k in ("calls", "primitive_calls", "own_ns", "inclusive_ns"):
                acc[k] += int(f[k])
        for e in data.get("edges", []):
            key = (ids[e["caller"]], ids[e["callee"]])
            acc = edges.setdefault(key, {"calls": 0, "primitive_calls": 0,
                                         "own_ns": 0, "inclusive_ns": 0})
            for k in acc:
                acc[k] += int(e[k])
        for t in data.get("threads", []):
            threads.append({k: v for k, v in t.items() if k not in ("functions", "edges")}
                           | {"pid": (run or {}).get("pid")})
    if len(clocks) > 1:
        raise CombineError("timer reports with different clocks: %s" % sorted(map(str, clocks)))
    out["clock"] = clocks.pop() if clocks else "wall"
    order = sorted(funcs, key=lambda k: (-funcs[k]["own_ns"], str(k)))
    index = {k: i for i, k in enumerate(order)}
    out["functions"] = [dict(funcs[k], id=index[k]) for k in order]
    out["edges"] = [dict(edges[k], caller=index[k[0]], callee=index[k[1]])
                    for k in sorted(edges, key=lambda k: (index[k[0]], index[k[1]]))]
    out["threads"] = threads
    return out


def merge_timer_contexts(datas, remap):
    """The per_context=true files of the timer.json datas [(path, data)]:
    [(name, entry, stats)], a context's pstats files merged across the sets
    that have it (an xdist worker's tests are its own, "" is in every set),
    its totals added and its top functions those of the sets' tops, summed
    by function and ranked again by own time."""
    by_name = {}
    for path, data in datas:
        for c in data.get("contexts") or ():
            if not isinstance(c, dict) or not isinstance(c.get("name"), str) or \
                    not TIMER_CONTEXT.match(str(c.get("pstats"))):
                raise CombineError("%s: malformed contexts entry" % path)
            by_name.setdefault(c["name"], []).append(
                (os.path.join(os.path.dirname(path), c["pstats"]), c))
    out = []
    for i, (name, parts) in enumerate(by_name.items()):
        stats = merge_pstats([p for p, _ in parts], remap)
        entry = {"name": name, "pstats": "timer.context-%d.pstats" % i}
        for k in ("total_ns", "calls", "primitive_calls"):
            entry[k] = sum(int(c.get(k, 0)) for _, c in parts)
        top, n = {}, max(len(c.get("top", ())) for _, c in parts)
        for _, c in parts:
            for t in c.get("top", ()):
                acc = top.setdefault(t["display"], dict(t, calls=0, primitive_calls=0,
                                                        own_ns=0, inclusive_ns=0))
                for k in ("calls", "primitive_calls", "own_ns", "inclusive_ns"):
                    acc[k] += int(t[k])
        entry["top"] = sorted(top.values(), key=lambda t: (-t["own_ns"], t["display"]))[:n]
        out.append((name, entry, stats))
    return out


# ---- lines ---------------------------------------------------------------------


def merge_lines(datas, remap, html):
    """lines.json objects added up (a line's hits and time, a function's
    calls and total), with lines.txt and lines.html (when `html`) written
    from the sum by the plugin's own writer: (object, text, page or None)."""
    calls = {bool(d.get("calls", True)) for d in datas}
    if len(calls) > 1:
        raise CombineError("lines reports with calls=true and calls=false: a line's time "
                           "means different things in them")
    # per_context=true (pytest's xdist workers): each context's figures
    # added up by name over the sets that have them
    names, in_contexts = {}, []
    for d in datas:
        for name, c in (d.get("contexts") or {}).items():
            at = names.setdefault(name, len(names))
            in_contexts += [t + (0, at) for t in linesfmt.from_json(c, remap)]
    if names and all("contexts" in d for d in datas):
        # the runs are their contexts' sums: made from those, the text and
        # HTML reports break each function down by context too
        doc, text, page, _ = linesfmt.render(in_contexts, calls.pop(), 0, html,
                                             contexts=list(names))
    else:
        funcs = []
        for d in datas:
            funcs += linesfmt.from_json(d, remap)
        doc, text, page, _ = linesfmt.render(funcs, calls.pop(), 0, html)
        if names:
            doc["contexts"] = linesfmt.contexts_json(in_contexts, list(names))
    doc["processes"] = len(datas)
    return doc, text, page


def combine(inputs, output_dir="pytracekit-combined", paths=None, summary=None):
    """Merges the report sets found in `inputs` into `output_dir`.

    `paths` is a list of (canonical, [patterns]) or of "CANONICAL=P1,P2"
    strings. Returns the manifest written to output_dir/run.json (the runs
    combined, the files written). Raises CombineError on bad input.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if paths and all(isinstance(p, str) for p in paths):
        remap = PathMap.parse(paths)
    else:
        remap = PathMap(paths or ())
    sets = find_sets([os.fspath(i) for i in inputs], os.path.realpath(output_dir))
    left_out = _left_out(sets)
    by_name = {n: [] for n in REPORTS}
    runs = []
    for d, run, have in sets:
        runs.append(dict((run or {}).get("run", {}), dir=os.path.abspath(d)))
        for n in have:
            by_name[n].append((os.path.join(d, n), run.get("run") if run else None))
    # Everything is merged before anything is written: bad input writes nothing.
    outputs = []
    def inputs_of(name):
        return [p for p, _ in by_name[name]]
    if by_name["counter.json"]:
        with _malformed("counter.json", inputs_of("counter.json")):
            datas = [(_load_json(p, _check_counter), r) for p, r in by_name["counter.json"]]
            outputs.append(("counter.json",
                            json.dumps(merge_counter(datas, remap), indent=1) + "\n"))
    if by_name["timer.pstats"]:
        with _malformed("timer.pstats", inputs_of("timer.pstats")):
            stats = merge_pstats(inputs_of("timer.pstats"), remap)
            outputs.append(("timer.pstats", marshal.dumps(stats)))
    if by_name["timer.folded"]:
        with _malformed("timer.folded", inputs_of("timer.folded")):
            outputs.append(("timer.folded", merge_folded(inputs_of("timer.folded"), remap)))
    if by_name["timer.speedscope.json"]:
        with _malformed("timer.speedscope.json", inputs_of("timer.speedscope.json")):
            doc = merge_speedscope(inputs_of("timer.speedscope.json"), remap)
            outputs.append(("timer.speedscope.json",
                            json.dumps(doc, separators=(",", ":")) + "\n"))
    if by_name["timer.json"]:
        with _malformed("timer.json", inputs_of("timer.json")):
            datas = [(_load_json(p, _check_timer), r) for p, r in by_name["timer.json"]]
            timer = merge_timer_json(datas, remap)
            if any("contexts" in d for d, _ in datas):
                contexts = merge_timer_contexts(
                    [(p, d) for (p, _), (d, _) in zip(by_name["timer.json"], datas)], remap)
                timer["contexts"] = [entry for _, entry, _ in contexts]
                outputs += [(entry["pstats"], marshal.dumps(stats))
                            for _, entry, stats in contexts]
            outputs.append(("timer.json", json.dumps(timer, indent=1) + "\n"))
    if by_name["lines.json"]:
        with _malformed("lines.json", inputs_of("lines.json")):
            datas = [_load_json(p, _check_lines) for p in inputs_of("lines.json")]
            # a set has lines.html unless it ran with html=false
            html = any("lines.html" in ((run or {}).get("files") or os.listdir(d))
                       for d, run, have in sets if "lines.json" in have)
            doc, text, page = merge_lines(datas, remap, html)
            nthreads = sum(1 for d in datas if "threads" in d)
            if nthreads:
                left_out.append("lines.json's threads (per_thread=true) are not combined "
                                "(in %d report set%s)" % (nthreads, "" if nthreads == 1 else "s"))
            outputs += [("lines.json", json.dumps(doc, indent=1) + "\n"),
                        ("lines.txt", text)]
            if page is not None:
                outputs.append(("lines.html", page))
    merged = None
    if by_name["coverage.json"]:
        covs = []
        with _malformed("coverage.json", inputs_of("coverage.json")):
            for p, _ in by_name["coverage.json"]:
                try:
                    data = covfmt.load(p, completed=False)
                    files = {}
                    for path, rec in data["files"].items():
                        files.setdefault(remap(path), []).append(rec)
                    for path, recs in files.items():
                        if len(recs) > 1:  # two recorded paths map to one file
                            covs.extend(covfmt.complete(
                                {"meta": dict(data["meta"], runs=0), "files": {path: r}}, p)
                                for r in recs[1:])
                    # deferred data (reports=false) completed from the sources
                    # where they are now: under the remapped paths
                    data = dict(data, files={path: recs[0] for path, recs in files.items()})
                    covs.append(covfmt.complete(data, p))
                except covfmt.DataError as e:
                    raise CombineError(str(e))
            merged = covfmt.merge(covs)
            # with coverage.py's figures ("summary" per file, "totals"), as
            # the plugin writes it
            outputs += [("coverage.json", covfmt.json_text(merged)),
                        ("coverage.lcov", covfmt.lcov_text(merged)),
                        ("coverage.xml", covfmt.cobertura_text(merged))]
    # coverage.py's data file (coveragepy=yes) again, when a set had it
    coveragepy = merged is not None and any(
        ".coverage" in ((run or {}).get("files") or ()) and
        os.path.exists(os.path.join(d, ".coverage")) for d, run, _ in sets)
    os.makedirs(output_dir, exist_ok=True)
    written = []
    for name, data in outputs:
        covfmt._write(os.path.join(output_dir, name), data)
        written.append(name)
    if coveragepy:
        covfmt.write_coveragepy(merged, os.path.join(output_dir, ".coverage"))
        written.append(".coverage")
    if merged is not None and summary is not None:
        summary.write(covfmt.summary_text(merged))
    if summary is not None:
        for line in left_out:
            summary.write("pytracekit combine: %s\n" % line)
    failed = [{"dir": os.path.abspath(d), "pid": pid, "plugins": names}
              for d, pid, names in failed_runs([os.fspath(i) for i in inputs],
                                               os.path.realpath(output_dir))]
    manifest = {"format": "pytracekit-run", "version": 1, "combined": runs,
                "ended": time.time(), "files": written, "left_out": left_out,
                "failed": failed}
    covfmt._write(os.path.join(output_dir, "run.json"), json.dumps(manifest, indent=1) + "\n")
    return manifest


USAGE = """usage: pytracekit combine [-o DIR] [--paths CANONICAL=PATTERN[,PATTERN...]]...
                          [--no-summary] INPUT...

Merges the reports of the report directories in and below each INPUT (a run
with --follow-children, CI shards) into DIR (default pytracekit-combined):
counter.json, timer.pstats, timer.folded, timer.speedscope.json, timer.json,
coverage.{json,lcov,xml}, lines.{json,txt,html}; what it leaves out is said on stderr.
--paths maps paths recorded elsewhere onto CANONICAL (coverage.py's [paths]).
Exit status: 0; 2 for bad input (nothing is written then); 3 when a run
below INPUT says that a plugin failed there (its figures are missing from
the combination, which is written all the same).
"""


# a usage mistake is one line, and says where the rest is
SEE_HELP = " (see pytracekit combine --help)"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    outdir = "pytracekit-combined"
    paths, inputs, show = [], [], True
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if a in ("-o", "--output", "--paths"):
            if i + 1 >= len(argv):
                sys.stderr.write("pytracekit combine: %s needs a value%s\n" % (a, SEE_HELP))
                return 2
            if a == "--paths":
                paths.append(argv[i + 1])
            else:
                outdir = argv[i + 1]
            i += 2
            continue
        if a == "--no-summary":
            show = False
        elif a.startswith("-"):
            sys.stderr.write("pytracekit combine: unknown option %r%s\n" % (a, SEE_HELP))
            return 2
        else:
            inputs.append(a)
        i += 1
    if not inputs:
        sys.stderr.write("pytracekit combine: no input directories%s\n" % SEE_HELP)
        return 2
    try:
        # coverage.py's [paths] when --paths gives none
        paths = paths or covfmt.config_paths()
    except covfmt.ConfigError as e:
        sys.stderr.write("pytracekit combine: %s\n" % e)
        return 2
    try:
        m = combine(inputs, outdir, paths, summary=sys.stderr if show else None)
    except CombineError as e:
        sys.stderr.write("pytracekit combine: %s\n" % e)
        return 2
    except OSError as e:
        sys.stderr.write("pytracekit combine: %s\n" % e)
        return 2
    if show:
        sys.stderr.write("pytracekit combine: %d report sets -> %s (%s)\n"
                         % (len(m["combined"]), outdir, ", ".join(m["files"])))
    for f in m["failed"]:
        sys.stderr.write("pytracekit combine: %s (process %s): plugin %s failed "
                         "there; its figures are missing (see %s)\n"
                         % (f["dir"], f["pid"] if f["pid"] is not None else "?",
                            ", ".join("'%s'" % n for n in f["plugins"]) or "?",
                            os.path.join(f["dir"], "summary.txt")))
    return 3 if m["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
