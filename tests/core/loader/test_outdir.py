"""The output directory: one that cannot be made or written stops the run
before the program starts (exit status 2, a clear message); reports are
written atomically (no temporary file left, ever).

usage: test_outdir.py CASE
"""
import json
import os
import stat
import textwrap

from ptk_loader_util import (EXIT_USAGE, Scratch, check, check_in, cli, leftovers,
                             load_json, main, marker_program, skip, test_plugin)


def not_run(s, outdir, needles):
    marker = s.join("marker")
    r = cli(["-o", outdir, "-c", marker_program(marker)], cwd=s.path)
    check(r.rc == EXIT_USAGE, "expected exit status 2", r)
    check(not os.path.exists(marker), "the program ran", r)
    for n in needles:
        check_in(n, r.err, "stderr", r)
    check(r.err.startswith("pytracekit: "), "message prefix", r)
    return r


def under_a_file():
    """A path through a regular file (root cannot get around that)."""
    with Scratch("under-file") as s:
        f = s.write("plain-file", "x\n")
        for sub in ("sub", "sub/deeper"):
            path = os.path.join(f, sub)
            not_run(s, path, ["pytracekit: cannot create output directory %s: Not a directory" % path])
        if os.path.isfile("/etc/hostname"):
            not_run(s, "/etc/hostname/sub",
                    ["cannot create output directory /etc/hostname/sub: Not a directory"])


def in_proc():
    if not os.path.isdir("/proc/self"):
        skip("no /proc")
    with Scratch("proc") as s:
        not_run(s, "/proc/x", ["pytracekit: cannot create output directory /proc/x: "])


def passes_access_but_unwritable():
    """/proc and /sys as root: access(W_OK) says yes, creating a file says
    no. Found at start (a file is made and removed), not at exit."""
    found = False
    for d in ("/proc", "/sys"):
        # (in a chroot without /sys mounted, /sys is a plain directory)
        if not os.path.ismount(d) or not os.access(d, os.W_OK | os.X_OK):
            continue
        found = True
        with Scratch("special") as s:
            not_run(s, d, ["pytracekit: output directory %s is not writable: " % d])
    if not found:
        skip("neither /proc nor /sys passes access(W_OK) here (not root?)")


def too_long_cleaned():
    """A path too long to make fails at start and leaves none of the
    directories it made on the way."""
    with Scratch("too-long") as s:
        path = "/".join(["d%03d" % i for i in range(1200)])  # 6,000 characters
        r = not_run(s, path, ["pytracekit: cannot create output directory "])
        left = [n for n in os.listdir(s.path) if n != "marker"]
        check(left == [], "directories left behind: %r" % left[:3], r)
        # a part of the path that existed before is kept
        s.mkdir("d000")
        not_run(s, path, ["cannot create output directory "])
        check(os.listdir(s.join("d000")) == [], "left under d000: %r"
              % os.listdir(s.join("d000")), r)


def two_instances_one_file():
    """Two instances of one plugin in one run would write the same report
    file: the first keeps the name, the second writes NAME-2.EXT and the
    summary says so (no report silently replaced)."""
    with Scratch("two-instances") as s:
        out = s.join("out")
        prog = s.write("prog.py", "def f():\n    pass\nfor i in range(7):\n    f()\n")
        r = cli(["-o", out, "-p", "counter:top=0", "-p", "counter:top=0,events=call", prog],
                cwd=s.path)
        check(r.rc == 0, "run failed", r)
        check(sorted(os.listdir(out)) == ["counter-2.json", "counter.json", "run.json"],
              "files %r" % sorted(os.listdir(out)), r)
        first = load_json(os.path.join(out, "counter.json"), r)
        second = load_json(os.path.join(out, "counter-2.json"), r)
        check(first["events"]["return"] > 0 and second["events"]["return"] == 0,
              "the second report is the events=call instance's", r)
        check_in("pytracekit: %s/counter.json is another plugin instance's report: "
                 "this one ('counter') is %s/counter-2.json\n" % (out, out), r.err, "notice", r)
        # the same through two sessions of the Python module in one process
        code = textwrap.dedent("""\
            import pytracekit, sys
            a = pytracekit.Session(["counter:top=0"], output_dir=sys.argv[1])
            b = pytracekit.Session(["counter:top=0"], output_dir=sys.argv[1])
            a.start(); b.start(); b.stop(); a.stop()
            a.report(); b.report()
            """)
        from ptk_loader_util import PYTHON, run
        out2 = s.join("out2")
        r = run([PYTHON, "-c", code, out2], cwd=s.path)
        check(r.rc == 0, "module run failed", r)
        check(sorted(os.listdir(out2)) == ["counter-2.json", "counter.json", "run.json"],
              "module: files %r" % sorted(os.listdir(out2)), r)


