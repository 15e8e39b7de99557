"""pytest -p pytracekit: pytracekit's plugins over a pytest run.

pytest loads this module through the ``pytest11`` entry point of an
installed pytracekit, through ``-p pytracekit`` (the package names this
module in its ``pytest_plugins``) or through ``-p pytracekit.pytest_plugin``.
Nothing is traced unless plugins are asked for, with ``--ptk SPEC`` (the
command's ``-p SPEC``) or the ini key ``ptk_plugins``. The options are read
by the command's own reader (tools/ptk_cmdline.c, the one python -m
pytracekit uses): each ``--ptk-*`` option becomes the command's flag of the
same name, so a spec, a filter or a backend is accepted or refused exactly
as ``pytracekit`` accepts or refuses it. Reference: docs/pytest.md.

Importing pytracekit does not import this module, nor pytest.
PYTEST_DONT_REWRITE (nothing here for pytest's assertion rewriting)
"""
import sys

import pytest

from . import Error, Session, set_context
from . import _pytracekit as _c
from . import __main__ as _cmd

# The filter flags, from the one list of filter keys (lib/ptk_filter_keys.h):
# (the command's flag, this plugin's option, its ini key, integer?, help)
FILTER_OPTIONS = [(flag, "--ptk-" + flag[2:], "ptk_" + flag[2:].replace("-", "_"),
                   bool(is_int), help_)
                  for key, flag, kw, is_int, help_ in _c._filter_keys]

# The other settings: (the command's flag, option, ini key, help)
SETTINGS = [
    ("-o", "--ptk-output", "ptk_output",
     "directory the reports are written to (default pytracekit-out)"),
    ("--backend", "--ptk-backend", "ptk_backend", "auto, legacy or monitoring"),
    ("--threads", "--ptk-threads", "ptk_threads",
     "all (default: every thread) or current (the main thread)"),
]


def pytest_addoption(parser):
    g = parser.getgroup("pytracekit", "pytracekit (tracing and profiling plugins)")
    g.addoption("--ptk", action="append", dest="ptk_plugins", default=None,
                metavar="PLUGIN[:OPTIONS]",
                help="run this pytracekit plugin over the test run, as the "
                     "command's -p (repeatable; e.g. coverage, "
                     "timer:clock=cpu,top=15)")
    parser.addini("ptk_plugins", "pytracekit plugins (specs as --ptk) run "
                  "when --ptk is not given", type="args", default=[])
    for flag, opt, ini, help_ in SETTINGS:
        g.addoption(opt, dest=ini, default=None, metavar="VALUE",
                    help=f"pytracekit: {help_} (the command's {flag})")
        parser.addini(ini, f"pytracekit: {help_}", default=None)
    g.addoption("--ptk-plugin-path", action="append", dest="ptk_plugin_path",
                default=None, metavar="DIR",
                help="pytracekit: a directory searched for plugins first")
    parser.addini("ptk_plugin_path", "pytracekit: directories searched for "
                  "plugins first", type="args", default=[])
    for flag, opt, ini, is_int, help_ in FILTER_OPTIONS:
        g.addoption(opt, action="append", dest=ini, default=None,
                    metavar="N" if is_int else "ITEMS",
                    help=f"pytracekit {help_} (the command's {flag})")
        parser.addini(ini, f"pytracekit {help_}",
                      type="string" if is_int else "args",
                      default=None if is_int else [])


def command_line(config):
    """The command's arguments for the options and ini keys given (an
    option replaces its ini key), or None when no plugin is asked for."""
    ns = getattr(config, "known_args_namespace", None) or config.option

    def given(dest):
        v = getattr(ns, dest, None)
        if v is not None:
            return v if isinstance(v, list) else [v]
        v = config.getini(dest)
        if v is None or v == []:
            return []
        return [str(x) for x in v] if isinstance(v, list) else [str(v)]

    specs = given("ptk_plugins")
    if not specs:
        return None
    argv = []
    for spec in specs:
        argv += ["-p", spec]
    for flag, _, ini, _ in SETTINGS:
        for v in given(ini)[-1:]:
            argv += [flag, v]
    for d in given("ptk_plugin_path"):
        argv += ["--plugin-path", d]
    for flag, _, ini, _, _ in FILTER_OPTIONS:
        for v in given(ini):
            argv += [flag, v]
    return argv + ["-c", "pass"]


def make_session(argv):
    """The Session the command would make for these arguments (the coverage
    plugin completed from coverage.py's configuration, as the command
    does). Raises pytest.UsageError with the command's message."""
    try:
        o = _cmd.parse(argv)
        _cmd._coverage_config(o)
        return Session(o["plugins"], output_dir=o["output"], threads=o["threads"],
                       backend=o["backend"], plugin_path=o["plugin_path"],
                       follow_children=o["follow"], **_cmd.session_filter(o["filter"]))
    except (_cmd.Usage, Error, ValueError, TypeError) as e:
        raise pytest.UsageError(f"pytracekit: {e}") from None


class Run:
    """The session of one pytest run: started before the initial conftests
    are imported (so that they are measured, as the command measures them),
    stopped and reported at the end of the session."""

    def __init__(self, config, session):
        self.config = config
        self.session = session
        self.failed = 0
        self.reported = False

    def finish(self):
        if self.reported:
            return
        self.reported = True
        if self.session.running:
            self.session.stop()
        before = self.session.failures
        try:
            self.session.report()
        finally:
            # what the plugins printed comes before pytest's summary
            sys.stdout.flush()
            sys.stderr.flush()
        self.failed = self.session.failures - before

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        capman = self.config.pluginmanager.getplugin("capturemanager")
        # the plugins' reports may print (coverage's table): to the terminal
        if capman is not None:
            with capman.global_and_fixture_disabled():
                self.finish()
        else:
            self.finish()
        if self.failed and exitstatus == 0:
            # as the command: a report that could not be written fails the run
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    # Each phase of each test is a context of its own (ptk_context_set):
    # "NODEID|setup", "NODEID|call", "NODEID|teardown"; between them (and
    # during collection) there is none.
    def _phase(self, item, phase):
        set_context(f"{item.nodeid}|{phase}")
        try:
            yield
        finally:
            set_context(None)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._phase(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._phase(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._phase(item, "teardown")

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.write_sep("-", "pytracekit")
        if self.failed:
            tr.write_line(f"pytracekit: {self.failed} plugin report(s) failed "
                          "(the errors are above)", red=True)
        tr.write_line(f"pytracekit: reports in {self.session.output_dir}/ "
                      "(run.json lists them)")

    def pytest_unconfigure(self, config):
        # a run that ended before its session finished (a usage error
        # after the start, an interrupted collection) writes no reports
        self.session.close()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    ns = early_config.known_args_namespace
    if getattr(ns, "help", False) or getattr(ns, "version", False):
        return
    argv = command_line(early_config)
    if argv is None:
        return
    run = Run(early_config, make_session(argv))
    early_config.pluginmanager.register(run, "pytracekit-run")
    run.session.start()
