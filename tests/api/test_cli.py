"""`python -m pytracekit` and the pytracekit command take the same arguments
and behave the same: each case runs both, in fresh directories, and
compares the exit status, what the program saw (its sys.argv, sys.path[0])
and printed, the usage messages, and the reports of the program's own
functions. The oracle for what the program should see: `python` itself,
run with the same program arguments."""
import json
import marshal
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import ptk_testlib as T

if not T.CLI:
    T.skip("PTK_CLI is not set")

PROG = r'''
import json, os, sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(8)
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__,
                  "main": sys.modules["__main__"].__dict__.get("__file__")}))
what = sys.argv[1] if len(sys.argv) > 1 else ""
if what == "exit7":
    sys.exit(7)
if what == "raise":
    raise ValueError("boom")
if what == "interrupt":
    raise KeyboardInterrupt
if what == "exitmsg":
    sys.exit("a message")
'''

TESTMOD = ("import unittest\n"
           "class T(unittest.TestCase):\n"
           "    def test_one(self):\n"
           "        self.assertEqual(1, 1)\n")


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptk-cli-")
        for name, text in (("prog.py", PROG), ("-dash.py", PROG), ("tmod.py", TESTMOD)):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(self.dir, "pkg"))
        with open(os.path.join(self.dir, "pkg", "__init__.py"), "w") as f:
            f.write("")
        with open(os.path.join(self.dir, "pkg", "mod.py"), "w") as f:
            f.write(PROG)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_one(self, cmd, out):
        env = dict(os.environ)
        return subprocess.run(cmd, cwd=self.dir, env=env, capture_output=True,
                              text=True, timeout=120)

    def both(self, *args, reports=False):
        """Runs the command and `python -m pytracekit` with ARGS (a report
        directory each, through -o when reports are compared); returns the
        two results after checking what must be equal."""
        pre_c = ["-o", "out-cmd"] if reports else []
        pre_m = ["-o", "out-mod"] if reports else []
        c = self.run_one([T.CLI, *pre_c, *args], "out-cmd")
        m = self.run_one([T.PYTHON, "-m", "pytracekit", *pre_m, *args], "out-mod")
        self.assertEqual(c.returncode, m.returncode,
                         f"exit status\ncommand: {c.stderr}\nmodule: {m.stderr}")
        self.assertEqual(c.stdout, m.stdout)
        return c, m

    def python(self, *args):
        return subprocess.run([T.PYTHON, *args], cwd=self.dir, capture_output=True,
                              text=True, timeout=120)

    def same_reports(self, fib=67):
        prog = [os.path.join(self.dir, p) for p in ("prog.py", "-dash.py", "pkg/mod.py")]

        def counted(d):
            with open(os.path.join(self.dir, d, "counter.json")) as f:
                j = json.load(f)
            return sorted((f["qualname"], f["line"], f["calls"]) for f in j["functions"]
                          if f["file"] in prog)
        a, b = counted("out-cmd"), counted("out-mod")
        self.assertEqual(a, b)
        self.assertIn(("fib", 3, fib), a)


