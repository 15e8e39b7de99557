"""An embedding program (embed_order.c) around Py_FinalizeEx: initialise ->
trace -> finalize three times works, with the same counts each time, and
each wrong order gets a clear PTK_ESTATE instead of a crash.

usage: test_embed.py CASE
"""
import json
import os
import subprocess
import sys

from ptk_loader_util import Failure, Scratch, check, check_in, main

PROG = os.path.join(os.environ["PTK_BUILD_DIR"], "tests", "core", "embed_order")
FIB_CALLS = 177  # fib(10)
FINALIZED = ("the Python interpreter this session was made in has been finalized "
             "(Py_FinalizeEx)")


class Run:
    def __init__(self, case, s, plugin=None):
        env = dict(os.environ)
        if plugin:
            env["EMBED_PLUGIN"] = plugin
        env.pop("PYTRACEKIT_PLUGIN_PATH", None)
        env["PYTRACEKIT_PLUGIN_PATH"] = os.environ["PTK_PLUGIN_DIR"]
        p = subprocess.run([PROG, case.split(":")[0], s.path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120, env=env)
        self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr

    def describe(self):
        return "exit status %r\n--- stdout ---\n%s--- stderr ---\n%s" % (
            self.rc, self.out, self.err)

    def lines(self):
        return self.out.splitlines()


def completed(r):
    check(r.rc == 0 and r.lines() and r.lines()[-1] == "end",
          "the program did not get to its end", r)


def fib_calls(path, r):
    check(os.path.isfile(path), "no report %s" % path, r)
    with open(path) as f:
        d = json.load(f)
    return [fn["calls"] for fn in d["functions"] if fn["name"] == "fib"]


def three_cycles():
    with Scratch("embed3") as s:
        r = Run("three_cycles", s)
        completed(r)
        check(r.lines() == ["stop: ok", "report: ok", "finalize: ok"] * 3 + ["end"],
              "every step of every cycle", r)
        for i in (1, 2, 3):
            got = fib_calls(s.join("cycle%d" % i, "counter.json"), r)
            check(got == [FIB_CALLS], "cycle %d counted fib %r, expected [%d]"
                  % (i, got, FIB_CALLS), r)


def report_after_finalize():
    with Scratch("embed-report") as s:
        r = Run("report_after_finalize", s)
        completed(r)
        check_in("report after finalize: PTK_ESTATE: " + FINALIZED, r.out, "report", r)
        check(not os.path.exists(s.join("a", "counter.json")), "a report was written", r)


def free_running_after_finalize():
    with Scratch("embed-free") as s:
        r = Run("free_running_after_finalize", s)
        completed(r)
        check_in("stop after finalize: PTK_ESTATE: ", r.out, "stop", r)


def stop_finalize_free():
    with Scratch("embed-fini") as s:
        r = Run("stop_finalize_free", s)
        completed(r)


def running_across_reinit(plugin=None):
    with Scratch("embed-reinit") as s:
        r = Run("running_across_reinit", s, plugin)
        completed(r)
        for step in ("start again", "report"):
            check_in("%s: PTK_ESTATE: %s" % (step, FINALIZED), r.out, step, r)
        check_in("\nstop: PTK_ESTATE: ", r.out, "stop", r)
        check_in("new stop: ok\nnew report: ok\n", r.out, "the new session", r)
        got = fib_calls(s.join("b", "counter.json"), r)
        check(got == [FIB_CALLS], "the new session counted fib %r" % got, r)


def running_across_reinit_reftrack():
    """The reference tracer is the runtime's, not the interpreter's: a
    reftrack session left running must not be called in the next one."""
    if sys.version_info < (3, 13):
        print("SKIP: reference events need CPython 3.13 or newer")
        sys.exit(77)
    running_across_reinit("reftrack")


def before_initialize():
    with Scratch("embed-early") as s:
        r = Run("before_initialize", s)
        completed(r)
        check_in("new before initialize: PTK_ESTATE: Python is not initialized "
                 "(call Py_Initialize first)", r.out, "new", r)


CASES = {f.__name__: f for f in [
    three_cycles, report_after_finalize, free_running_after_finalize,
    stop_finalize_free, running_across_reinit, running_across_reinit_reftrack,
    before_initialize]}

if __name__ == "__main__":
    main(CASES)
