"""The traced program under the command: its exit status (sys.exit, an
uncaught exception, KeyboardInterrupt), reports written in every case, and
sys.argv, sys.path, __main__ exactly as under plain python.

usage: test_program.py CASE
"""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

from ptk_loader_util import (CLI, PYTHON, Scratch, check, check_in, clean_env, cli,
                             leftovers, load_json, main, run)

SHOW = textwrap.dedent("""\
    import json, sys
    import __main__
    spec = getattr(__main__, "__spec__", None)
    print(json.dumps({
        "argv": sys.argv,
        "orig_argv": sys.orig_argv[1:],
        "path": sys.path,
        "name": __name__,
        "file": getattr(__main__, "__file__", None),
        "spec": spec.name if spec is not None else None,
        "package": __package__,
        "main_keys": sorted(k for k in vars(__main__) if k.startswith("__")),
        "executable": sys.executable,
        "prefix": [sys.prefix, sys.exec_prefix],
        "flags": [sys.flags.isolated, sys.flags.no_site, sys.flags.optimize,
                  sys.flags.inspect, sys.flags.interactive],
        "cwd": __import__("os").getcwd(),
    }, indent=1))
    """)


def reports_written(out, r):
    data = load_json(os.path.join(out, "counter.json"), r)
    check(data["events"]["call"] > 0, "counter counted nothing", r)
    check(leftovers(out) == [], "temporary report files left: %r" % leftovers(out), r)
    check_in("pytracekit counter:", r.err, "counter's summary", r)


def both(s, args, cwd=None, stdin=None):
    """Runs python ARGS and pytracekit ARGS; returns both results."""
    cwd = cwd or s.path
    py = run([PYTHON] + args, cwd=cwd, stdin=stdin)
    tk = run([CLI, "-o", s.join("out")] + args, cwd=cwd, stdin=stdin)
    return py, tk


def same_as_python(s, args, cwd=None, stdin=None):
    py, tk = both(s, args, cwd, stdin)
    check(py.rc == 0, "plain python failed", py)
    check(tk.rc == 0, "pytracekit failed", tk)
    a, b = json.loads(py.out), json.loads(tk.out)
    diff = {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}
    check(not diff, "differences from plain python (python, pytracekit): %r" % diff, tk)
    reports_written(s.join("out"), tk)
    return a


def exit_status():
    with Scratch("exit") as s:
        for code, want in (("sys.exit(3)", 3), ("sys.exit(0)", 0), ("sys.exit()", 0),
                           ("sys.exit(None)", 0), ("sys.exit(255)", 255),
                           ("raise SystemExit(7)", 7)):
            prog = s.write("prog.py", "import sys\nprint('before')\n%s\nprint('after')\n" % code)
            out = s.join("out-%d" % want)
            r = cli(["-o", out, prog], cwd=s.path)
            check(r.rc == want, "%s: exit status %r, expected %d" % (code, r.rc, want), r)
            check(r.out == "before\n", "%s: output" % code, r)
            reports_written(out, r)


def exit_message():
    """sys.exit("text"): status 1 and the text on stderr, as python does."""
    with Scratch("exit-msg") as s:
        prog = s.write("prog.py", "import sys\nsys.exit('the program says goodbye')\n")
        py, tk = both(s, [prog])
        check(tk.rc == py.rc == 1, "exit status %r (python: %r)" % (tk.rc, py.rc), tk)
        check_in("the program says goodbye\n", tk.err, "stderr", tk)
        check(tk.err.index("the program says goodbye") < tk.err.index("pytracekit counter:"),
              "the program's message comes before the summaries", tk)
        reports_written(s.join("out"), tk)


