"""pytracekit: trace and profile Python code with pytracekit plugins.

    import pytracekit
    with pytracekit.Session(["counter:top=5", "timer"], output_dir="out") as s:
        work()
    s.results["timer"]["functions"]      # what out/timer.json holds

A :class:`Session` loads plugins by name (``"timer"``) or path
(``"./p.so"``), with options (``"timer:clock=cpu,top=15"``), attaches them
to the process's event hub when started and writes their reports when it is
stopped. Reference: docs/python-api.md; under pytest: docs/pytest.md.
PYTEST_DONT_REWRITE (`pytest -p pytracekit` has no assertions to rewrite)
"""
import collections.abc
import functools
import json
import os
import sys
from typing import NamedTuple, Optional, Tuple

from . import _pytracekit as _c

# `pytest -p pytracekit` registers this package as a pytest plugin; pytest
# then imports the plugin itself (docs/pytest.md). A name, not an import:
# importing pytracekit imports nothing of pytest.
pytest_plugins = ["pytracekit.pytest_plugin"]

__all__ = [
    "Session", "plugins", "PluginInfo", "OptionInfo", "version",
    "Error", "PluginNotFoundError", "PluginLoadError", "OptionError",
    "UnsupportedError", "StateError", "BusyError", "PluginError",
    "OutputError", "pkgconfig_dir", "cmake_dir", "include_dir", "combine",
    "set_context", "context", "arm",
]


def version() -> str:
    """The library's version, e.g. ``"0.2.0"``."""
    return _c.version()


__version__ = _c.version()


def set_context(name) -> int:
    """Sets the process's current context (a test and its phase,
    ``"tests/test_a.py::test_x|call"``), for plugins that keep their data per
    context; ``None`` or ``""`` ends it. Every call makes a new context with
    a new id, which it returns (0 for none). One context per process,
    whatever the sessions. Raises TypeError for a name that is not a str,
    ValueError for one holding a NUL character."""
    return _c.set_context(name)


def context() -> Tuple[int, Optional[str]]:
    """The current context: ``(id, name)``, or ``(0, None)`` when there is
    none."""
    return _c.context()


# ---- errors ------------------------------------------------------------------

class Error(Exception):
    """A pytracekit call failed.

    ``str(e)`` is the library's message; ``e.code`` its error code (a
    negative int, include/pytracekit/errors.h) and ``e.name`` that code's
    name (``"PTK_ENOENT"``). Each code has a subclass of Error.
    """

    def __init__(self, message: str, code: int = -2):
        super().__init__(message)
        self.code = code

    @property
    def name(self) -> str:
        """The symbolic name of :attr:`code`, e.g. ``"PTK_ENOENT"``."""
        return _NAMES.get(self.code, "PTK_EUNKNOWN")


class PluginNotFoundError(Error):
    """No plugin of that name on the plugin path, or no such file (PTK_ENOENT)."""


class PluginLoadError(Error):
    """The file is not a plugin this library can load: not a shared object, no
    entry point, another ABI, a bad descriptor (PTK_ENOTSO, PTK_ENOENTRY,
    PTK_EABIMAJOR, PTK_EABIMINOR, PTK_ESIZE, PTK_EMASK)."""


class OptionError(Error, ValueError):
    """A bad plugin spec or option: unknown option, value of the wrong type,
    malformed spec (PTK_EOPTION, PTK_EOPTTYPE, PTK_EINVAL). Also a ValueError."""


class UnsupportedError(Error):
    """Not available on this Python, e.g. the monitoring backend before 3.12
    or reference tracing before 3.13 (PTK_EUNSUPPORTED)."""


class StateError(Error, RuntimeError):
    """Not valid now, e.g. start() while running, report() before stop()
    (PTK_ESTATE). Also a RuntimeError."""


class BusyError(Error):
    """A hook slot CPython has only one of is taken, or too many
    subscribers (PTK_EBUSY, PTK_ELIMIT)."""


class PluginError(Error):
    """A plugin callback failed or raised (PTK_EPLUGIN, PTK_EPYTHON)."""


class OutputError(Error):
    """The output directory cannot be created or written (PTK_EIO)."""


_CODES = {code: (name, text) for code, name, text in _c._error_codes()}
_NAMES = {code: name for code, (name, _) in _CODES.items()}
_CLASSES = {
    "PTK_ENOENT": PluginNotFoundError,
    "PTK_ENOTSO": PluginLoadError, "PTK_ENOENTRY": PluginLoadError,
    "PTK_EABIMAJOR": PluginLoadError, "PTK_EABIMINOR": PluginLoadError,
    "PTK_ESIZE": PluginLoadError, "PTK_EMASK": PluginLoadError,
    "PTK_EOPTION": OptionError, "PTK_EOPTTYPE": OptionError,
    "PTK_EINVAL": OptionError,
    "PTK_EUNSUPPORTED": UnsupportedError,
    "PTK_ESTATE": StateError,
    "PTK_EBUSY": BusyError, "PTK_ELIMIT": BusyError,
    "PTK_EPLUGIN": PluginError, "PTK_EPYTHON": PluginError,
    "PTK_EIO": OutputError,
    "PTK_ENOMEM": Error,
}
_c._set_errors(Error, {code: _CLASSES.get(name, Error)
                       for code, name in _NAMES.items()})


