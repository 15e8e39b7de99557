"""The legacy backend (PyEval_SetProfile/SetTrace) and the sys.monitoring
backend (PEP 669, CPython 3.12+) against each other: the same programs give
the same events on both; PTK_DISABLE; living beside cProfile, another
sys.monitoring tool and the program's own sys.setprofile; no free tool id;
which backend `auto` picks.

Every run names its backend explicitly (--backend, or backend= for a
Session); PYTRACEKIT_BACKEND is removed from the environment first, so that
the test means the same thing whatever backend the suite runs under."""
import collections
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import CLI, PYTHON, skip, test_plugin  # noqa: E402

if sys.version_info < (3, 12):
    skip("sys.monitoring needs 3.12+")

os.environ.pop("PYTRACEKIT_BACKEND", None)

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
RECORDER = test_plugin("recorder")
BACKENDS = ("legacy", "monitoring")

# ptk_event_origin
UNKNOWN, START, RESUME, THROW, RETURN, YIELD, UNWIND = range(7)

# Differences between the backends that are allowed, with the reason for
# each; docs/backends.md lists the same. An entry applies to the programs
# it names ("*": all) and says how the two sequences may differ:
#   ("origin", [L], M)    a row whose origin is one of L on legacy may be
#                         M on monitoring (everything else equal);
#   ("depth", D)          a row whose depth is D on monitoring may have
#                         any depth on legacy (everything else equal);
#   ("thread depth", N)   on threads other than the first (index 0), a
#                         row may have a depth N higher on monitoring;
#   ("preimport", [mods]) the programs are run with these modules imported
#                         before the session starts, on both backends.
# "pythons", when given, limits an entry to those (major, minor) versions.
# An entry naming programs fails the test of a program that no longer
# needs it.
ALLOWED_DIFFERENCES = [
    {
        "id": "thread-start-depth",
        "programs": ["threads.py"],
        "how": ("thread depth", 2),
        "reason": "The legacy backend starts tracing a thread started with "
                  "threading from threading's start hook, inside "
                  "Thread._bootstrap_inner, so that thread's depths are 2 "
                  "lower than on the monitoring backend, which sees the "
                  "thread from its first frame.",
    },
    {
        "id": "throw-origin",
        "programs": ["generators.py"],
        "pythons": [(3, 13), (3, 14), (3, 15)],
        "how": ("origin", [RESUME], THROW),
        "reason": "On 3.13 and later the legacy hooks report a generator that throw() "
                  "or close() resumes exactly as one next() resumes (3.12 "
                  "passes the exception, which the hub uses), so the legacy "
                  "backend gives such a CALL the origin resume where the "
                  "monitoring backend says throw.",
    },
    {
        "id": "depth-without-stack",
        "programs": "*",
        "how": ("depth", -1),
        "reason": "When no subscriber takes RETURN or a C event or sets "
                  "PTK_FLAG_STACK, the monitoring backend keeps no shadow "
                  "stack, so events have depth -1 there, while the legacy "
                  "backend, whose hooks see every call and return anyway, "
                  "gives the real depth.",
    },
]

ALL = "call,exception,line,return,c_call,c_exception,c_return,opcode"
EVENT_SETS = {
    "all": ALL,
    "profile": "profile",
    "line": "line",
    "call,return": "call,return",
}
PROFILE_KINDS = {"call", "return", "c_call", "c_return", "c_exception"}
KINDS_OF = {
    "all": set(ALL.split(",")),
    "profile": PROFILE_KINDS,
    "line": {"line"},
    "call,return": {"call", "return"},
}

# Programs whose other threads run code (threading's start-up handshake)
# that takes a different path depending on which thread gets there first:
# only the events of the program's own functions are compared.
OWN_FUNCTIONS_ONLY = {"threads.py"}
# Modules imported before the session starts (from sitecustomize), because
# tracing their import would only make the run slow.
PREIMPORT = {"coroutines.py": ["asyncio"], "uncaught.py": ["traceback"]}
# The exit status of each program.
EXIT_STATUS = {"uncaught.py": 1}


