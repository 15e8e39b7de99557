"""Start-up hook of the pytracekit command run by the interpreter.

On an interpreter whose executable has libpython linked in statically
(Debian's, Ubuntu's, Fedora's python3.X), the command does not embed the
slower shared libpython: it execs the interpreter with the very command
line `python` would be given for the program (tools/pytracekit.c), this
directory first on PYTHONPATH and its own arguments in _PYTRACEKIT_COMMAND
(hex, comma-separated). Python imports this module at start-up (`site`
imports `sitecustomize`); it puts the environment and sys.path back, imports
the sitecustomize it hides, and prepares the session as the command does:
the plugins loaded before the program, the start (and its checks) when the
program starts (the command's audit hook, in the extension), the reports at
exit. The program
runs as python runs it: no frame of ours is below it.
"""


def _restore():
    """Takes the command's variables out of the environment and this
    directory out of sys.path; returns (argv, package directory)."""
    import os
    import sys
    env = os.environ
    raw = env.pop("_PYTRACEKIT_COMMAND", None)
    pkgdir = env.pop("_PYTRACEKIT_PKGDIR", None)
    old = env.pop("_PYTRACEKIT_PYTHONPATH", None)
    if old is None:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = old
    here = os.path.dirname(os.path.abspath(__file__))
    given = [os.path.abspath(d) for d in (old or "").split(os.pathsep) if d]
    if here not in given:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        # nor a finder for it (importing this module searched it): a path
        # entry searched for the first time takes the program's imports
        # another way through the import system
        sys.path_importer_cache.pop(here, None)
    if raw is None:
        return None, pkgdir
    enc = sys.getfilesystemencoding()
    # every argument ends with a comma; an empty one ("--include ''") stays
    argv = [bytes.fromhex(h).decode(enc, "surrogateescape") for h in raw.split(",")[:-1]]
    return argv, pkgdir


def _chain():
    """Imports the sitecustomize module this one hides (the user's, or
    the start-up hook of a followed process). Returns this module when there
    is none: it stays sys.modules' sitecustomize until the import is done
    (the import system looks for it there), and goes when the program
    starts, which then finds the bare interpreter's modules."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me
            return me
    finally:
        sys.path[:] = saved
    return None


def _load(pkgdir, name, source=False):
    """The module pytracekit.NAME of the package in *pkgdir*, loaded without
    the package (whose imports, json, typing..., would be in sys.modules
    before the program's own) and not entered in sys.modules."""
    import os
    import _frozen_importlib as bootstrap
    import _frozen_importlib_external as external
    here = os.path.join(pkgdir, "pytracekit")
    if source:
        path = os.path.join(here, name + ".py")
        loader = external.SourceFileLoader("pytracekit." + name, path)
    else:
        path = next((os.path.join(here, name + sfx) for sfx in external.EXTENSION_SUFFIXES
                     if os.path.exists(os.path.join(here, name + sfx))), None)
        if path is None:
            raise ImportError("no %s extension in %s" % (name, here))
        loader = external.ExtensionFileLoader("pytracekit." + name, path)
    spec = bootstrap.spec_from_loader(loader.name, loader, origin=path)
    module = bootstrap.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _session_keywords(_c, o):
    """The session's arguments from the command's options, as python -m
    pytracekit makes them (pytracekit/__main__.py session_filter)."""
    keyword = {flag: (key, kw) for key, flag, kw, _, _ in _c._filter_keys}
    kw = {}
    for flag, values in o["filter"].items():
        key, name = keyword[flag]
        if key == "max_depth":
            kw["filter"] = "max_depth=%s" % values[-1]
        else:
            kw[name] = values
    return kw


def _coverage_config(_c, pkgdir, o):
    """The coverage plugin's specs completed from the project's coverage.py
    configuration, as the command does (tools/cov_config.c); nothing of the
    reader is run where there is none to read."""
    if not any(_c._coverage_config_needed(p) for p in o["plugins"]):
        return None
    covfmt = _load(pkgdir, "_coverage_format", source=True)
    for k, spec in enumerate(o["plugins"]):
        try:
            o["plugins"][k], follow = covfmt.run_plugin_spec(spec)
        except covfmt.ConfigError as e:
            return "coverage: %s" % e
        o["follow"] = o["follow"] or follow
    return None


def _prepare(argv, pkgdir, mine):
    import os
    import sys
    before = set(sys.modules)
    try:
        _c = _load(pkgdir, "_pytracekit")
        o, error = _c._parse_command_line(argv)
        if error is None:
            error = _coverage_config(_c, pkgdir, o)
    finally:
        # what reading the options imported is not the program's, the
        # extension included (it holds the session itself: _for_command)
        for name in set(sys.modules) - before:
            del sys.modules[name]
    # what the session imports (its plugins' start) stays, as under the command
    try:
        if error is None:
            session = _c.Session(o["plugins"], o["output"], o["threads"],
                                 o["plugin_path"], o["backend"], follow_children=o["follow"],
                                 **_session_keywords(_c, o))
    except RuntimeError as e:  # the library's errors, without the package's classes
        error = e.args[0] if e.args else str(e)
    if error is not None:
        _usage_exit("pytracekit: %s\n" % error)
    session._for_command()
    main_pid = os.getpid()

    def finish():
        # stopped already (below): nothing of this is the program's
        interrupted = []
        # _signal, what signal wraps: signal would import enum (its IntEnums)
        # at the end of every run, 3 ms on 3.14, for the program nothing
        import _signal
        try:
            _signal.signal(_signal.SIGINT, lambda signum, frame: interrupted.append(1))
        except ValueError:
            pass
        if not _c._program_started():
            session.close()  # the program never started: no report
            return
        # a plugin detached during the run, or one whose report failed,
        # wrote no report: status 3 for a program's 0 (docs/processes.md)
        failed = session.report() > 0
        session.close()
        if os.getpid() == main_pid:
            sys.stderr.write("pytracekit: reports in %s/ (run.json lists them)\n"
                             % o["output"])
        _c._command_exit(failed, bool(interrupted))

    had_atexit = "atexit" in sys.modules
    import atexit
    atexit.register(finish)
    # runs first (atexit's order is the reverse), after the program's own
    # callbacks: the session stops by a C callback, with no frame of ours
    atexit.register(session._stop_at_exit)
    if not had_atexit:
        del sys.modules["atexit"]  # the registrations stay
    session._start_with_program(mine)


def _usage_exit(message):
    """Exit status 2 before the program, as the command's for a usage error
    or a plugin that does not load (posix._exit: the library's os._exit
    would write the reports of the sessions it knows)."""
    import posix
    import sys
    sys.stderr.write(message)
    sys.stderr.flush()
    sys.stdout.flush()
    posix._exit(2)


def _main():
    argv, pkgdir = _restore()
    mine = _chain()
    if argv is not None:
        try:
            _prepare(argv, pkgdir, mine)
        except Exception as e:  # not site's "Error in sitecustomize", then on
            _usage_exit("pytracekit: cannot prepare the run: %s: %s\n"
                        % (type(e).__name__, e))


_main()
