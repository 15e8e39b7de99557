"""Failure containment: a plugin that fails is detached, the traced program
and the other plugins go on, and the failure is reported at the end.

usage: test_fail.py CASE
"""
import json
import os
import sys
import textwrap

from ptk_loader_util import (Scratch, check, check_in, cli, leftovers, load_json,
                             main, test_plugin)

# Deterministic, far more than 1000 profile events, its own output and exit
# status.
WORK = textwrap.dedent("""\
    import sys
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    total = 0
    for i in range(5):
        total += fib(12 + i)
    print("work done", total)
    sys.exit(5)
    """)
WORK_OUT = "work done %d\n" % sum([144, 233, 377, 610, 987])
WORK_RC = 5

# The program's own exceptions, raised and caught while the plugin fails.
UNWIND = textwrap.dedent("""\
    import sys
    class Custom(Exception):
        pass
    def inner():
        raise Custom("the program's own", 42)
    def middle():
        try:
            inner()
        finally:
            print("finally in middle")
    try:
        middle()
    except Custom as e:
        print("caught", type(e).__name__, e.args, "context", repr(e.__context__))
    print("after", sys.exc_info()[0])
    def gen():
        yield 1
        raise KeyError("from the generator")
    try:
        for x in gen():
            pass
    except KeyError as e:
        print("caught", type(e).__name__, e.args, "context", repr(e.__context__))
    try:
        try:
            {}["missing"]
        except KeyError:
            raise ValueError("chained")
    except ValueError as e:
        print("caught", type(e).__name__, e.args, "context", repr(e.__context__))
    for call in (lambda: int("nope"), lambda: sorted([1, "a"]), lambda: next(iter([]))):
        try:
            call()
        except Exception as e:
            print("caught", type(e).__name__, "context", repr(e.__context__))
    sys.exit(4)
    """)
UNWIND_OUT = (
    "finally in middle\n"
    "caught Custom (\"the program's own\", 42) context None\n"
    "after None\n"
    "caught KeyError ('from the generator',) context None\n"
    "caught ValueError ('chained',) context KeyError('missing')\n"
    "caught ValueError context None\n"
    "caught TypeError context None\n"
    "caught StopIteration context None\n")
UNWIND_RC = 4


def fail_nth(spec=""):
    return test_plugin("fail_nth") + (":" + spec if spec else "")


def run_prog(s, name, program, plugins):
    """Runs prog.py (the same path in every run) with output in NAME."""
    out = s.join(name)
    script = s.write("prog.py", program)
    r = cli(["-o", out] + [a for p in plugins for a in ("-p", p)] + [script], cwd=s.path)
    return r, out


def counter_data(out, r):
    d = load_json(os.path.join(out, "counter.json"), r)
    # thread ids differ from run to run; the counts must not
    return {"events": d["events"],
            "functions": sorted(json.dumps(f, sort_keys=True) for f in d["functions"]),
            "threads": [t["events"] for t in d["threads"]]}


def program_calls(out, r):
    """Calls per function of the program itself: with threads, how often
    threading's own code runs (Event.wait, Condition.wait) depends on timing."""
    d = load_json(os.path.join(out, "counter.json"), r)
    return sorted((f["qualname"], f["calls"]) for f in d["functions"]
                  if (f["file"] or "").endswith("prog.py"))


def failure_block(r, name, code, needles, last=True):
    """The failure report: at the end of stderr, after the program and
    after the other plugins' summaries (of its session, when not `last`)."""
    head = "pytracekit: plugin '%s' failed (%s: " % (name, code)
    check_in(head, r.err, "failure report", r)
    tail = r.err[r.err.index(head):]
    check(") and was detached:\n" in tail.splitlines(True)[0], "failure line", r)
    for n in needles:
        check_in(n, tail, "failure report", r)
    check(not last or "pytracekit counter:" not in tail, "the failure should be reported after the "
          "summaries of the plugins that worked", r)
    return tail


