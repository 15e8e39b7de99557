"""Plugins under greenlet switches, against oracles that know greenlets, on
two programs: programs/pingpong.py (three greenlets passing control round
10,000 times from inside a recursion of changing depth) and, with the
`gevent_` cases, programs/gevent_pingpong.py (three gevent greenlets passing
a token through gevent queues, through gevent's hub greenlet):

  counter   calls of every function of the program = greenlet_oracle.py's
  timer     calls, primitive calls and caller->callee edges = the oracle's
            (a stack per greenlet); no unmatched return, no frame resynced,
            no negative or impossible time; no warning
  coverage  lines and arcs (with their counts) = a sys.settrace oracle that
            pairs each line with the previous one of its own frame
  timeline  a track per greenlet ("greenlet N"), its span tree = the tree
            of calls the oracle saw in that greenlet
  hub_stack every event in a greenlet (tests/plugins/recorder.c, exec=true)
            = the oracle's: kind, function, depth (the hub's, per greenlet)
            and context; the top of the hub's shadow stack is the code of
            every CALL and RETURN, in every greenlet

    test_greenlet.py CASE

Skips (77) where greenlet (gevent, for the gevent_ cases) is not importable
by the interpreter under test.
"""
import atexit
import json
import marshal
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ptk_testlib import check, fail, skip

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "programs", "pingpong.py")
RESULT = {None: "[20000, 30000, 50000]", "200": "[400, 600, 1000]"}
GREENLETS = 4  # the main greenlet and three
NEEDS = "greenlet"
ORACLE = os.path.join(HERE, "greenlet_oracle.py")
CLI = os.environ.get("PTK_CLI")
PYTHON = os.environ.get("PTK_PYTHON", sys.executable)
PLUGIN_DIR = os.environ.get("PTK_PLUGIN_DIR")
if os.environ.get("PTK_SANITIZE"):
    # greenlet saves and restores a greenlet's stack with memcpy: ASan's
    # memcpy reads the redzones between the frames of that stack (a
    # stack-buffer-underflow in g_switchstack, not ours), and a suppression
    # cannot help (checking it unwinds the half-restored stack and crashes).
    # Our code keeps its inline checks; only the memcpy/memmove/memset
    # wrappers are left out, in these tests' processes.
    os.environ["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":replace_intrin=0"


def need_greenlet():
    p = subprocess.run([PYTHON, "-c", "import " + NEEDS], capture_output=True, text=True)
    if p.returncode != 0:
        skip("%s is not importable by %s (Debian's python3-%s): %s"
             % (NEEDS, PYTHON, NEEDS, p.stderr.strip().splitlines()[-1:]))


_made = []


@atexit.register
def _cleanup():
    if not os.environ.get("PTK_KEEP"):
        for d in _made:
            shutil.rmtree(d, ignore_errors=True)


def tmp(name):
    d = tempfile.mkdtemp(prefix="ptk-greenlet-%s-" % name)
    _made.append(d)
    return d


def run(spec, args=(), result=None):
    if result is None:
        result = RESULT[args[0] if args else None]
    out = tmp(spec.split(":")[0].split("/")[-1])
    cmd = [CLI, "-p", spec, "-o", out, "--plugin-path", PLUGIN_DIR, PROG] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail("%s exited %d:\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    check(result in p.stdout, "the program's result: %r" % p.stdout)
    # a plugin's complaint, ours ("pytracekit coverage: warning: ...") or
    # Python's ("file:line: RuntimeWarning: ..."); not the word alone: the
    # timer's table names functions by wall time, and one of warnings.py's
    # can be among the top ten when the process is preempted inside it
    said = re.findall(r"(?im)^.*warning: .*$", p.stderr)
    check("pytracekit: " + spec.split(":")[0] + ":" not in p.stderr and not said,
          "a plugin said something: %s" % (said or p.stderr))
    return out


def oracle(args=(), events=False):
    out = os.path.join(tmp("oracle"), "oracle.marshal")
    env = dict(os.environ, PTK_ORACLE_EVENTS="1" if events else "0")
    p = subprocess.run([PYTHON, ORACLE, out, PROG] + list(args), capture_output=True,
                       text=True, timeout=600, env=env)
    if p.returncode != 0:
        fail("the oracle exited %d:\n%s" % (p.returncode, p.stderr[-3000:]))
    d = marshal.load(open(out, "rb"))
    check(d["greenlets"] == GREENLETS and d["switches"] >= 3 * int((list(args) or [10000])[0]),
          "the oracle saw %d greenlets, %d switches" % (d["greenlets"], d["switches"]))
    return d


def mine(key):
    return key[0] == PROG


def case_timer():
    need_greenlet()
    o = oracle()
    out = run("timer")
    import pstats
    st = pstats.Stats(os.path.join(out, "timer.pstats")).stats
    ours = {k: v for k, v in st.items() if mine(k)}
    want = {k: v for k, v in o["calls"].items() if mine(k)}
    # (<module>, main, worker, fib, descend; 3.12+ inline the comprehensions)
    check(len(want) >= 5, "the oracle saw %d functions of the program" % len(want))
    got_calls = {k: v[1] for k, v in ours.items()}
    check(got_calls == want, "calls: %r != oracle %r" % (got_calls, want))
    got_prim = {k: v[0] for k, v in ours.items()}
    want_prim = {k: v for k, v in o["primitive"].items() if mine(k)}
    check(got_prim == want_prim, "primitive calls: %r != oracle %r" % (got_prim, want_prim))
    # caller -> callee edges between Python functions of the program
    got_edges = {}
    for callee, v in ours.items():
        for caller, cv in v[4].items():
            if mine(caller):
                got_edges[(caller, callee)] = cv[0]  # (nc, cc, tt, ct)
    want_edges = {k: v for k, v in o["edges"].items() if mine(k[0]) and mine(k[1])}
    check(got_edges == want_edges, "edges: %r != oracle %r" % (got_edges, want_edges))
    # a greenlet's first function has no caller in its own greenlet
    worker = [k for k in ours if k[2] == "worker"][0]
    check(ours[worker][4] == {}, "worker's callers: %r" % (ours[worker][4],))
    j = json.load(open(os.path.join(out, "timer.json")))
    check(j["unmatched_returns"] == 0 and j["resynced_frames"] == 0,
          "unmatched %d, resynced %d" % (j["unmatched_returns"], j["resynced_frames"]))
    total = j["total_ns"] / 1e9
    for k, (cc, nc, tt, ct, callers) in st.items():
        check(tt >= 0 and ct >= 0 and tt <= ct + 1e-9 and ct <= total + 1e-6,
              "impossible times for %r: tottime %r cumtime %r (total %r)" % (k, tt, ct, total))
    # the three workers ran for about as long as the whole program: their
    # frames are not charged while another greenlet runs
    check(ours[worker][3] <= total, "worker's cumtime %r > total %r" % (ours[worker][3], total))


def case_counter():
    need_greenlet()
    o = oracle()
    out = run("counter")
    j = json.load(open(os.path.join(out, "counter.json")))
    got = {(fn["file"], fn["line"], fn["name"]): fn["calls"]
           for fn in j["functions"] if fn.get("file") == PROG}
    want = {k: v for k, v in o["calls"].items() if mine(k)}
    check(got == want, "counter: %r != oracle %r" % (got, want))
    sw = o["c_calls"].get("greenlet.switch")
    got_sw = [fn["calls"] for fn in j["functions"]
              if fn.get("qualname") == "greenlet.switch"]
    # (gevent switches from compiled code: no C call of switch is seen)
    check(got_sw == ([sw] if sw else []), "switch calls %r != oracle %r" % (got_sw, sw))


SETTRACE = r'''
import marshal, sys
out, prog = sys.argv[1:3]
sys.argv = sys.argv[2:]
lines, arcs, last = {}, {}, {}
def local(frame, event, arg):
    if frame.f_code.co_filename != prog:
        return None
    if event == "line":
        lines[frame.f_lineno] = lines.get(frame.f_lineno, 0) + 1
        a = (last.get(frame, -frame.f_code.co_firstlineno), frame.f_lineno)
        arcs[a] = arcs.get(a, 0) + 1
        last[frame] = frame.f_lineno
    elif event == "return":
        a = (last.pop(frame, -frame.f_code.co_firstlineno), -frame.f_code.co_firstlineno)
        arcs[a] = arcs.get(a, 0) + 1
    return local
def glob(frame, event, arg):
    return local if frame.f_code.co_filename == prog else None
import threading
code = compile(open(prog).read(), prog, "exec")
sys.settrace(glob)
try:
    exec(code, {"__name__": "__main__", "__file__": prog})
finally:
    sys.settrace(None)
marshal.dump({"lines": lines, "arcs": arcs}, open(out, "wb"))
'''


def case_coverage():
    need_greenlet()
    d = tmp("settrace")
    script = os.path.join(d, "oracle.py")
    open(script, "w").write(SETTRACE)
    out = os.path.join(d, "lines.marshal")
    p = subprocess.run([PYTHON, script, out, PROG], capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        fail("settrace oracle exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    o = marshal.load(open(out, "rb"))
    cov = run("coverage:branch=true")
    j = json.load(open(os.path.join(cov, "coverage.json")))
    f = j["files"][PROG] if PROG in j["files"] else list(j["files"].values())[0]
    got_lines = dict((l, n) for l, n in f["hits"])
    check(set(got_lines) == set(o["lines"]),
          "lines %r != settrace %r" % (sorted(got_lines), sorted(o["lines"])))
    got_arcs = {(a, b): n for a, b, n in f["arcs"]}
    want_arcs = o["arcs"]
    if j["meta"]["measured"] == "branch events":
        # (3.14+, sys.monitoring: each line and branch is reported once, then
        # switched off; the arcs are the branches taken) the destinations
        # taken from each branching line, as settrace saw them
        for src, dests in f["branches"]:
            got = sorted(b for (a, b) in got_arcs if a == src)
            want = sorted(b for (a, b) in want_arcs if a == src and b in dests)
            check(got == want, "branch from %d: %r != settrace %r" % (src, got, want))
        return
    check(set(got_arcs) == set(want_arcs),
          "arcs only ours %r, only settrace's %r"
          % (sorted(set(got_arcs) - set(want_arcs)), sorted(set(want_arcs) - set(got_arcs))))
    check(got_arcs == want_arcs, "arc counts %r != settrace %r" % (got_arcs, want_arcs))
    check(got_lines == o["lines"], "line counts %r != settrace %r" % (got_lines, o["lines"]))


def oracle_trees(events):
    """{greenlet serial: [[name, [children...]], ...]} from the oracle's
    events: Python functions by name, C ones by their __name__."""
    trees, stacks = {}, {}
    for kind, name, depth, serial, cname in events:
        st = stacks.setdefault(serial, [trees.setdefault(serial, [])])
        if kind in ("call", "c_call"):
            node = [name if kind == "call" else cname, []]
            st[-1].append(node)
            st.append(node[1])
        elif len(st) > 1:
            st.pop()
    return trees


def span_name(name):
    # "file:line(name)" for Python; cProfile's label for C ("<method
    # 'switch' of 'greenlet.greenlet' objects>", "<built-in method
    # builtins.isinstance>")
    if name.startswith("<built-in method "):
        return name[len("<built-in method "):-1].rsplit(".", 1)[-1]
    if name.startswith("<") and "'" in name:
        return name.split("'")[1]
    return name[name.rindex("(") + 1:-1] if name.endswith(")") else name


def case_timeline():
    need_greenlet()
    o = oracle(args=["200"], events=True)
    want = oracle_trees(o["events"])
    out = run("timeline:format=json", args=["200"])
    events = json.load(open(os.path.join(out, "timeline.json")))
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    # a track per greenlet that ran a traced call: "TYPE N", N the serial
    tracks = {tid: n for tid, n in names.items() if tid >= 1000000000}
    serials = {int(n.split()[-1]): tid for tid, n in tracks.items()}
    busy = sorted(k for k, v in want.items() if k != 0 and v)
    check(sorted(serials) == busy, "tracks %r, greenlets with calls %r"
          % (sorted(tracks.values()), busy))
    types = sorted(n.split()[0] for n in tracks.values())
    check(types == ["greenlet"] * 3 if NEEDS == "greenlet" else
          set(types) <= {"Greenlet", "Hub"} and types.count("Greenlet") == 3,
          "track names %r" % sorted(tracks.values()))
    summary = json.load(open(os.path.join(out, "timeline.summary.json")))
    check(summary["unmatched_returns"] == 0 and summary["dropped"] == 0,
          "unmatched %r, dropped %r" % (summary["unmatched_returns"], summary["dropped"]))
    kinds = sorted((t["name"], t["kind"]) for t in summary["tasks"])
    check(kinds == sorted((n, "greenlet") for n in tracks.values()),
          "summary tasks: %r" % kinds)
    for serial, tid in serials.items():
        tname = tracks[tid]
        roots, st, t0 = [], [], []
        for e in events:
            if e.get("tid") != tid or e.get("ph") not in ("B", "E"):
                continue
            if e["ph"] == "B":
                node = [span_name(e["name"]), []]
                (st[-1][1] if st else roots).append(node)
                st.append(node)
                t0.append(e["ts"])
            else:
                check(st, "an E with no B on %s" % tname)
                st.pop()
                check(e["ts"] >= t0.pop(), "a span of %s ends before it begins" % tname)
        check(not st, "%d spans of %s never end" % (len(st), tname))
        if roots != want[serial]:
            fail("%s: the span tree differs from the oracle's calls in greenlet %d:\n"
                 "ours   %r\noracle %r" % (tname, serial, roots[:2], want[serial][:2]))


def case_hub_stack():
    need_greenlet()
    o = oracle(args=["200"], events=True)
    rec = os.path.join(os.environ["PTK_TEST_PLUGIN_DIR"], "recorder.so")
    out = run(rec + ":exec=true,events=call,return,c_call,c_return", args=["200"])
    rows = json.load(open(os.path.join(out, "recorder.json")))
    pairs = [r for r in rows if r[0] in ("call", "return")]
    wrong = [r for r in pairs if r[7][1] is not True]
    check(len(pairs) > 10000 and not wrong,
          "%d of %d CALL/RETURN rows not on top of the hub's stack: %r"
          % (len(wrong), len(pairs), wrong[:5]))
    got = [(r[0], r[1], r[4], r[7][0], r[3] if r[0].startswith("c_") else None)
           for r in rows if r[7][0] != 0]
    want = [tuple(e) for e in o["events"] if e[3] != 0]
    check(len(want) > 10000, "the oracle saw %d events in greenlets" % len(want))
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                 min(len(got), len(want)))
        fail("event %d of %d/%d in the greenlets: %r != oracle %r"
             % (i, len(got), len(want), got[i:i + 3], want[i:i + 3]))


def use_gevent():
    global PROG, RESULT, GREENLETS, NEEDS
    PROG = os.path.join(HERE, "programs", "gevent_pingpong.py")
    RESULT = {None: "[29997, 29998, 29999]", "200": "[597, 598, 599]"}
    GREENLETS = 5  # the main greenlet, gevent's hub and three
    NEEDS = "gevent"


def case_gevent_timer():
    use_gevent()
    case_timer()


def case_gevent_counter():
    use_gevent()
    case_counter()


def case_gevent_coverage():
    use_gevent()
    case_coverage()


def case_gevent_timeline():
    use_gevent()
    case_timeline()


if __name__ == "__main__":
    if not CLI or not os.path.exists(CLI):
        skip("the pytracekit command is not built")
    globals()["case_" + sys.argv[1]]()
    print("ok")
