"""The command's own interface: usage errors (exit status 2, a message, the
program not run), --list-plugins, --version, --help.

usage: test_usage.py CASE
"""
import os
import re

from ptk_loader_util import (EXIT_USAGE, PY_VERSION, TEST_PLUGIN_DIR, Scratch, check,
                             check_in, cli, clean_env, expect_ran, main, marker_program)


def usage_error(s, args, needles, usage=False):
    marker = s.join("marker")
    r = cli(list(args), cwd=s.path)
    check(r.rc == EXIT_USAGE, "expected exit status 2", r)
    check(not os.path.exists(marker), "the program ran", r)
    check(r.out == "", "nothing on stdout for a usage error", r)
    for n in needles:
        check_in(n, r.err, "stderr", r)
    if usage:
        # one line pointing to --help, not the whole usage text
        check("usage: pytracekit " not in r.err and r.err.count("\n") == 1 and
              "see --help" in r.err, "one line and 'see --help' on stderr", r)
    check(not os.path.exists(s.join("pytracekit-out")) and not os.path.exists(s.join("out")),
          "an output directory was created", r)
    return r


def unknown_option():
    with Scratch("unknown") as s:
        prog = marker_program(s.join("marker"))
        for opt in ("--bogus", "-x", "--plugins", "--list"):
            usage_error(s, [opt, "-c", prog], ["pytracekit: unknown option '%s'" % opt],
                        usage=True)
        # after other options too
        usage_error(s, ["-o", s.join("out"), "--frobnicate", "-c", prog],
                    ["pytracekit: unknown option '--frobnicate'"], usage=True)


def threads_bogus():
    with Scratch("threads") as s:
        prog = marker_program(s.join("marker"))
        for value in ("bogus", "ALL", "", "main"):
            usage_error(s, ["--threads", value, "-c", prog],
                        ["pytracekit: --threads expects 'current' or 'all', found '%s'" % value])


def threads_valid():
    with Scratch("threads-ok") as s:
        for value in ("current", "all"):
            expect_ran(s, ["--threads", value])


def backend_bogus():
    with Scratch("backend") as s:
        prog = marker_program(s.join("marker"))
        for value in ("bogus", "Legacy", ""):
            usage_error(s, ["--backend", value, "-c", prog],
                        ["pytracekit: --backend expects 'auto', 'legacy' or 'monitoring', "
                         "found '%s'" % value])
        # a wrong PYTRACEKIT_BACKEND is an error at start, not silence
        marker = s.join("marker")
        r = cli(["-o", s.join("out"), "-c", prog], cwd=s.path,
                env=clean_env({"PYTRACEKIT_BACKEND": "fast"}))
        check(r.rc == EXIT_USAGE, "expected exit status 2", r)
        check(not os.path.exists(marker), "the program ran", r)
        check_in("pytracekit: PYTRACEKIT_BACKEND is 'fast'; expected legacy, monitoring "
                 "or auto", r.err, "stderr", r)


def backend_valid():
    """legacy and auto run everywhere; monitoring runs on 3.12+ and is refused,
    before the program runs, on 3.11 (no sys.monitoring)."""
    have_monitoring = tuple(int(x) for x in PY_VERSION.split(".")[:2]) >= (3, 12)
    with Scratch("backend-ok") as s:
        for value in ("legacy", "auto"):
            expect_ran(s, ["--backend", value])
        if have_monitoring:
            expect_ran(s, ["--backend", "monitoring"])
            # --backend wins over the environment
            expect_ran(s, ["--backend", "monitoring"],
                       env=clean_env({"PYTRACEKIT_BACKEND": "legacy"}))
    if not have_monitoring:
        with Scratch("backend-no") as s:
            usage_error(s, ["--backend", "monitoring", "-c", marker_program(s.join("marker"))],
                        ["pytracekit: the monitoring backend needs CPython 3.12 or newer "
                         "(sys.monitoring); this is %s" % PY_VERSION])
            print("3.11: --backend monitoring refused as expected")


