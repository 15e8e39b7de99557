"""The target's side of ``pytracekit attach``, ``detach`` and ``dump``
(docs/attach.md).

A process gets a session while it runs, and loses it again, by one of:

- on 3.14+, ``sys.remote_exec(pid, script)`` from the command: the script
  (made by pytracekit._attach_cli) imports this module and calls
  :func:`request` at the target's next safe point;
- on any Python, a process *armed* beforehand (``pytracekit --armed``,
  :func:`arm`, ``PYTRACEKIT_ARM=1`` when pytracekit is imported): a signal
  (SIGUSR2, or ``PYTRACEKIT_ARM_SIGNAL``) makes its Python-level handler,
  which runs in the main thread at the next safe point, read the request
  file the command left in the control directory and call :func:`request`.

One attached session per process, kept in this module. The session is a
normal :class:`pytracekit.Session`; its run.json says it was attached
(``"attached": {"at": ..., "by_pid": ...}``). Its reports are written on
detach, when ``--duration`` runs out, at the process's exit and on SIGTERM
(as for every session). Every request answers with a status file (JSON:
``ok``, ``error``, ``message``) the command waits for.
"""
import atexit
import gc
import json
import os
import signal
import sys
import threading
import time

from . import StateError, _pytracekit as _c

# The attached session, its --duration timer and the atexit callback
_state = {"session": None, "timer": None, "output_dir": None, "generation": 0,
          "at_exit": False}

#: What arm() installed: the signal number, the handler it replaced
_armed = {"signum": None, "previous": None, "file": None}


def control_dir(uid=None):
    """The directory of armed processes' control files for user *uid*
    (default: ours): ``/tmp/pytracekit-UID`` (mode 0700). The same place
    for every process of the user, whatever its environment, so that the
    command finds it from another shell or service."""
    uid = os.getuid() if uid is None else uid
    return f"/tmp/pytracekit-{uid}"  # no os.path: no Python frames


def _make_control_dir():
    d = control_dir()
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(d)
    import stat
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or \
            st.st_mode & 0o077:
        raise PermissionError(f"{d} is not a directory of this user with "
                              f"mode 0700: not arming")
    return d


def _now_iso():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + \
        f".{int(t % 1 * 1000):03d}Z"


def _write_json(path, data):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


# ---- the session ---------------------------------------------------------------
#
# What runs here after the session's start and before its stop is not the
# program's: it is kept out of the reports by the session's default filter
# (this package's directory is excluded, and a C call counts for its
# calling frame: docs/filters.md) and by doing nothing else there: no
# json, no threading code, the status prepared before.

_TIMER_NAME = "pytracekit-duration"
_lock = threading.RLock()  # start/stop/dump: the main thread and the timer's


def _prepare(spec, by_pid, extra_exclude=()):
    """The session (not started) and its --duration timer (not started),
    from *spec*: the command's options as its reader gives them
    (pytracekit.__main__.parse: plugins, output, threads, backend,
    plugin_path, filter, follow) plus ``duration`` (seconds or None)."""
    from . import Session
    from .__main__ import session_filter
    given = {flag: list(values) for flag, values in
             (spec.get("filter") or {}).items()}
    given.setdefault("--exclude", []).extend(
        [os.path.dirname(os.path.abspath(__file__))] + list(extra_exclude))
    # the --duration timer's thread is not the program's
    given.setdefault("--thread-names", []).append("!" + _TIMER_NAME)
    session = Session(spec["plugins"], output_dir=spec["output"],
                      threads=spec.get("threads", "all"),
                      backend=spec.get("backend", "auto"),
                      plugin_path=spec.get("plugin_path"),
                      follow_children=bool(spec.get("follow")),
                      **session_filter(given))
    session._mark_attached(_now_iso(), int(by_pid))
    timer = None
    if spec.get("duration") is not None:
        timer = threading.Timer(float(spec["duration"]), _expire,
                                (_state["generation"] + 1,))
        timer.daemon = True
        timer.name = _TIMER_NAME
    return session, timer