def clean_env(extra=None):
    e = dict(os.environ)
    e.pop("PYTRACEKIT_BACKEND", None)
    if extra:
        e.update(extra)
    return e


def cli(args, cwd, env=None, timeout=300):
    return subprocess.run([CLI] + list(args), cwd=cwd, env=clean_env(env),
                          capture_output=True, text=True, timeout=timeout)


def python(code, cwd, env=None, timeout=300):
    return subprocess.run([PYTHON, "-c", textwrap.dedent(code)], cwd=cwd,
                          env=clean_env(env), capture_output=True, text=True,
                          timeout=timeout)


def own_names(path):
    """co_name of every code object compiled from the file at `path`."""
    with open(path) as f:
        top = compile(f.read(), path, "exec")
    names, todo = set(), [top]
    while todo:
        co = todo.pop()
        names.add(co.co_name)
        todo.extend(c for c in co.co_consts if hasattr(c, "co_code"))
    return names


def load(path):
    with open(path) as f:
        return json.load(f)


def record_program(prog, backend, events):
    """Runs corpus program `prog` under the CLI with one recorder on
    `events`; returns (rows, CompletedProcess)."""
    path = os.path.join(CORPUS, prog)
    mods = list(PREIMPORT.get(prog, []))
    for a in allowed_for(prog):
        if a["how"][0] == "preimport":
            mods += a["how"][1]
    with tempfile.TemporaryDirectory() as d:
        env = {}
        if mods:
            pre = os.path.join(d, "pre")
            os.mkdir(pre)
            with open(os.path.join(pre, "sitecustomize.py"), "w") as f:
                f.write("".join(f"import {m}\n" for m in mods))
            env["PYTHONPATH"] = pre + os.pathsep + os.environ.get("PYTHONPATH", "")
        out = os.path.join(d, "out")
        p = cli(["--backend", backend, "-p", f"{RECORDER}:tag=r,events={events}",
                 "-o", out, path], cwd=d, env=env)
        rf = os.path.join(out, "recorder-r.json")
        if not os.path.exists(rf):
            raise AssertionError(f"{prog} on {backend}: no report "
                                 f"(exit {p.returncode}):\n{p.stderr}")
        return load(rf), p


def key(row):
    """What is compared of a recorder row [kind, name, line, arg, depth,
    thread, origin, extra]."""
    kind, name, line, arg, depth, thread, origin = row[:7]
    return (thread, kind, name, line, arg, depth, origin)


def fmt(k):
    thread, kind, name, line, arg, depth, origin = k
    return (f"thread {thread} {kind:<11} {name}:{line} arg={arg} depth={depth} "
            f"origin={origin}")


def allowed_for(prog):
    return [a for a in ALLOWED_DIFFERENCES
            if (a["programs"] == "*" or prog in a["programs"])
            and sys.version_info[:2] in a.get("pythons", [sys.version_info[:2]])]