def contained(mode, code, needles, order="after", extra=""):
    """counter with fail_nth failing on its 1000th event, against counter
    alone: same program output and status, same counts."""
    with Scratch("fail-" + mode) as s:
        ref, ref_out = run_prog(s, "ref", WORK, ["counter:top=0"])
        check(ref.rc == WORK_RC and ref.out == WORK_OUT, "reference run", ref)
        # counted in prog.py only: the 1000th event is the program's, not
        # one of the start-up's (which vary between versions)
        spec = fail_nth("file=prog.py,mode=" + mode + extra)
        plugins = ["counter:top=0", spec] if order == "after" else [spec, "counter:top=0"]
        r, out = run_prog(s, "run", WORK, plugins)
        check(r.rc == WORK_RC, "the program's exit status changed", r)
        check(r.out == WORK_OUT, "the program's output changed", r)
        check(counter_data(out, r) == counter_data(ref_out, ref),
              "counter's counts differ from a counter-only run:\n%s\nvs\n%s"
              % (counter_data(out, r), counter_data(ref_out, ref)), r)
        # (run.json: the run's manifest, docs/processes.md)
        check(sorted(os.listdir(out)) == ["counter.json", "run.json"],
              "a detached plugin must not report: %r" % os.listdir(out), r)
        failure_block(r, "fail_nth", code, needles)
        check(r.err.count("pytracekit: plugin 'fail_nth' failed") == 1,
              "the failure is reported once", r)
        check(leftovers(out) == [], "temporary files left", r)


def nth_error():
    contained("error", "PTK_EIO", ["input/output error",
                                   "fail_nth failed on ", " event 1000 as asked"])


def nth_error_first():
    """The failing plugin is the first subscriber of the event it fails on:
    the next subscriber of that same event still gets it."""
    contained("error", "PTK_EIO", ["event 1000 as asked"], order="before")


def nth_error_call():
    """Failing on a CALL event (fail_nth counts only CALLs)."""
    contained("error", "PTK_EIO", ["fail_nth failed on call event 1000 as asked"],
              extra=",kind=call")


def nth_python():
    contained("python", "PTK_EPYTHON", ["a Python exception was raised",
                                        "RuntimeError: fail_nth raised on ",
                                        " event 1000 as asked"])


def nth_python_first():
    contained("python", "PTK_EPYTHON", ["RuntimeError: fail_nth raised on "], order="before")


def nth_pycode():
    """An exception raised by Python code the plugin ran: the report has
    its traceback."""
    contained("pycode", "PTK_EPYTHON", ["Traceback (most recent call last):",
                                        'File "<fail_nth>", line 3, in <module>',
                                        'File "<fail_nth>", line 2, in boom',
                                        "LookupError: fail_nth: raised from Python code"])


def nth_leak():
    """PTK_OK with an exception left set is a failure too."""
    contained("leak", "PTK_EPYTHON", ["RuntimeError: fail_nth left this exception set on ",
                                      " event 1000"])


def report_fails():
    """A plugin whose report fails: the others' reports are written."""
    with Scratch("fail-report") as s:
        r, out = run_prog(s, "run", WORK, [fail_nth("mode=report"), "counter:top=0"])
        check(r.rc == WORK_RC and r.out == WORK_OUT, "the program", r)
        load_json(os.path.join(out, "counter.json"), r)
        failure_block(r, "fail_nth", "PTK_EIO", ["fail_nth report failed as asked after "])
        check(leftovers(out) == [], "temporary files left", r)


def report_fails_status():
    """A report that fails is not a success: a program that exits 0 gives
    exit status 3 (its own status when it is not 0); the other reports
    are written."""
    with Scratch("fail-report-status") as s:
        ok = WORK.replace("sys.exit(5)", "")
        r, out = run_prog(s, "run", ok, [fail_nth("mode=report"), "counter:top=0"])
        check(r.out == WORK_OUT, "the program", r)
        check(r.rc == 3, "a failed report left exit status %d, expected 3" % r.rc, r)
        load_json(os.path.join(out, "counter.json"), r)
        failure_block(r, "fail_nth", "PTK_EIO", ["fail_nth report failed as asked after "])
        # a plugin detached while the program ran wrote no report either:
        # the same status (docs/processes.md, PTK_EXIT_REPORT_FAILED)
        r, out = run_prog(s, "run2", ok, [fail_nth("n=10,mode=error"), "counter:top=0"])
        check(r.rc == 3 and r.out == WORK_OUT, "a plugin detached during the run", r)


