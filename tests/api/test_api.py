"""The pytracekit Python API: every public function, class and error.

One CTest test per method (tests/api/CMakeLists.txt). Oracles: the report
files the library writes (json), the error table of errors.h
(_pytracekit._error_codes), the module itself for its documentation."""
import gc
import inspect
import json
import os
import re
import sys
import tempfile
import unittest
import weakref

import ptk_testlib as T

try:
    import pytracekit
    from pytracekit import _pytracekit as _c
except ImportError as e:
    T.skip("the pytracekit module is not built: %s" % e)

SOURCE = os.environ.get("PTK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def work(n=10):
    return sum(i * i for i in range(n))


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Tmp(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ptk-api-")
        self.out = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def session(self, plugins, **kw):
        kw.setdefault("output_dir", self.out)
        return pytracekit.Session(plugins, **kw)


class Errors(Tmp):
    def test_not_found(self):
        with self.assertRaises(pytracekit.PluginNotFoundError) as cm:
            self.session(["nosuch"])
        e = cm.exception
        self.assertIsInstance(e, pytracekit.Error)
        self.assertEqual(e.code, -3)
        self.assertEqual(e.name, "PTK_ENOENT")
        self.assertTrue(str(e).startswith("plugin 'nosuch' not found"), str(e))
        self.assertEqual(e.args, (str(e),))  # not a (message, code) tuple

    def test_option_errors_are_value_errors(self):
        for spec, code in (("timer:bogus=1", "PTK_EOPTION"), ("timer:top=x", "PTK_EOPTTYPE")):
            with self.assertRaises(pytracekit.OptionError) as cm:
                self.session([spec])
            self.assertIsInstance(cm.exception, ValueError)
            self.assertEqual(cm.exception.name, code)
        with self.assertRaisesRegex(pytracekit.OptionError, "unknown option 'bogus' for plugin 'timer'"):
            self.session("timer:bogus=1")

    def test_load_error(self):
        path = T.test_plugin("bad_abimajor")
        if not os.path.exists(path):
            self.skipTest("tests/plugins not built: " + path)
        with self.assertRaises(pytracekit.PluginLoadError) as cm:
            self.session([path])
        self.assertEqual(cm.exception.name, "PTK_EABIMAJOR")

    def test_state_errors(self):
        s = self.session(["counter:top=0"])
        with self.assertRaisesRegex(pytracekit.StateError, "the session is not running"):
            s.stop()
        s.start()
        try:
            with self.assertRaises(pytracekit.StateError) as cm:
                s.start()
            self.assertIsInstance(cm.exception, RuntimeError)
            with self.assertRaisesRegex(pytracekit.StateError, "stop the session before report"):
                s.report()
        finally:
            s.stop()
        s.close()
        with self.assertRaisesRegex(pytracekit.StateError, "the session is closed"):
            s.start()

    def test_output_error(self):
        f = os.path.join(self.out, "file")
        open(f, "w").close()
        s = pytracekit.Session(["counter"], output_dir=f)
        with self.assertRaisesRegex(pytracekit.OutputError, "is not a directory"):
            s.start()
        self.assertEqual(s.running, False)

    def test_unsupported(self):
        if sys.version_info >= (3, 12):
            self.skipTest("the monitoring backend exists on 3.12+")
        with self.assertRaises(pytracekit.UnsupportedError) as cm:
            self.session(["counter"], backend="monitoring")
        self.assertEqual(cm.exception.name, "PTK_EUNSUPPORTED")

    def test_plugin_failure(self):
        path = T.test_plugin("fail_nth")
        if not os.path.exists(path):
            self.skipTest("tests/plugins not built: " + path)
        s = self.session([path + ":n=1,mode=error"])
        with s:
            work()
        self.assertEqual(s.failures, 1)
        self.assertEqual(s.report(), 1)

    def test_every_code_has_a_class(self):
        codes = _c._error_codes()
        self.assertEqual(len(codes), 18)
        for code, name, text in codes:
            cls = pytracekit._CLASSES[name]
            self.assertTrue(issubclass(cls, pytracekit.Error), name)
            e = cls(text, code)
            self.assertEqual((str(e), e.code, e.name), (text, code, name))
        exported = {getattr(pytracekit, n) for n in pytracekit.__all__
                    if isinstance(getattr(pytracekit, n), type) and
                    issubclass(getattr(pytracekit, n), BaseException)}
        self.assertEqual(exported, set(pytracekit._CLASSES.values()))

    def test_remove_unknown(self):
        s = self.session(["counter"])
        with self.assertRaisesRegex(pytracekit.PluginNotFoundError,
                                    "no plugin named 'timer' in this session"):
            s.remove_plugin("timer")


class Arguments(Tmp):
    def check(self, exc, msg, *a, **kw):
        with self.assertRaises(exc) as cm:
            pytracekit.Session(*a, **kw)
        self.assertEqual(str(cm.exception), msg)

    def test_threads(self):
        self.check(ValueError, "threads must be 'current' or 'all', not 'bogus'",
                   threads="bogus")
        self.check(ValueError, "threads must be 'current' or 'all', not 'bogus'",
                   [], self.out, "bogus")
        self.check(TypeError, "threads must be str, not int", threads=1)

    def test_backend(self):
        self.check(ValueError, "backend must be 'auto', 'legacy' or 'monitoring', not 'x'",
                   backend="x")
        self.check(TypeError, "backend must be str, not NoneType", backend=None)

    def test_plugins(self):
        self.check(TypeError, "plugins[1] must be str, not int", ["counter", 1])
        self.check(TypeError, "plugins must be a str or a sequence of str", 3)

    def test_paths(self):
        self.check(TypeError, "output_dir must be str or os.PathLike, not int", output_dir=3)
        self.check(TypeError, "plugin_path[0] must be str or os.PathLike, not int",
                   plugin_path=[3])
        self.check(TypeError, "plugin_path must be str, os.PathLike, a list of them or "
                   "None, not int", plugin_path=3)

    def test_filter(self):
        self.check(TypeError, "filter must be str or None, not int", filter=3)
        self.check(TypeError, "include must be a str or a sequence of str, not int", include=3)
        self.check(TypeError, "max_depth must be an int, not list", max_depth=[1])
        # the keywords and the filter string are one filter (the command's
        # --include/--max-depth make the string); it narrows what is seen
        def fibs(**kw):
            with self.session(["counter:top=0"], **kw) as s:
                fib(6)
            return {f["qualname"]: f["calls"] for f in s.results["counter"]["functions"]
                    if f["kind"] == "python"}
        by_keywords = fibs(include=[__file__], max_depth=2)
        by_string = fibs(filter=f"include={__file__},max_depth=2")
        self.assertEqual(by_keywords, by_string)
        self.assertLess(by_keywords["fib"], 25)
        self.assertEqual(fibs()["fib"], 25)

    def test_methods(self):
        s = self.session([])
        with self.assertRaisesRegex(TypeError, r"add_plugin\(\) argument must be str, not int"):
            s.add_plugin(1)
        with self.assertRaisesRegex(TypeError, r"remove_plugin\(\) argument must be str, not list"):
            s.remove_plugin([])
        with self.assertRaisesRegex(TypeError, "needs a callable"):
            s(3)

    def test_one_spec_as_str(self):
        s = self.session("timer:top=0")
        with s:
            work()
        self.assertEqual(sorted(s.results), ["timer", "timer.speedscope"])

    def test_pathlike(self):
        import pathlib
        s = pytracekit.Session(["counter:top=0"], output_dir=pathlib.Path(self.out) / "p",
                               plugin_path=[pathlib.Path(self.out)])
        with s:
            work()
        self.assertTrue(os.path.exists(os.path.join(self.out, "p", "counter.json")))
        self.assertEqual(s.output_dir, os.path.join(self.out, "p"))


class Sessions(Tmp):
    def test_results_are_the_files(self):
        with self.session(["counter:top=0", "timer:top=0"]) as s:
            fib(8)
        self.assertEqual(sorted(s.results), ["counter", "timer", "timer.speedscope"])
        for name in ("counter", "timer", "timer.speedscope"):
            with open(os.path.join(self.out, name + ".json")) as f:
                self.assertEqual(s.results[name], json.load(f))
        calls = {f["qualname"]: f["calls"] for f in s.results["counter"]["functions"]}
        self.assertEqual(calls["fib"], 67)

    def test_results_before_report(self):
        s = self.session(["counter"])
        with self.assertRaisesRegex(pytracekit.StateError, "no results before report"):
            s.results

    def test_manual_cycle(self):
        s = self.session(["counter:top=0"])
        self.assertFalse(s.running)
        s.start()
        self.assertTrue(s.running)
        fib(5)
        s.stop()
        self.assertEqual(s.report(), 0)
        calls = {f["qualname"]: f["calls"] for f in s.results["counter"]["functions"]}
        self.assertEqual(calls["fib"], 15)
        s.close()
        s.close()  # twice is fine

    def test_decorator(self):
        s = self.session(["counter:top=0"])

        @s
        def traced(n):
            """doc"""
            return fib(n)
        self.assertEqual(traced.__name__, "traced")
        self.assertEqual(traced.__doc__, "doc")
        self.assertEqual(traced(5), 5)
        self.assertEqual(traced(6), 8)
        calls = {f["qualname"]: f["calls"] for f in s.results["counter"]["functions"]}
        self.assertEqual(calls["fib"], 15 + 25)  # cumulative over both calls
        self.assertFalse(s.running)

    def test_add_remove(self):
        s = self.session([])
        s.add_plugin("counter:top=0")
        with s:
            s.add_plugin("timer:top=0")     # attached at once while running
            fib(4)
            s.remove_plugin("counter")      # detached: no report
        self.assertEqual(sorted(s.results), ["timer", "timer.speedscope"])

    def test_exception_in_block(self):
        with self.assertRaises(ZeroDivisionError):
            with self.session(["counter:top=0"]) as s:
                fib(3)
                1 / 0
        self.assertFalse(s.running)
        self.assertIn("counter", s.results)

    def test_backend_and_repr(self):
        s = self.session(["counter"], backend="legacy")
        self.assertEqual(s.backend, "legacy")
        self.assertIn("stopped", repr(s))
        with s:
            self.assertIn("running", repr(s))

    def test_threads_default_current(self):
        import threading
        with self.session(["counter:top=0"]) as s:
            t = threading.Thread(target=fib, args=(3,))
            t.start()
            t.join()
        calls = {f["qualname"]: f["calls"] for f in s.results["counter"]["functions"]}
        self.assertNotIn("fib", calls)
        with self.session(["counter:top=0"], threads="all") as s:
            t = threading.Thread(target=fib, args=(3,))
            t.start()
            t.join()
        calls = {f["qualname"]: f["calls"] for f in s.results["counter"]["functions"]}
        self.assertEqual(calls["fib"], 5)


class Restart(Tmp):
    """A session started again, or a decorated function called again, adds
    to the same figures: each plugin's report after two cycles equals the
    report of one session that ran the same calls in one cycle."""

    BRANCHY = (
        "class Box:\n"
        "    pass\n"
        "\n"
        "\n"
        "def branchy(x):\n"
        "    boxes = [Box() for _ in range(2)]\n"
        "    if x:\n"
        "        y = 'one'\n"
        "    else:\n"
        "        y = 'other'\n"
        "    for _ in range(x):\n"
        "        y += '.'\n"
        "    return y, len(boxes)\n")

    def setUp(self):
        super().setUp()
        self._src = tempfile.TemporaryDirectory(prefix="ptk-api-src-")
        self.path = os.path.join(os.path.realpath(self._src.name), "ptk_branchy.py")
        with open(self.path, "w") as f:
            f.write(self.BRANCHY)
        ns = {}
        exec(compile(self.BRANCHY, self.path, "exec"), ns)
        self.branchy = ns["branchy"]

    def tearDown(self):
        self._src.cleanup()
        super().tearDown()

    def figures(self, spec, s):
        name = spec.split(":")[0]
        r = s.results[name]
        if name == "coverage":
            rec = r["files"][self.path]
            return rec["lines"], rec["hits"], rec["branches"], rec["arcs"], rec["functions"]
        if name == "counter":
            return sorted((f["qualname"], f["calls"]) for f in r["functions"]
                          if f.get("file") == self.path)
        if name == "timer":
            return sorted((f["name"], f["calls"]) for f in r["functions"]
                          if f.get("file") == self.path)
        if name == "reftrack":
            return [(t["type"], t["created"]) for t in r["types"]
                    if t["type"] == "Box"]
        raise AssertionError(name)

    def one_cycle(self, spec):
        with tempfile.TemporaryDirectory(prefix="ptk-api-one-") as out:
            s = pytracekit.Session([spec], output_dir=out, threads="current")
            s.start()
            self.branchy(0)
            self.branchy(3)
            s.stop()
            self.assertEqual(s.report(), 0)
            return self.figures(spec, s)

    def cycles(self, spec):
        s = self.session([spec], threads="current")
        for x in (0, 3):
            s.start()
            self.branchy(x)
            s.stop()
            self.assertEqual(s.report(), 0)
        self.assertEqual(s.failures, 0)
        got = self.figures(spec, s)
        self.assertEqual(got, self.one_cycle(spec))
        return got

    def decorated(self, spec):
        s = self.session([spec], threads="current")
        f = s(self.branchy)
        f(0)
        f(3)
        self.assertEqual(s.failures, 0)
        got = self.figures(spec, s)
        self.assertEqual(got, self.one_cycle(spec))
        return got

    def check_coverage(self, got, counts):
        lines, hits, branches, arcs, functions = got
        self.assertEqual(lines, [1, 2, 5, 6, 7, 8, 10, 11, 12, 13])
        self.assertEqual([h[0] for h in hits], [6, 7, 8, 10, 11, 12, 13])
        if counts:  # both cycles counted: 2 calls, 3 turns of the loop
            self.assertEqual(dict(hits)[12], 3)
            self.assertEqual(dict(hits)[7], 2)
        self.assertEqual(branches, [[7, [8, 10]], [11, [12, 13]]])

    def test_coverage_cycles(self):
        self.check_coverage(self.cycles("coverage:branch=true,include=" + self.path), False)

    def test_coverage_counts_cycles(self):
        self.check_coverage(self.cycles("coverage:branch=true,counts=true,include=" + self.path),
                            True)

    def test_coverage_decorator(self):
        self.check_coverage(self.decorated("coverage:branch=true,include=" + self.path), False)

    def test_counter_cycles(self):
        self.assertEqual(self.cycles("counter:top=0"),
                         [("branchy", 2), ("branchy.<locals>.<listcomp>", 2)]
                         if sys.version_info < (3, 12) else [("branchy", 2)])

    def test_timer_cycles(self):
        got = self.decorated("timer:top=0")
        self.assertEqual(dict(got)["branchy"], 2)

    def test_timeline_cycles(self):
        # A timeline is written once: a second cycle's events are counted
        # and said to be left out, not taken for a writer that fell behind.
        s = self.session(["timeline"], threads="current")
        for x in (0, 3):
            s.start()
            self.branchy(x)
            s.stop()
            self.assertEqual(s.report(), 0)
            if x == 0:
                first = s.results["timeline.summary"]
        got = s.results["timeline.summary"]
        self.assertEqual((got["events"], got["spans"], got["dropped"]),
                         (first["events"], first["spans"], 0))
        self.assertEqual(first["after_report"], 0)
        self.assertGreater(got["after_report"], 0)

    def test_reftrack_cycles(self):
        if sys.version_info < (3, 13):
            self.skipTest("reftrack needs PyRefTracer (CPython 3.13+)")
        self.assertEqual([n for _, n in self.cycles("reftrack")], [4])


class Leaks(Tmp):
    """A session is freed when its last reference goes, also after a with
    block: a plugin holding one of its bound methods made a cycle no
    collector could see (10 kB a session, 80 kB with timer)."""

    def test_session_freed_after_with(self):
        for plugins in (["counter:top=0"], ["counter:top=0", "timer:top=0"]):
            with self.session(plugins) as s:
                work()
            r = weakref.ref(s)
            del s
            self.assertIsNone(r(), plugins)  # no gc.collect(): freed at once
            gc.collect()
            self.assertIsNone(r(), plugins)

    def test_receiver_of_a_c_method_is_not_kept(self):
        class D(dict):
            pass
        s = self.session(["counter:top=0", "timer:top=0"])
        d = D()
        r = weakref.ref(d)
        with s:
            d.get(1)           # a built-in method bound to d
        del d
        self.assertIsNone(r())
        names = {(f["name"], f["qualname"]) for f in s.results["counter"]["functions"]}
        self.assertIn(("get", "dict.get"), names)  # still counted, by name

    def test_many_sessions_memory(self):
        # The C heap (glibc's mallinfo2: the library's and the plugins'
        # memory; Python's small objects live apart, in pymalloc's arenas):
        # a session that is never freed keeps 10 kB (counter) to 80 kB
        # (counter and timer) of it.
        import ctypes

        class MallInfo2(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                "fsmblks", "uordblks", "fordblks", "keepcost")]
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "mallinfo2"):
            self.skipTest("no mallinfo2 in this C library")
        libc.mallinfo2.restype = MallInfo2
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]

        def in_use():
            m = libc.mallinfo2()
            return m.uordblks + m.hblkhd
        before = in_use()
        probe = libc.malloc(1 << 16)
        seen = in_use() - before >= 1 << 16
        libc.free(probe)
        if not seen:
            self.skipTest("mallinfo2 does not see this process's malloc "
                          "(a sanitizer's allocator replaces it)")

        def one():
            with self.session(["counter:top=0", "timer:top=0"]):
                work()
        for _ in range(30):
            one()
        gc.collect()
        a = in_use()
        for _ in range(300):
            one()
        gc.collect()
        per_session = (in_use() - a) / 300
        self.assertLess(per_session, 2048, f"{per_session:.0f} bytes of C heap per session")


