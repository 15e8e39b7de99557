"""Helpers for the loader, options, failure-containment and command tests.

Every test runs the `pytracekit` command (PTK_CLI) or the interpreter it was
built for (PTK_PYTHON) in a fresh scratch directory, with the environment
made hermetic (no PYTRACEKIT_PLUGIN_PATH unless the test sets one).
"""
import ptk_testlib  # noqa: F401 (first: under ASan, what we start gets the runtimes back)
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

CLI = os.environ["PTK_CLI"]
PYTHON = os.environ.get("PTK_PYTHON", sys.executable)
PLUGIN_DIR = os.environ["PTK_PLUGIN_DIR"]
TEST_PLUGIN_DIR = os.environ["PTK_TEST_PLUGIN_DIR"]
SANITIZE = os.environ.get("PTK_SANITIZE") == "1"
PY_VERSION = platform.python_version()
HAVE_REFTRACER = sys.version_info >= (3, 13)

EXIT_USAGE = 2
SKIP = 77


class Failure(AssertionError):
    pass


def skip(why):
    print("SKIP:", why)
    sys.exit(SKIP)


def test_plugin(name):
    """Absolute path of a test-only plugin (tests/plugins/NAME.c)."""
    path = os.path.join(TEST_PLUGIN_DIR, name + ".so")
    if not os.path.isfile(path):
        raise Failure("test plugin %s was not built" % path)
    return path


def shipped_plugin(name):
    path = os.path.join(PLUGIN_DIR, name + ".so")
    if not os.path.isfile(path):
        raise Failure("plugin %s was not built" % path)
    return path


class Scratch:
    """A fresh directory under the test's working directory, removed when
    the test passes and kept (for a look) when it fails."""

    def __init__(self, tag):
        self.path = tempfile.mkdtemp(prefix="ptk-%s-" % tag, dir=os.getcwd())

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            print("scratch directory kept:", self.path)
        return False

    def join(self, *parts):
        return os.path.join(self.path, *parts)

    def write(self, name, text, mode=None):
        p = self.join(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        if mode is not None:
            os.chmod(p, mode)
        return p

    def mkdir(self, name):
        p = self.join(name)
        os.makedirs(p, exist_ok=True)
        return p


def clean_env(extra=None, remove=()):
    env = dict(os.environ)
    env.pop("PYTRACEKIT_PLUGIN_PATH", None)
    for k in remove:
        env.pop(k, None)
    if extra:
        env.update(extra)
    return env


class Result:
    def __init__(self, args, proc_rc, out, err):
        self.args = args
        self.rc = proc_rc
        self.out = out
        self.err = err

    def describe(self):
        return "command: %r\nexit status: %r\n--- stdout ---\n%s--- stderr ---\n%s" % (
            self.args, self.rc, self.out, self.err)


def run(args, cwd=None, env=None, timeout=120, stdin=None):
    """Runs a command; returns a Result (stdout/stderr as text)."""
    io = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    p = subprocess.run(args, cwd=cwd, env=env if env is not None else clean_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, **io)
    return Result(args, p.returncode, p.stdout, p.stderr)


def cli(args, **kw):
    return run([CLI] + list(args), **kw)


def check(cond, what, result=None):
    if not cond:
        raise Failure(what + ("\n" + result.describe() if result is not None else ""))


def check_in(needle, haystack, what, result=None):
    check(needle in haystack, "%s: expected to find\n  %r" % (what, needle), result)


def marker_program(path):
    """A -c program that proves it ran by creating `path`."""
    return "open(%r, 'w').write('ran')\nprint('program ran')\n" % path


def expect_rejected(scratch, args, needles, env=None, regexes=()):
    """Runs `pytracekit -o OUT ARGS -c <marker program>` and checks that it
    exits with status 2 before running the program, that nothing was
    written, and that stderr has every needle (and matches every regex).
    Returns the Result."""
    marker = scratch.join("marker")
    out = scratch.join("out")
    r = cli(["-o", out] + list(args) + ["-c", marker_program(marker)],
            cwd=scratch.path, env=env)
    check(r.rc == EXIT_USAGE, "expected exit status 2", r)
    check(not os.path.exists(marker), "the program ran although a plugin was rejected", r)
    check("program ran" not in r.out, "the program printed although it should not run", r)
    check(not os.path.exists(out), "the output directory was created", r)
    for n in needles:
        check_in(n, r.err, "stderr", r)
    for rx in regexes:
        check(re.search(rx, r.err), "stderr does not match %r" % rx, r)
    check(r.err.startswith("pytracekit: "), "the message should start with 'pytracekit: '", r)
    return r


def expect_ran(scratch, args, env=None, out="out"):
    """Runs `pytracekit -o OUT ARGS -c <marker program>` and checks that the
    program ran and exited 0. Returns the Result."""
    marker = scratch.join("marker")
    r = cli(["-o", scratch.join(out)] + list(args) + ["-c", marker_program(marker)],
            cwd=scratch.path, env=env)
    check(r.rc == 0, "expected exit status 0", r)
    check(os.path.exists(marker), "the program did not run", r)
    return r


def load_json(path, result=None):
    check(os.path.isfile(path), "missing report %s" % path, result)
    with open(path) as f:
        return json.load(f)


def leftovers(directory):
    """Temporary report files left in a directory (".NAME.XXXXXX")."""
    return sorted(n for n in os.listdir(directory) if n.startswith("."))


def main(cases):
    """Runs the case named by argv[1] from the dict `cases`."""
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        print("usage: %s CASE (one of: %s)" % (sys.argv[0], ", ".join(sorted(cases))))
        sys.exit(2)
    try:
        cases[sys.argv[1]]()
    except Failure as e:
        print("FAIL:", e)
        sys.exit(1)
    print("ok")