def uncaught():
    """An uncaught exception: status 1, the traceback on stderr, reports."""
    with Scratch("uncaught") as s:
        prog = s.write("prog.py", textwrap.dedent("""\
            def parse(text):
                return int(text)
            print("starting")
            try:
                parse("x")
            except ValueError:
                pass
            raise ValueError("the program's own failure")
            """))
        py, tk = both(s, [prog])
        check(tk.rc == py.rc == 1, "exit status %r (python: %r)" % (tk.rc, py.rc), tk)
        check(tk.out == "starting\n", "stdout", tk)
        tb = ("Traceback (most recent call last):\n"
              '  File "%s", line 8, in <module>\n' % prog)
        check_in(tb, tk.err, "traceback", tk)
        check_in("ValueError: the program's own failure\n", tk.err, "traceback", tk)
        # python's own stderr, line for line, is a prefix of ours
        check(tk.err.startswith(py.err), "stderr differs from python's:\n%s" % py.err, tk)
        reports_written(s.join("out"), tk)


def uncaught_in_code():
    """-c: the same with a <string> traceback."""
    with Scratch("uncaught-c") as s:
        py, tk = both(s, ["-c", "def f():\n    1/0\nf()\n"])
        check(tk.rc == py.rc == 1, "exit status %r (python: %r)" % (tk.rc, py.rc), tk)
        check(tk.err.startswith(py.err), "stderr differs from python's:\n%s" % py.err, tk)
        check_in("ZeroDivisionError: division by zero", tk.err, "traceback", tk)
        reports_written(s.join("out"), tk)


def keyboard_interrupt_raised():
    """raise KeyboardInterrupt: the status python gives (it dies of SIGINT),
    reports written."""
    with Scratch("kbd") as s:
        prog = s.write("prog.py", "print('working', flush=True)\nraise KeyboardInterrupt\n")
        py, tk = both(s, [prog])
        check(tk.rc == py.rc, "exit status %r, python gives %r" % (tk.rc, py.rc), tk)
        check(py.rc in (-signal.SIGINT, 128 + signal.SIGINT, 1), "python's status %r" % py.rc, py)
        check_in("KeyboardInterrupt", tk.err, "traceback", tk)
        reports_written(s.join("out"), tk)


