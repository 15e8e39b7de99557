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
import os
import sys
import tempfile

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


# Every ini key of the plugin (its [tool.pytracekit] keys without ptk_)
INI_KEYS = (["ptk_plugins", "ptk_plugin_path", "ptk_fail_under", "ptk_slowest", "ptk_summary"] +
            [ini for _, _, ini, _ in SETTINGS] + [f[2] for f in FILTER_OPTIONS])


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
    g.addoption("--ptk-slowest", dest="ptk_slowest", default=None, metavar="N",
                help="pytracekit: the summary lists the N slowest test phases with "
                     "their top functions, when the timer runs with per_context=true "
                     "(default 5; 0: none)")
    parser.addini("ptk_slowest", "pytracekit: slowest test phases in the summary",
                  default=None)
    g.addoption("--ptk-summary", dest="ptk_summary", default=None, metavar="yes|no",
                help="pytracekit: no: the summary shows no plugin's table (as "
                     "pytest-cov's --cov-report=), and a run with reports=false "
                     "builds none: the data only, reported later by `pytracekit "
                     "report` (default yes; fail-under is judged either way)")
    parser.addini("ptk_summary", "pytracekit: yes or no: the plugins' tables in the summary",
                  default=None)
    g.addoption("--ptk-fail-under", dest="ptk_fail_under", default=None, metavar="PERCENT",
                help="pytracekit: fail the run when the total coverage is below this "
                     "(else coverage.py's [report] fail_under)")
    parser.addini("ptk_fail_under", "pytracekit: fail the run when the total coverage is "
                  "below this", default=None)
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


def tool_table(config):
    """The [tool.pytracekit] table of the project's pyproject.toml (the one in
    pytest's rootdir), as {ini key: [str, ...]}; {} when there is none.
    Its keys are the ini keys without ptk_ (plugins, output, modules, ...)."""
    cached = getattr(config, "_ptk_tool_table", None)
    if cached is not None:
        return cached
    table = {}
    path = os.path.join(str(getattr(config, "rootpath", None) or os.getcwd()),
                        "pyproject.toml")
    if os.path.isfile(path):
        try:
            import tomllib
        except ImportError:  # before 3.11: pytest's own reader, if it has one
            try:
                import tomli as tomllib
            except ImportError:
                tomllib = None
        if tomllib is not None:
            try:
                with open(path, "rb") as f:
                    raw = tomllib.load(f).get("tool", {}).get("pytracekit", {})
            except (OSError, ValueError) as e:
                raise pytest.UsageError(f"pytracekit: {path}: {e}") from None
            known = {ini for ini in INI_KEYS}
            for k, v in raw.items():
                ini = "ptk_" + k.replace("-", "_")
                if ini not in known:
                    raise pytest.UsageError(
                        f"pytracekit: [tool.pytracekit] in {path}: unknown key {k!r} "
                        f"(known: {', '.join(sorted(i[4:] for i in known))})")
                vals = v if isinstance(v, list) else [v]
                table[ini] = [str(x).lower() if isinstance(x, bool) else str(x) for x in vals]
    config._ptk_tool_table = table
    return table


def setting(config, dest):
    """A setting's values (a list of str, [] when not given): from pytest's
    command line, else its ini key ([pytest] ptk_..., or
    [tool.pytest.ini_options]), else pyproject.toml's [tool.pytracekit]."""
    ns = getattr(config, "known_args_namespace", None) or config.option
    v = getattr(ns, dest, None)
    if v is not None:
        return [str(x) for x in v] if isinstance(v, list) else [str(v)]
    v = config.getini(dest)
    if v is not None and v != [] and v != "":
        return [str(x) for x in v] if isinstance(v, list) else [str(v)]
    return tool_table(config).get(dest, [])


def command_line(config):
    """The command's arguments for the options and ini keys given (an
    option replaces its ini key, an ini key its [tool.pytracekit] key),
    or None when no plugin is asked for."""
    def given(dest):
        return setting(config, dest)

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


def slowest_count(config):
    """--ptk-slowest / ptk_slowest (default 5)."""
    v = (setting(config, "ptk_slowest") or [None])[-1]
    if v is None or v == "":
        return 5
    try:
        n = int(v)
    except ValueError:
        raise pytest.UsageError(f"pytracekit: --ptk-slowest: not a number: {v!r}") from None
    if n < 0:
        raise pytest.UsageError(f"pytracekit: --ptk-slowest must be 0 or more, not {n}")
    return n


def summary_wanted(config):
    """--ptk-summary / ptk_summary (default yes)."""
    v = (setting(config, "ptk_summary") or ["yes"])[-1].strip().lower()
    if v in ("yes", "true", "1", "on"):
        return True
    if v in ("no", "false", "0", "off"):
        return False
    raise pytest.UsageError(f"pytracekit: --ptk-summary: yes or no, not {v!r}")


