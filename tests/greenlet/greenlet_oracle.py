"""The oracle of the greenlet tests: runs a program under sys.setprofile
with a stack per greenlet, switched by greenlet.settrace, and writes what a
correct profiler must find (marshal, to OUT):

    {"calls": {key: n}, "primitive": {key: n}, "edges": {(caller, callee): n},
     "switches": n, "greenlets": n, "max_depth": {greenlet serial: depth}}

keys as pstats keys Python functions: (co_filename, co_firstlineno,
co_name); "primitive" counts the calls of a function not already on the
stack of the greenlet it runs in (pstats' primitive calls); an edge is the
function on top of the calling greenlet's stack at a call (the module-level
caller of a greenlet's first function is none: the greenlet has no frame
below it). A stack that knew no greenlets would take the caller from
another greenlet's stack after a switch, and pop the wrong frame at a
return.

    python greenlet_oracle.py OUT SCRIPT [ARGS...]

With PTK_ORACLE_EVENTS=1 it also lists every event under "events", as
(kind, name of the frame's function, depth, greenlet serial, C callable's
__name__ or None): depth is the greenlet's Python depth after a call,
before a return, and at a C event.

Only Python functions are keyed (C calls are counted by name under
"c_calls"). The oracle's own frames (the settrace and setprofile callbacks)
are never counted: a profile function is not profiled while it runs, and
greenlet calls its trace function from C with the profile function off.
"""
import marshal
import sys

import greenlet

out, script = sys.argv[1:3]
sys.argv = sys.argv[2:]

stacks = {}           # greenlet -> list of keys
serial = {}           # greenlet -> serial number (0: the main greenlet)
current = [greenlet.getcurrent()]
serial[current[0]] = 0
stacks[current[0]] = []
calls, primitive, edges, c_calls = {}, {}, {}, {}
max_depth = {}
switches = [0]
events = [] if __import__("os").environ.get("PTK_ORACLE_EVENTS") == "1" else None


def tracer(event, args):
    if event in ("switch", "throw"):
        origin, target = args
        switches[0] += 1
        if target not in serial:
            serial[target] = len(serial)
            stacks[target] = []
        current[0] = target


def profile(frame, event, arg):
    stack = stacks[current[0]]
    if event == "call":
        co = frame.f_code
        key = (co.co_filename, co.co_firstlineno, co.co_name)
        calls[key] = calls.get(key, 0) + 1
        if key not in stack:
            primitive[key] = primitive.get(key, 0) + 1
        if stack:
            e = (stack[-1], key)
            edges[e] = edges.get(e, 0) + 1
        stack.append(key)
        s = serial[current[0]]
        if len(stack) > max_depth.get(s, 0):
            max_depth[s] = len(stack)
        if events is not None:
            events.append(("call", co.co_name, len(stack), s, None))
    elif event == "return":
        co = frame.f_code
        key = (co.co_filename, co.co_firstlineno, co.co_name)
        if events is not None:
            events.append(("return", co.co_name, len(stack), serial[current[0]], None))
        if stack and stack[-1] == key:
            stack.pop()
        elif stack:
            raise AssertionError("return of %r with %r on top" % (key, stack[-1]))
    elif event == "c_call":
        name = getattr(arg, "__qualname__", getattr(arg, "__name__", repr(arg)))
        c_calls[name] = c_calls.get(name, 0) + 1
    if events is not None and event in ("c_call", "c_return"):
        events.append((event, frame.f_code.co_name, len(stack), serial[current[0]],
                       getattr(arg, "__name__", None)))


greenlet.settrace(tracer)
code = compile(open(script).read(), script, "exec")
glb = {"__name__": "__main__", "__file__": script}
sys.setprofile(profile)
try:
    exec(code, glb)
finally:
    sys.setprofile(None)
    greenlet.settrace(None)
with open(out, "wb") as f:
    marshal.dump({"calls": calls, "primitive": primitive, "edges": edges,
                  "c_calls": c_calls, "switches": switches[0],
                  "greenlets": len(serial), "max_depth": max_depth,
                  "events": events}, f)