class Contexts(Tmp):
    """set_context()/context(), and what a plugin reads through host->context
    (tests/plugins/ctxprobe.c counts each CALL under the current context)."""

    def test_set_and_read(self):
        pytracekit.set_context(None)
        self.assertEqual(pytracekit.context(), (0, None))
        a = pytracekit.set_context("t|call")
        self.assertGreater(a, 0)
        self.assertEqual(pytracekit.context(), (a, "t|call"))
        # the same name again: a new context
        self.assertEqual(pytracekit.set_context("t|call"), a + 1)
        self.assertEqual(pytracekit.set_context(""), 0)
        self.assertEqual(pytracekit.context(), (0, None))
        self.assertEqual(pytracekit.set_context("b"), a + 2)
        self.assertEqual(pytracekit.set_context(None), 0)
        with self.assertRaises(TypeError):
            pytracekit.set_context(b"x")
        with self.assertRaises(ValueError):
            pytracekit.set_context("a\0b")
        self.assertEqual(pytracekit.context(), (0, None))

    def test_plugins_read_it(self):
        s = self.session([os.path.join(T.TEST_PLUGINS, "ctxprobe.so")],
                         functions=["fib", "work"])
        with s:
            fib(3)  # 5 calls
            first = pytracekit.set_context("one")
            fib(2)  # 3
            work()
            pytracekit.set_context("two")
            fib(1)
            pytracekit.set_context("one")  # the name again: a new id
            work()
            pytracekit.set_context(None)
            fib(0)
        r = s.results["ctxprobe"]
        self.assertEqual(r["contexts"], {"": {"fib": 6}, "one": {"fib": 3, "work": 2},
                                         "two": {"fib": 1}})
        self.assertEqual(r["ids"], [0, first, first + 1, first + 2, 0])
        self.assertEqual(r["names"], ["", "one", "two", "one", ""])