def context_tops(dirs):
    """{context name: its top functions} from the timer.json of each of
    @p dirs that has per-context figures (per_context=true)."""
    import json
    tops = {}
    for d in dirs:
        try:
            with open(os.path.join(d, "timer.json")) as f:
                contexts = json.load(f).get("contexts")
        except (OSError, ValueError):
            continue
        for c in contexts or ():
            tops[c["name"]] = c["top"]
    return tops


def write_slowest(tr, durations, tops, n):
    """The @p n slowest test phases (pytest's durations, as --durations
    ranks them) that the timer profiled, each with its 3 functions of most
    own time."""
    rows = sorted(((d, nodeid, when) for (nodeid, when), d in durations.items()
                   if f"{nodeid}|{when}" in tops), key=lambda r: -r[0])[:n]
    if not rows:
        return
    tr.write_line(f"pytracekit: slowest {len(rows)} test phase{'s' if len(rows) != 1 else ''}"
                  " and their top functions (timer, by own time)")
    for d, nodeid, when in rows:
        tr.write_line(f"{d:.2f}s {when:<8} {nodeid}")
        for fn in tops[f"{nodeid}|{when}"][:3]:
            calls = fn["calls"] if fn["calls"] == fn["primitive_calls"] else \
                f"{fn['calls']}/{fn['primitive_calls']}"
            tr.write_line(f"    {fn['own_ns'] * 1e-9:9.6f}s own {fn['inclusive_ns'] * 1e-9:9.6f}s "
                          f"cum {calls:>8} calls  {fn['display']}")


class Run:
    """The session of one pytest run: started before the initial conftests
    are imported (so that they are measured, as the command measures them),
    stopped and reported at the end of the session."""

    def __init__(self, config, session):
        self.config = config
        self.session = session
        self.failed = 0
        self.reported = False
        self.summaries = ""      # what the plugins printed at their report
        self.coverage_fail = None  # the fail-under message, when it fails
        self.durations = {}      # (nodeid, when) -> seconds, as pytest reports
        self.slowest = slowest_count(config)
        self.summary = summary_wanted(config)

    def finish(self):
        if self.reported:
            return
        self.reported = True
        if self.session.running:
            self.session.stop()
        before = self.session.failures
        # The plugins print their summaries (coverage's table, the counter's
        # top functions) on stderr, from C: they are kept, and shown through
        # pytest's terminal reporter, in its summary.
        sys.stderr.flush()
        keep = tempfile.TemporaryFile()
        saved = os.dup(2)
        os.dup2(keep.fileno(), 2)
        try:
            self.session.report()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            keep.seek(0)
            self.summaries = keep.read().decode("utf-8", "replace")
            keep.close()
        self.failed = self.session.failures - before
        if self.summary:
            self.summaries += self.deferred_summary()
        elif not self.failed:
            # the tables are not shown (what the plugins printed is kept
            # when a report failed: its error is in it)
            self.summaries = ""
        self.check_fail_under()

    def deferred_summary(self):
        """coverage's table when the run deferred its reports (reports=false):
        built now from the data and the sources, as `pytracekit report` does,
        so that the summary is the one an immediate run prints."""
        path = os.path.join(self.session.output_dir, "coverage.json")
        if not os.path.exists(path):
            return ""
        from . import _coverage_format as covfmt
        try:
            if not covfmt.is_deferred(path):
                return ""  # (without parsing the file: 0.3 s with contexts)
            data = covfmt.load(path, completed=False)
            return covfmt.summary_short(covfmt.complete(data, path))
        except covfmt.DataError as e:
            self.failed += 1
            return f"pytracekit coverage: {e}\n"

    def check_fail_under(self):
        """coverage.py's fail_under (its [report] configuration, or
        --ptk-fail-under / ptk_fail_under) on the total just reported, as
        `pytracekit report --fail-under` judges it."""
        if not os.path.exists(os.path.join(self.session.output_dir, "coverage.json")):
            return
        given = (setting(self.config, "ptk_fail_under") or [None])[-1]
        import io
        from . import _coverage_format as covfmt
        if not given:
            # no threshold, nothing to judge: the table is not built again
            # (2 s of an 11 s run of networkx's classes/tests, 562 files).
            # A configuration error goes on to the report, which names it.
            try:
                if not covfmt.read_config().get("report", "fail_under"):
                    return
            except covfmt.ConfigError:
                pass
        out = io.StringIO()
        argv = [self.session.output_dir] + (["--fail-under", str(given)] if given else [])
        if covfmt.report_main("report", argv, stdout=out, stderr=out) == 2:
            self.coverage_fail = out.getvalue().strip().splitlines()[-1]

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
        elif self.coverage_fail and exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

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

    def pytest_runtest_logreport(self, report):
        self.durations[(report.nodeid, report.when)] = report.duration

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.write_sep("-", "pytracekit")
        for line in self.summaries.splitlines():
            tr.write_line(line)
        if self.slowest:
            write_slowest(tr, self.durations, context_tops([self.session.output_dir]),
                          self.slowest)
        if self.coverage_fail:
            tr.write_line(f"pytracekit: {self.coverage_fail}", red=True)
        if self.failed:
            tr.write_line(f"pytracekit: {self.failed} plugin report(s) failed "
                          "(the errors are above)", red=True)
        tr.write_line(f"pytracekit: reports in {self.session.output_dir}/ "
                      "(run.json lists them)")

    def pytest_unconfigure(self, config):
        # a run that ended before its session finished (a usage error
        # after the start, an interrupted collection) writes no reports
        self.session.close()


