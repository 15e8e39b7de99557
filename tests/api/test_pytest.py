"""`pytest -p pytracekit`: the pytest plugin (python/pytracekit/pytest_plugin.py).

Each case runs pytest on a small project in a fresh directory. The oracles:
the test code itself (how often it calls what), and the command run over
the same pytest (`python -m pytracekit -p SPEC -m pytest`), whose reports the
plugin's must equal, and whose usage messages it must print."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import ptk_testlib as T

try:
    import pytest  # noqa: F401  (only to know that this Python has it)
except ImportError:
    T.skip(f"pytest is not installed for {sys.executable}")

MOD = ("def f(x):\n"             # 1
       "    if x > 0:\n"         # 2
       "        return 1\n"      # 3
       "    return 2\n"          # 4
       "\n"
       "def g():\n"              # 6
       "    return 3\n")         # 7

TESTS = ("import mod\n"
         "\n"
         "def test_a():\n"
         "    assert mod.f(1) == 1\n"
         "\n"
         "def test_b():\n"
         "    assert mod.f(-1) == 2\n"
         "    assert mod.g() == 3\n")

CONFTEST = ("import mod\n"
            "SEEN = mod.g()\n")


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptk-pytest-")
        self.write("mod.py", MOD)
        self.write("test_mod.py", TESTS)
        self.mod = os.path.join(self.dir, "mod.py")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def run_py(self, *args, check=True):
        env = dict(os.environ)
        env.pop("PYTEST_ADDOPTS", None)
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only what -p loads
        p = subprocess.run([sys.executable, *args], cwd=self.dir, env=env,
                           capture_output=True, text=True, timeout=300)
        if check and p.returncode != 0:
            self.fail(f"{args} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        return p

    def pytest(self, *args, check=True):
        return self.run_py("-m", "pytest", "-p", "no:cacheprovider", *args, check=check)

    def report(self, out, name):
        with open(os.path.join(self.dir, out, name + ".json")) as f:
            return json.load(f)

    def pytest_cov(self, args, read):
        """read() (JSON) after pytest-cov's run of this directory's tests
        with ARGS on coverage.py's C tracer: the oracle of the contexts
        tests. It depends on neither backend nor on the test that asks,
        only on the files and ARGS: made once (ptk_testlib.shared) for the
        tests and copies that have the same, in the first one's directory.
        Skips where pytest-cov is not installed."""
        try:
            import coverage
            import pytest_cov  # noqa: F401
        except ImportError as e:
            self.skipTest(f"the oracle (pytest-cov, coverage.py) is not installed: {e}")
        files = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".py"):
                with open(os.path.join(self.dir, name)) as f:
                    files.append([name, f.read()])

        def make(d):
            env = dict(os.environ, COVERAGE_CORE="ctrace")
            env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
            p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                "-p", "no:pytracekit", "--cov=.", "--cov-report=", "-q",
                                *args], cwd=self.dir, env=env, capture_output=True,
                               text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "want.json"), "w") as f:
                json.dump(read(), f)
        key = ["pytest-cov", sys.executable, coverage.__version__, args, files,
               T.source_digest(__file__)]
        with open(os.path.join(T.shared("pytest-cov-oracle", key, make), "want.json")) as f:
            return json.load(f)

    def pytest_cov_arcs(self, args, with_lines=False):
        """CoverageContexts.context_arcs() of pytest-cov's --cov-branch
        --cov-context=test run with ARGS (through pytest_cov()); with
        with_lines, (that, the same run's coverage_json())."""
        def read():
            rows = [[list(k), v] for k, v in
                    CoverageContexts.context_arcs(self, ".coverage").items()]
            lines = CoverageContexts.coverage_json(self, ".coverage") if with_lines else None
            return [rows, lines]
        rows, lines = self.pytest_cov(["--cov-branch", "--cov-context=test", *args], read)
        want = {tuple(k): [tuple(a) for a in v] for k, v in rows}
        return (want, lines) if with_lines else want

    def contexts(self, out):
        """{file's name: {line: sorted contexts}} of coverage.json in out."""
        return {os.path.basename(k): {n: sorted(c) for n, c in v["contexts"].items()}
                for k, v in self.report(out, "coverage")["files"].items()}

    def calls(self, out):
        return {(f["file"], f["qualname"]): f["calls"]
                for f in self.report(out, "counter")["functions"]
                if f["file"] == self.mod}

    def lines(self, out):
        return {os.path.basename(k): v["lines"]
                for k, v in self.report(out, "coverage")["files"].items()}


class Options(Case):
    def test_plugins_output_and_command_agree(self):
        specs = ["--ptk", "counter", "--ptk", "coverage:include=mod.py;conftest.py"]
        self.write("conftest.py", CONFTEST)
        p = self.pytest("-p", "pytracekit", *specs, "--ptk-output", "out", "-q")
        self.assertIn("2 passed", p.stdout)
        self.assertIn(f"pytracekit: reports in {os.path.join(self.dir, 'out')}/", p.stdout)
        # the test code calls f twice and g twice (once in conftest.py,
        # measured: the session starts before the initial conftests, which
        # import mod.py)
        self.assertEqual(self.calls("out"), {(self.mod, "<module>"): 1,
                                             (self.mod, "f"): 2, (self.mod, "g"): 2})
        self.assertEqual(self.lines("out"), {"mod.py": [1, 2, 3, 4, 6, 7],
                                             "conftest.py": [1, 2]})
        # the command over the same pytest: the same figures
        c = self.run_py("-m", "pytracekit", "-o", "cmd",
                        *[s.replace("--ptk", "-p") for s in specs],
                        "-m", "pytest", "-p", "no:cacheprovider", "-q")
        self.assertIn("2 passed", c.stdout)
        self.assertEqual(self.calls("out"), self.calls("cmd"))
        self.assertEqual(self.report("out", "coverage")["files"],
                         self.report("cmd", "coverage")["files"])

    def test_module_name_forms(self):
        # -p pytracekit (the package names the plugin), -p
        # pytracekit.pytest_plugin, and both: one session, the same counts
        for i, form in enumerate((["-p", "pytracekit"], ["-p", "pytracekit.pytest_plugin"],
                                  ["-p", "pytracekit.pytest_plugin", "-p", "pytracekit"])):
            p = self.pytest(*form, "--ptk", "counter", "--ptk-output", f"o{i}", "-q")
            self.assertNotIn("warning", p.stdout)
            self.assertEqual(p.stdout.count("pytracekit: reports in"), 1, form)
            self.assertEqual(self.calls(f"o{i}"), {(self.mod, "<module>"): 1,
                                                   (self.mod, "f"): 2, (self.mod, "g"): 1})

    def test_filter_options(self):
        # the command's --functions as --ptk-functions (lib/ptk_filter_keys.h)
        self.pytest("-p", "pytracekit", "--ptk", "counter", "--ptk-functions", "g",
                    "--ptk-output", "out", "-q")
        fns = [(f["qualname"], f["calls"]) for f in self.report("out", "counter")["functions"]]
        self.assertEqual(fns, [("g", 1)])
        self.pytest("-p", "pytracekit", "--ptk", "counter", "--ptk-functions", "f",
                    "--ptk-max-depth", "1", "--ptk-output", "out2", "-q")
        fns = [(f["qualname"], f["calls"]) for f in self.report("out2", "counter")["functions"]]
        self.assertEqual(fns, [("f", 2)])

    def test_nothing_asked_nothing_traced(self):
        p = self.pytest("-p", "pytracekit", "-q")
        self.assertIn("2 passed", p.stdout)
        self.assertNotIn("pytracekit", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "pytracekit-out")))
        p = self.pytest("-p", "pytracekit", "--ptk", "counter", "--help")
        self.assertIn("--ptk=PLUGIN[:OPTIONS]", p.stdout)
        for _, flag, _, _, _ in _filter_keys():
            self.assertIn("--ptk-" + flag[2:], p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "pytracekit-out")))

    def test_usage_errors_are_the_commands(self):
        for ptk, cmd in ((["--ptk", "nosuch"], ["-p", "nosuch"]),
                         (["--ptk", "counter:bogus=1"], ["-p", "counter:bogus=1"]),
                         (["--ptk", "counter", "--ptk-max-depth", "x"],
                          ["--max-depth", "x"]),
                         (["--ptk", "counter", "--ptk-backend", "fast"],
                          ["--backend", "fast"]),
                         (["--ptk", "counter", "--ptk-include", "/a/["],
                          ["--include", "/a/["])):
            p = self.pytest("-p", "pytracekit", *ptk, "-q", check=False)
            c = self.run_py("-m", "pytracekit", *cmd, "-c", "pass", check=False)
            self.assertEqual(p.returncode, 4, ptk)   # pytest's usage error
            self.assertEqual(c.returncode, 2, cmd)
            msg = c.stderr.strip().splitlines()[-1]
            self.assertTrue(msg.startswith("pytracekit: "), msg)
            self.assertIn("ERROR: " + msg, p.stderr)

    def test_import_does_not_import_pytest(self):
        p = self.run_py("-c", "import sys, pytracekit; print(sorted(m for m in sys.modules "
                        "if m.split('.')[0] in ('pytest', '_pytest', 'pluggy') or "
                        "m == 'pytracekit.pytest_plugin'))")
        self.assertEqual(p.stdout.strip(), "[]")