def compare(legacy, monitoring, allowed, names=("legacy", "monitoring")):
    """Compares two key sequences under the allowed differences. Returns
    (error message or None, {allowed id: times used}, events compared)."""
    used = collections.Counter()
    ln, mn = (f"{n:<11}" for n in names)
    origin_ok = {(lo, a["how"][2]): a["id"] for a in allowed
                 if a["how"][0] == "origin" for lo in a["how"][1]}
    depth_ok = {a["how"][1]: a["id"] for a in allowed if a["how"][0] == "depth"}
    shift_ok = {a["how"][1]: a["id"] for a in allowed
                if a["how"][0] == "thread depth"}
    for i, (lk, mk) in enumerate(zip(legacy, monitoring)):
        if lk == mk:
            continue
        if lk[:5] == mk[:5]:
            why = []
            ld, md, lo, mo = lk[5], mk[5], lk[6], mk[6]
            if ld != md:
                why.append(depth_ok.get(md, False) or
                           (lk[0] != 0 and shift_ok.get(md - ld, False)))
            if lo != mo:
                # UNKNOWN: the legacy backend cannot tell, nothing to compare
                why.append(origin_ok.get((lo, mo), lo == UNKNOWN))
            if all(why):
                used.update(why)
                continue
        ctx = range(max(0, i - 6), i)
        msg = [f"first difference at event {i} of {len(legacy)} ({names[0]}) "
               f"/ {len(monitoring)} ({names[1]}):"]
        msg += ["   both        " + fmt(legacy[j]) for j in ctx]
        msg += [f"   {ln} " + fmt(lk), f"   {mn} " + fmt(mk)]
        msg += [f"   {ln} " + fmt(k) for k in legacy[i + 1:i + 4]]
        msg += [f"   {mn} " + fmt(k) for k in monitoring[i + 1:i + 4]]
        return "\n".join(msg), used, i
    if len(legacy) != len(monitoring):
        n = min(len(legacy), len(monitoring))
        longer = names[0] if len(legacy) > n else names[1]
        rest = (legacy if len(legacy) > n else monitoring)[n:]
        msg = [f"the sequences agree for {n} events, then {longer} has "
               f"{len(rest)} more:"] + ["   " + fmt(k) for k in rest[:8]]
        return "\n".join(msg), used, n
    return None, used, len(legacy)


class Differential(unittest.TestCase):
    """Each corpus program under the recorder on both backends, for the
    event sets of EVENT_SETS: the same events in the same order."""

    def check_program(self, prog):
        path = os.path.join(CORPUS, prog)
        own = own_names(path) if prog in OWN_FUNCTIONS_ONLY else None
        allowed = allowed_for(prog)
        used = collections.Counter()
        runs = {}
        total = 0
        for set_name, events in EVENT_SETS.items():
            keys = {}
            for b in BACKENDS:
                rows, p = record_program(prog, b, events)
                self.assertEqual(p.returncode, EXIT_STATUS.get(prog, 0),
                                 f"{prog} on {b}: {p.stderr}")
                # (the command's last line says where the reports are)
                said = "".join(ln for ln in p.stderr.splitlines(True)
                               if not ln.startswith("pytracekit: reports in "))
                self.assertNotIn("pytracekit:", said,
                                 f"{prog} on {b}: the hub complained")
                if own is not None:
                    rows = [r for r in rows if r[1] in own]
                # each thread's own sequence: how threads interleave is
                # up to the scheduler
                keys[b] = sorted((key(r) for r in rows), key=lambda k: k[0])
                runs[(set_name, b)] = keys[b]
            kinds = collections.Counter(k[1] for k in keys["legacy"])
            self.assertTrue(keys["legacy"], f"{prog} [{set_name}]: no events")
            self.assertEqual(set(kinds) - KINDS_OF[set_name], set())
            err, u, n = compare(keys["legacy"], keys["monitoring"], allowed)
            used.update(u)
            if err:
                self.fail(f"{prog}, events={events}: {err}")
            total += n
            print(f"{prog} [{set_name}]: {n} events compared "
                  f"({', '.join(f'{c} {k}' for k, c in sorted(kinds.items()))})"
                  + (f"; allowed differences used: {dict(u)}" if u else ""))
        print(f"{prog}: {total} events compared between the backends")
        # a subset run agrees with the full run seen through that subset
        for set_name in EVENT_SETS:
            if set_name == "all":
                continue
            for b in BACKENDS:
                full = [k for k in runs[("all", b)] if k[1] in KINDS_OF[set_name]]
                err, _, _ = compare(full, runs[(set_name, b)],
                                    [a for a in allowed if a["how"][0] == "depth"],
                                    ("all", set_name))
                if err:
                    self.fail(f"{prog} on {b}: events={set_name} against "
                              f"events=all seen through {set_name}: {err}")
        for a in allowed:
            if a["programs"] != "*":
                self.assertTrue(used[a["id"]], f"allowed difference {a['id']!r} "
                                f"is not needed by {prog} any more")

    def test_recursion(self):
        self.check_program("recursion.py")

    def test_generators(self):
        self.check_program("generators.py")

    def test_coroutines(self):
        self.check_program("coroutines.py")

    def test_exceptions(self):
        self.check_program("exceptions.py")

    def test_uncaught(self):
        self.check_program("uncaught.py")

    def test_objects(self):
        self.check_program("objects.py")

    def test_builtins_calls(self):
        self.check_program("builtins_calls.py")

    def test_loops(self):
        self.check_program("loops.py")

    def test_threads(self):
        self.check_program("threads.py")

    def test_corpus_is_covered(self):
        # every program in corpus/ has its test above
        progs = sorted(f for f in os.listdir(CORPUS) if f.endswith(".py"))
        with open(os.path.abspath(__file__)) as f:
            src = f.read()
        for prog in progs:
            self.assertIn(f'self.check_program("{prog}")', src)
        ids = [a["id"] for a in ALLOWED_DIFFERENCES]
        self.assertEqual(len(ids), len(set(ids)))
        for a in ALLOWED_DIFFERENCES:
            self.assertTrue(a["reason"].endswith("."), a["id"])
            if a["programs"] != "*":
                for prog in a["programs"]:
                    self.assertIn(prog, progs, a["id"])


