"""The independent oracle of the timeline tests: runs a program under
sys.setprofile / threading.setprofile (spans) and sys.settrace /
threading.settrace (exceptions), and writes the span tree per track as the
timeline plugin defines tracks: one per thread; a coroutine resumed by
something that is not a coroutine, while an asyncio Task runs, opens a
"task NAME" span on its thread and goes, with everything it calls, on the
Task's track.

    python oracle.py OUT.json SCRIPT [ARGS...]

OUT.json: {"trees": {track: [[name, [children...]], ...]},
           "exceptions": {track: {type name: count}}}  (program frames only)
"""
import json
import os
import runpy
import sys
import threading

CO_CORO = 0x80 | 0x100 | 0x200  # CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR

out_path, script = sys.argv[1], os.path.abspath(sys.argv[2])
sys.argv = sys.argv[2:]
roots = {}        # track -> list of nodes
exceptions = {}   # track -> {type: count}
state = threading.local()
guard = threading.local()


class Frame:
    __slots__ = ("key", "node", "track", "coro", "task")

    def __init__(self, key, node, track, coro, task=False):
        self.key, self.node, self.track, self.coro, self.task = key, node, track, coro, task


def stack():
    s = getattr(state, "stack", None)
    if s is None:
        s = state.stack = []
        state.track = threading.current_thread().name
    return s


def current_task():
    mod = sys.modules.get("asyncio")
    if mod is None:
        return None
    try:
        return mod.current_task()
    except RuntimeError:
        return None


def push(s, key, name, track, coro, task=False):
    node = [name, []]
    (s[-1].node[1] if s and s[-1].track == track else roots.setdefault(track, [])).append(node)
    s.append(Frame(key, node, track, coro, task))


def profile(frame, event, arg):
    if getattr(guard, "on", False):
        return
    guard.on = True
    try:
        s = stack()
        if event == "call":
            code = frame.f_code
            name = "%s:%d(%s)" % (code.co_filename, code.co_firstlineno, code.co_name)
            coro = bool(code.co_flags & CO_CORO)
            top = s[-1] if s else None
            track = top.track if top else state.track
            if coro and (top is None or not top.coro):
                t = current_task()
                if t is not None:
                    push(s, None, "task " + t.get_name(), state.track, False)
                    push(s, code, name, t.get_name(), True, task=True)
                    return
            push(s, code, name, track, coro)
        elif event == "c_call":
            top = s[-1] if s else None
            push(s, ("c", id(arg)), "<c>", top.track if top else state.track, False)
        else:
            key = frame.f_code if event == "return" else ("c", id(arg))
            i = len(s)
            while i > 0 and s[i - 1].key != key:
                i -= 1
            if i == 0:
                return
            while len(s) >= i:
                f = s.pop()
                if f.task and s and s[-1].key is None:
                    s.pop()
    finally:
        guard.on = False


def trace(frame, event, arg):
    if frame.f_code.co_filename != script:
        return None
    return local


def local(frame, event, arg):
    if event == "exception":
        s = stack()
        track = s[-1].track if s else state.track
        d = exceptions.setdefault(track, {})
        d[arg[0].__name__] = d.get(arg[0].__name__, 0) + 1
    return local


threading.setprofile(profile)
threading.settrace(trace)
sys.settrace(trace)
sys.setprofile(profile)
try:
    runpy.run_path(script, run_name="__main__")
finally:
    sys.setprofile(None)
    sys.settrace(None)
    threading.setprofile(None)
    threading.settrace(None)


def strip(nodes):
    res = []
    for name, kids in nodes:
        k = strip(kids)
        if name.startswith(script + ":") or name.startswith("task "):
            res.append([name, k])
        else:
            res.extend(k)
    return res


with open(out_path, "w") as f:
    json.dump({"trees": {t: strip(n) for t, n in roots.items()},
               "exceptions": exceptions}, f, indent=1)
