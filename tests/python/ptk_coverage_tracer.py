"""An independent oracle for the coverage tests: a pure-Python sys.settrace
collector of executed lines, line transitions (arcs) and function starts.

    python ptk_coverage_tracer.py OUT.json [--threads] SCRIPT [ARGS...]

runs SCRIPT as __main__ and writes
    {"files": {abs path: {"lines": {line: count},
                           "arcs": [[from, to, count], ...],
                           "starts": [[qualname, first line, count], ...],
                           "code_lines": distinct (code object, line) pairs}}}
for every file whose name does not start with '<'. It shares no code with
the plugin: it sees the LINE events CPython gives any trace function, and
keeps its per-frame state in the frames' own local trace functions.

Arcs follow coverage.py's convention: entering a code object is an arc from
-co_firstlineno, leaving it (a return or an exception, not a yield) an arc to
-co_firstlineno; a resumed generator continues from the line it yielded on.

It imports nothing the program may import and measure itself (json is
imported to write the result, after the program ran).
"""

import opcode
import os
import runpy
import sys
import threading

_YIELD = opcode.opmap["YIELD_VALUE"]
_RESUME = opcode.opmap["RESUME"]


def _is_yield(frame):
    code = frame.f_code.co_code
    i = frame.f_lasti
    if i < 0 or i >= len(code):
        return False
    if code[i] == _YIELD:
        return True
    return code[i] == _RESUME and code[i + 1] != 0 and i >= 2 and code[i - 2] == _YIELD


class Collector:
    """Counts per thread, each frame's local trace function holding its
    thread's tables of its file: a line event takes no lock and makes no
    lookup by file (test_difflib's 8 million line events took 17 to 24 s a
    round when each did). A generator resumed on another thread gets a
    local trace function of that thread at its "call" event. result() adds
    the threads up."""

    def __init__(self):
        # thread ident -> {file: ({line: count}, {(a, b): count},
        #                         {(qualname, first line): {lines}})}
        self.per_thread = {}
        self.starts = {}   # file -> {(qualname, line): count}
        self.live = set()  # frames that started and have not finished
        self.lock = threading.Lock()

    def global_trace(self, frame, event, arg):
        if event != "call":
            return None
        code = frame.f_code
        fname = code.co_filename
        if not fname or fname.startswith("<"):
            return None
        fname = os.path.abspath(fname)
        first = code.co_firstlineno
        with self.lock:
            if frame in self.live:
                last = frame.f_lineno   # a generator or coroutine resumes
            else:
                self.live.add(frame)
                key = (code.co_qualname, first)
                s = self.starts.setdefault(fname, {})
                s[key] = s.get(key, 0) + 1
                last = -first
            files = self.per_thread.setdefault(threading.get_ident(), {})
        t = files.get(fname)
        if t is None:
            t = files[fname] = ({}, {}, {})
        lines, arcs, code_lines = t
        here = code_lines.setdefault((code.co_qualname, first), set())
        state = [last]

        def local(frame, event, arg):
            if event == "line":
                line = frame.f_lineno
                lines[line] = lines.get(line, 0) + 1
                here.add(line)
                arc = (state[0], line)
                arcs[arc] = arcs.get(arc, 0) + 1
                state[0] = line
            elif event == "return":
                if not _is_yield(frame):
                    arc = (state[0], -first)
                    arcs[arc] = arcs.get(arc, 0) + 1
                    with self.lock:
                        self.live.discard(frame)
            return local

        return local

    def result(self):
        lines, arcs, code_lines = {}, {}, {}
        for files in self.per_thread.values():
            for fname, (tl, ta, tc) in files.items():
                d = lines.setdefault(fname, {})
                for k, v in tl.items():
                    d[k] = d.get(k, 0) + v
                d = arcs.setdefault(fname, {})
                for k, v in ta.items():
                    d[k] = d.get(k, 0) + v
                d = code_lines.setdefault(fname, set())
                for (qualname, first), ls in tc.items():
                    d.update((qualname, first, n) for n in ls)
        out = {}
        for fname in set(lines) | set(self.starts):
            out[fname] = {
                "lines": {str(k): v for k, v in sorted(lines.get(fname, {}).items())},
                "arcs": sorted([a, b, c] for (a, b), c in arcs.get(fname, {}).items()),
                "starts": sorted([q, l, c] for (q, l), c in self.starts.get(fname, {}).items()),
                "code_lines": len(code_lines.get(fname, ())),
            }
        return {"files": out}


def main():
    out = sys.argv[1]
    args = sys.argv[2:]
    threads = False
    if args and args[0] == "--threads":
        threads = True
        args = args[1:]
    script = args[0]
    sys.argv = args
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    c = Collector()
    if threads:
        threading.settrace(c.global_trace)
    sys.settrace(c.global_trace)
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        pass
    finally:
        sys.settrace(None)
        threading.settrace(None)
        import json
        with open(out, "w") as f:
            json.dump(c.result(), f)


if __name__ == "__main__":
    main()