def no_program():
    with Scratch("noprog") as s:
        for args in ([], ["-p", "counter"], ["-o", s.join("out")], ["--threads", "all"], ["--"]):
            usage_error(s, args, ["pytracekit: no program given (SCRIPT, -m MODULE or -c CODE; see --help)"],
                        usage=True)


def missing_value():
    with Scratch("novalue") as s:
        for opt in ("-p", "--plugin", "-o", "--output", "--threads", "--plugin-path", "-c", "-m"):
            usage_error(s, [opt], ["pytracekit: %s needs a value" % opt])


def list_plugins():
    """The shipped plugins with their events and options; exit status 0."""
    with Scratch("list") as s:
        r = cli(["--list-plugins"], cwd=s.path)
        check(r.rc == 0, "--list-plugins failed", r)
        check(re.search(r"^counter \S+ — counts events", r.out, re.M),
              "counter is not listed", r)
        block = r.out[r.out.index("counter "):]
        for line in ("  file: ", "  events: call return c_call c_exception c_return\n",
                     "  option events (list) default profile: ",
                     "  option top (int) default 10: rows in the summary table\n"):
            check_in(line, block, "counter's entry", r)
        check(not os.path.exists(s.join("pytracekit-out")), "an output directory was created", r)


def list_plugins_paths():
    """Plugins from --plugin-path and PYTRACEKIT_PLUGIN_PATH are listed
    first; rejected files are listed with the reason; a name is listed once."""
    with Scratch("list-path") as s:
        env = clean_env({"PYTRACEKIT_PLUGIN_PATH": TEST_PLUGIN_DIR})
        for args, e in ((["--list-plugins", "--plugin-path", TEST_PLUGIN_DIR], None),
                        (["--list-plugins"], env)):
            r = cli(args, cwd=s.path, env=e)
            check(r.rc == 0, "--list-plugins failed", r)
            check_in("fail_nth 1 — test plugin: fails on its nth event\n  file: %s/fail_nth.so\n"
                     % TEST_PLUGIN_DIR, r.out, "fail_nth", r)
            check_in("  option mode (choice: error|python|leak|report|pycode) default error: ",
                     r.out, "choice options", r)
            check_in("%s/bad_abimajor.so: rejected: " % TEST_PLUGIN_DIR, r.out, "rejected", r)
            check_in("was built for plugin ABI 2.0, this host has ABI 1.7", r.out, "reason", r)
            check_in("%s/bad_noentry.so: rejected: " % TEST_PLUGIN_DIR, r.out, "rejected", r)
            check(r.out.index("fail_nth 1") < r.out.index("\ncounter "),
                  "the extra directory is listed first", r)
            check(r.out.count("\ncounter ") == 1, "counter listed once", r)


def version():
    import pytracekit
    with Scratch("version") as s:
        r = cli(["--version"], cwd=s.path)
        check(r.rc == 0, "--version failed", r)
        m = re.fullmatch(r"pytracekit (\S+) \(built for Python (\S+)\)\n", r.out)
        check(m is not None, "--version output", r)
        check(m.group(1) == pytracekit.version(), "version %r, the module says %r"
              % (m.group(1), pytracekit.version()), r)
        check(m.group(2) == PY_VERSION, "Python %r, this is %r" % (m.group(2), PY_VERSION), r)
        # it wins over a program: nothing runs
        r = cli(["--version", "-c", marker_program(s.join("marker"))], cwd=s.path)
        check(r.rc == 0 and not os.path.exists(s.join("marker")), "--version ran the program", r)


def help_text():
    with Scratch("help") as s:
        for opt in ("-h", "--help"):
            r = cli([opt], cwd=s.path)
            check(r.rc == 0, "%s failed" % opt, r)
            check(r.out.startswith("usage: pytracekit "), "%s: usage on stdout" % opt, r)
            for o in ("--plugin-path", "--list-plugins", "--threads", "-o, --output",
                      "-p, --plugin", "--backend NAME"):
                check_in(o, r.out, "help", r)


CASES = {f.__name__: f for f in [
    unknown_option, threads_bogus, threads_valid, backend_bogus, backend_valid, no_program, missing_value, list_plugins,
    list_plugins_paths, version, help_text]}

if __name__ == "__main__":
    main(CASES)
