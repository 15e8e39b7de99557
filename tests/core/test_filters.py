"""Subscription filters (docs/filters.md) against a Python oracle: the
recorder plugin under a filter gets exactly the events that
filtercorpus/oracle.py selects by applying the same conditions with
sys.setprofile / sys.settrace; on the corpus and on a stdlib unittest suite,
each condition alone and combined, several instances and sessions at once,
and every malformed filter refused with its message and exit status 2."""
import collections
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import (MONITORING, PLAIN_ENV, PYTHON, run_cli, run_python,  # noqa: E402
                         shared, source_digest, test_plugin)

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "filtercorpus")
MAIN = os.path.join(CORPUS, "main.py")
ORACLE = os.path.join(CORPUS, "oracle.py")
PKG = os.path.join(CORPUS, "fpkg")
EVENTS = "call,return,c_call,c_return,c_exception,line"
C_KINDS = ("c_call", "c_return", "c_exception")


def normalise(rows):
    """[kind, name, line, cname] from recorder rows."""
    out = []
    for r in rows:
        kind, name, line, arg = r[0], r[1], r[2], r[3]
        out.append((kind, name, line, arg if kind in C_KINDS else None))
    return collections.Counter(out)


def counted(rows):
    """The Counter of [kind, name, line, cname, count] rows (the recorder's
    counts=true, the oracle's): compared as aggregated counts, not event by
    event, so that neither side writes a row per event."""
    c = collections.Counter()
    for kind, name, line, cname, n in rows:
        c[(kind, name, line, cname)] += n
    return c


def oracle_key(spec, program):
    """What the oracle's rows depend on: the filter, the program, the
    interpreter, and the oracle's and the corpus's sources (not the backend:
    the oracle loads none of our code)."""
    corpus = []
    for root, dirs, files in sorted(os.walk(CORPUS)):
        dirs.sort()
        corpus += [os.path.join(root, n) for n in sorted(files) if n.endswith(".py")]
    return ["filters", spec, program, os.path.realpath(PYTHON), os.stat(PYTHON).st_mtime,
            source_digest(*corpus)]


def oracle(spec, program):
    """The oracle's Counter; its run is shared by a test's two copies (the
    legacy and @monitoring run of one case ask for the same rows)."""
    def make(d):
        p = subprocess.run([PYTHON, ORACLE, os.path.join(d, "rows.json"), spec] + program,
                           cwd=CORPUS, capture_output=True, text=True, timeout=300,
                           env=PLAIN_ENV)
        if p.returncode != 0 or not os.path.exists(os.path.join(d, "rows.json")):
            raise AssertionError("oracle failed:\n" + p.stdout + p.stderr)
    with open(os.path.join(shared("filters-oracle", oracle_key(spec, program), make),
                           "rows.json")) as f:
        return counted(json.load(f))


def traced(specs, program, extra_args=(), events=EVENTS, env=None):
    """Runs program under one recorder per spec; returns their Counters."""
    with tempfile.TemporaryDirectory() as d:
        args = ["-o", d]
        for i, spec in enumerate(specs):
            args += ["-p", "%s:tag=f%d,counts=true,events=%s%s" % (
                test_plugin("recorder"), i, events, "," + spec if spec else "")]
        r = run_cli(list(extra_args) + args + program, cwd=CORPUS, env=env)
        if r.returncode != 0:
            raise AssertionError("pytracekit failed (%d):\n%s\n%s" % (r.returncode, r.stdout, r.stderr))
        res = []
        for i in range(len(specs)):
            with open(os.path.join(d, "recorder-f%d.json" % i)) as f:
                res.append(counted(json.load(f)))
        return res


def diff(a, b):
    return "only traced: %s\nonly oracle: %s" % (
        sorted((a - b).items())[:12], sorted((b - a).items())[:12])


