"""python -m pytracekit: the pytracekit command, run by this interpreter.

Takes exactly the command's arguments, read by the command's own reader
(tools/ptk_cmdline.c, _pytracekit._parse_command_line; the usage text is
shared too, _pytracekit._usage) and behaves the same: options up to SCRIPT,
``-m MODULE``, ``-c CODE`` or ``--``; everything after belongs to the
program. The program runs as ``python`` would run it (sys.argv, sys.path[0],
a fresh ``__main__``); the session starts just before it and its reports
are written at exit (an atexit callback, as the command does), also when
the program raises, calls sys.exit or is interrupted. Exit status: the
program's own; 2 for a usage error or a plugin that fails to load.
"""
import atexit
import os
import sys
import types

from . import _pytracekit as _c
from . import Error, Session, _scan

EXIT_USAGE = 2
EXIT_REPORT_FAILED = 3  # the program's status was 0, a report failed


class Usage(Exception):
    """A command-line error: the message, then exit status 2."""

    def __init__(self, message, show_usage=False):
        super().__init__(message)
        self.show_usage = show_usage


# --include … --max-depth: the session's default filter, from the one list
# of filter keys (lib/ptk_filter_keys.h): flag -> (key, Session keyword)
FILTER_OPTIONS = {flag: (key, kw) for key, flag, kw, _, _ in _c._filter_keys}


def parse(argv):
    """Reads the command's arguments with the command's own reader
    (tools/ptk_cmdline.c, _pytracekit._parse_command_line).

    Returns a dict: plugins, output, threads, backend, plugin_path, filter
    ({flag: [values]} of the filter options, in the order given), list,
    action ("version", "help", "list" or "run"), mode (None for a script,
    "-m" or "-c"), target (script, module or code), args (the program's
    arguments) and follow. Raises Usage."""
    o, error = _c._parse_command_line(argv)
    if error is not None:
        raise Usage(error)
    return o


def session_filter(given):
    """Session's filter arguments for the filter flags given: the lists as
    their keywords (the items of a repeated flag add up), max_depth (the
    last one) as filter text, where the library checks it as for the
    command ("filter option 'max_depth' expects an integer")."""
    kw = {}
    for flag, values in given.items():
        key, keyword = FILTER_OPTIONS[flag]
        if key == "max_depth":
            kw["filter"] = f"max_depth={values[-1]}"
        else:
            kw[keyword] = values
    return kw


def list_plugins(plugin_path):
    """Prints what ``pytracekit --list-plugins`` prints."""
    for r in _scan(plugin_path):
        if r["error"] is not None:
            print(f"{r['file']}: rejected: {r['error']}")
            continue
        print(f"{r['name']} {r['version']} — {r['description']}\n"
              f"  file: {r['file']}\n  events:" +
              "".join(" " + e for e in r["events"]))
        for name, typ, choices, default, help_ in r["options"]:
            print(f"  option {name} ({typ}{': ' if choices else ''}"
                  f"{choices or ''}) default "
                  f"{default if default is not None else '(none)'}: {help_ or ''}")


def _fresh_main(filename=None):
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    if sys.version_info < (3, 14):
        main.__annotations__ = {}  # as python's own __main__ (before PEP 649)
    if filename is not None:
        main.__file__ = filename
        main.__cached__ = None
    sys.modules["__main__"] = main
    return main


def _start(session):
    """Starts the session; at exit it is stopped first, by the C method
    itself, so that no frame of this runner (its atexit callback) gets into
    the program's profile."""
    atexit.register(session.stop)
    session.start()


def _start_and_exec(session, code, main):
    """Starts the session and runs @code in @main's namespace, both in one C
    call: the builtin exec is the runner's call, not the program's."""
    atexit.register(session.stop)
    session._start_and_run(code, main.__dict__)


def _run(o, session):
    """Runs the program as `python` would, with the session started."""
    mode, target, args = o["mode"], o["target"], o["args"]
    if mode == "-c":
        sys.argv = ["-c"] + args
        sys.path[0] = ""
        main = _fresh_main()
        code = compile(target, "<string>", "exec")
        _start_and_exec(session, code, main)
    elif mode == "-m":
        import runpy
        sys.argv = ["-m"] + args
        sys.path[0] = os.getcwd()
        _fresh_main()  # runpy runs the module in __main__'s namespace
        _start(session)
        runpy._run_module_as_main(target, alter_argv=True)
    else:
        sys.argv = [target] + args
        # absolute as python makes it: joined to the working directory,
        # not normalised ("../x.py" stays in __file__)
        path = target if os.path.isabs(target) else os.path.join(os.getcwd(), target)
        if os.path.isdir(target) or not target.endswith(".py") and _is_zip(target):
            import runpy  # a directory or zip with __main__.py: as python
            sys.path[0] = path  # runs it (pymain_run_python)
            _fresh_main()
            _start(session)
            runpy._run_module_as_main("__main__", alter_argv=False)
            return
        try:
            if target == "-":
                source, target = sys.stdin.buffer.read(), "<stdin>"
            else:
                with open(target, "rb") as f:
                    source = f.read()
        except OSError as e:
            print(f"{sys.executable}: can't open file {path!r}: "
                  f"[Errno {e.errno}] {e.strerror}", file=sys.stderr)
            sys.exit(EXIT_USAGE)
        sys.path[0] = "" if target == "<stdin>" else \
            os.path.dirname(os.path.realpath(target))
        # __file__ and co_filename are absolute, as python makes them (3.9+)
        filename = target if target == "<stdin>" else path
        main = _fresh_main(filename)
        code = compile(source, filename, "exec")
        _start_and_exec(session, code, main)