class Ini(Case):
    def test_pytest_ini(self):
        self.write("pytest.ini", "[pytest]\n"
                   "ptk_plugins = counter\n"
                   "    coverage:include=mod.py\n"
                   "ptk_output = iniout\n"
                   "ptk_functions = f\n")
        self.pytest("-p", "pytracekit", "-q")
        self.assertEqual(self.calls("iniout"), {(self.mod, "f"): 2})
        self.assertEqual(self.lines("iniout"), {"mod.py": [1, 2, 3, 4, 6, 7]})
        # an option replaces its ini key
        self.pytest("-p", "pytracekit", "--ptk", "counter", "--ptk-output", "cli",
                    "--ptk-functions", "g", "-q")
        self.assertEqual(self.calls("cli"), {(self.mod, "g"): 1})
        self.assertFalse(os.path.exists(os.path.join(self.dir, "cli", "coverage.json")))

    def test_pyproject(self):
        self.write("pyproject.toml", "[tool.pytest.ini_options]\n"
                   'ptk_plugins = ["counter", "timer:top=0"]\n'
                   'ptk_output = "ppout"\n'
                   'ptk_modules = ["mod"]\n')
        p = self.pytest("-p", "pytracekit", "-q")
        self.assertIn("2 passed", p.stdout)
        self.assertEqual(self.calls("ppout"), {(self.mod, "<module>"): 1,
                                               (self.mod, "f"): 2, (self.mod, "g"): 1})
        timed = {f["name"]: f["calls"] for f in self.report("ppout", "timer")["functions"]}
        self.assertEqual(timed, {"<module>": 1, "f": 2, "g": 1})


    def test_tool_pytracekit_table(self):
        # pyproject.toml's own table, its keys the ini keys without ptk_
        self.write("pyproject.toml", "[tool.pytracekit]\n"
                   'plugins = ["counter", "timer:top=0"]\n'
                   'output = "toolout"\n'
                   'modules = ["mod"]\n'
                   "slowest = 0\n")
        p = self.pytest("-p", "pytracekit", "-q")
        self.assertIn(f"reports in {os.path.join(self.dir, 'toolout')}/", p.stdout)
        self.assertEqual(self.calls("toolout"), {(self.mod, "<module>"): 1,
                                                 (self.mod, "f"): 2, (self.mod, "g"): 1})
        timed = {f["name"]: f["calls"] for f in self.report("toolout", "timer")["functions"]}
        self.assertEqual(timed, {"<module>": 1, "f": 2, "g": 1})
        # an unknown key is a usage error that names it
        self.write("pyproject.toml", "[tool.pytracekit]\nplugin = [\"counter\"]\n")
        p = self.pytest("-p", "pytracekit", "-q", check=False)
        self.assertEqual(p.returncode, 4)
        self.assertIn("unknown key 'plugin'", p.stderr)

    def test_precedence(self):
        # command line > ini key > [tool.pytracekit]
        self.write("pyproject.toml", "[tool.pytracekit]\n"
                   'plugins = ["counter"]\n'
                   'output = "tool"\n'
                   'functions = ["g"]\n')
        self.write("pytest.ini", "[pytest]\nptk_output = ini\n")
        self.pytest("-p", "pytracekit", "--ptk-output", "cli", "--ptk-functions", "f", "-q")
        self.assertEqual(self.calls("cli"), {(self.mod, "f"): 2})
        self.pytest("-p", "pytracekit", "-q")
        self.assertEqual(self.calls("ini"), {(self.mod, "g"): 1})
        os.unlink(os.path.join(self.dir, "pytest.ini"))
        self.pytest("-p", "pytracekit", "-q")
        self.assertEqual(self.calls("tool"), {(self.mod, "g"): 1})
        self.assertEqual(sorted(d for d in os.listdir(self.dir) if d in ("cli", "ini", "tool")),
                         ["cli", "ini", "tool"])


class Contexts(Case):
    def test_each_phase_is_a_context(self):
        # a fixture that calls g before the test and f after it
        self.write("conftest.py", "import pytest, mod\n"
                   "@pytest.fixture\n"
                   "def fx():\n"
                   "    mod.g()\n"
                   "    yield\n"
                   "    mod.f(5)\n")
        self.write("test_mod.py", TESTS.replace("def test_b():", "def test_b(fx):"))
        self.pytest("-p", "pytracekit", "--ptk", "ctxprobe", "--ptk-plugin-path",
                    T.TEST_PLUGINS, "--ptk-modules", "mod;test_mod;conftest",
                    "--ptk-output", "out", "-q")
        r = self.report("out", "ctxprobe")
        self.assertEqual(r["contexts"], {
            "": {"<module>": 3},  # collection: conftest, test_mod, mod
            "test_mod.py::test_a|call": {"test_a": 1, "f": 1},
            "test_mod.py::test_b|setup": {"fx": 1, "g": 1},
            "test_mod.py::test_b|call": {"test_b": 1, "f": 1, "g": 1},
            "test_mod.py::test_b|teardown": {"fx": 1, "f": 1}})
        # ids: one per phase (test_a's setup and teardown call nothing of
        # these modules); none between phases
        self.assertEqual(r["ids"], [0, 2, 4, 5, 6])