class Conditions(unittest.TestCase):
    """Each condition alone and combined, on the corpus."""

    def same(self, spec, program=None, oracle_spec=None, min_events=10, env=None):
        program = program or [MAIN]
        got = traced([spec], program, env=env)[0]
        want = oracle(spec if oracle_spec is None else oracle_spec, program)
        self.assertGreaterEqual(sum(want.values()), min_events, "the oracle selected almost nothing")
        self.assertEqual(got, want, diff(got, want))
        return got

    def test_include_dir(self):
        got = self.same("include=%s" % PKG)
        self.assertTrue(any(k[1] == "w_helper" for k in got))
        self.assertFalse(any(k[1] == "w_main" for k in got))

    def test_include_relative(self):
        # relative to the directory the session was set up in (the corpus
        # here), "." and ".." components taken as the shell takes them
        for rel, absolute in ((".", CORPUS), ("./fpkg", PKG), ("fpkg/../fpkg/", PKG),
                              ("./fpkg/./core.py", os.path.join(PKG, "core.py"))):
            got = self.same("include=%s" % rel, oracle_spec="include=%s" % absolute)
            self.assertEqual(got, traced(["include=%s" % absolute], [MAIN])[0], rel)

    def test_include_glob_and_exclude(self):
        got = self.same("include=%s/*,exclude=%s/util.py" % (CORPUS, PKG))
        self.assertFalse(any(k[1] in ("w_helper", "w_gen", "add") for k in got))
        self.assertTrue(any(k[1] == "w_fib" for k in got))

    def test_include_many_files_one_after_another(self):
        # a name made at a freed name's address is judged again: a third
        # of 400 files selected, whatever the address of their names
        # (under ASan a freed block waits in its quarantine: none then)
        env = ({"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"}
               if os.environ.get("PTK_SANITIZE") else None)
        got = self.same("include=/many_files/yes/*", [os.path.join(CORPUS, "many_files.py")],
                        env=env)
        self.assertEqual(got[("call", "w_file", -1, None)], 134)

    def test_include_negated_item(self):
        self.same("include=%s;!%s/core.py" % (CORPUS, PKG))

    def test_exclude_stdlib(self):
        # stdlib excluded, the rest (corpus, site-packages, frozen launcher
        # frames) kept: compared on the corpus's own code only
        got = traced(["exclude=stdlib"], [MAIN])[0]
        want = oracle("exclude=stdlib", [MAIN])
        keep = lambda c: collections.Counter({k: v for k, v in c.items() if k[1].startswith("w_") or k[1] in ("add", "__init__")})
        self.assertEqual(keep(got), keep(want), diff(keep(got), keep(want)))
        self.assertFalse(any(k[1] == "dumps" and k[0] == "call" for k in got), "json.dumps is stdlib")

    def test_modules_prefix(self):
        got = self.same("modules=fpkg")
        self.assertTrue(any(k[1] == "w_fib" for k in got) and any(k[1] == "w_helper" for k in got))

    def test_modules_submodule_and_negation(self):
        got = self.same("modules=fpkg;!fpkg.util")
        self.assertFalse(any(k[1] == "w_helper" for k in got))

    def test_functions(self):
        got = self.same("functions=w_fib;Acc.*")
        self.assertEqual({k[1] for k in got}, {"w_fib", "add", "__init__"})

    def test_functions_module_qualified(self):
        # MODULE.GLOB: fpkg.util's w_* only, not fpkg.core's; Acc's methods
        # named through their module; a plain glob keeps its meaning
        got = self.same("functions=fpkg.util.w_*;fpkg.util.Acc.*")
        self.assertEqual({k[1] for k in got}, {"w_helper", "w_gen", "add", "__init__"})
        got = self.same("functions=fpkg.core.w_*;!fpkg.core.w_fib")
        names = {k[1] for k in got}
        self.assertTrue("w_run" in names and "w_fib" not in names and "w_helper" not in names,
                        names)
        self.assertEqual(traced(["functions=fpkg.core.w_fib"], [MAIN])[0],
                         traced(["functions=w_fib"], [MAIN])[0])

    def test_threads(self):
        got = self.same("threads=worker-*,modules=fpkg")
        self.assertTrue(any(k[1] == "w_worker" for k in got))
        self.assertFalse(any(k[1] == "w_fib" for k in got), "w_fib runs on the main thread")

    def test_max_depth_relative(self):
        # recursion (w_fib), exceptions through 6 frames (w_deep), generators
        # and coroutines, threads: depth counts selected frames only
        got = self.same("modules=fpkg,max_depth=2")
        self.assertFalse(any(k == ("call", "w_fib", -1, None) for k in got) and
                         got[("call", "w_fib", -1, None)] > 3)

    def test_max_depth_one_with_functions(self):
        self.same("functions=w_*,max_depth=1")

    def test_combined(self):
        self.same("include=%s,modules=fpkg.core;fpkg.util,functions=w_*;Acc.*,"
                  "threads=MainThread;worker-*,max_depth=3" % CORPUS)