class _NoSession:
    """--armed: the program runs as _run runs it, with no session (it
    comes with `pytracekit attach`)."""

    def start(self):
        pass

    def stop(self):
        pass

    def _start_and_run(self, code, namespace):
        exec(code, namespace)


def _is_zip(path):
    import zipfile
    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def module_usage():
    """The command's usage text, as `python -m pytracekit`."""
    return (_c._usage.replace("usage: pytracekit", "usage: python -m pytracekit")
            .replace("\n       pytracekit ", "\n       python -m pytracekit "))


def _coverage_config(o):
    """The coverage plugin's spec completed from the project's coverage.py
    configuration ([run]), as the command does (tools/cov_config.c); what
    reading it imported leaves sys.modules again. Raises Error."""
    # (no coverage spec, or nothing to read: the reader would leave the
    # specs as they are)
    if not any(_c._coverage_config_needed(p) for p in o["plugins"]):
        return
    before = set(sys.modules)
    try:
        from . import _coverage_format as covfmt
        for k, spec in enumerate(o["plugins"]):
            try:
                o["plugins"][k], follow = covfmt.run_plugin_spec(spec)
            except covfmt.ConfigError as e:
                raise Error(f"coverage: {e}") from None
            o["follow"] = o["follow"] or follow
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]


def main(argv=None):
    """Runs the command; returns an exit status, or raises what the program
    raised (SystemExit, KeyboardInterrupt, an uncaught exception)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "combine":
        from .combining import main as combine_main
        return combine_main(argv[1:])
    if argv and argv[0] in ("attach", "detach", "dump"):
        from ._attach_cli import main as attach_main
        return attach_main(argv)
    if argv and argv[0] in ("report", "html", "xml", "json", "lcov"):
        from . import _coverage_format as covfmt
        return covfmt.report_main(argv[0], argv[1:])
    try:
        o = parse(argv)
    except Usage as e:
        print(f"pytracekit: {e}", file=sys.stderr)
        return EXIT_USAGE
    if o["action"] == "version":
        print(f"pytracekit {_c.version()} (built for Python {_c._built_for})")
        return 0
    if o["action"] == "help":
        sys.stdout.write(module_usage())
        return 0
    if o["action"] == "list":
        list_plugins(o["plugin_path"])
        return 0
    if o["armed"]:
        from ._attach import arm
        arm()
        _run(o, _NoSession())
        return 0
    try:
        _coverage_config(o)
        session = Session(o["plugins"], output_dir=o["output"],
                          threads=o["threads"], backend=o["backend"],
                          plugin_path=o["plugin_path"],
                          follow_children=o["follow"],
                          **session_filter(o["filter"]))
    except Error as e:
        print(f"pytracekit: {e}", file=sys.stderr)
        return EXIT_USAGE

    status = {"code": None}  # the program's exit status, once known
    main_pid = os.getpid()  # a forked child reports into its pid-N/

    def finish():
        if session.running:
            session.stop()
        # as the command: a plugin detached during the run, or one whose
        # report failed, wrote no report (docs/processes.md); the reports
        # are not read back (Session.report's results)
        failed = _c.Session.report(session) > 0
        session.close()
        if os.getpid() == main_pid:
            print(f"pytracekit: reports in {o['output']}/ (run.json lists them)",
                  file=sys.stderr)
        if failed and status["code"] == 0:
            # as the command: a report that could not be written turns
            # the program's 0 into EXIT_REPORT_FAILED
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_REPORT_FAILED)

    atexit.register(finish)
    try:
        _run(o, session)
    except Error as e:
        if session.running:  # the program ran: its own error
            raise
        atexit.unregister(finish)
        atexit.unregister(session.stop)
        print(f"pytracekit: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:
        status["code"] = 0 if e.code is None else e.code
        raise
    status["code"] = 0
    return 0


if __name__ == "__main__":
    # a raise, not sys.exit(): a call of sys.exit while the session still
    # runs (it stops at exit) would be a runner's call in the profile
    raise SystemExit(main())