# A project for per-test contexts: fixtures before and after yield, a class
# with setup_method, parametrized tests, lines shared between tests (which
# the monitoring backend switches off in the first test that runs them).
CTX_MOD = ("def f(x):\n"
           "    if x > 0:\n"
           "        return 1\n"
           "    return 2\n"
           "\n"
           "def g():\n"
           "    return 3\n"
           "\n"
           "class K:\n"
           "    def __init__(self):\n"
           "        self.n = 0\n"
           "    def up(self, k):\n"
           "        for _ in range(k):\n"
           "            self.n += 1\n"
           "        return self.n\n")
CTX_TESTS = ("import pytest, mod\n"
             "\n"
             "@pytest.fixture\n"
             "def fx():\n"
             "    mod.g()\n"
             "    yield mod.K()\n"
             "    mod.f(5)\n"
             "\n"
             "def test_a():\n"
             "    assert mod.f(1) == 1\n"
             "\n"
             "def test_b(fx):\n"
             "    assert mod.f(-1) == 2\n"
             "    assert fx.up(2) == 2\n"
             "\n"
             "@pytest.mark.parametrize('k', [0, 3])\n"
             "def test_c(k):\n"
             "    assert mod.K().up(k) == k\n"
             "\n"
             "class TestK:\n"
             "    def setup_method(self):\n"
             "        self.k = mod.K()\n"
             "        mod.f(0)\n"
             "    def test_up(self):\n"
             "        assert self.k.up(1) == 1\n"
             "    def test_again(self):\n"
             "        assert mod.f(2) == 1\n")


class CoverageContexts(Case):
    """coverage:contexts=true against pytest-cov's --cov-context=test on
    coverage.py's C tracer: the same lines in each test's setup, call (its
    "run") and teardown, in coverage.json and in .coverage."""

    def setUp(self):
        super().setUp()
        self.write("mod.py", CTX_MOD)
        self.write("test_mod.py", CTX_TESTS)

    def oracle(self):
        return self.pytest_cov(["--cov-context=test"],
                               lambda: self.coverage_json(".coverage"))

    def coverage_json(self, data_file):
        out = os.path.join(self.dir, "cj.json")
        self.run_py("-m", "coverage", "json", "--data-file", data_file, "--show-contexts",
                    "--include=*mod.py", "-o", out, "-q")
        with open(out) as f:
            files = json.load(f)["files"]
        return {os.path.basename(k): {n: sorted(c.replace("|run", "|call") for c in names)
                                      for n, names in v["contexts"].items()}
                for k, v in files.items() if os.path.basename(k) == "mod.py"}

    def test_lines_per_test_equal_pytest_cov(self):
        want = self.oracle()
        self.pytest("-p", "pytracekit", "--ptk",
                    "coverage:include=mod.py,contexts=true,coveragepy=yes",
                    "--ptk-output", "out", "-q")
        got = self.contexts("out")
        self.assertEqual(got, want)
        # line 2 runs in six contexts: switched off in the first, on again in each
        self.assertEqual(len(got["mod.py"]["2"]), 6)
        self.assertEqual(self.coverage_json(os.path.join("out", ".coverage")), want)

    def test_one_line_code_in_every_context(self):
        # code whose line starts at its RESUME (a one-line lambda, a
        # generator expression), run several times in one context and again
        # in later ones: CPython 3.13.0 gives that line no LINE event once
        # PY_START / PY_RESUME is switched off there, which a context change
        # does not undo (docs/backends.md, "CPython quirks")
        self.write("mod.py", "def make(edges):\n"
                             "    s = set(edges)\n"
                             "    return lambda u: u in s\n"
                             "\n"
                             "def doubled(xs):\n"
                             "    return sum(x * 2 for x in xs)\n")
        self.write("test_mod.py", "import mod\n"
                                  "F = mod.make([1, 2])\n"
                                  "\n"
                                  "class TestS:\n"
                                  "    def setup_method(self):\n"
                                  "        self.g = mod.make([3])\n"
                                  "    def test_one(self):\n"
                                  "        assert self.g(3) and not self.g(4)\n"
                                  "        assert F(1) and F(2)\n"
                                  "        assert mod.doubled([1, 2]) == 6\n"
                                  "    def test_two(self):\n"
                                  "        assert self.g(3) and self.g(3)\n"
                                  "        assert mod.doubled([3, 0]) == 6\n"
                                  "\n"
                                  "def test_three():\n"
                                  "    assert not F(5) and F(1)\n"
                                  "    assert mod.doubled([]) == 0\n")
        want = self.oracle()
        self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py,contexts=true",
                    "--ptk-output", "out", "-q")
        got = self.contexts("out")
        self.maxDiff = None
        self.assertEqual(got, want)
        # the lambda's line in every phase that called it, the generator
        # expression's in every call phase
        self.assertEqual(got["mod.py"]["3"],
                         ["", "test_mod.py::TestS::test_one|call",
                          "test_mod.py::TestS::test_one|setup",
                          "test_mod.py::TestS::test_two|call",
                          "test_mod.py::TestS::test_two|setup", "test_mod.py::test_three|call"])
        self.assertEqual(got["mod.py"]["6"],
                         ["test_mod.py::TestS::test_one|call", "test_mod.py::TestS::test_two|call",
                          "test_mod.py::test_three|call"])

    def context_arcs(self, data_file):
        """{(file's name, context): sorted arcs} of a .coverage (mod.py and
        test_mod.py, whose fixture is a generator suspended across a test's
        phases), read through coverage.py's CoverageData, one context
        queried at a time."""
        import coverage
        cd = coverage.CoverageData(basename=os.path.join(self.dir, data_file))
        cd.read()
        self.assertTrue(cd.has_arcs())
        files = sorted(cd.measured_files())
        self.assertEqual([os.path.basename(f) for f in files], ["mod.py", "test_mod.py"])
        out = {}
        for ctx in sorted(cd.measured_contexts()):
            cd.set_query_contexts(["^" + re.escape(ctx) + "$"])
            for f in files:
                arcs = sorted(cd.arcs(f) or ())
                if arcs:
                    out[(os.path.basename(f), ctx.replace("|run", "|call"))] = arcs
        return out

    def json_context_arcs(self, out):
        """context_arcs of coverage.json's arc_contexts."""
        by_ctx = {}
        for path, rec in self.report(out, "coverage")["files"].items():
            for a, b, names in rec["arc_contexts"]:
                for name in names:
                    by_ctx.setdefault((os.path.basename(path), name), []).append((a, b))
        return {k: sorted(v) for k, v in by_ctx.items()}

    def test_arcs_per_test_equal_pytest_cov(self):
        # branch=true with contexts=true: each test's arcs (f's two ways out
        # of line 2, up's loop taken 0, 1, 2 or 3 times) against pytest-cov's
        # --cov-branch --cov-context=test on coverage.py's C tracer
        want, want_lines = self.pytest_cov_arcs([], with_lines=True)
        self.pytest("-p", "pytracekit", "--ptk",
                    "coverage:include=*mod.py,branch=true,contexts=true,coveragepy=yes",
                    "--ptk-output", "out", "-q")
        self.maxDiff = None
        # the branches went differently per test
        self.assertIn((2, 3), want[("mod.py", "test_mod.py::test_a|call")])
        self.assertNotIn((2, 4), want[("mod.py", "test_mod.py::test_a|call")])
        self.assertIn((2, 4), want[("mod.py", "test_mod.py::test_b|call")])
        self.assertNotIn((14, 13), want[("mod.py", "test_mod.py::test_c[0]|call")])
        self.assertIn((14, 13), want[("mod.py", "test_mod.py::test_c[3]|call")])
        # the fixture's generator: entered in setup, resumed in teardown
        self.assertIn((-3, 5), want[("test_mod.py", "test_mod.py::test_b|setup")])
        self.assertIn((6, 7), want[("test_mod.py", "test_mod.py::test_b|teardown")])
        self.assertEqual(self.context_arcs(os.path.join("out", ".coverage")), want)
        # coverage.json's arc_contexts: the same, and the same lines per context
        self.assertEqual(self.json_context_arcs("out"), want)
        self.assertEqual({k: v for k, v in self.contexts("out").items() if k == "mod.py"},
                         want_lines)

    def test_beside_an_unfiltered_profiler(self):
        # the counter and the timer take every call of every file: on the
        # monitoring backend LINE must still be set per code object, where
        # a context change can switch its DISABLEd lines back on
        want = self.oracle()
        for other in ("counter", "timer"):
            self.pytest("-p", "pytracekit", "--ptk",
                        "coverage:include=mod.py,contexts=true", "--ptk", other,
                        "--ptk-output", other, "-q")
            got = self.contexts(other)
            self.assertEqual(got, want, other)

    def test_other_tools_disables_stay(self):
        # another sys.monitoring tool that switches off each line of mod.py
        # at its first run: context changes must not switch them on again
        # for it (sys.monitoring.restart_events() would)
        if not hasattr(sys, "monitoring"):
            self.skipTest("sys.monitoring is 3.12+")
        self.write("conftest.py",
                   "import sys, collections, pytest\n"
                   "M = sys.monitoring\n"
                   "SEEN = collections.Counter()\n"
                   "def line(code, n):\n"
                   "    if code.co_filename.endswith('/mod.py'):\n"
                   "        SEEN[n] += 1\n"
                   "    return M.DISABLE\n"
                   "M.use_tool_id(4, 'other')\n"
                   "M.register_callback(4, M.events.LINE, line)\n"
                   "M.set_events(4, M.events.LINE)\n"
                   "def pytest_sessionfinish(session):\n"
                   "    print('SEEN', sorted(SEEN.items()))\n")
        def seen(*ptk):
            p = self.pytest(*ptk, "-q", "-s")
            return re.findall(r"SEEN \[.*\]", p.stdout)
        # the oracle: what it sees beside coverage without contexts (whose
        # DISABLEs are never undone). (On 3.14 that is not quite what it sees
        # alone: the first line of a class body fires for it once more
        # beside any tool that takes PY_START, contexts or not.)
        alone = seen("-p", "pytracekit", "--ptk", "coverage:include=mod.py",
                     "--ptk-output", "plain")
        self.assertEqual(len(alone), 1)
        self.assertIn("(2, 1)", alone[0])
        self.assertEqual(seen("-p", "pytracekit", "--ptk", "coverage:include=mod.py,contexts=true",
                              "--ptk-output", "out"), alone)
        # and coverage got each line back in each test
        self.assertEqual(len(self.report("out", "coverage")["files"][self.mod]["contexts"]["2"]), 6)