def start(spec, by_pid, extra_exclude=(), before_start=None):
    """Attaches: starts a session made from *spec* (see _prepare). Calls
    *before_start* (if given) with the report directory just before the
    start, which then is the last thing done. Returns the report
    directory; raises pytracekit.Error, or RuntimeError ("already
    attached")."""
    with _lock:
        if _state["session"] is not None:
            raise RuntimeError(f"already attached: a session runs here, "
                               f"reporting into {_state['output_dir']}/ "
                               f"(pytracekit detach {os.getpid()} ends it)")
        session, timer = _prepare(spec, by_pid, extra_exclude)
        out = session.output_dir
        if not _state["at_exit"]:
            # once per process: unregistering leaves a slot behind (3.13)
            atexit.register(_at_exit)
            _state["at_exit"] = True
        # the timer's thread before the start: it is not the program's
        _state.update(session=session, timer=timer, output_dir=out,
                      generation=_state["generation"] + 1)
        if timer is not None:
            timer.start()
        try:
            if before_start is not None:
                before_start(out)
            session.start()
        except BaseException:
            _state.update(session=None, timer=None, output_dir=None)
            if timer is not None:
                timer.cancel()
            session.close()
            raise
        return out


def _finish(session):
    """Stops *session* if it runs, writes its reports, frees it. Returns
    the number of failed plugins."""
    if session.running:
        session.stop()
    try:
        return _c.Session.report(session)  # without reading them back
    finally:
        session.close()
        if sys.version_info < (3, 13):
            # json.dumps(indent=...) is pure Python before 3.13, and its
            # encoder's closures are a cycle: ~33 objects a report file
            # left for the program's next collection (66 for the counter
            # and the timer). They are young: a collection of the young
            # generations frees them now, at a cost the detach pays
            gc.collect(1)


def stop():
    """Detaches: stops the attached session, writes its reports, frees
    it and everything attaching added. Returns the report directory;
    raises RuntimeError when nothing is attached."""
    with _lock:
        session = _state["session"]
        if session is None:
            raise RuntimeError("not attached: no session runs here")
        session.stop()
        outdir = _state["output_dir"]
        timer = _state["timer"]
        _state.update(session=None, timer=None, output_dir=None)
        if timer is not None and timer is not threading.current_thread():
            timer.cancel()
        failed = _finish(session)
    if timer is not None and timer is not threading.current_thread():
        timer.join(5.0)  # its thread ends (outside the lock: it may wait on it)
    if failed:
        raise RuntimeError(f"{failed} plugin(s) failed; see {outdir}/run.json")
    return outdir


def dump():
    """Writes the attached session's reports now (Session.report()) and
    keeps it attached. Where report() needs a stopped session, it is
    stopped for the writing and started again. Returns the report
    directory."""
    with _lock:
        session = _state["session"]
        if session is None:
            raise RuntimeError("not attached: no session runs here")
        try:
            _c.Session.report(session)
        except StateError:
            session.stop()
            try:
                _c.Session.report(session)
            finally:
                session.start()
        return _state["output_dir"]


def _expire(generation):
    """--duration ran out (the timer's thread): the session stops in the
    main thread, at its next safe point, where everything attaching added
    can be taken away (signal handlers are the main thread's)."""
    def in_main():
        if _state["generation"] == generation:
            try:
                stop()
            except RuntimeError:
                pass  # detached meanwhile
    _c._call_in_main(in_main)


def _at_exit():
    with _lock:
        session = _state["session"]
        if session is not None:
            _state.update(session=None, timer=None, output_dir=None)
            _finish(session)


def attached():
    """The attached session, or None."""
    return _state["session"]


# ---- requests --------------------------------------------------------------------

def _status_bytes(result):
    result = dict(result, pid=os.getpid(), python=sys.version.split()[0])
    return json.dumps(result).encode()