def pending(kind, mode, code, needles):
    """The plugin fails while the program's own exception is being raised
    or unwinds: the program's `except` still gets it, unchanged."""
    with Scratch("pending-%s-%s" % (kind, mode)) as s:
        # The reference has fail_nth too, never failing: a trace subscriber
        # makes the hub call threading.settrace, which counter sees.
        ref, ref_out = run_prog(s, "ref", UNWIND,
                                ["counter:top=0", fail_nth("n=0,kind=%s,file=prog.py" % kind)])
        check(ref.rc == UNWIND_RC and ref.out == UNWIND_OUT, "reference run", ref)
        for n in (1, 2, 3):
            r, out = run_prog(s, "run%d" % n, UNWIND,
                              ["counter:top=0", fail_nth("n=%d,kind=%s,mode=%s,file=prog.py" % (n, kind, mode))])
            check(r.rc == UNWIND_RC, "n=%d: the program's exit status changed" % n, r)
            check(r.out == UNWIND_OUT, "n=%d: the program's exceptions changed" % n, r)
            failure_block(r, "fail_nth", code, [x.replace("N", str(n)) for x in needles])
            check(counter_data(out, r) == counter_data(ref_out, ref),
                  "n=%d: counter's counts differ" % n, r)


def unwind_python():
    pending("unwind", "python", "PTK_EPYTHON",
            ["RuntimeError: fail_nth raised on return event N as asked"])


def unwind_leak():
    pending("unwind", "leak", "PTK_EPYTHON",
            ["RuntimeError: fail_nth left this exception set on return event N"])


def unwind_error():
    pending("unwind", "error", "PTK_EIO", ["fail_nth failed on return event N as asked"])


def unwind_pycode():
    pending("unwind", "pycode", "PTK_EPYTHON", ["LookupError: fail_nth: raised from Python code"])


def exception_python():
    """On the EXCEPTION trace event, which CPython sends with the program's
    exception set."""
    pending("exception", "python", "PTK_EPYTHON",
            ["RuntimeError: fail_nth raised on exception event N as asked"])


def exception_leak():
    pending("exception", "leak", "PTK_EPYTHON",
            ["RuntimeError: fail_nth left this exception set on exception event N"])


def c_exception_python():
    """On C_EXCEPTION, sent while the C function's exception is pending."""
    pending("c_exception", "python", "PTK_EPYTHON",
            ["RuntimeError: fail_nth raised on c_exception event N as asked"])


def c_exception_error():
    pending("c_exception", "error", "PTK_EIO", ["fail_nth failed on c_exception event N as asked"])


def in_a_thread():
    """The failure happens in a worker thread (--threads all): the thread
    and the program finish normally; the failure is reported at the end."""
    prog = textwrap.dedent("""\
        import sys, threading
        out = []
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        def worker():
            try:
                raise KeyError("in the thread")
            except KeyError as e:
                out.append(repr(e))
            out.append(fib(15))
        t = threading.Thread(target=worker, name="the-worker")
        t.start()
        t.join()
        print(out)
        sys.exit(6)
        """)
    with Scratch("thread") as s:
        ref, ref_out = run_prog(s, "ref", prog, ["counter:top=0", fail_nth("n=0,file=prog.py")])
        check(ref.rc == 6 and ref.out == "[\"KeyError('in the thread')\", 610]\n", "reference", ref)
        for mode, code in (("python", "PTK_EPYTHON"), ("error", "PTK_EIO"), ("leak", "PTK_EPYTHON")):
            r, out = run_prog(s, "run-" + mode, prog,
                              ["counter:top=0", fail_nth("n=50,kind=call,file=prog.py,mode=" + mode)])
            check(r.rc == 6 and r.out == ref.out, "the program changed", r)
            failure_block(r, "fail_nth", code, ["call event 50"])
            check(program_calls(out, r) == program_calls(ref_out, ref), "counter's counts differ", r)
            names = [t["name"] for t in load_json(os.path.join(out, "counter.json"))["threads"]]
            check("the-worker" in names, "the worker's events: %r" % names, r)