# The oracles' hook wrappers: phase(item, name) around each phase of each
# test, named as the plugin names them (inside their `if os.environ.get(...)`).
PHASE_HOOKS = ("    @pytest.hookimpl(hookwrapper=True)\n"
               "    def pytest_runtest_setup(item):\n"
               "        yield from phase(item, 'setup')\n"
               "    @pytest.hookimpl(hookwrapper=True)\n"
               "    def pytest_runtest_call(item):\n"
               "        yield from phase(item, 'call')\n"
               "    @pytest.hookimpl(hookwrapper=True)\n"
               "    def pytest_runtest_teardown(item):\n"
               "        yield from phase(item, 'teardown')\n")


def counting_conftest(counter, hook):
    """An oracle's conftest.py: `counter` (its functions) counts into
    SEEN[CUR[0]][key], CUR[0] being the phase of the test that runs (and ""
    elsewhere); `hook` is the sys function that installs it (setprofile,
    settrace), given `counter`'s first function. SEEN goes to $ORACLE as
    JSON, {context: [[a, b, count] for each key (a, b)]}."""
    first = counter.split("def ", 1)[1].split("(", 1)[0]
    return ("import os, sys, collections, pytest\n"
            "CUR = ['']\n"
            "SEEN = collections.defaultdict(collections.Counter)\n"
            + counter +
            "def phase(item, name):\n"
            "    CUR[0] = item.nodeid + '|' + name\n"
            "    try:\n"
            "        yield\n"
            "    finally:\n"
            "        CUR[0] = ''\n"
            "if os.environ.get('ORACLE'):\n"
            f"    sys.{hook}({first})\n"
            + PHASE_HOOKS +
            "    def pytest_unconfigure(config):\n"
            f"        sys.{hook}(None)\n"
            "        import json\n"
            "        with open(os.environ['ORACLE'], 'w') as f:\n"
            "            json.dump({k: [[a, b, n] for (a, b), n in v.items()]\n"
            "                       for k, v in SEEN.items()}, f)\n")


# The oracle of per-test figures: a pytest run without pytracekit, where a
# conftest.py counts calls with sys.setprofile, per phase of each test (its
# own hook wrappers name the phase as the plugin does), and "" elsewhere.
ORACLE_CONFTEST = counting_conftest("def prof(frame, event, arg):\n"
                                    "    if event == 'call':\n"
                                    "        c = frame.f_code\n"
                                    "        SEEN[CUR[0]][(c.co_filename, c.co_qualname)] += 1\n",
                                    "setprofile")


# The oracle of per-test profiles: cProfile enabled for each phase of each
# test (as pytest-profiling profiles each test), its pstats kept per phase.
CPROFILE_CONFTEST = ("import os, cProfile, pstats, marshal, pytest\n"
                     "SEEN = {}\n"
                     "def phase(item, name):\n"
                     "    p = cProfile.Profile()\n"
                     "    p.enable()\n"
                     "    try:\n"
                     "        yield\n"
                     "    finally:\n"
                     "        p.disable()\n"
                     "        SEEN[item.nodeid + '|' + name] = pstats.Stats(p).stats\n"
                     "if os.environ.get('ORACLE'):\n"
                     + PHASE_HOOKS +
                     "    def pytest_unconfigure(config):\n"
                     "        with open(os.environ['ORACLE'], 'wb') as f:\n"
                     "            marshal.dump(SEEN, f)\n")


# The oracle of per-test line hits: sys.settrace's line events of mod.py's
# and test_mod.py's frames, per phase of each test (named as the plugin
# names them), and "" elsewhere.
LINES_CONFTEST = counting_conftest(
    "def trace(frame, event, arg):\n"
    "    if os.path.basename(frame.f_code.co_filename) in ('mod.py', 'test_mod.py'):\n"
    "        return local(frame, event, arg)\n"
    "    return None\n"
    "def local(frame, event, arg):\n"
    "    if event == 'line':\n"
    "        c = frame.f_code\n"
    "        SEEN[CUR[0]][(os.path.basename(c.co_filename), frame.f_lineno)] += 1\n"
    "    return local\n",
    "settrace")