def is_a_file():
    """-o naming an existing regular file: rejected up front, saying it is
    not a directory (also when the file is executable, which lets root pass
    access(W_OK|X_OK))."""
    with Scratch("is-file") as s:
        for mode in (0o644, 0o755):
            f = s.write("file-%o" % mode, "x\n", mode=mode)
            r = not_run(s, f, ["%s" % f])
            check("not a directory" in r.err.lower(), "the message should say it is not a "
                  "directory", r)
            with open(f) as fp:
                check(fp.read() == "x\n", "the file was changed")


def read_only_dir():
    if os.geteuid() == 0:
        skip("running as root: permissions do not stop root")
    with Scratch("readonly") as s:
        d = s.mkdir("ro")
        os.chmod(d, 0o555)
        try:
            not_run(s, d, ["pytracekit: output directory %s is not writable: Permission denied" % d])
            not_run(s, os.path.join(d, "sub"),
                    ["cannot create output directory %s/sub: Permission denied" % d])
        finally:
            os.chmod(d, 0o755)


def nested_created():
    with Scratch("nested") as s:
        out = s.join("a", "b", "c")
        r = cli(["-o", out, "-c", "pass"], cwd=s.path)
        check(r.rc == 0, "run failed", r)
        load_json(os.path.join(out, "counter.json"), r)
        # relative, and with a trailing slash
        r = cli(["-o", "rel/out/", "-c", "pass"], cwd=s.path)
        check(r.rc == 0, "run failed", r)
        load_json(s.join("rel", "out", "counter.json"), r)


def relative_fixed_at_start():
    """A relative -o is resolved when the session starts: a program that
    changes directory does not move its reports."""
    with Scratch("chdir") as s:
        s.mkdir("elsewhere")
        prog = s.write("prog.py", "import os\nos.chdir(%r)\n" % s.join("elsewhere"))
        r = cli(["-o", "out", prog], cwd=s.path)
        check(r.rc == 0, "run failed", r)
        load_json(s.join("out", "counter.json"), r)
        check(os.listdir(s.join("elsewhere")) == [], "a report went to the new directory", r)


def atomic_reports():
    """Only the final names are left: no .counter.json.XXXXXX, after a
    normal run, after sys.exit, after an uncaught exception, with several
    plugins, and when a file is replaced by a second run."""
    programs = {
        "normal": "print('hi')\n",
        "exit": "import sys\nsys.exit(9)\n",
        "raise": "raise RuntimeError('x')\n",
    }
    with Scratch("atomic") as s:
        out = s.join("out")
        for name, text in programs.items():
            prog = s.write(name + ".py", text)
            for plugins in (["counter"], ["counter", "timer"],
                            ["counter", test_plugin("fail_nth") + ":mode=report"]):
                args = ["-o", out] + [a for p in plugins for a in ("-p", p)] + [prog]
                r = cli(args, cwd=s.path)
                # 3: the program ended with 0 but fail_nth's report failed
                check(r.rc in (0, 1, 3, 9), "run failed", r)
                names = sorted(os.listdir(out))
                check(leftovers(out) == [], "temporary files left: %r" % names, r)
                check("counter.json" in names, "no counter.json: %r" % names, r)
                load_json(os.path.join(out, "counter.json"), r)
                if "timer" in plugins:
                    check(all(not n.startswith(".") for n in names), "names %r" % names, r)
        # a second run replaced the first one's file: its counts are the last run's
        prog = s.write("last.py", "def f():\n    pass\nfor i in range(321):\n    f()\n")
        r = cli(["-o", out, "-p", "counter", prog], cwd=s.path)
        data = load_json(os.path.join(out, "counter.json"), r)
        calls = [f["calls"] for f in data["functions"] if f["qualname"] == "f"]
        check(calls == [321], "counter.json is not the last run's: %r" % calls, r)
        check(leftovers(out) == [], "temporary files left", r)


def report_mode():
    """Report files get the usual permissions (0666 less the umask), not
    the 0600 of the temporary file they were written to."""
    with Scratch("mode") as s:
        out = s.join("out")
        old = os.umask(0o022)
        try:
            r = cli(["-o", out, "-c", "pass"], cwd=s.path)
        finally:
            os.umask(old)
        check(r.rc == 0, "run failed", r)
        mode = stat.S_IMODE(os.stat(os.path.join(out, "counter.json")).st_mode)
        check(mode == 0o644, "counter.json has mode %o, expected 644 with umask 022" % mode, r)


CASES = {f.__name__: f for f in [
    under_a_file, in_proc, passes_access_but_unwritable, too_long_cleaned,
    two_instances_one_file, is_a_file, read_only_dir, nested_created,
    relative_fixed_at_start, atomic_reports, report_mode]}

if __name__ == "__main__":
    main(CASES)
