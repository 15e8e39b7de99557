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
    def __init__(self):
        self.lines = {}    # file -> {line: count}
        self.arcs = {}     # file -> {(a, b): count}
        self.starts = {}   # file -> {(qualname, line): count}
        self.live = set()  # frames that started and have not finished
        self.code_lines = {}  # file -> {(qualname, first line, line)}
        self.lock = threading.Lock()

    def _arc(self, fname, a, b):
        d = self.arcs.setdefault(fname, {})
        d[(a, b)] = d.get((a, b), 0) + 1

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
        state = [last]

        def local(frame, event, arg):
            with self.lock:
                if event == "line":
                    line = frame.f_lineno
                    d = self.lines.setdefault(fname, {})
                    d[line] = d.get(line, 0) + 1
                    self.code_lines.setdefault(fname, set()).add(
                        (frame.f_code.co_qualname, first, line))
                    self._arc(fname, state[0], line)
                    state[0] = line
                elif event == "return":
                    if not _is_yield(frame):
                        self._arc(fname, state[0], -first)
                        self.live.discard(frame)
            return local

        return local

    def result(self):
        out = {}
        for fname in set(self.lines) | set(self.starts):
            out[fname] = {
                "lines": {str(k): v for k, v in sorted(self.lines.get(fname, {}).items())},
                "arcs": sorted([a, b, c] for (a, b), c in self.arcs.get(fname, {}).items()),
                "starts": sorted([q, l, c] for (q, l), c in self.starts.get(fname, {}).items()),
                "code_lines": len(self.code_lines.get(fname, ())),
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