# A loop-heavy program with known LINE counts (the lines are numbered
# below: the program starts at line 1).
DISABLE_PROGRAM = textwrap.dedent("""\
    def dl_inner(n):
        total = 0
        for i in range(n):
            total += i
        return total

    def dl_one_line(k):
        i = 0
        while i < k: i += 1
        return i

    def dl_main():
        s = 0
        for j in range(10):
            s += dl_inner(j)
        s += dl_one_line(5)
        return s

    dl_main()
    dl_main()
    """)
# (function, line): LINE events for the two dl_main() calls
DISABLE_COUNTS = {
    ("dl_inner", 2): 20,          # 10 calls a run
    ("dl_inner", 3): 110,         # n + 1 per call, n = 0..9: 55 a run
    ("dl_inner", 4): 90,          # n per call: 45 a run
    ("dl_inner", 5): 20,
    ("dl_one_line", 8): 2,
    # the line, then a backward jump on it per iteration after the first
    # (4); 3.14 compiles the while loop with its test at the top only, so
    # the jump after the last iteration is on the line too (5):
    # docs/events.md, "while loops on one line"
    ("dl_one_line", 9): 12 if sys.version_info >= (3, 14) else 10,
    ("dl_one_line", 10): 2,
    ("dl_main", 13): 2,
    ("dl_main", 14): 22,          # 11 a run
    ("dl_main", 15): 20,
    ("dl_main", 16): 2,
    ("dl_main", 17): 2,
}