class Arguments(Case):
    def test_script_args_are_the_programs(self):
        c, _ = self.both("prog.py", "-v", "-p", "x", "--help", reports=True)
        got = json.loads(c.stdout)
        want = json.loads(self.python("prog.py", "-v", "-p", "x", "--help").stdout)
        self.assertEqual(got, want)
        self.assertEqual(got["argv"], ["prog.py", "-v", "-p", "x", "--help"])
        self.same_reports()

    def test_module_args(self):
        c, _ = self.both("-m", "pkg.mod", "-v", "a", reports=True)
        want = json.loads(self.python("-m", "pkg.mod", "-v", "a").stdout)
        self.assertEqual(json.loads(c.stdout), want)
        self.same_reports()

    def test_unittest_module(self):
        c, m = self.both("-m", "unittest", "-q", "tmod")
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertIn("Ran 1 test", m.stderr)
        self.assertIn("Ran 1 test", c.stderr)

    def test_module_help_is_the_modules(self):
        c, _ = self.both("-m", "json.tool", "--help")
        self.assertEqual(c.returncode, 0)
        self.assertEqual(c.stdout, self.python("-m", "json.tool", "--help").stdout)

    def test_code(self):
        c, _ = self.both("-c", "import sys, json; print(json.dumps(sys.argv))", "-q", "x")
        self.assertEqual(json.loads(c.stdout), ["-c", "-q", "x"])

    def test_script_named_like_an_option(self):
        c, _ = self.both("--", "-dash.py", "a", reports=True)
        self.assertEqual(json.loads(c.stdout)["argv"], ["-dash.py", "a"])
        self.same_reports()

    def test_directory_and_zip_apps(self):
        import zipfile
        app = os.path.join(self.dir, "app")
        os.makedirs(app)
        with open(os.path.join(app, "__main__.py"), "w") as f:
            f.write("import json, sys\nprint(json.dumps([sys.argv, sys.path[0], __name__]))\n")
        with zipfile.ZipFile(os.path.join(self.dir, "app.zip"), "w") as z:
            z.write(os.path.join(app, "__main__.py"), "__main__.py")
        for target in ("app", "app.zip"):
            c, _ = self.both(target, "-x")
            self.assertEqual(c.returncode, 0, c.stderr)
            self.assertEqual(c.stdout, self.python(target, "-x").stdout)

    def test_options_before_the_program(self):
        c, _ = self.both("-p", "counter:top=0", "--threads", "current", "--backend",
                         "legacy", "--plugin-path", self.dir, "prog.py", reports=True)
        self.assertEqual(c.returncode, 0)
        self.same_reports()


    def profiled(self, out):
        """(kind, name, file, calls) of every function in OUT's timer.json,
        but for the interpreter's shutdown of threading (threading._shutdown
        and what it calls) where python itself imports threading before any
        program runs (a .pth file may): no program's, nor a runner's."""
        with open(os.path.join(self.dir, out, "timer.json")) as f:
            t = json.load(f)
        at_start = subprocess.run([T.PYTHON, "-c", "import sys; print('threading' in "
                                   "sys.modules)"], capture_output=True, text=True).stdout
        drop = set()
        if at_start.strip() == "True":
            drop = {f["id"] for f in t["functions"] if f["name"] == "_shutdown"
                    and f["file"].endswith(os.sep + "threading.py")}
            more = True
            while more:
                below = {e["callee"] for e in t["edges"] if e["caller"] in drop}
                more = not below <= drop
                drop |= below
        return sorted((f["kind"], f["name"], f["file"], f["calls"]) for f in t["functions"]
                      if f["id"] not in drop)

    def test_runner_frames_are_not_the_programs(self):
        # neither the interpreter's work for the script (importlib's
        # FileLoader.__init__ for __main__.__loader__) nor the module's
        # atexit callback is in the program's profile, nor a C call of the
        # runner's (python -m pytracekit's exec of the program's code, its
        # sys.exit): the program calls no C function
        plain = os.path.join(self.dir, "plain.py")
        with open(plain, "w") as f:
            f.write("def f():\n    return 1\nf()\n")  # imports nothing
        timer = ("-p", "counter:top=0", "-p", "timer:top=0")
        c, _ = self.both(*timer, "plain.py", reports=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        for out in ("out-cmd", "out-mod"):
            self.assertEqual(self.profiled(out), [("python", "<module>", plain, 1),
                                                  ("python", "f", plain, 1)], out)
        # -m MODULE: python's own lookup of the module (runpy, importlib)
        # runs as under cProfile's -m, but not the import of runpy itself,
        # which python does before it runs anything of the program
        c, _ = self.both(*timer, "-m", "plain", reports=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        # (each module imported would run its <module>: only plain's runs)
        for out in ("out-cmd", "out-mod"):
            funcs = self.profiled(out)
            self.assertEqual([f[2] for f in funcs if f[1] == "<module>"], [plain], out)
            self.assertIn(("python", "f", plain, 1), funcs, out)
        # the same for -c CODE
        c, _ = self.both(*timer, "-c", "def f():\n    return 1\nf()\n", reports=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        for out in ("out-cmd", "out-mod"):
            self.assertEqual(self.profiled(out), [("python", "<module>", "<string>", 1),
                                                  ("python", "f", "<string>", 1)], out)

    def test_filter_options(self):
        # the program's own file only, two frames deep (the last --max-depth):
        # the same filter from both, so the same (filtered) reports
        c, _ = self.both("--include", os.path.join(self.dir, "prog.py"), "--max-depth", "5",
                         "--max-depth", "2", "prog.py", reports=True)
        self.assertEqual(c.returncode, 0, c.stderr)
        with open(os.path.join(self.dir, "out-mod", "counter.json")) as f:
            funcs = json.load(f)["functions"]
        calls = {(f["qualname"], f["file"]): f["calls"] for f in funcs}
        self.assertLess(calls.get(("fib", os.path.join(self.dir, "prog.py"))), 67, calls)
        self.assertEqual({f["file"] for f in funcs if f["kind"] == "python"},
                         {os.path.join(self.dir, "prog.py")})
        self.same_reports(fib=calls[("fib", os.path.join(self.dir, "prog.py"))])

    def test_one_reader_for_both(self):
        # the module reads the arguments with the command's reader: the
        # filter flags come back as given, per flag, not joined into text
        p = self.python("-c", "from pytracekit import _pytracekit as c; import json; "
                        "print(json.dumps(c._parse_command_line(['--include', 'a,b', "
                        "'--include', 'c', '--max-depth', '5', '--max-depth', '2', "
                        "'--thread-names', 'w-*', '-p', 'timer', '-m', 'mod', 'x', '-y'])))")
        self.assertEqual(p.returncode, 0, p.stderr)
        o, err = json.loads(p.stdout)
        self.assertIsNone(err)
        self.assertEqual(o["filter"], {"--include": ["a,b", "c"],
                                       "--thread-names": ["w-*"],
                                       "--max-depth": ["5", "2"]})
        self.assertEqual((o["plugins"], o["mode"], o["target"], o["args"], o["action"]),
                         (["timer"], "-m", "mod", ["x", "-y"], "run"))
        # the command's reader refused a 65th -p itself ("too many
        # plugins"), the module's passed it on: now both leave the limit
        # to the library, and say the same
        c, m = self.both(*(["-p", "counter:top=0"] * 65), "-c", "pass")
        want = "pytracekit: more than 64 plugin instances attached at once\n"
        self.assertEqual((c.returncode, c.stderr, m.stderr), (2, want, want))


class Informational(Case):
    def test_version(self):
        c, _ = self.both("--version")
        self.assertEqual(c.returncode, 0)
        self.assertTrue(c.stdout.startswith("pytracekit "), c.stdout)

    def test_help(self):
        for a in ("--help", "-h"):
            c = self.run_one([T.CLI, a], "out-cmd")
            m = self.run_one([T.PYTHON, "-m", "pytracekit", a], "out-mod")
            self.assertEqual((c.returncode, m.returncode), (0, 0))
            self.assertTrue(c.stdout.startswith("usage: pytracekit "))
            # the module names itself as it is run, the rest the same
            self.assertTrue(m.stdout.startswith("usage: python -m pytracekit "), m.stdout)
            self.assertNotIn("\n       pytracekit ", m.stdout)
            self.assertEqual(m.stdout.replace("python -m pytracekit", "pytracekit"),
                             c.stdout)

    def test_says_where_the_reports_are(self):
        c, m = self.both("prog.py", reports=True)
        self.assertEqual(c.stderr.splitlines()[-1],
                         "pytracekit: reports in out-cmd/ (run.json lists them)")
        self.assertEqual(m.stderr.splitlines()[-1],
                         "pytracekit: reports in out-mod/ (run.json lists them)")

    def test_list_plugins(self):
        c, _ = self.both("--list-plugins")
        self.assertIn("counter ", c.stdout)
        if os.path.isdir(T.TEST_PLUGINS):
            c, _ = self.both("--list-plugins", "--plugin-path", T.TEST_PLUGINS)
            self.assertIn("rejected", c.stdout)  # the broken test plugins


class Errors(Case):
    def usage_error(self, *args, message):
        c, m = self.both(*args)
        self.assertEqual(c.returncode, 2)
        self.assertEqual(c.stderr, m.stderr)
        self.assertIn(message, c.stderr)
        return c

    def test_unknown_option(self):
        c = self.usage_error("--bogus", "prog.py", message="pytracekit: unknown option '--bogus'")
        # one line, not the whole help
        self.assertEqual(c.stderr, "pytracekit: unknown option '--bogus' (see --help)\n")

    def test_no_program(self):
        c = self.usage_error(message="pytracekit: no program given")
        self.assertEqual(c.stderr.count("\n"), 1, c.stderr)
        self.assertIn("see --help", c.stderr)
        self.usage_error("-p", "counter", message="pytracekit: no program given")
        self.usage_error("--", message="pytracekit: no program given")

    def test_missing_values(self):
        for opt in ("-p", "-o", "--threads", "--backend", "--plugin-path", "-m", "-c",
                    "--include", "--exclude", "--modules", "--functions",
                    "--thread-names", "--max-depth"):
            c = self.usage_error(opt, message=f"pytracekit: {opt} needs a value")
            # one line, saying where the rest is
            self.assertEqual(c.stderr, f"pytracekit: {opt} needs a value (see --help)\n")

    def test_bad_values(self):
        for opt, text in (("--threads", "--threads expects 'current' or 'all', found 'x'"),
                          ("--backend", "--backend expects 'auto', 'legacy' or "
                                        "'monitoring', found 'x'")):
            c = self.usage_error(opt, "x", "prog.py", message=text)
            self.assertEqual(c.stderr, f"pytracekit: {text} (see --help)\n")
        self.usage_error("--max-depth", "x", "prog.py", message="max_depth")

    def test_bad_plugin(self):
        self.usage_error("-p", "nosuch", "prog.py", message="plugin 'nosuch' not found")
        c = self.usage_error("-p", "timr", "prog.py", message="; did you mean 'timer'?")
        # only directories that exist are named as searched
        looked = c.stderr.split(" in ", 1)[1].split(";")[0].split(", ")
        self.assertTrue(looked and all(os.path.isdir(d) for d in looked), looked)
        self.assertNotIn("did you mean", self.both("-p", "nosuch", "prog.py")[0].stderr)
        self.usage_error("-p", "timer:bogus=1", "prog.py", message="unknown option 'bogus'")


class ExitStatus(Case):
    def test_statuses(self):
        for what, status in (("", 0), ("exit7", 7), ("raise", 1), ("exitmsg", 1),
                             ("interrupt", -signal.SIGINT)):
            c, m = self.both("prog.py", what, reports=True)
            self.assertEqual(c.returncode, status, what)
            self.assertEqual(self.python("prog.py", what).returncode, status, what)
            self.same_reports()  # written however the program ends
            if what == "raise":
                self.assertIn("ValueError: boom", m.stderr)
            if what == "exitmsg":
                self.assertIn("a message", m.stderr)


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