PY_EVENTS = ("call", "return", "line")


def only(counter, kinds):
    return collections.Counter({k: v for k, v in counter.items() if k[0] in kinds})


class PythonEventsOnly(unittest.TestCase):
    """No C events taken: on 3.11 the trace function is parked while code
    no filter selects runs, and a parked profile function watches for
    selected code (lib/backends/legacy.c). The corpus enters selected code from
    excluded code through generators, coroutines run by asyncio, threads
    and exceptions; the events must still be exactly the oracle's."""

    def same(self, spec):
        got = traced([spec], [MAIN], events=",".join(PY_EVENTS))[0]
        want = only(oracle(spec, [MAIN]), PY_EVENTS)
        self.assertGreaterEqual(sum(want.values()), 10, "the oracle selected almost nothing")
        self.assertEqual(got, want, diff(got, want))
        return got

    def test_include(self):
        got = self.same("include=%s" % PKG)
        self.assertTrue(any(k[0] == "line" and k[1] == "w_helper" for k in got))

    def test_functions_called_from_excluded_frames(self):
        # w_helper runs under the excluded w_gen and w_step (a coroutine
        # that asyncio's excluded code resumes), 14 times on the main thread
        # and 11 on three threads; add under the excluded w_worker
        got = self.same("functions=w_fib;w_helper;Acc.*")
        self.assertEqual(got[("call", "w_helper", -1, None)], 25)

    def test_modules_with_threads(self):
        self.same("modules=fpkg;!fpkg.core,threads=worker-*")

    def test_hooks_from_excluded_code(self):
        """Excluded code reads and sets the hooks: it sees what it would
        without parking, and selected code keeps its events after."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "sel.py"), "w") as f:
                f.write("def w_sel(x):\n    y = x + 1\n    return y\n")
            with open(os.path.join(d, "main.py"), "w") as f:
                f.write(HOOKS)
            out = os.path.join(d, "out")
            r = run_cli(["-o", out, "-p", "%s:events=call,return,line,include=%s" % (
                test_plugin("recorder"), os.path.join(d, "sel.py")),
                os.path.join(d, "main.py")], cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), ["[true,", "true,", "true,", "true]", "15"])
            with open(os.path.join(out, "recorder.json")) as f:
                got = normalise(json.load(f))
        self.assertEqual(got, collections.Counter({
            ("call", "<module>", -1, None): 1, ("line", "<module>", 1, None): 1,
            ("return", "<module>", -1, None): 1,
            ("call", "w_sel", -1, None): 6, ("line", "w_sel", 2, None): 6,
            ("line", "w_sel", 3, None): 6, ("return", "w_sel", -1, None): 6}))


HOOKS = r'''
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sel


def excluded():
    trace = sys.gettrace()
    seen = [sys.getprofile() is None]
    total = sum(map(sel.w_sel, range(3)))  # through C, from excluded code
    sys.setprofile(None)
    for i in range(2):
        total += sel.w_sel(i)
    sys.settrace(sys.gettrace())           # the hub object puts itself back
    total += sel.w_sel(5)
    seen += [sys.getprofile() is None, sys.gettrace() is trace, total == 15]
    print(json.dumps(seen), total)


excluded()
'''


class Instances(unittest.TestCase):
    def test_two_instances_different_filters(self):
        specs = ["modules=fpkg.util", "functions=w_fib,max_depth=2", "include=%s/core.py" % PKG]
        got = traced(specs, [MAIN])
        for spec, g in zip(specs, got):
            want = oracle(spec, [MAIN])
            self.assertEqual(g, want, spec + "\n" + diff(g, want))

    def test_session_default_and_override(self):
        # --modules is every plugin's default; an instance's own modules= wins
        with tempfile.TemporaryDirectory() as d:
            rec = test_plugin("recorder")
            r = run_cli(["--modules", "fpkg.util", "-o", d,
                         "-p", "%s:tag=a,events=%s" % (rec, EVENTS),
                         "-p", "%s:tag=b,events=%s,modules=fpkg.core" % (rec, EVENTS),
                         MAIN], cwd=CORPUS)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "recorder-a.json")) as f:
                a = normalise(json.load(f))
            with open(os.path.join(d, "recorder-b.json")) as f:
                b = normalise(json.load(f))
        self.assertEqual(a, oracle("modules=fpkg.util", [MAIN]))
        self.assertEqual(b, oracle("modules=fpkg.core", [MAIN]))

    def test_counter_filtered_matches_recorder(self):
        with tempfile.TemporaryDirectory() as d:
            r = run_cli(["-o", d, "-p", "counter:events=call,modules=fpkg", MAIN], cwd=CORPUS)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "counter.json")) as f:
                c = json.load(f)
        want = oracle("modules=fpkg", [MAIN])
        calls = sum(v for k, v in want.items() if k[0] == "call")
        self.assertEqual(c["events"]["call"], calls)


class TimerSemantics(unittest.TestCase):
    def test_filtered_callees_and_caller_edges(self):
        """A filtered-out callee's time is its caller's own time; caller
        edges skip filtered frames (docs/filters.md)."""
        import pstats
        with tempfile.TemporaryDirectory() as d:
            r = run_cli(["-o", d, "-p", "timer:functions=w_run;w_helper", MAIN], cwd=CORPUS)
            self.assertEqual(r.returncode, 0, r.stderr)
            st = pstats.Stats(os.path.join(d, "timer.pstats")).stats
        by_name = {k[2]: v for k, v in st.items()}
        python_fns = {k[2] for k in st if k[0] != "~"}
        self.assertEqual(python_fns, {"w_run", "w_helper"})
        cc, nc, tt, ct, callers = by_name["w_helper"]
        self.assertEqual(nc, 25)  # 14 on the main thread, 11 on three threads
        # main thread: under sum(w_gen(5)) (w_gen is filtered out) 5 times;
        # from w_run through w_step / w_worker (filtered out) 9 times;
        # on the other threads no selected frame calls it
        self.assertEqual({k[2]: v[0] for k, v in callers.items()},
                         {"<built-in method builtins.sum>": 5, "w_run": 9})
        # w_run's time is its own but for the edges to its selected callees
        # (and the C functions it calls itself): the filtered-out ones (w_fib,
        # w_guard, json.dumps, asyncio.run, w_worker ...) have no edge, so
        # their time is in w_run's own. Exact, whatever the clock reads.
        run = next(k for k in st if k[2] == "w_run")
        _, _, run_tt, run_ct, _ = st[run]
        edges = {k[2]: v[4][run] for k, v in st.items() if run in v[4]}
        self.assertEqual({name: e[0] for name, e in edges.items()},
                         {"w_helper": 9, "<built-in method builtins.sum>": 1,
                          "<built-in method builtins.len>": 1,
                          "<method 'append' of 'list' objects>": 1})
        self.assertAlmostEqual(run_tt + sum(e[3] for e in edges.values()), run_ct, places=9)
        self.assertGreater(run_tt, 0)


SESSIONS = r'''
import json, os, sys
sys.path.insert(0, %(corpus)r)
import pytracekit
from fpkg import core, util
rec = %(rec)r
ev = "call,return"
def run():
    core.w_worker(4)
    core.w_fib(5)
a = pytracekit.Session([rec + ":tag=a,events=" + ev + ",modules=fpkg.core"], output_dir=%(out)r)
b = pytracekit.Session([rec + ":tag=b,events=" + ev + ",modules=fpkg"], output_dir=%(out)r)
c = pytracekit.Session([rec + ":tag=c,events=" + ev + ",functions=w_fib"], output_dir=%(out)r)
a.start(); run()               # util code is off for everyone: only a runs
b.start(); run()               # b wants util: it must get it back
c.start(); run()
for s in (c, b, a):
    s.stop(); s.report(); s.close()
'''


class Sessions(unittest.TestCase):
    def test_overlapping_sessions_and_restart(self):
        with tempfile.TemporaryDirectory() as d:
            run_python(SESSIONS % {"corpus": CORPUS, "rec": test_plugin("recorder"), "out": d})
            got = {}
            for t in "abc":
                with open(os.path.join(d, "recorder-%s.json" % t)) as f:
                    got[t] = collections.Counter((r[0], r[1]) for r in json.load(f))
        # run(): w_worker(4) makes Acc(), 4 w_gen resumptions + 1 start,
        # 4 w_helper, 4 add; w_fib(5) makes 15 calls
        core_calls = {("call", "w_worker"): 1, ("call", "w_fib"): 15}
        self.assertEqual({k: v for k, v in got["a"].items() if k[0] == "call"},
                         {k: 3 * v for k, v in core_calls.items()})
        b_calls = {k: v for k, v in got["b"].items() if k[0] == "call"}
        self.assertEqual(b_calls[("call", "w_helper")], 8, "b attached after util was switched off")
        self.assertEqual(b_calls[("call", "add")], 8)
        self.assertEqual(b_calls[("call", "w_fib")], 30)
        self.assertEqual(got["c"], collections.Counter({("call", "w_fib"): 15, ("return", "w_fib"): 15}))

    def test_started_inside_running_code(self):
        src = r'''
import json, sys
sys.path.insert(0, %(corpus)r)
import pytracekit
from fpkg import core
def outer():
    s = pytracekit.Session([%(rec)r + ":events=call,return,functions=w_*,max_depth=2"], output_dir=%(out)r)
    s.start()
    core.w_fib(4)
    s.stop(); s.report(); s.close()
def w_outer():
    outer()
w_outer()
'''
        with tempfile.TemporaryDirectory() as d:
            run_python(src % {"corpus": CORPUS, "rec": test_plugin("recorder"), "out": d})
            with open(os.path.join(d, "recorder.json")) as f:
                rows = [(r[0], r[1]) for r in json.load(f)]
        # w_outer was running before the session started: it is not
        # counted, so w_fib(4) is depth 1 and its two callees depth 2;
        # deeper calls are cut (and w_outer has not returned by stop)
        self.assertEqual(collections.Counter(rows),
                         collections.Counter({("call", "w_fib"): 3, ("return", "w_fib"): 3}))


class StdlibSuite(unittest.TestCase):
    def test_unittest_json_modules(self):
        prog = ["-m", "unittest", "-q", "test.test_json.test_pass1", "test.test_json.test_separators"]
        got = traced(["modules=json"], prog)[0]
        want = oracle("modules=json", prog)
        self.assertGreater(sum(want.values()), 100)
        self.assertEqual(got, want, diff(got, want))


class Malformed(unittest.TestCase):
    CASES = [
        ("counter:modules=my-app", "filter modules='my-app' is not a module name"),
        ("counter:max_depth=0", "filter max_depth=0: expected a depth of 1 or more"),
        ("counter:max_depth=deep", "option 'max_depth' of plugin 'counter' expects an integer, found 'deep'"),
        ("counter:include=/a/[b", "filter include='/a/[b' has a '[' with no ']'"),
        ("counter:functions=;", "filter 'functions' is empty"),
        ("counter:include=!", "filter 'include' has a '!' with nothing after it"),
        ("counter:threads=[x", "filter threads='[x' has a '[' with no ']'"),
    ]

    def test_each_refused(self):
        for spec, msg in self.CASES:
            with self.subTest(spec=spec), tempfile.TemporaryDirectory() as d:
                marker = os.path.join(d, "ran")
                r = run_cli(["-o", d, "-p", spec, "-c", "open(%r, 'w')" % marker])
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(msg, r.stderr)
                self.assertFalse(os.path.exists(marker), "the program ran")

    def test_command_line_defaults_refused(self):
        for args, msg in ([["--max-depth", "-1"], "pytracekit: filter max_depth=-1"],
                          [["--max-depth", "x"], "pytracekit: filter option 'max_depth' expects an integer, found 'x'"],
                          [["--include", ""], "pytracekit: filter 'include' is empty"],
                          [["--modules", "a..b"], "modules='a..b' is not a module name"]):
            r = run_cli(args + ["-c", "pass"])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(msg, r.stderr)
            self.assertNotIn("plugin 'session filter'", r.stderr)

    def test_session_keywords(self):
        p = run_python("""
import pytracekit
try:
    pytracekit.Session(["counter"], max_depth="x")
except TypeError as e:
    print("TypeError", e)
try:
    pytracekit.Session(["counter"], modules=["ok", "bad name"])
except pytracekit.Error as e:
    print("Error", e)
for text in ("bogus=1", "include='x"):
    try:
        pytracekit.Session(["counter"], filter=text)
    except pytracekit.Error as e:
        print("Error", e)
""")
        self.assertIn("TypeError max_depth must be an int, not str", p.stdout)
        # the session's filter is named as such, never as a plugin
        self.assertIn("Error unknown filter option 'bogus' (it accepts: include, "
                      "exclude, modules, functions, threads, max_depth)\n", p.stdout)
        self.assertIn("Error filter option 'include' has an unterminated quote\n",
                      p.stdout)
        self.assertNotIn("plugin", p.stdout)
        self.assertIn("modules='bad name' is not a module name", p.stdout)


if __name__ == "__main__":
    unittest.main()