class Disable(unittest.TestCase):
    """A LINE subscriber that returns PTK_DISABLE (recorder disable=line)
    sees each line once; one beside it that does not still sees them all."""

    def run_disable(self, backend, specs):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "prog.py")
            with open(path, "w") as f:
                f.write(DISABLE_PROGRAM)
            args = ["--backend", backend]
            for tag, opts in specs:
                args += ["-p", f"{RECORDER}:tag={tag},{opts}"]
            p = cli(args + ["-o", os.path.join(d, "out"), path], cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = {}
            for tag, _ in specs:
                rows = load(os.path.join(d, "out", f"recorder-{tag}.json"))
                out[tag] = collections.Counter(
                    (r[1], r[2]) for r in rows
                    if r[0] == "line" and r[1].startswith("dl_"))
            return out

    def check_alone(self, backend):
        got = self.run_disable(backend, [("d", "events=line,disable=line")])["d"]
        self.assertEqual(dict(got), {k: 1 for k in DISABLE_COUNTS})

    def check_beside(self, backend):
        got = self.run_disable(backend, [("d", "events=line,disable=line"),
                                         ("k", "events=line")])
        self.assertEqual(dict(got["d"]), {k: 1 for k in DISABLE_COUNTS})
        self.assertEqual(dict(got["k"]), DISABLE_COUNTS)
        print(f"{backend}: the disabling recorder saw {sum(got['d'].values())} "
              f"LINE events, the other {sum(got['k'].values())}")

    def test_counts_without_disable_legacy(self):
        got = self.run_disable("legacy", [("k", "events=line")])["k"]
        self.assertEqual(dict(got), DISABLE_COUNTS)

    def test_counts_without_disable_monitoring(self):
        got = self.run_disable("monitoring", [("k", "events=line")])["k"]
        self.assertEqual(dict(got), DISABLE_COUNTS)

    def test_alone_legacy(self):
        self.check_alone("legacy")

    def test_alone_monitoring(self):
        self.check_alone("monitoring")

    def test_beside_a_non_disabling_one_legacy(self):
        self.check_beside("legacy")

    def test_beside_a_non_disabling_one_monitoring(self):
        self.check_beside("monitoring")


FIB = """
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
"""


class Coexistence(unittest.TestCase):
    """On the monitoring backend, the program's own profilers and
    sys.monitoring tools keep working, and so do we."""

    def run_counter(self, src, backend="monitoring"):
        """Runs `src` under `pytracekit --backend ... -p counter`; returns
        (the program's last stdout line as JSON, {python function: calls},
        stderr)."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "prog.py")
            with open(path, "w") as f:
                f.write(textwrap.dedent(src))
            p = cli(["--backend", backend, "-p", "counter", "-o",
                     os.path.join(d, "out"), path], cwd=d)
            self.assertEqual(p.returncode, 0, p.stderr)
            got = load(os.path.join(d, "out", "counter.json"))
        calls = {fn["name"]: fn["calls"] for fn in got["functions"]
                 if fn["kind"] == "python" and fn["file"] == path}
        return json.loads(p.stdout.strip().splitlines()[-1]), calls, p.stderr

    def test_cprofile_inside(self):
        src = FIB + """
import cProfile, json, pstats
pr = cProfile.Profile()
pr.enable()
fib(15)
pr.disable()
st = pstats.Stats(pr).stats
print(json.dumps({name: [cc, nc] for (file, line, name), (cc, nc, tt, ct, callers)
                  in st.items() if name == "fib"}))
"""
        prog, calls, err = self.run_counter(src)
        self.assertEqual(prog, {"fib": [1, 1973]})      # primitive, all calls
        self.assertEqual(calls["fib"], 1973)
        self.assertNotIn("legacy backend", err)

    def test_own_monitoring_tool(self):
        src = FIB + """
import json, sys
M = sys.monitoring
starts = {}
def on_start(code, offset):
    if code.co_name == "other":
        return M.DISABLE                  # only for this tool
    starts[code.co_name] = starts.get(code.co_name, 0) + 1
def other():
    return 0
ids = []
for tool in (0, 1):
    M.use_tool_id(tool, "mine%d" % tool)
    M.register_callback(tool, M.events.PY_START, on_start)
    M.set_events(tool, M.events.PY_START)
    ids.append(tool)
for i in range(7):
    fib(5)
    other()
for tool in ids:
    M.set_events(tool, 0)
    M.register_callback(tool, M.events.PY_START, None)
    M.free_tool_id(tool)
fib(3)
print(json.dumps(starts))
"""
        prog, calls, err = self.run_counter(src)
        # two tools, 7 * 15 starts of fib each
        self.assertEqual(prog, {"fib": 2 * 7 * 15})
        self.assertEqual(calls["fib"], 7 * 15 + 5)
        self.assertEqual(calls["other"], 7)
        self.assertNotIn("legacy backend", err)

    def test_own_setprofile(self):
        src = FIB + """
import json, sys
seen = {}
def prof(frame, event, arg):
    if frame.f_code.co_name == "fib":
        seen[event] = seen.get(event, 0) + 1
sys.setprofile(prof)
fib(10)
sys.setprofile(None)
fib(2)
print(json.dumps(seen))
"""
        prog, calls, err = self.run_counter(src)
        self.assertEqual(prog, {"call": 177, "return": 177})
        self.assertEqual(calls["fib"], 177 + 3)

    def test_own_settrace(self):
        src = FIB + """
import json, sys
lines = {}
def trace(frame, event, arg):
    if frame.f_code.co_name != "fib":
        return None
    lines[event] = lines.get(event, 0) + 1
    return trace
sys.settrace(trace)
fib(10)
sys.settrace(None)
print(json.dumps(lines))
"""
        prog, calls, err = self.run_counter(src)
        self.assertEqual(prog, {"call": 177, "line": 177, "return": 177})
        self.assertEqual(calls["fib"], 177)


SESSION = """
import json, sys
import pytracekit
{setup}
def target(i):
    return i
s = pytracekit.Session([{spec!r}], output_dir={out!r}{backend})
s.start()
during = {{t: sys.monitoring.get_tool(t) for t in range(6)}}
for i in range(9):
    target(i)
s.stop()
backend = s.backend
s.report()
s.close()
after = {{t: sys.monitoring.get_tool(t) for t in range(6)}}
print(json.dumps({{"backend": backend, "during": during, "after": after}}))
"""


def run_session(tc, setup="", backend=', backend="monitoring"', env=None):
    """Runs SESSION in a fresh interpreter; returns ({backend, during,
    after: {tool id: name}, calls: CALLs of target}, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        src = SESSION.format(setup=textwrap.dedent(setup), out=d,
                             spec=f"{RECORDER}:tag=r,events=call",
                             backend=backend)
        p = python(src, cwd=d, env=env)
        tc.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rows = load(os.path.join(d, "recorder-r.json"))
    got = json.loads(p.stdout.strip().splitlines()[-1])
    got["during"] = {int(k): v for k, v in got["during"].items()}
    got["after"] = {int(k): v for k, v in got["after"].items()}
    got["calls"] = sum(1 for r in rows if r[0] == "call" and r[1] == "target")
    return got, p.stderr


class ToolIds(unittest.TestCase):
    """Which sys.monitoring tool id the monitoring backend takes, and what
    happens when neither of its two is free."""

    def test_takes_tool_id_3(self):
        got, err = run_session(self)
        self.assertEqual(got["backend"], "monitoring")
        self.assertIsNotNone(got["during"][3])
        self.assertEqual([got["during"][t] for t in (0, 1, 4, 5)], [None] * 4)
        self.assertEqual(got["after"], {t: None for t in range(6)})
        self.assertEqual(got["calls"], 9)
        self.assertNotIn("legacy backend", err)

    def test_takes_4_when_3_is_taken(self):
        got, err = run_session(self, 'sys.monitoring.use_tool_id(3, "other")\n')
        self.assertEqual(got["backend"], "monitoring")
        self.assertEqual(got["during"][3], "other")
        self.assertIsNotNone(got["during"][4])
        self.assertNotEqual(got["during"][4], "other")
        self.assertEqual(got["after"][3], "other")
        self.assertIsNone(got["after"][4])
        self.assertEqual(got["calls"], 9)
        self.assertNotIn("legacy backend", err)

    def test_no_free_tool_id_falls_back_to_legacy(self):
        got, err = run_session(self, 'sys.monitoring.use_tool_id(3, "a")\n'
                                    'sys.monitoring.use_tool_id(4, "b")\n')
        self.assertIn("using the legacy backend", err)
        self.assertEqual(err.count("using the legacy backend"), 1, err)
        self.assertEqual(got["backend"], "legacy")
        self.assertEqual([got["during"][t] for t in (3, 4)], ["a", "b"])
        self.assertEqual([got["after"][t] for t in (3, 4)], ["a", "b"])
        self.assertEqual(got["calls"], 9)



HIDDEN = """
import json, sys
import pytracekit
monitoring = sys.monitoring
del sys.monitoring
out = {{}}
try:
    s = pytracekit.Session([{spec!r}], output_dir={out!r}, backend="monitoring")
    s.start()
    out["monitoring"] = s.backend
    s.stop()
    s.close()
except Exception as e:
    out["monitoring"] = "refused: %s" % e
s = pytracekit.Session([{spec!r}], output_dir={out!r})
s.start()
s.stop()
out["auto"] = s.backend
s.close()
print(json.dumps(out))
"""


class Behaviour(unittest.TestCase):
    """Whether the monitoring backend can run is decided when a session
    starts, by what the interpreter has (lib/backends/monitoring.c mon_init), not by
    what the build saw: with sys.monitoring taken away, asking for it is
    refused with a message that says so, and auto takes the legacy
    backend."""

    def test_without_sys_monitoring(self):
        with tempfile.TemporaryDirectory() as d:
            src = HIDDEN.format(out=d, spec=f"{RECORDER}:tag=r,events=call")
            p = python(src, cwd=d)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        got = json.loads(p.stdout.strip().splitlines()[-1])
        version = "%d.%d.%d" % sys.version_info[:3]
        self.assertEqual(got, {
            "monitoring": "refused: the monitoring backend needs sys.monitoring "
                          "(PEP 669), which this CPython %s does not have" % version,
            "auto": "legacy"})


CLI_PROBE = """
import json, sys
print(json.dumps({"tool3": sys.monitoring.get_tool(3),
                  "profile": sys.getprofile() is not None}))
"""


class Auto(unittest.TestCase):
    """With no backend named, 3.12+ runs on sys.monitoring."""

    def test_session_auto_is_monitoring(self):
        got, err = run_session(self, backend="")
        self.assertEqual(got["backend"], "monitoring")
        self.assertIsNotNone(got["during"][3])
        self.assertEqual(got["calls"], 9)

    def test_session_explicit_auto_is_monitoring(self):
        got, err = run_session(self, backend=', backend="auto"')
        self.assertEqual(got["backend"], "monitoring")

    def test_session_legacy(self):
        got, err = run_session(self, backend=', backend="legacy"')
        self.assertEqual(got["backend"], "legacy")
        self.assertEqual(got["during"], {t: None for t in range(6)})
        self.assertEqual(got["calls"], 9)

    def run_probe(self, args, env=None):
        with tempfile.TemporaryDirectory() as d:
            p = cli(args + ["-o", d, "-c", CLI_PROBE], cwd=d, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout.strip().splitlines()[-1])

    def test_cli_default_is_monitoring(self):
        got = self.run_probe([])
        self.assertIsNotNone(got["tool3"])
        self.assertFalse(got["profile"])

    def test_cli_legacy(self):
        self.assertEqual(self.run_probe(["--backend", "legacy"]),
                         {"tool3": None, "profile": True})

    def test_environment_picks_legacy(self):
        self.assertEqual(self.run_probe([], env={"PYTRACEKIT_BACKEND": "legacy"}),
                         {"tool3": None, "profile": True})

    def test_option_overrides_environment(self):
        got = self.run_probe(["--backend", "monitoring"],
                             env={"PYTRACEKIT_BACKEND": "legacy"})
        self.assertIsNotNone(got["tool3"])
        self.assertFalse(got["profile"])

    def test_bad_backend_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as d:
            p = cli(["--backend", "nope", "-c", "print('ran')"], cwd=d)
        self.assertEqual(p.returncode, 2)
        self.assertNotIn("ran", p.stdout)


if __name__ == "__main__":
    unittest.main()