class Controller:
    """pytest-xdist's controller: the workers run the tests, each under a
    session of its own (this plugin, loaded there with the same options)
    reporting into OUTPUT/WORKER-ID/; at the end the controller combines
    them into OUTPUT (pytracekit combine's code). A worker that went down
    with an error, or left no reports, is named in the summary and fails
    the run: its data is missing, never silently dropped."""

    def __init__(self, config, output):
        self.config = config
        self.output = os.path.abspath(output)
        self.workers = []   # ids, in the order they came up
        self.down = {}      # id -> the error it went down with
        self.missing = []   # (id, why)
        self.combined = None
        self.error = None
        self.summaries = ""  # the combination's coverage table
        self.durations = {}  # (nodeid, when) -> seconds, as the workers report
        self.slowest = slowest_count(config)
        self.summary = summary_wanted(config)

    def pytest_runtest_logreport(self, report):
        self.durations[(report.nodeid, report.when)] = report.duration

    def pytest_testnodeready(self, node):
        self.workers.append(node.gateway.id)

    def pytest_testnodedown(self, node, error):
        if error is not None:
            self.down[node.gateway.id] = str(error).strip().splitlines()[0] if str(error) else "died"

    def finish(self):
        from .combining import CombineError, combine
        dirs = []
        for w in self.workers:
            d = os.path.join(self.output, w)
            if w in self.down:
                self.missing.append((w, f"went down: {self.down[w]}"))
            elif not os.path.exists(os.path.join(d, "run.json")):
                self.missing.append((w, "wrote no reports"))
            else:
                dirs.append(d)
        if not dirs:
            return
        import io
        text = io.StringIO()
        try:
            self.combined = combine(dirs, output_dir=self.output, summary=text)
        except CombineError as e:
            self.error = str(e)
        self.summaries = text.getvalue()
        if not self.summary:
            # the table is not shown; what combine says it left out is
            self.summaries = "".join(line for line in self.summaries.splitlines(True)
                                     if line.startswith("pytracekit combine: "))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        capman = self.config.pluginmanager.getplugin("capturemanager")
        if capman is not None:
            with capman.global_and_fixture_disabled():
                self.finish()
                sys.stderr.flush()
        else:
            self.finish()
        if (self.missing or self.error) and exitstatus == 0:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        tr.write_sep("-", "pytracekit")
        for line in self.summaries.splitlines():
            tr.write_line(line)
        if self.slowest:
            write_slowest(tr, self.durations,
                          context_tops(os.path.join(self.output, w) for w in self.workers
                                       if w not in self.down),
                          self.slowest)
        for w, why in self.missing:
            tr.write_line(f"pytracekit: worker {w} {why}: its data is missing from "
                          "the combined reports", red=True)
        if self.error:
            tr.write_line(f"pytracekit: combining the workers' reports failed: {self.error}",
                          red=True)
        if self.combined is not None:
            n = len(self.combined["combined"])
            tr.write_line(f"pytracekit: reports of {n} worker{'s' if n != 1 else ''} "
                          f"combined in {self.output}/ (run.json lists them)")


def _xdist_controller(ns):
    """Will this pytest hand the tests to xdist workers (-n N, N > 0)?"""
    # as xdist decides (its pytest_cmdline_main): -n N, -n auto, or --tx
    # with a --dist mode
    return bool(getattr(ns, "numprocesses", None)) or (
        getattr(ns, "dist", "no") != "no" and bool(getattr(ns, "tx", None)))


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    ns = early_config.known_args_namespace
    if getattr(ns, "help", False) or getattr(ns, "version", False):
        return
    argv = command_line(early_config)
    if argv is None:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None and _xdist_controller(ns):
        o = _cmd.parse(argv)
        early_config.pluginmanager.register(Controller(early_config, o["output"]),
                                            "pytracekit-xdist")
        return
    if worker is not None:
        # an xdist worker: its own directory below the output
        o = _cmd.parse(argv)
        argv = argv[:-2] + ["-o", os.path.join(os.path.abspath(o["output"]), worker),
                            "-c", "pass"]
    run = Run(early_config, make_session(argv))
    early_config.pluginmanager.register(run, "pytracekit-run")
    run.session.start()