# ---- sessions ----------------------------------------------------------------

def _fspath_list(value, what):
    if value is None or isinstance(value, (str, bytes, os.PathLike)):
        return value
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} must be str, os.PathLike, a list of them or "
                        f"None, not {type(value).__name__}")
    parts = []
    for i, p in enumerate(value):
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"{what}[{i}] must be str or os.PathLike, "
                            f"not {type(p).__name__}")
        parts.append(os.fsdecode(os.fspath(p)))
    return ":".join(parts) or None


class Session(_c.Session):
    """Session(plugins=(), output_dir="pytracekit-out",
    threads="current", plugin_path=None, backend="auto", filter=None, *,
    include=None, exclude=None, modules=None, functions=None,
    thread_names=None, max_depth=None, follow_children=False)

    A set of plugins attached to the process's event hub.

    *plugins* is a list of specs (``"NAME"``, ``"NAME:KEY=VALUE,..."`` or a
    path containing ``/``), or one spec as a str; an empty list is a session
    without plugins (add them with :meth:`add_plugin`). *threads* is
    ``"current"`` (only the thread that calls :meth:`start`, as with
    ``cProfile.Profile``) or ``"all"`` (every thread, including ones started
    later; the ``pytracekit`` command's default, since it traces a whole
    program). *plugin_path* is a directory or a list of directories searched
    before ``$PYTRACEKIT_PLUGIN_PATH`` and the installed plugins. *backend*
    is ``"auto"``, ``"legacy"`` or ``"monitoring"`` (3.12+). *filter*
    (``"include=...,max_depth=3"``) and the keywords after it (a str or a
    list of str each; *max_depth* an int) are the default filter of every
    plugin of the session (docs/filters.md); a plugin's own options replace
    them key by key. With *follow_children*, child processes (fork,
    multiprocessing, Python subprocesses, exec) run under the same plugins
    and report into ``OUTPUT_DIR/pid-N/`` (docs/processes.md).

    Used as a context manager, it starts on entry and stops and writes the
    reports on exit; used as a decorator, each call of the function does the
    same (reports are cumulative and rewritten after each call). Errors of
    the library raise :class:`Error` subclasses; bad argument types raise
    TypeError, bad values ValueError.
    """

    def __init__(self, plugins=(), output_dir="pytracekit-out",
                 threads="current", plugin_path=None, backend="auto",
                 filter=None, *, include=None, exclude=None, modules=None,
                 functions=None, thread_names=None, max_depth=None,
                 follow_children=False):
        if not isinstance(output_dir, (str, bytes, os.PathLike)):
            raise TypeError("output_dir must be str or os.PathLike, not "
                            f"{type(output_dir).__name__}")
        plugin_path = _fspath_list(plugin_path, "plugin_path")
        super().__init__(plugins, output_dir, threads, plugin_path, backend,
                         filter, include=include, exclude=exclude,
                         modules=modules, functions=functions,
                         thread_names=thread_names, max_depth=max_depth,
                         follow_children=follow_children)
        self._output_dir = os.path.abspath(os.fsdecode(os.fspath(output_dir)))
        self._results = None

    @property
    def output_dir(self) -> str:
        """The directory reports are written to (absolute)."""
        return self._output_dir

    def report(self) -> int:
        """Writes the reports (the session must be stopped) and refreshes
        :attr:`results`. Returns the number of failed plugins (their errors
        are printed on stderr); raises StateError while running."""
        before = _snapshot(self._output_dir)
        failed = super().report()
        self._results = _read_results(self._output_dir, before)
        return failed

    @property
    def results(self) -> "collections.abc.Mapping":
        """What the last :meth:`report` wrote, as Python data: a read-only
        mapping of each JSON report it wrote, the file name without
        ``.json`` (the plugin's name for the shipped plugins: ``counter``,
        ``timer``, ``coverage``, ``reftrack``) to the file's content as
        :meth:`report` wrote it, parsed at its first use. Raises StateError
        before the first report."""
        if self._results is None:
            raise StateError("no results before report() (or the end of a "
                             "with block)", _STATE)
        return self._results

    def __call__(self, func):
        """Decorator: runs each call of *func* in this session."""
        if not callable(func):
            raise TypeError(f"Session() used as a decorator needs a callable, "
                            f"not {type(func).__name__}")

        @functools.wraps(func)
        def traced(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return traced

    def __repr__(self):
        state = "running" if self.running else "stopped"
        return (f"<pytracekit.Session {state} backend={self.backend!r} "
                f"output_dir={self._output_dir!r}>")


_STATE = next(c for c, n in _NAMES.items() if n == "PTK_ESTATE")


def _snapshot(d):
    out = {}
    try:
        with os.scandir(d) as it:
            for e in it:
                if e.is_file():
                    st = e.stat()
                    out[e.name] = (st.st_ino, st.st_mtime_ns, st.st_size)
    except OSError:
        pass
    return out


class _Results(collections.abc.Mapping):
    """Session.results: the text of each JSON report, read when report()
    wrote it and parsed at its first use (a per-test coverage.json is tens
    of megabytes, and the pytest plugin never looks at it)."""

    def __init__(self, raw):
        self._raw = raw
        self._parsed = {}

    def __getitem__(self, name):
        if name not in self._parsed:
            self._parsed[name] = json.loads(self._raw[name])
        return self._parsed[name]

    def __iter__(self):
        return iter(self._raw)

    def __len__(self):
        return len(self._raw)

    def __repr__(self):
        return f"<pytracekit results {sorted(self._raw)}>"


def _read_results(d, before):
    raw = {}
    for name, sig in sorted(_snapshot(d).items()):
        # run.json is the run's identity, not a plugin's report
        if name.endswith(".json") and name != "run.json" and before.get(name) != sig:
            with open(os.path.join(d, name), "rb") as f:
                raw[name[:-5]] = f.read()
    return _Results(raw)


# ---- plugins -----------------------------------------------------------------

class OptionInfo(NamedTuple):
    """One option a plugin takes."""
    name: str
    type: str            #: bool, int, number, text, choice or list
    choices: Optional[str]
    default: Optional[str]
    help: Optional[str]


class PluginInfo(NamedTuple):
    """A plugin found on the plugin path."""
    name: str
    version: str
    description: str
    file: str
    events: Tuple[str, ...]
    options: Tuple[OptionInfo, ...]


def _scan(plugin_path=None):
    return _c._scan(_fspath_list(plugin_path, "plugin_path"))


def plugins(plugin_path=None) -> list:
    """The plugins found on the plugin path (*plugin_path* first, then
    ``$PYTRACEKIT_PLUGIN_PATH``, then the installed ones), in search order,
    one per name, as :class:`PluginInfo`. Files that are not loadable
    plugins are left out (``pytracekit --list-plugins`` shows why)."""
    return [PluginInfo(r["name"], r["version"], r["description"], r["file"],
                       tuple(r["events"]),
                       tuple(OptionInfo(*o) for o in r["options"]))
            for r in _scan(plugin_path) if r["error"] is None]


# ---- where the C parts are ---------------------------------------------------

def _prefix():
    # <prefix>/lib/pythonX.Y/site-packages/pytracekit/__init__.py
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", ".."))


def _installed(*rel):
    p = os.path.join(_prefix(), *rel)
    return p if os.path.exists(p) else None


def pkgconfig_dir() -> Optional[str]:
    """The directory of the installed ``pytracekit.pc`` (for
    ``PKG_CONFIG_PATH``), or None when this copy of the package is not
    installed with it (e.g. run from a build tree)."""
    return _installed("lib", "pkgconfig", "pytracekit.pc") and \
        os.path.join(_prefix(), "lib", "pkgconfig")


def cmake_dir() -> Optional[str]:
    """The directory of the installed CMake package (for ``pytracekit_DIR``;
    its prefix works as ``CMAKE_PREFIX_PATH``), or None."""
    return _installed("lib", "cmake", "pytracekit")


def include_dir() -> Optional[str]:
    """The directory holding ``pytracekit/*.h``, or None."""
    return _installed("include", "pytracekit") and os.path.join(_prefix(), "include")


# ---- combining runs ----------------------------------------------------------

def combine(inputs, output_dir="pytracekit-combined", paths=None, summary=None):
    """Merges report directories (and the pid-N/ ones below them) into one
    set of reports; see pytracekit.combining for the details."""
    from .combining import combine as _combine
    return _combine(inputs, output_dir, paths, summary)


# ---- attaching to a running process --------------------------------------------

def arm() -> int:
    """Arms this process for ``pytracekit attach PID`` on any Python
    (docs/attach.md): installs only a handler of SIGUSR2 (or the signal
    named by ``PYTRACEKIT_ARM_SIGNAL``) and a control file in
    ``/tmp/pytracekit-UID/``; a session comes when the command asks. Call
    it from the main thread. Returns the signal number. ``PYTRACEKIT_ARM=1``
    in the environment arms a process when it imports pytracekit."""
    from ._attach import arm as _arm
    return _arm()


if os.environ.get("PYTRACEKIT_ARM", "") not in ("", "0"):
    try:
        arm()
    except (ValueError, OSError) as _e:  # not the main thread; the directory
        print(f"pytracekit: PYTRACEKIT_ARM: not armed: {_e}", file=sys.stderr)
