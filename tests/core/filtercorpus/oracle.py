"""The filters of docs/filters.md, applied in Python with sys.setprofile
and sys.settrace: the events a filtered subscriber must get.

    python oracle.py OUT.json 'include=...,max_depth=...' SCRIPT | -m MODULE [ARGS]

Writes a list of [kind, name, line, cname, count] rows, one per distinct
event (name: co_name; line for LINE events, else -1; cname: the C
function's __name__ for C events; count: how many times it happened)."""
import fnmatch
import os
import runpy
import sys
import threading
import weakref

out, spec = sys.argv[1], sys.argv[2]
KEYS = ("include", "exclude", "modules", "functions", "threads", "max_depth")


def parse(spec):
    """key=value items; a list runs on across commas up to the next key=."""
    conds, key = {}, None
    for part in spec.split(",") if spec else []:
        k, eq, v = part.partition("=")
        if eq and k in KEYS:
            key = k
            conds.setdefault(key, []).append(v)
        elif key is not None:
            conds[key].append(part)
    items = {k: [i.strip() for x in v for i in x.split(";") if i.strip()]
             for k, v in conds.items()}
    return items


C = parse(spec)
MAX = int(C.pop("max_depth", ["0"])[0])
STDLIB = os.path.dirname(os.__file__)
SITE = [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]


def item_match(cond, item, s, module=None):
    if cond in ("include", "exclude"):
        if item == "stdlib":
            return ((s.startswith(STDLIB + "/") and not any(s.startswith(d + "/") for d in SITE))
                    or s.startswith("<frozen "))
        if item == "site-packages":
            return any(s.startswith(d + "/") for d in SITE)
        if not any(c in item for c in "*?["):
            item = item.rstrip("/")
            return s == item or s.startswith(item + "/")
        return fnmatch.fnmatchcase(s, item)
    if cond == "modules":
        return s == item or s.startswith(item + ".")
    if cond == "functions" and module and item.startswith(module + "."):
        # MODULE.GLOB: the module's full name, then a glob over co_qualname
        if fnmatch.fnmatchcase(s, item[len(module) + 1:]):
            return True
    return fnmatch.fnmatchcase(s, item)


def matches(cond, s, module=None):
    items = C[cond]
    pos = [i for i in items if not i.startswith("!")]
    neg = [i[1:] for i in items if i.startswith("!")]
    if any(item_match(cond, i, s, module) for i in neg):
        return False
    return not pos or any(item_match(cond, i, s, module) for i in pos)


# The verdict of each code object by identity, not by the code object's
# equality, which ignores the file (two files' equal functions are two code
# objects, each judged on its own name), and without keeping it alive: id ->
# a weak reference to it, and that reference -> the verdict, an entry that
# dict.pop drops when the code dies (a C callback: nothing traced).
_ref_of = {}
_verdict_of = {}


def _known(code):
    ref = _ref_of.get(id(code))
    return _verdict_of.get(ref) if ref is not None and ref() is code else None


def _remember(code, v):
    ref = weakref.ref(code, _verdict_of.pop)
    _ref_of[id(code)] = ref
    _verdict_of[ref] = v


def selected(frame):
    code = frame.f_code
    v = _known(code)
    if v is None:
        f = code.co_filename
        if not f.startswith("/") and not f.startswith("<"):
            f = os.path.join(os.getcwd(), f)
        v = True
        if "include" in C and not matches("include", f):
            v = False
        if "exclude" in C and matches("exclude", f):
            v = False
        if "modules" in C and not matches("modules", frame.f_globals.get("__name__", "")):
            v = False
        if "functions" in C and not matches("functions", code.co_qualname,
                                            frame.f_globals.get("__name__", "")):
            v = False
        _remember(code, v)
    return v


counts = {}
depth = {}


def add(key):
    counts[key] = counts.get(key, 0) + 1


def thread_ok():
    return "threads" not in C or matches("threads", threading.current_thread().name)


ME = __file__


def prof(frame, event, arg):
    if frame.f_code.co_filename == ME:
        return
    if not thread_ok() or not selected(frame):
        return
    t = threading.get_ident()
    d = depth.get(t, 0)
    if event == "call":
        d += 1
        depth[t] = d
        if not MAX or d <= MAX:
            add(("call", frame.f_code.co_name, -1, None))
    elif event == "return":
        if not MAX or d <= MAX:
            add(("return", frame.f_code.co_name, -1, None))
        depth[t] = max(d - 1, 0)
    elif event in ("c_call", "c_return", "c_exception"):
        if not MAX or d < MAX:
            add((event, frame.f_code.co_name, -1, getattr(arg, "__name__", None)))


def trace(frame, event, arg):
    if event == "call":
        # a frame the filter leaves out gets no LINE events to skip: its
        # verdict (by code) and its thread are the same for its whole run
        return trace if thread_ok() and selected(frame) else None
    if event == "line" and thread_ok() and selected(frame):
        d = depth.get(threading.get_ident(), 0)
        if not MAX or d <= MAX:
            add(("line", frame.f_code.co_name, frame.f_lineno, None))
    return trace


args = sys.argv[3:]
threading.setprofile(prof)
threading.settrace(trace)
sys.setprofile(prof)
sys.settrace(trace)
try:
    if args[0] == "-m":
        sys.argv = [args[1]] + args[2:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        runpy.run_path(args[0], run_name="__main__")
except SystemExit:
    pass
finally:
    sys.setprofile(None)
    sys.settrace(None)
    threading.setprofile(None)
    threading.settrace(None)
    import json  # only now: the program may import it itself
    with open(out, "w") as f:
        json.dump([list(k) + [n] for k, n in counts.items()], f)