class Plugins(unittest.TestCase):
    def test_plugins(self):
        found = pytracekit.plugins()
        names = [p.name for p in found]
        for n in ("counter", "timer", "coverage"):
            self.assertIn(n, names)
        self.assertEqual(len(names), len(set(names)))
        timer = found[names.index("timer")]
        self.assertIsInstance(timer, pytracekit.PluginInfo)
        self.assertTrue(os.path.isfile(timer.file))
        self.assertIn("call", timer.events)
        opts = {o.name: o for o in timer.options}
        self.assertIn("clock", opts)
        self.assertIsInstance(opts["clock"], pytracekit.OptionInfo)

    def test_plugin_path(self):
        if not os.path.isdir(T.TEST_PLUGINS):
            self.skipTest("tests/plugins not built")
        found = {p.name: p for p in pytracekit.plugins(T.TEST_PLUGINS)}
        self.assertIn("recorder", found)
        self.assertEqual(os.path.dirname(found["recorder"].file), T.TEST_PLUGINS)
        # the broken ones are left out
        self.assertNotIn("bad_abimajor", found)
        with self.assertRaises(TypeError):
            pytracekit.plugins(3)

    def test_version(self):
        want = os.environ.get("PTK_VERSION")
        v = pytracekit.version()
        self.assertRegex(v, r"^\d+\.\d+\.\d+$")
        self.assertEqual(pytracekit.__version__, v)
        if want:
            self.assertEqual(v, want)