def _write_status(path, data):
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def request(req, status_path, extra_exclude=()):
    """Carries out one request of the command (a dict: ``op`` "start",
    "stop" or "dump", ``spec`` and ``by_pid`` for start) and writes its
    status (JSON: ok, error, message, output_dir) to *status_path*.
    Never raises: the target goes on whatever happens."""
    done = []

    def answer_ok(out):  # before the start: the start is the last thing
        data = _status_bytes({"ok": True, "output_dir": out})
        done.append(lambda: _write_status(status_path, data))
    try:
        op = req.get("op")
        if op == "start":
            start(req["spec"], req["by_pid"], extra_exclude, answer_ok)
        elif op == "stop":
            answer_ok(stop())
        elif op == "dump":
            answer_ok(_state["output_dir"])  # before: dump() may raise
            dump()
        else:
            raise ValueError(f"unknown request {op!r}")
    except RuntimeError as e:
        kind = "already-attached" if str(e).startswith("already") else \
            "not-attached" if str(e).startswith("not attached") else "failed"
        failed = _status_bytes({"ok": False, "error": kind, "message": str(e)})
        done[:] = [lambda: _write_status(status_path, failed)]
    except BaseException as e:  # noqa: B902 - a target must not die of us
        failed = _status_bytes({"ok": False, "error": "failed",
                                "message": f"{type(e).__name__}: {e}"})
        done[:] = [lambda: _write_status(status_path, failed)]
    try:
        done[-1]()
    except OSError:
        pass


# ---- armed processes (any Python) ---------------------------------------------------

def _signal_number():
    v = os.environ.get("PYTRACEKIT_ARM_SIGNAL", "SIGUSR2").strip()
    if v.isdigit():
        return int(v)
    name = v.upper()
    if not name.startswith("SIG"):
        name = "SIG" + name
    sig = getattr(signal, name, None)
    if not isinstance(sig, int):
        raise ValueError(f"PYTRACEKIT_ARM_SIGNAL={v}: not a signal name "
                         f"or number")
    return int(sig)


def start_time(pid):
    """When process *pid* started (clock ticks since boot, /proc/PID/stat),
    or None: with the pid, it names the process (pids are reused)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # after the command name, which may hold spaces and parentheses
        return int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def armed_file(pid, uid=None):
    """The file saying process *pid* of user *uid* is armed."""
    return f"{control_dir(uid)}/{pid}.armed"


def arm():
    """Arms this process for ``pytracekit attach`` (docs/attach.md):
    installs a handler of SIGUSR2 (``PYTRACEKIT_ARM_SIGNAL``: another
    name or number) and writes ``/tmp/pytracekit-UID/PID.armed``. Nothing
    else runs until a request comes. Must be called from the main thread;
    calling it again does nothing. Returns the signal number."""
    if _armed["signum"] is not None and _armed["file"] == armed_file(os.getpid()):
        return _armed["signum"]
    signum = _signal_number()
    d = _make_control_dir()
    previous = signal.signal(signum, _on_signal)
    path = os.path.join(d, f"{os.getpid()}.armed")
    _write_json(path, {"pid": os.getpid(), "start": start_time(os.getpid()),
                       "signal": signum, "python": sys.version.split()[0],
                       "executable": sys.executable})
    _armed.update(signum=signum, previous=previous, file=path)
    import atexit
    atexit.register(_disarm_file)
    return signum


def _disarm_file():
    path = _armed["file"]
    if path is not None and path == armed_file(os.getpid()):
        try:
            os.unlink(path)
        except OSError:
            pass


def _on_signal(signum, frame):
    """The armed signal: carries out the requests waiting for this
    process (PID.request.TOKEN files, oldest first); with none, writes the
    attached session's reports, if there is one."""
    # the session may be running: no Python code but this module's
    d = control_dir()
    prefix = f"{os.getpid()}.request."
    try:
        names = [(os.stat(f"{d}/{n}").st_mtime_ns, n) for n in os.listdir(d)
                 if n.startswith(prefix) and not n.endswith(".tmp")]
    except OSError:
        return
    if not names:
        # the signal alone (`kill -USR2 PID`): the attached session's
        # reports now, as `pytracekit dump PID`
        if _state["session"] is not None:
            try:
                dump()
            except Exception:  # noqa: BLE001 - the program goes on
                pass
        return
    names.sort()
    for _, n in names:
        path = f"{d}/{n}"
        try:
            with open(path, "rb") as f:
                raw = f.read()
            os.unlink(path)
            # stop and dump come as a bare word: no json while attached
            req = json.loads(raw) if raw.startswith(b"{") else \
                {"op": raw.decode("ascii", "replace").strip()}
        except (OSError, ValueError):
            continue
        token = n[len(prefix):]
        request(req, f"{d}/{os.getpid()}.status.{token}")