def two_sessions():
    """A plugin failing in one session leaves another session's plugins
    alone: its counts equal those of the same session run by itself."""
    code = textwrap.dedent("""\
        import json, sys, pytracekit
        def work():
            def fib(n):
                return n if n < 2 else fib(n - 1) + fib(n - 2)
            try:
                fib(14)
                raise OSError("the program's")
            except OSError as e:
                return repr(e)
        a = pytracekit.Session(["counter:top=0"], output_dir=sys.argv[1])
        b = None
        if sys.argv[2] == "both":
            b = pytracekit.Session([%r, "counter:top=0"], output_dir=sys.argv[3])
            b.start()
        a.start()
        result = work()
        a.stop()
        if b is not None:
            b.stop()
            print("b failed", b.report())
        print("a failed", a.report(), result)
        """) % fail_nth("n=100,mode=python")
    with Scratch("two") as s:
        from ptk_loader_util import PYTHON, run
        prog = s.write("prog.py", code)
        alone = run([PYTHON, prog, s.join("alone"), "alone"], cwd=s.path)
        check(alone.rc == 0 and alone.out == "a failed 0 OSError(\"the program's\")\n",
              "alone", alone)
        r = run([PYTHON, prog, s.join("a"), "both", s.join("b")], cwd=s.path)
        check(r.rc == 0, "the program failed", r)
        check(r.out == "b failed 1\na failed 0 OSError(\"the program's\")\n", "output", r)
        failure_block(r, "fail_nth", "PTK_EPYTHON", ["RuntimeError: fail_nth raised on "],
                      last=False)
        # Python calls only: whether the C_RETURN of a.start() is seen
        # depends on a hook being installed when the call began
        def py_only(d):
            return ({k: d["events"][k] for k in ("call", "return", "exception", "line")},
                    [f for f in d["functions"] if '"kind": "python"' in f])
        check(py_only(counter_data(s.join("a"), r)) == py_only(counter_data(s.join("alone"), alone)),
              "the other session's counts changed", r)
        load_json(s.join("b", "counter.json"), r)


def module_session():
    """The same through the Python module: report() returns the number of
    failed plugins, the code in the with-block keeps its exceptions."""
    code = textwrap.dedent("""\
        import sys, pytracekit
        def inner():
            raise ZeroDivisionError("mine")
        s = pytracekit.Session(["counter:top=0", %r], output_dir=%r)
        s.start()
        try:
            inner()
        except ZeroDivisionError as e:
            print("caught", repr(e), repr(e.__context__))
        s.stop()
        print("failed", s.report())
        """)
    with Scratch("module") as s:
        out = s.join("out")
        from ptk_loader_util import PYTHON, run
        r = run([PYTHON, "-c", code % (fail_nth("n=1,kind=unwind,mode=python"), out)],
                cwd=s.path)
        check(r.rc == 0, "the program failed", r)
        check(r.out == "caught ZeroDivisionError('mine') None\nfailed 1\n", "output", r)
        failure_block(r, "fail_nth", "PTK_EPYTHON",
                      ["RuntimeError: fail_nth raised on return event 1 as asked"])
        load_json(os.path.join(out, "counter.json"), r)


CASES = {f.__name__: f for f in [
    nth_error, nth_error_first, nth_error_call, nth_python, nth_python_first, nth_pycode,
    nth_leak, report_fails, report_fails_status, unwind_python, unwind_leak, unwind_error, unwind_pycode,
    exception_python, exception_leak, c_exception_python, c_exception_error, in_a_thread,
    two_sessions,
    module_session]}

if __name__ == "__main__":
    main(CASES)