def keyboard_interrupt_signal():
    """SIGINT sent to the process while the program sleeps: the program's
    finally runs, the status is python's, reports are written."""
    prog = textwrap.dedent("""\
        import time
        print("ready", flush=True)
        try:
            time.sleep(60)
        finally:
            print("finally ran", flush=True)
        """)
    with Scratch("sigint") as s:
        script = s.write("prog.py", prog)
        results = {}
        for name, cmd in (("python", [PYTHON, script]),
                          ("pytracekit", [CLI, "-o", s.join("out"), script])):
            p = subprocess.Popen(cmd, cwd=s.path, env=clean_env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                line = p.stdout.readline()
                check(line == "ready\n", "%s did not start: %r" % (name, line))
                time.sleep(0.2)
                p.send_signal(signal.SIGINT)
                out, err = p.communicate(timeout=60)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            results[name] = (p.returncode, out, err)
        (prc, pout, perr), (trc, tout, terr) = results["python"], results["pytracekit"]
        check(trc == prc, "exit status %r, python gives %r\n%s" % (trc, prc, terr))
        check(tout == pout == "finally ran\n", "stdout %r (python: %r)" % (tout, pout))
        check("KeyboardInterrupt" in terr, "no traceback:\n" + terr)
        data = load_json(s.join("out", "counter.json"))
        check(data["events"]["call"] > 0, "counter counted nothing")
        check("pytracekit counter:" in terr, "no summary:\n" + terr)


def script_form():
    with Scratch("argv-script") as s:
        s.write("prog.py", SHOW)
        a = same_as_python(s, ["prog.py", "a", "-b", "--c", "-m", "x", "--", "-c"])
        check(a["argv"][0] == "prog.py" and a["path"][0] == s.path, "argv/path: %r" % a)


def script_elsewhere():
    """A script in another directory, by a relative path: sys.path[0] is
    its directory."""
    with Scratch("argv-elsewhere") as s:
        s.write("sub/dir/prog.py", SHOW)
        os.mkdir(s.join("cwd"))
        a = same_as_python(s, ["../sub/dir/prog.py", "arg"], cwd=s.join("cwd"))
        check(a["path"][0] == s.join("sub", "dir"), "sys.path[0] %r" % a["path"][0])


def script_after_dashdash():
    """`pytracekit -o DIR -- SCRIPT`: the same program."""
    with Scratch("argv-dd") as s:
        s.write("prog.py", SHOW)
        py = run([PYTHON, "prog.py", "x"], cwd=s.path)
        tk = cli(["-o", s.join("out"), "--", "prog.py", "x"], cwd=s.path)
        check(tk.rc == 0 and json.loads(tk.out) == json.loads(py.out),
              "differs from python:\n" + py.out, tk)


def script_named_like_option():
    """`pytracekit -- -name.py`: a script whose name starts with '-' runs
    as `python -- -name.py` runs it (not parsed as interpreter options)."""
    with Scratch("argv-dashname") as s:
        s.write("-prog.py", SHOW)
        py = run([PYTHON, "--", "-prog.py", "x"], cwd=s.path)
        check(py.rc == 0, "plain python failed", py)
        tk = cli(["-o", s.join("out"), "--", "-prog.py", "x"], cwd=s.path)
        check(tk.rc == 0, "pytracekit failed", tk)
        a, b = json.loads(py.out), json.loads(tk.out)
        a.pop("orig_argv"), b.pop("orig_argv")
        check(a == b, "differs from python:\n" + py.out, tk)


def module_form():
    with Scratch("argv-module") as s:
        s.write("pkg/__init__.py", "")
        s.write("pkg/show.py", SHOW)
        a = same_as_python(s, ["-m", "pkg.show", "x", "-m", "--y"])
        check(a["spec"] == "pkg.show" and a["package"] == "pkg", "module: %r" % a)
        check(a["argv"][0] == s.join("pkg", "show.py"), "argv[0] %r" % a["argv"][0])


def package_main_form():
    """-m PACKAGE runs PACKAGE.__main__."""
    with Scratch("argv-pkgmain") as s:
        s.write("app/__init__.py", "")
        s.write("app/__main__.py", SHOW)
        a = same_as_python(s, ["-m", "app", "1"])
        check(a["spec"] == "app.__main__", "spec %r" % a["spec"])


def code_form():
    with Scratch("argv-code") as s:
        a = same_as_python(s, ["-c", SHOW, "q", "-r"])
        check(a["argv"] == ["-c", "q", "-r"] and a["path"][0] == "", "argv/path: %r" % a)


def stdin_form():
    """`pytracekit -` reads the program from stdin, like python."""
    with Scratch("argv-stdin") as s:
        a = same_as_python(s, ["-", "z"], stdin=SHOW)
        check(a["argv"] == ["-", "z"], "argv %r" % a["argv"])


def missing_script():
    """A script that does not exist: python's message and status."""
    with Scratch("noscript") as s:
        py, tk = both(s, ["nosuch_script.py"])
        check(py.rc != 0 and tk.rc == py.rc, "exit status %r (python: %r)" % (tk.rc, py.rc), tk)
        check_in("can't open file", tk.err, "stderr", tk)
        # no program ran: no summary, no report
        check("pytracekit counter" not in tk.err, "a summary was printed", tk)
        check(not os.path.exists(s.join("out", "counter.json")), "a report was written", tk)


def missing_module():
    with Scratch("nomodule") as s:
        py, tk = both(s, ["-m", "nosuch_module_xyz"])
        check(py.rc != 0 and tk.rc == py.rc, "exit status %r (python: %r)" % (tk.rc, py.rc), tk)
        check_in("No module named nosuch_module_xyz", tk.err, "stderr", tk)


def program_output_unchanged():
    """stdout is the program's alone (summaries go to stderr), byte for byte."""
    with Scratch("stdout") as s:
        prog = s.write("prog.py", "import sys\nfor i in range(3):\n    print(i, 'x' * i)\n"
                                  "sys.stdout.write('no newline')\n")
        py, tk = both(s, [prog])
        check(tk.rc == 0 and tk.out == py.out, "stdout differs from python's %r" % py.out, tk)


def hub_work_not_traced():
    """The hub's own Python work at start (importing threading, calling
    threading.setprofile/settrace for --threads all) is not delivered to
    the plugins as if the program had done it: a program that does nothing
    shows no module import and no threading hook calls."""
    with Scratch("hubwork") as s:
        prog = s.write("prog.py", "pass\n")
        for threads in ("all", "current"):
            out = s.join("out-" + threads)
            r = cli(["-o", out, "--threads", threads, "-p", "counter:events=all",
                     prog], cwd=s.path)
            check(r.rc == 0, "run failed", r)
            data = load_json(os.path.join(out, "counter.json"), r)
            bad = [f for f in data["functions"]
                   if f["qualname"] in ("_find_and_load", "setprofile", "settrace",
                                        "getprofile", "gettrace", "setprofile_all_threads",
                                        "settrace_all_threads")
                   or (f["name"] == "<module>" and f["file"] != prog)]
            check(not bad, "--threads %s: the hub's own calls were traced: %s"
                  % (threads, json.dumps(bad[:8], indent=1)), r)


def launcher_not_traced():
    """What the interpreter does before the program starts (is the script a
    zip file or a directory? opening it) is not the program's: a one-line
    script's report has none of it. (The loader python makes for __main__
    as it runs the file, FileLoader.__init__, is part of running it.)"""
    launcher = {"zipimporter.__init__", "_read_directory", "open_code",
                "FileFinder.path_hook.<locals>.path_hook_for_FileFinder",
                "_path_stat", "_path_isdir"}
    with Scratch("launcher") as s:
        prog = s.write("prog.py", "x = 1\n")
        for args in ([prog], ["-c", "x = 1"]):
            out = s.join("out%d" % len(args))
            r = cli(["-o", out, "-p", "counter:events=all"] + args, cwd=s.path)
            check(r.rc == 0, "run failed", r)
            data = load_json(os.path.join(out, "counter.json"), r)
            bad = [f["qualname"] for f in data["functions"]
                   if f["qualname"] in launcher or f.get("file") == "<frozen zipimport>"]
            check(not bad, "%r: the launcher's frames are in the report: %r" % (args, bad), r)
            mod = [f for f in data["functions"] if f["qualname"] == "<module>"]
            check([f["calls"] for f in mod] == [1], "<module>: %r" % mod, r)


EXIT_IN_ATEXIT = textwrap.dedent("""\
    import atexit, os, sys
    def marker():
        return 42
    def bye():
        marker()
        sys.stdout.flush()
        os._exit(7)
    atexit.register(bye)
    print("registered")
    """)


def os_exit_in_atexit():
    """os._exit in the program's atexit callback (which runs before the
    command's own): the reports are written all the same, with the
    callback's calls, and the status is the one os._exit gave."""
    with Scratch("os-exit") as s:
        prog = s.write("prog.py", EXIT_IN_ATEXIT)
        out = s.join("out")
        r = cli(["-o", out, "-p", "counter:top=0", prog], cwd=s.path)
        check(r.rc == 7 and r.out == "registered\n", "exit status 7 expected", r)
        reports_written(out, r)
        calls = {f["qualname"]: f["calls"] for f in load_json(os.path.join(out, "counter.json"))["functions"]}
        check(calls.get("marker") == 1 and calls.get("bye") == 1,
              "the atexit callback's calls: %r" % calls, r)


def os_exit_direct_and_child():
    """os._exit in the program itself writes the reports; os._exit in a
    forked child does not (the child's counts would replace the parent's)."""
    code = textwrap.dedent("""\
        import os, sys
        def parent_only():
            return 1
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        parent_only()
        sys.stdout.flush()
        os._exit(3)
        """)
    with Scratch("os-exit-child") as s:
        prog = s.write("prog.py", code)
        out = s.join("out")
        r = cli(["-o", out, "-p", "counter:top=0", prog], cwd=s.path)
        check(r.rc == 3, "exit status 3 expected", r)
        reports_written(out, r)
        calls = {f["qualname"]: f["calls"] for f in load_json(os.path.join(out, "counter.json"))["functions"]}
        check(calls.get("parent_only") == 1, "the parent's report: %r" % calls, r)
        check(r.err.count("pytracekit counter:") == 1, "one summary (the parent's)", r)


SWITCH_OFF = textwrap.dedent("""\
    import sys, threading, time
    def before():
        pass
    def after():
        pass
    before()
    time.sleep(0.2)
    def mine(frame, event, arg):
        pass
    MODE
    after()
    """)


def own_hook_noted():
    """Legacy backend: the program's own sys.setprofile / sys.settrace /
    threading.setprofile_all_threads replaces the hub's function on a
    thread; the events after it are lost, and the report says so, with the
    thread and the time."""
    modes = [("sys.setprofile(mine)", "profile", "counter:top=0"),
             ("sys.setprofile(None)", "profile", "counter:top=0"),
             ("sys.settrace(mine)", "trace", "counter:top=0,events=line")]
    if hasattr(threading_module(), "setprofile_all_threads"):
        modes.append(("threading.setprofile_all_threads(mine)", "profile", "counter:top=0"))
    with Scratch("own-hook") as s:
        for i, (mode, which, spec) in enumerate(modes):
            prog = s.write("prog%d.py" % i, SWITCH_OFF.replace("MODE", mode))
            out = s.join("out%d" % i)
            r = cli(["-o", out, "--backend", "legacy", "-p", spec, prog], cwd=s.path)
            check(r.rc == 0, "%s: run failed" % mode, r)
            m = re.search(r"pytracekit: on thread 'MainThread' \(\d+\) the program replaced "
                          r"pytracekit's %s function \(sys\.set%s or threading\.set%s_all_threads\) "
                          r"([0-9.]+) s after the start: the events of that thread after it are "
                          r"missing from these reports\n" % (which, which, which), r.err)
            check(m is not None, "%s: no notice" % mode, r)
            check(0.2 <= float(m.group(1)) < 60, "%s: time %s" % (mode, m.group(1)), r)
        # a program that leaves the hooks alone gets no notice
        prog = s.write("quiet.py", SWITCH_OFF.replace("MODE", "pass"))
        r = cli(["-o", s.join("quiet"), "--backend", "legacy", "-p", "counter:top=0", prog],
                cwd=s.path)
        check(r.rc == 0 and "the program replaced" not in r.err, "a notice without cause", r)


def threading_module():
    import threading
    return threading


WHERE = "import os, sys\nprint(os.path.realpath(os.readlink('/proc/self/exe')))\n" \
        "print(any('libpython' in l for l in open('/proc/self/maps')))\n"


def launch_modes():
    """Which process runs the program: the command itself embedding
    libpython (PYTRACEKIT_LAUNCH=embed), or the interpreter's executable
    running -m pytracekit (exec). The default is exec where the build found
    it faster (a statically linked interpreter, the command on the shared
    libpython: cmake/libpython.cmake), embed elsewhere."""
    with Scratch("launch") as s:
        seen = {}
        for mode in ("embed", "exec", "auto"):
            r = cli(["-o", s.join("out-" + mode), "-c", WHERE], cwd=s.path,
                    env=clean_env({"PYTRACEKIT_LAUNCH": mode}))
            check(r.rc == 0, "%s: run failed" % mode, r)
            exe, shared = r.out.split()
            seen[mode] = (exe, shared == "True")
            reports_written(s.join("out-" + mode), r)
        check(seen["embed"][0] == os.path.realpath(CLI), "embed: ran in %s" % seen["embed"][0])
        check(seen["exec"][0] == os.path.realpath(PYTHON), "exec: ran in %s" % seen["exec"][0])
        # the oracle for the default: does the interpreter map a libpython,
        # does the command?
        py = run([PYTHON, "-c", WHERE])
        static_python = py.out.split()[1] == "False"
        command_shared = seen["embed"][1]
        want = "exec" if static_python and command_shared else "embed"
        print("interpreter statically linked: %s, command on a shared libpython: %s"
              % (static_python, command_shared))
        check(seen["auto"] == seen[want], "default: ran in %s, expected %s (%s)"
              % (seen["auto"][0], want, seen[want][0]))
        r = cli(["-c", "pass"], cwd=s.path, env=clean_env({"PYTRACEKIT_LAUNCH": "fork"}))
        check(r.rc == 2 and r.err == "pytracekit: PYTRACEKIT_LAUNCH=fork: expected "
              "auto, embed or exec\n", "a bad PYTRACEKIT_LAUNCH", r)


RUNNER_FILE = re.compile(r"[/\\]pytracekit[/\\](__main__|__init__|combining|_command|_follow)")


def runner_not_traced_exec():
    """Run by the interpreter (PYTRACEKIT_LAUNCH=exec), the program's report
    is the embedded run's: the same functions, Python and C, with the same
    calls, for a script, -c and -m, and nothing of the start-up hook that
    prepares the session (python/pytracekit/_command/)."""
    with Scratch("runner-exec") as s:
        s.write("prog.py", "def f():\n    return 1\nfor _ in range(3):\n    f()\n")
        for args in (["prog.py"], ["-c", "def f():\n    return 1\nf()\n"], ["-m", "prog"]):
            got = {}
            for mode in ("embed", "exec"):
                out = s.join("out-%s-%d" % (mode, len(args)))
                r = cli(["-o", out, "-p", "counter:top=0,events=call;return;line;c_call;c_return"]
                        + args, cwd=s.path, env=clean_env({"PYTRACEKIT_LAUNCH": mode}))
                check(r.rc == 0, "%s %r: run failed" % (mode, args), r)
                data = load_json(os.path.join(out, "counter.json"), r)
                got[mode] = sorted((f["kind"], f["qualname"], f.get("file") or "", f["calls"])
                                   for f in data["functions"])
                # the package's own files (not any path through a directory
                # named pytracekit, such as the venvs' /var/cache/pytracekit)
                runner = [f for f in data["functions"] if RUNNER_FILE.search(f.get("file") or "")]
                check(not runner, "%s %r: the runner's frames: %r" % (mode, args, runner), r)
                got[mode + "-events"] = data["events"]
            check(got["exec"] == got["embed"], "%r: exec and embed differ:\n%s" % (
                args, "\n".join(map(str, sorted(set(got["exec"]) ^ set(got["embed"]))))))
            check(got["exec-events"] == got["embed-events"], "%r: events %r, embedded %r" % (
                args, got["exec-events"], got["embed-events"]))


def start_error_exec():
    """A start that fails (the output directory is a file) is the command's
    usage error under both launches: status 2, the same one line, and the
    program does not run. Run by the interpreter, the start and its checks
    are made when the program starts, not from the start-up hook (a start
    and stop there left 3.14's importlib without some of its events:
    core.backends.Differential.test_objects)."""
    with Scratch("start-error") as s:
        s.write("taken", "a file\n")
        said = {}
        for mode in ("embed", "exec"):
            marker = s.join("ran-" + mode)
            r = cli(["-o", s.join("taken"), "-p", "counter", "-c",
                     "open(%r, 'w').close()" % marker], cwd=s.path,
                    env=clean_env({"PYTRACEKIT_LAUNCH": mode}))
            check(r.rc == 2, "%s: status %d, expected 2" % (mode, r.rc), r)
            check(not os.path.exists(marker), "%s: the program ran" % mode, r)
            check(r.out == "" and r.err.startswith("pytracekit: ") and r.err.count("\n") == 1,
                  "%s: not one line" % mode, r)
            said[mode] = r.err
        check(said["exec"] == said["embed"], "exec said %r, embedded %r"
              % (said["exec"], said["embed"]))
        print("both: %s" % said["exec"].strip())


CASES = {f.__name__: f for f in [
    exit_status, exit_message, uncaught, uncaught_in_code, keyboard_interrupt_raised,
    keyboard_interrupt_signal, script_form, script_elsewhere, script_after_dashdash,
    script_named_like_option,
    module_form, package_main_form, code_form, stdin_form, missing_script, missing_module,
    program_output_unchanged, hub_work_not_traced, launcher_not_traced, os_exit_in_atexit,
    os_exit_direct_and_child, own_hook_noted, launch_modes, runner_not_traced_exec,
    start_error_exec]}

if __name__ == "__main__":
    main(CASES)