def _public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


class Documentation(unittest.TestCase):
    """docs/python-api.md, the stubs and the docstrings agree with the module."""

    def doc(self):
        with open(os.path.join(SOURCE, "docs", "python-api.md"), encoding="utf-8") as f:
            return f.read()

    def test_reference_page(self):
        text = self.doc()
        documented = set(re.findall(r"^#{2,4} `(?:pytracekit\.)?([A-Za-z_]+)", text, re.M))
        members = set(re.findall(r"^#{2,4} `Session\.([A-Za-z_]+)", text, re.M))
        self.assertEqual(set(pytracekit.__all__) - documented, set(),
                         "public names without a section in docs/python-api.md")
        self.assertEqual(documented - set(pytracekit.__all__), set(),
                         "sections for names the module does not have")
        session_api = _public(pytracekit.Session)
        self.assertEqual(session_api - members, set(), "Session members not documented")
        self.assertEqual(members - session_api, set(), "documented members that do not exist")
        for code, name, _ in _c._error_codes():
            self.assertIn(name, text, f"{name} not in the error table")

    def test_stubs(self):
        import ast
        with open(os.path.join(os.path.dirname(pytracekit.__file__), "__init__.pyi")) as f:
            tree = ast.parse(f.read())
        top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        self.assertEqual(set(pytracekit.__all__) - top, set(), "names without a stub")
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Session")
        stub_members = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
        self.assertEqual(_public(pytracekit.Session) - stub_members, set())

    def test_docstrings(self):
        for n in pytracekit.__all__:
            obj = getattr(pytracekit, n)
            self.assertTrue(inspect.getdoc(obj), f"{n} has no docstring")
        for n in _public(pytracekit.Session):
            self.assertTrue(inspect.getdoc(getattr(pytracekit.Session, n)),
                            f"Session.{n} has no docstring")
        self.assertTrue(inspect.getdoc(pytracekit.Error.name))


def main():
    """unittest.main, but a test that skips exits with CTest's skip code
    (77) and says why."""
    result = unittest.main(exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped and len(result.skipped) == result.testsRun:
        for test, why in result.skipped:
            print(f"SKIP: {test.id()}: {why}")
        sys.exit(77)
    sys.exit(0)


if __name__ == "__main__":
    main()