class PerContext(Case):
    """counter:per_context=true and timer:per_context=true against calls
    counted with sys.setprofile per phase of each test (ORACLE_CONFTEST)."""

    def setUp(self):
        super().setUp()
        self.write("mod.py", CTX_MOD)
        self.write("test_mod.py", CTX_TESTS)
        self.write("conftest.py", ORACLE_CONFTEST)
        self.ours = (self.mod, os.path.join(self.dir, "test_mod.py"))

    def run_oracle(self, out):
        env = dict(os.environ, ORACLE=out, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        env.pop("PYTEST_ADDOPTS", None)
        p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
                           cwd=self.dir, env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def profiles(self, stats):
        """{(file, qualname-less name): (calls, primitive calls, {caller name:
        calls})} of the functions of mod.py and test_mod.py in a pstats
        dict, callers of those files only."""
        def ours(key):
            return key[0] in self.ours
        return {k[2]: (nc, cc, {c[2]: v[0] for c, v in callers.items() if ours(c)})
                for k, (cc, nc, tt, ct, callers) in stats.items() if ours(k)}

    def test_timer_per_context(self):
        import marshal
        out = os.path.join(self.dir, "oracle.marshal")
        self.write("conftest.py", CPROFILE_CONFTEST)
        self.run_oracle(out)
        with open(out, "rb") as f:
            want = {ctx: self.profiles(st) for ctx, st in marshal.load(f).items()}
        want = {ctx: p for ctx, p in want.items() if p}
        self.pytest("-p", "pytracekit", "--ptk", "timer:per_context=true,top=3",
                    "--ptk-output", "out", "-q")
        r = self.report("out", "timer")
        got = {}
        for c in r["contexts"]:
            with open(os.path.join(self.dir, "out", c["pstats"]), "rb") as f:
                stats = marshal.load(f)
            self.assertEqual(c["calls"], sum(v[1] for v in stats.values()))
            self.assertLessEqual(len(c["top"]), 3)
            p = self.profiles(stats)
            if p and c["name"]:
                got[c["name"]] = p
        self.assertEqual(got, want)
        self.assertEqual(got["test_mod.py::test_c[3]|call"],
                         {"test_c": (1, 1, {}), "__init__": (1, 1, {"test_c": 1}),
                          "up": (1, 1, {"test_c": 1})})
        # every call of the run is in one context: the calls of each
        # function add up to the run's
        total = {}
        for c in r["contexts"]:
            with open(os.path.join(self.dir, "out", c["pstats"]), "rb") as f:
                for k, v in marshal.load(f).items():
                    total[k] = total.get(k, 0) + v[1]
        with open(os.path.join(self.dir, "out", "timer.pstats"), "rb") as f:
            self.assertEqual(total, {k: v[1] for k, v in marshal.load(f).items()})
        self.assertEqual(sum(c["calls"] for c in r["contexts"]), r["calls"])

    def oracle(self):
        """{context: {qualname: calls}} of the functions of mod.py and
        test_mod.py, contexts where none ran left out."""
        out = os.path.join(self.dir, "oracle.json")
        env = dict(os.environ, ORACLE=out, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
        env.pop("PYTEST_ADDOPTS", None)
        p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
                           cwd=self.dir, env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out) as f:
            seen = json.load(f)
        want = {}
        for ctx, rows in seen.items():
            d = {q: n for file, q, n in rows if file in self.ours}
            if d:
                want[ctx] = d
        return want

    def ours_only(self, contexts, key):
        got = {}
        for ctx, rec in contexts.items():
            d = {q: n for file, q, n in key(rec) if file in self.ours}
            if d:
                got[ctx] = d
        return got

    def test_counter_per_context(self):
        want = self.oracle()
        self.pytest("-p", "pytracekit", "--ptk", "counter:per_context=true",
                    "--ptk-output", "out", "-q")
        r = self.report("out", "counter")
        got = self.ours_only(r["contexts"], lambda rec: [
            (f["file"], f["qualname"], f["calls"]) for f in rec["functions"]])
        self.assertEqual(got, want)
        self.assertEqual(want["test_mod.py::test_b|setup"], {"fx": 1, "g": 1, "K.__init__": 1})
        self.assertEqual(want["test_mod.py::test_b|teardown"], {"fx": 1, "f": 1})
        # every call of the run is in one context ("" outside the tests):
        # per function and per event kind, the contexts add up to the run
        def key(f):
            return (f["kind"], f["file"], f["qualname"], f["line"], f.get("label"))
        total, events = {}, {}
        for rec in r["contexts"].values():
            for f in rec["functions"]:
                total[key(f)] = total.get(key(f), 0) + f["calls"]
            for e, n in rec["events"].items():
                events[e] = events.get(e, 0) + n
        self.assertEqual(len(total), len(r["functions"]))
        self.assertEqual(total, {key(f): f["calls"] for f in r["functions"]})
        self.assertEqual(events, r["events"])
        # without per_context, no contexts section
        self.pytest("-p", "pytracekit", "--ptk", "counter", "--ptk-output", "plain", "-q")
        self.assertNotIn("contexts", self.report("plain", "counter"))


    def test_lines_per_context(self):
        # lines:per_context=true: each line's hits in the phase that ran
        # it, against sys.settrace's line events per phase; the fixture's
        # generator runs its first lines in setup and its last in teardown
        out = os.path.join(self.dir, "oracle.json")
        self.write("conftest.py", LINES_CONFTEST)
        self.run_oracle(out)
        with open(out) as f:
            want = {ctx: {(file, n): hits for file, n, hits in rows}
                    for ctx, rows in json.load(f).items()}
        want = {ctx: rows for ctx, rows in want.items() if rows}
        self.pytest("-p", "pytracekit", "--ptk", "lines:modules=mod;test_mod,per_context=true",
                    "--ptk-output", "out", "-q")
        r = self.report("out", "lines")
        got = {ctx: {(os.path.basename(path), int(n)): v["hits"]
                     for path, rec in c["files"].items() for n, v in rec["lines"].items()}
               for ctx, c in r["contexts"].items()}
        self.maxDiff = None
        # "" (outside the tests): the oracle starts tracing in conftest.py,
        # after pytest imported test_mod.py; the plugin sees that import too
        got_import = got.pop("", {})
        want.pop("", None)
        self.assertEqual(got, want)
        self.assertEqual(got["test_mod.py::test_b|setup"],
                         {("test_mod.py", 5): 1, ("test_mod.py", 6): 1,
                          ("mod.py", 7): 1, ("mod.py", 11): 1})
        self.assertEqual(got["test_mod.py::test_b|teardown"],
                         {("test_mod.py", 7): 1, ("mod.py", 2): 1, ("mod.py", 3): 1})
        self.assertIn(("test_mod.py", 1), got_import)
        # every line's hits and time are in exactly one context: per file
        # and line, and per function, the contexts add up to the run's
        def add(into, key, v):
            h, t = into.get(key, (0, 0))
            into[key] = (h + v["hits"], t + v["time_ns"])
        lines, funcs = {}, {}
        for c in r["contexts"].values():
            for path, rec in c["files"].items():
                for n, v in rec["lines"].items():
                    add(lines, (path, n), v)
                for q, fn in rec["functions"].items():
                    for n, v in fn["lines"].items():
                        add(funcs, (path, q, n), v)
        self.assertEqual(lines, {(path, n): (v["hits"], v["time_ns"])
                                 for path, rec in r["files"].items()
                                 for n, v in rec["lines"].items()})
        self.assertEqual(funcs, {(path, q, n): (v["hits"], v["time_ns"])
                                 for path, rec in r["files"].items()
                                 for q, fn in rec["functions"].items()
                                 for n, v in fn["lines"].items()})
        calls = {}
        for c in r["contexts"].values():
            for path, rec in c["files"].items():
                for q, fn in rec["functions"].items():
                    calls[(path, q)] = calls.get((path, q), 0) + fn["calls"]
        self.assertEqual(calls, {(path, q): fn["calls"] for path, rec in r["files"].items()
                                 for q, fn in rec["functions"].items()})
        # without per_context, no contexts section
        self.pytest("-p", "pytracekit", "--ptk", "lines:modules=mod", "--ptk-output", "plain",
                    "-q")
        self.assertNotIn("contexts", self.report("plain", "lines"))


class Timeline(Case):
    """The timeline's contexts track: one span per test phase."""

    def test_each_phase_is_a_span(self):
        self.write("mod.py", CTX_MOD)
        self.write("test_mod.py", CTX_TESTS)
        # the oracle: the phases pytest reports, in order
        self.write("conftest.py", "PHASES = []\n"
                   "def pytest_runtest_logreport(report):\n"
                   "    PHASES.append(report.nodeid + '|' + report.when)\n"
                   "def pytest_sessionfinish(session):\n"
                   "    open('phases.txt', 'w').write('\\n'.join(PHASES))\n")
        # buffers that hold the whole run: on a loaded machine the writer
        # thread can fall behind the default 2 x 4 MiB, and the spans that
        # find both full are dropped (and counted), a context's among them
        self.pytest("-p", "pytracekit", "--ptk",
                    "timeline:format=json,min_duration=0,builtins=false,buffer_kb=65536",
                    "--ptk-output", "out", "-q")
        with open(os.path.join(self.dir, "phases.txt")) as f:
            phases = f.read().split("\n")
        with open(os.path.join(self.dir, "out", "timeline.json")) as f:
            events = json.load(f)
        names = {e["tid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        ctx_tid = [t for t, n in names.items() if n == "contexts"]
        self.assertEqual(len(ctx_tid), 1)
        spans, open_ = [], None
        for e in events:
            if e.get("tid") != ctx_tid[0] or e["ph"] not in "BE":
                continue
            if e["ph"] == "B":
                self.assertIsNone(open_)   # one context at a time
                open_ = (e["name"], e["ts"])
            else:
                spans.append((open_[0], open_[1], e["ts"]))
                open_ = None
        self.assertIsNone(open_)
        self.assertEqual([n for n, _, _ in spans], phases)
        self.assertEqual(len(phases), 18)
        # each test function's frame (on the main thread's track) lies in
        # its call phase's span, each setup_method's in its setup span
        at = {n: (b, e) for n, b, e in spans}
        main = [t for t, n in names.items() if n == "MainThread"][0]
        stack, frames = [], []
        for e in events:
            if e.get("tid") == main and e["ph"] == "B":
                stack.append((e["name"], e["ts"]))
            elif e.get("tid") == main and e["ph"] == "E":
                n, b = stack.pop()
                frames.append((n, b, e["ts"]))
        checked = 0
        for n, b, e in frames:
            m = re.search(r"/test_mod\.py:\d+\((test_\w+|setup_method)\)$", n)
            if not m:
                continue
            phase = "setup" if m.group(1) == "setup_method" else "call"
            inside = [c for c, (cb, ce) in at.items()
                      if c.endswith("|" + phase) and cb <= b and e <= ce]
            self.assertEqual(len(inside), 1, (n, b, e))
            self.assertIn(m.group(1) if phase == "call" else "TestK", inside[0])
            checked += 1
        self.assertEqual(checked, 6 + 2)  # 6 tests, 2 setup_method


class Xdist(Case):
    """pytest-xdist: each worker runs a session of its own into OUT/gwN/; the
    controller combines them into OUT at the end (pytracekit combine)."""

    def setUp(self):
        super().setUp()
        try:
            import xdist  # noqa: F401
        except ImportError as e:
            self.skipTest(f"pytest-xdist is not installed: {e}")
        self.write("mod.py", CTX_MOD)
        self.write("test_mod.py", CTX_TESTS)

    def covered(self, out):
        files = self.report(out, "coverage")["files"]
        return {os.path.basename(k): (v["lines"], sorted(n for n, c in v["hits"] if c))
                for k, v in files.items()}

    def test_combined_equals_serial(self):
        specs = ["--ptk", "coverage:include=mod.py", "--ptk", "counter"]
        self.pytest("-p", "pytracekit", *specs, "--ptk-output", "serial", "-q")
        p = self.pytest("-p", "xdist", "-n", "2", "-p", "pytracekit", *specs,
                        "--ptk-output", "par", "-q")
        self.assertIn("6 passed", p.stdout)
        self.assertIn(f"pytracekit: reports of 2 workers combined in "
                      f"{os.path.join(self.dir, 'par')}/", p.stdout)
        # the combined table in pytest's summary; the workers' own not at all
        after = p.stdout.split("- pytracekit -", 1)[1]
        self.assertRegex(after, r"\nTOTAL +13 +0 +100\.0%\n")
        self.assertNotIn("Stmts", p.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(self.dir, "par"))),
                         ["counter.json", "coverage.json", "coverage.lcov", "coverage.xml",
                          "gw0", "gw1", "run.json"])
        self.assertEqual(self.covered("par"), self.covered("serial"))
        # every test ran once: the functions' calls add up to the serial run's
        # (the module and class bodies run once per worker)
        def calls(out):
            return {q: n for (_, q), n in self.calls(out).items() if q not in ("<module>", "K")}
        self.assertEqual(calls("par"), calls("serial"))
        self.assertEqual(calls("serial"), {"f": 6, "g": 1, "K.__init__": 5, "K.up": 4})

    def test_deferred_workers_combined_equal_immediate(self):
        # reports=false: each worker writes its data only; the controller's
        # combination completes it from the sources: the same statements,
        # lines run, functions and figures as the immediate workers' (the
        # oracle; the hit counts depend on how xdist shared the tests out)
        specs = ["-p", "xdist", "-n", "2", "-p", "pytracekit", "-q"]
        tables = []
        for out, opts, more in (("imm", "", []), ("def", ",reports=false", []),
                                ("data", ",reports=false", ["--ptk-summary", "no"])):
            p = self.pytest(*specs, "--ptk", "coverage:include=mod.py" + opts,
                            "--ptk-output", out, *more)
            after = p.stdout.split("- pytracekit -", 1)[1]
            tables.append(re.findall(r"^(?:Name|mod\.py|TOTAL) .*$", after, re.M))
            self.assertIn("reports of 2 workers combined", after)
        self.assertRegex("\n".join(tables[1]), r"\nTOTAL +13 +0 +100\.0%")
        self.assertEqual(tables[0], tables[1])
        # --ptk-summary no: no table shown; the combination is the same
        self.assertEqual(tables[2], [])
        self.assertEqual(self.covered("data"), self.covered("imm"))
        for w in ("gw0", "gw1"):
            with open(os.path.join(self.dir, "def", w, "coverage.json")) as f:
                self.assertIs(json.load(f)["meta"]["deferred"], True)
        self.assertEqual(self.covered("def"), self.covered("imm"))
        imm, dfr = self.report("imm", "coverage"), self.report("def", "coverage")
        self.assertEqual({p: [f[:2] for f in r["functions"]] for p, r in imm["files"].items()},
                         {p: [f[:2] for f in r["functions"]] for p, r in dfr["files"].items()})

    def test_contexts_combined(self):
        # the oracle: pytest-cov's --cov-context=test under -n 2 (its
        # controller combines the workers' .coverage)
        want = self.pytest_cov(["-n", "2", "--cov-context=test"],
                               lambda: CoverageContexts.coverage_json(self, ".coverage"))
        specs = ["--ptk", "coverage:include=mod.py,contexts=true,coveragepy=yes",
                 "--ptk", "counter:per_context=true", "--ptk", "timer:per_context=true",
                 "--ptk", "lines:modules=mod,per_context=true"]
        self.pytest("-p", "xdist", "-n", "2", "-p", "pytracekit", *specs,
                    "--ptk-output", "par", "-q")
        got = self.contexts("par")
        self.maxDiff = None
        self.assertEqual(got, want)
        self.assertEqual(len(got["mod.py"]["2"]), 6)  # from both workers
        self.assertEqual(CoverageContexts.coverage_json(self, os.path.join("par", ".coverage")),
                         want)
        # the counter's and the timer's contexts: those of the serial run
        self.pytest("-p", "pytracekit", *specs, "--ptk-output", "serial", "-q")
        ours = (self.mod, os.path.join(self.dir, "test_mod.py"))

        def counted(out):
            return {name: {f["qualname"]: f["calls"] for f in rec["functions"]
                           if f["file"] in ours}
                    for name, rec in self.report(out, "counter")["contexts"].items() if name}

        def timed(out):
            import marshal
            got = {}
            for c in self.report(out, "timer")["contexts"]:
                with open(os.path.join(self.dir, out, c["pstats"]), "rb") as f:
                    st = marshal.load(f)
                if c["name"]:
                    got[c["name"]] = {k[2]: v[1] for k, v in st.items() if k[0] in ours}
            return got
        self.assertEqual(counted("par"), counted("serial"))
        self.assertEqual(len(counted("par")), 18)
        self.assertEqual(timed("par"), timed("serial"))
        self.assertEqual(timed("par")["test_mod.py::test_b|call"],
                         {"test_b": 1, "f": 1, "up": 1})

        def line_hits(out):
            return {name: {(q, n): v["hits"] for rec in c["files"].values()
                           for q, fn in rec["functions"].items() for n, v in fn["lines"].items()}
                    for name, c in self.report(out, "lines")["contexts"].items() if name}
        self.assertEqual(line_hits("par"), line_hits("serial"))
        self.assertEqual(line_hits("par")["test_mod.py::test_c[3]|call"],
                         {("K.__init__", "11"): 1, ("K.up", "13"): 4, ("K.up", "14"): 3,
                          ("K.up", "15"): 1})
        # everything combined: nothing said to be left out
        self.assertEqual(self.report("par", "run")["left_out"], [])

    def test_branch_contexts_combined(self):
        # branch=true with contexts=true under -n 2: the workers' arcs per
        # context combined, against pytest-cov's --cov-branch
        # --cov-context=test under -n 2 (its controller combines .coverage)
        want = self.pytest_cov_arcs(["-n", "2"])
        self.pytest("-p", "xdist", "-n", "2", "-p", "pytracekit", "--ptk",
                    "coverage:include=*mod.py,branch=true,contexts=true,coveragepy=yes",
                    "--ptk-output", "par", "-q")
        self.maxDiff = None
        self.assertEqual(CoverageContexts.context_arcs(self, os.path.join("par", ".coverage")),
                         want)
        self.assertEqual(CoverageContexts.json_context_arcs(self, "par"), want)
        # the module's import ran in both workers, both under no context
        self.assertIn((-1, 1), want[("mod.py", "")])

    def test_killed_worker_is_named(self):
        self.write("test_kill.py", "import os, signal\n"
                   "def test_kill():\n"
                   "    os.kill(os.getpid(), signal.SIGKILL)\n")
        p = self.pytest("-p", "xdist", "-n", "2", "-p", "pytracekit", "--ptk",
                        "coverage:include=mod.py", "--ptk-output", "par", "-q", check=False)
        self.assertEqual(p.returncode, 1, p.stdout)  # xdist: the test failed
        named = re.findall(r"pytracekit: worker (gw\d+) went down: (.*): its data is "
                           r"missing from the combined reports", p.stdout)
        crashed = re.findall(r"worker '(gw\d+)' crashed while running 'test_kill.py::test_kill'",
                             p.stdout)
        self.assertEqual(len(named), 1, p.stdout)
        self.assertEqual([w for w, _ in named], crashed[:1])
        # the others are combined; the dead one's directory is not read
        manifest = self.report("par", "run")
        dirs = sorted(os.path.basename(r["dir"]) for r in manifest["combined"])
        self.assertNotIn(named[0][0], dirs)
        self.assertEqual(len(dirs), 2)  # the other worker and the one xdist started anew

    def test_worker_that_writes_nothing_fails_the_run(self):
        # every test passes, but one worker ends without reports (os._exit
        # at its end, before pytest's session finish): the run fails
        self.write("conftest.py", "import os, pytest\n"
                   "@pytest.hookimpl(tryfirst=True)\n"
                   "def pytest_sessionfinish(session):\n"
                   "    if os.environ.get('PYTEST_XDIST_WORKER') == 'gw1':\n"
                   "        os._exit(0)\n")
        p = self.pytest("-p", "xdist", "-n", "2", "-p", "pytracekit", "--ptk",
                        "coverage:include=mod.py", "--ptk-output", "par", "-q", check=False)
        self.assertRegex(p.stdout, r"pytracekit: worker gw1 (went down: .*|wrote no reports): "
                                   r"its data is missing from the combined reports")
        self.assertNotEqual(p.returncode, 0, p.stdout)


class Summary(Case):
    """The plugins' summaries shown by pytest's terminal reporter; coverage's
    fail_under failing the run."""

    def setUp(self):
        super().setUp()
        # g() never runs: 5 of 6 statements, 83.3%
        self.write("test_mod.py", TESTS.replace("    assert mod.g() == 3\n", ""))

    def test_tables_in_pytests_summary(self):
        p = self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py", "--ptk",
                        "counter:top=1", "-q")
        after = p.stdout.split("- pytracekit -", 1)[1]
        self.assertRegex(after, r"\nmod\.py +6 +1 +83\.3%\n")
        self.assertIn("pytracekit counter:", after)
        self.assertNotIn("Stmts", p.stderr)
        self.assertEqual(p.returncode, 0)

    def test_deferred_reports_table_is_the_immediate_one(self):
        # reports=false: the run writes only the data; the summary is built
        # from it and the sources at the end of the session, the same table
        # (an immediate run is the oracle), and fail_under judges it
        tables = []
        for opts in ("", ",reports=false"):
            p = self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py" + opts,
                            "--ptk-fail-under", "90", "-q", check=False)
            after = p.stdout.split("- pytracekit -", 1)[1]
            tables.append(re.findall(r"^(?:Name|mod\.py|TOTAL) .*$", after, re.M))
            self.assertIn("total of 83 is less than fail-under=90", after)
            self.assertEqual(p.returncode, 1)
            with open(os.path.join(self.dir, "pytracekit-out", "coverage.json")) as f:
                self.assertEqual(json.load(f)["meta"].get("deferred"), bool(opts) or None)
        self.assertRegex("\n".join(tables[0]), r"\nmod\.py +6 +1 +83\.3%")
        self.assertEqual(tables[0], tables[1])

    def test_no_summary_is_the_data_only(self):
        # --ptk-summary no (ini ptk_summary): no plugin's table in the
        # summary; with reports=false the data only, no table built: a
        # conftest makes completing the data fail, which the run with the
        # summary does and the one without it does not. The table
        # `pytracekit report` makes later is the immediate run's.
        p = self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py",
                        "--ptk", "counter:top=1", "-q")
        after = p.stdout.split("- pytracekit -", 1)[1]
        figures = r"^(mod\.py|TOTAL) +(\d+) +(\d+) "
        immediate = re.findall(figures, after, re.M)
        self.assertEqual(immediate, [("mod.py", "6", "1"), ("TOTAL", "6", "1")])
        self.assertIn("pytracekit counter:", after)
        self.write("conftest.py", "from pytracekit import _coverage_format as covfmt\n"
                   "def refuse(*args, **kwargs):\n"
                   "    raise covfmt.DataError('the data was completed')\n"
                   "covfmt.complete = refuse\n")
        p = self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py,reports=false",
                        "-q", check=False)
        self.assertIn("pytracekit coverage: the data was completed", p.stdout)
        self.assertEqual(p.returncode, 3, p.stdout)
        out = os.path.join(self.dir, "pytracekit-out")
        for how in (["--ptk-summary", "no"], ["-o", "ptk_summary=false"]):
            p = self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py,reports=false",
                            "--ptk", "counter:top=1", *how, "-q")
            after = p.stdout.split("- pytracekit -", 1)[1]
            self.assertEqual(re.findall(r"^(?:Name|mod\.py|TOTAL) .*$", after, re.M), [], how)
            self.assertNotIn("pytracekit counter:", after)
            self.assertNotIn("completed", after)
            self.assertIn("pytracekit: reports in", after)
            with open(os.path.join(out, "coverage.json")) as f:
                self.assertIs(json.load(f)["meta"].get("deferred"), True)
            self.assertTrue(os.path.exists(os.path.join(out, "counter.json")))
            r = self.run_py("-m", "pytracekit", "report", out)
            self.assertEqual(re.findall(figures, r.stdout, re.M), immediate)
        os.unlink(os.path.join(self.dir, "conftest.py"))
        # fail_under is judged without the table shown
        p = self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py,reports=false",
                        "--ptk-summary", "no", "--ptk-fail-under", "90", "-q", check=False)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("total of 83 is less than fail-under=90", p.stdout)
        self.assertEqual(re.findall(r"^(?:Name|mod\.py|TOTAL) .*$", p.stdout, re.M), [])
        p = self.pytest("-p", "pytracekit", "--ptk", "coverage", "--ptk-summary", "maybe",
                        check=False)
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        self.assertIn("--ptk-summary: yes or no, not 'maybe'", p.stderr)

    def test_slowest_with_their_top_functions(self):
        # pytest's own --durations is the oracle of which phases are slowest
        self.write("test_slow.py", "import time\n"
                   "def busy(n):\n"
                   "    return sum(i * i for i in range(n))\n"
                   "def test_slow():\n"
                   "    time.sleep(0.3)\n"
                   "def test_busy():\n"
                   "    busy(200000)\n"
                   "    time.sleep(0.1)\n")
        p = self.pytest("-p", "pytracekit", "--ptk", "timer:per_context=true",
                        "--ptk-slowest", "2", "--durations", "2", "--durations-min", "0", "-q")
        durations = re.findall(r"^(\d+\.\d+)s (setup|call|teardown) +(\S+)$",
                               p.stdout.split("slowest 2 durations", 1)[1].split("\n", 1)[1]
                               .split("\n=")[0],
                               re.M)
        after = p.stdout.split("- pytracekit -", 1)[1].split("pytracekit: reports in")[0]
        self.assertIn("pytracekit: slowest 2 test phases and their top functions", after)
        ours = re.findall(r"^(\d+\.\d+)s (setup|call|teardown) +(\S+)$", after, re.M)
        self.assertEqual([(w, n) for _, w, n in ours], [(w, n) for _, w, n in durations])
        # (which of the two is slower depends on the machine's load)
        self.assertEqual(sorted(n for _, _, n in ours),
                         ["test_slow.py::test_busy", "test_slow.py::test_slow"])
        # each with its top 3 functions by own time: sleep first in test_slow
        rows = after.split("call     test_slow.py::test_slow", 1)[1].split("\n")[1:4]
        self.assertRegex(rows[0], r"^ +0\.(29|3\d)\d+s own .* 1 calls  "
                                  r"\{built-in method time\.sleep\}$")
        busy = after.split("call     test_slow.py::test_busy", 1)[1].split("\n")[1:4]
        self.assertTrue(any("<genexpr>" in r and "200001 calls" in r for r in busy), busy)
        # without per_context, or with 0: no such list
        p = self.pytest("-p", "pytracekit", "--ptk", "timer", "-q")
        self.assertNotIn("slowest", p.stdout)
        p = self.pytest("-p", "pytracekit", "--ptk", "timer:per_context=true",
                        "--ptk-slowest", "0", "-q")
        self.assertNotIn("slowest", p.stdout)

    def test_fail_under(self):
        for args, ini, status in (
                (["--ptk-fail-under", "90"], None, 1),
                (["--ptk-fail-under", "80"], None, 0),
                ([], "[report]\nfail_under = 90\n", 1),   # coverage.py's configuration
                ([], "[report]\nfail_under = 83\n", 0),
                (["--ptk-fail-under", "80"], "[report]\nfail_under = 90\n", 0)):
            if ini:
                self.write(".coveragerc", ini)
            elif os.path.exists(os.path.join(self.dir, ".coveragerc")):
                os.unlink(os.path.join(self.dir, ".coveragerc"))
            p = self.pytest("-p", "pytracekit", "--ptk", "coverage:include=mod.py", *args, "-q",
                            check=False)
            self.assertEqual(p.returncode, status, (args, ini, p.stdout))
            self.assertIn("2 passed", p.stdout)
            failed = "pytracekit: Coverage failure: total of 83 is less than fail-under=90"
            if status:
                self.assertIn(failed, p.stdout)
            else:
                self.assertNotIn("Coverage failure", p.stdout)


def _filter_keys():
    from pytracekit import _pytracekit as c
    return c._filter_keys


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
