"""``pytracekit attach PID``, ``detach PID`` and ``dump PID``: the command's
side (docs/attach.md; the target's side is pytracekit._attach).

    pytracekit attach PID [-p PLUGIN[:OPTIONS]]... [-o DIR] [--duration S]
                          [--timeout S] [the run form's session options]
    pytracekit detach PID [--timeout S]
    pytracekit dump PID [--timeout S]

The request goes to the target by the armed signal when the target is
armed (any Python), else by ``sys.remote_exec`` (3.14+, same Python
version on both sides). The target answers with a status file; this side
waits for it (``--timeout``, default 10 s) and exits with one of the
statuses below, printing what went wrong.
"""
import json
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import time

from . import _attach

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NO_PROCESS = 4       #: no such process
EXIT_NOT_PYTHON = 5       #: the process runs no Python we can name
EXIT_PERMISSION = 6       #: not allowed to look into or signal the process
EXIT_VERSION = 7          #: its Python version is not ours (remote_exec)
EXIT_REMOTE_DISABLED = 8  #: the target's remote debugging is off
EXIT_NOT_IMPORTABLE = 9   #: pytracekit is not importable in the target
EXIT_NOT_ARMED = 10       #: an older Python that was not armed
EXIT_TIMEOUT = 11         #: no answer in time
EXIT_FAILED = 12          #: the target refused or failed (already attached...)

USAGE = """\
usage: pytracekit attach PID [-p PLUGIN[:KEY=VALUE,...]]... [-o DIR]
                             [--duration SECONDS] [--timeout SECONDS]
                             [--threads current|all] [--backend NAME]
                             [--plugin-path DIR] [--follow-children]
                             [--include GLOBS] [--exclude GLOBS] ...
       pytracekit detach PID [--timeout SECONDS]
       pytracekit dump PID [--timeout SECONDS]

Attaches a session to the running Python process PID, detaches it (its
reports are written then) or has it write its reports now (docs/attach.md).
"""


class Failure(Exception):
    """What to print, and the exit status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def _seconds(flag, text):
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v > 0 or v != v or v == float("inf"):
        raise Failure(f"{flag} expects a number of seconds > 0, found "
                      f"'{text}'", EXIT_USAGE)
    return v


def parse(op, args):
    """(pid, request dict, timeout) from the subcommand's arguments."""
    if not args or args[0] in ("-h", "--help"):
        raise Failure("help", EXIT_OK)
    if not args[0].isdigit() or int(args[0]) <= 0:
        raise Failure(f"{op}: expected a process id, found '{args[0]}'",
                      EXIT_USAGE)
    pid = int(args[0])
    rest, duration, timeout = [], None, 10.0
    i = 1
    while i < len(args):
        a = args[i]
        if a in ("--duration", "--timeout") or \
                a.startswith(("--duration=", "--timeout=")):
            flag, eq, val = a.partition("=")
            if not eq:
                if i + 1 >= len(args):
                    raise Failure(f"{flag} needs a value", EXIT_USAGE)
                i += 1
                val = args[i]
            if flag == "--duration":
                if op != "attach":
                    raise Failure(f"{op}: unknown option '--duration'",
                                  EXIT_USAGE)
                duration = _seconds(flag, val)
            else:
                timeout = _seconds(flag, val)
        else:
            rest.append(a)
        i += 1
    if op != "attach":
        if rest:
            raise Failure(f"{op}: unexpected argument '{rest[0]}'", EXIT_USAGE)
        return pid, {"op": "stop" if op == "detach" else "dump"}, timeout
    # the run form's own reader, for the session options (no program)
    from .__main__ import Usage, parse as parse_run
    try:
        o = parse_run(rest + ["-c", ""])
    except Usage as e:
        raise Failure(str(e), EXIT_USAGE) from None
    if o["action"] != "run" or o["mode"] != "-c" or o.get("armed"):
        bad = next((a for a in rest if a in ("--list-plugins", "--version",
                                              "--help", "-h", "--armed")),
                   o["target"] if o["mode"] != "-c" else "-c")
        raise Failure(f"attach: unexpected argument '{bad}'", EXIT_USAGE)
    # the request scripts sys.remote_exec runs (by_remote_exec) are not
    # the program's
    o["filter"].setdefault("--exclude", []).append(
        os.path.join(tempfile.gettempdir(), "pytracekit-attach-*", "request.py"))
    spec = {"plugins": o["plugins"], "output": os.path.abspath(o["output"]),
            "threads": o["threads"], "backend": o["backend"],
            "plugin_path": o["plugin_path"], "filter": o["filter"],
            "follow": o["follow"], "duration": duration}
    if spec["plugin_path"]:
        spec["plugin_path"] = ":".join(os.path.abspath(p) for p in
                                       spec["plugin_path"].split(":"))
    return pid, {"op": "start", "spec": spec, "by_pid": os.getpid()}, timeout


# ---- what the target is -------------------------------------------------------------

_PY_RE = re.compile(r"(?:^|/)(?:lib)?python(\d+)\.(\d+)[^/]*$")


def inspect(pid):
    """(uid, (major, minor)) of process *pid*, from /proc. Raises Failure
    for no such process, no permission, or no Python in it."""
    base = f"/proc/{pid}"
    try:
        with open(f"{base}/status", encoding="utf-8") as f:
            uid = next(int(line.split()[1]) for line in f
                       if line.startswith("Uid:"))
    except FileNotFoundError:
        raise Failure(f"no process {pid}", EXIT_NO_PROCESS) from None
    names = []
    try:
        names.append(os.readlink(f"{base}/exe"))
        with open(f"{base}/maps", encoding="utf-8", errors="replace") as f:
            names += [line.split(None, 5)[5].strip() for line in f
                      if len(line.split(None, 5)) == 6]
    except PermissionError:
        raise Failure(_no_permission(pid, uid, f"cannot read {base}/maps"),
                      EXIT_PERMISSION) from None
    except FileNotFoundError:
        raise Failure(f"no process {pid}", EXIT_NO_PROCESS) from None
    for n in names:
        m = _PY_RE.search(n.replace(" (deleted)", ""))
        if m:
            return uid, (int(m.group(1)), int(m.group(2)))
    raise Failure(f"process {pid} ({names[0] if names else '?'}) is not a "
                  f"Python process (no python3.X executable or libpython "
                  f"in its memory map)", EXIT_NOT_PYTHON)


def _no_permission(pid, uid, what):
    scope = ""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = f.read().strip()
    except OSError:
        pass
    who = f"user {uid}'s, and this is user {os.getuid()}" \
        if uid != os.getuid() else "this user's"
    return (f"permission denied for process {pid} ({who}): {what}"
            + (f"; kernel.yama.ptrace_scope is {scope}" if scope else "")
            + ("; a non-root user may attach only to its own children then: "
               "run as root or with CAP_SYS_PTRACE, or set it to 0"
               if scope == "1" else "")
            + "; in a container, attaching needs CAP_SYS_PTRACE "
            "(docs/attach.md)")


def _armed_info(pid, uid):
    """What process *pid*'s .armed file says, or None. A file left by an
    armed process that was killed (no atexit) names a pid that may be
    another process's now, one the signal would end: its start time must
    be the process's, else the file goes."""
    path = _attach.armed_file(pid, uid)
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    if info.get("pid") == pid and info.get("start") is not None and \
            info.get("start") == _attach.start_time(pid):
        return info
    try:
        os.unlink(path)  # stale
    except OSError:
        pass
    return None


# ---- the two ways in ----------------------------------------------------------------

def _wait(status_path, timeout, pid, pending_note):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(status_path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            pass
        except ValueError:
            pass  # not complete yet (it is written by a rename: never)
        if not os.path.exists(f"/proc/{pid}"):
            raise Failure(f"process {pid} ended before it answered",
                          EXIT_NO_PROCESS)
        time.sleep(0.01)
    raise Failure(f"process {pid} did not answer in {timeout:g} s (its main "
                  f"thread has not reached a safe point: blocked in C code?); "
                  f"{pending_note}", EXIT_TIMEOUT)


def by_signal(pid, uid, info, req, timeout):
    """The armed way: the request file, then the signal."""
    d = _attach.control_dir(uid)
    token = secrets.token_hex(8)
    path = os.path.join(d, f"{pid}.request.{token}")
    status = os.path.join(d, f"{pid}.status.{token}")
    try:
        if req["op"] == "start":
            _attach._write_json(path, req)
        else:  # a bare word: the target reads no json while attached
            _attach._write_status(path, req["op"].encode())
    except PermissionError:
        raise Failure(_no_permission(pid, uid, f"cannot write {d}"),
                      EXIT_PERMISSION) from None
    try:
        os.kill(pid, int(info["signal"]))
    except PermissionError:
        os.unlink(path)
        raise Failure(_no_permission(pid, uid, "cannot send the armed signal"),
                      EXIT_PERMISSION) from None
    except ProcessLookupError:
        os.unlink(path)
        raise Failure(f"no process {pid}", EXIT_NO_PROCESS) from None
    try:
        return _wait(status, timeout, pid, "the request was withdrawn")
    except Failure:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    finally:
        try:
            os.unlink(status)
        except OSError:
            pass


_SCRIPT = """\
# pytracekit attach: run in process {pid} by sys.remote_exec
def _pytracekit_request(req, status):
    import json, os, sys
    try:  # once: the command sends the request again until it is taken
        os.close(os.open(status + ".taken", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return
    except OSError:
        pass
    try:
        import pytracekit._attach as attach
    except BaseException as e:
        tmp = status + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({{"ok": False, "error": "not-importable",
                       "message": "%s: %s" % (type(e).__name__, e),
                       "python": sys.version.split()[0],
                       "sys_path": list(sys.path)}}, f)
        os.replace(tmp, status)
        return
    attach.request(req, status)
_pytracekit_request({req!r}, {status!r})
del _pytracekit_request
"""


def _remote_exec_until_taken(pid, script, status, timeout):
    """sys.remote_exec(pid, script), sent again (1, 2, 4, 8 s apart) while
    the target has neither answered nor taken the request: under load, on
    3.14, a target serving requests 20 times a second has left a first
    attach unanswered for over 60 s (the cause in CPython is not pinned; a
    request sent again was taken). Sent again while still pending, it runs
    once; if a copy ran meanwhile, the script's `.taken` file makes the
    next one do nothing. Returns when the request was taken or answered, or
    the timeout passed: the seconds left of it."""
    deadline = time.monotonic() + timeout
    interval = 1.0
    while True:
        sys.remote_exec(pid, script)
        until = min(deadline, time.monotonic() + interval)
        while time.monotonic() < until:
            if os.path.exists(status) or os.path.exists(status + ".taken") \
                    or not os.path.exists(f"/proc/{pid}"):  # (the caller says it ended)
                return deadline - time.monotonic()
            time.sleep(0.01)
        if time.monotonic() >= deadline:
            return 0.0
        interval = min(interval * 2, 8.0)


def by_remote_exec(pid, uid, req, timeout):
    """The 3.14+ way: sys.remote_exec of a script that imports
    pytracekit._attach in the target."""
    d = tempfile.mkdtemp(prefix="pytracekit-attach-")
    keep = False
    try:
        if uid != os.getuid():  # root attaching to another user's process
            os.chown(d, uid, -1)
        status = os.path.join(d, "status.json")
        script = os.path.join(d, "request.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(_SCRIPT.format(pid=pid, req=json.loads(json.dumps(req)),
                                   status=status))
        os.chmod(script, 0o644)
        try:
            left = _remote_exec_until_taken(pid, script, status, timeout)
        except ProcessLookupError:
            raise Failure(f"no process {pid}", EXIT_NO_PROCESS) from None
        except PermissionError as e:
            raise Failure(_no_permission(pid, uid, f"sys.remote_exec: {e}"),
                          EXIT_PERMISSION) from None
        except (RuntimeError, OSError) as e:
            text = str(e)
            if re.search(r"not enabled|disabled|not supported", text, re.I):
                raise Failure(
                    f"remote debugging is disabled in process {pid} "
                    f"({text}): it was started with PYTHON_DISABLE_REMOTE_DEBUG "
                    f"or -X disable_remote_debug, or its Python is built "
                    f"without it; start it armed instead (pytracekit --armed, "
                    f"pytracekit.arm(), PYTRACEKIT_ARM=1)",
                    EXIT_REMOTE_DISABLED) from None
            if isinstance(e, OSError) and e.errno in (1, 13):
                raise Failure(_no_permission(pid, uid, f"sys.remote_exec: {e}"),
                              EXIT_PERMISSION) from None
            raise Failure(f"sys.remote_exec({pid}) failed: "
                          f"{type(e).__name__}: {text}", EXIT_FAILED) from None
        try:
            return _wait(status, max(left, 0.05), pid, f"the request stays pending and "
                         f"runs when it does (its files: {d})")
        except Failure as f:
            keep = f.status == EXIT_TIMEOUT
            raise
    finally:
        if not keep:
            shutil.rmtree(d, ignore_errors=True)


def send(pid, req, timeout):
    """Sends *req* to process *pid*; returns its status dict or raises
    Failure."""
    if pid == os.getpid():
        raise Failure(f"process {pid} is this command", EXIT_USAGE)
    uid, version = inspect(pid)
    ours = sys.version_info[:2]
    vtext = "%d.%d" % version
    info = _armed_info(pid, uid)
    if info is not None:
        result = by_signal(pid, uid, info, req, timeout)
    elif version >= (3, 14):
        if version != ours or not hasattr(sys, "remote_exec"):
            raise Failure(
                f"process {pid} runs Python {vtext}, this pytracekit runs on "
                f"Python {ours[0]}.{ours[1]}: sys.remote_exec works between "
                f"the same versions only; use the pytracekit command built "
                f"for Python {vtext} (or arm the process)", EXIT_VERSION)
        result = by_remote_exec(pid, uid, req, timeout)
    else:
        raise Failure(
            f"process {pid} runs Python {vtext}, which has no "
            f"sys.remote_exec (3.14+), and it is not armed: start it with "
            f"`pytracekit --armed`, call pytracekit.arm() in it, or set "
            f"PYTRACEKIT_ARM=1 for a program that imports pytracekit "
            f"(docs/attach.md)", EXIT_NOT_ARMED)
    if result.get("ok"):
        return result
    if result.get("error") == "not-importable":
        path = os.pathsep.join(result.get("sys_path") or [])
        raise Failure(f"pytracekit is not importable in process {pid} "
                      f"(Python {result.get('python', vtext)}: "
                      f"{result.get('message')}); install it for that "
                      f"interpreter or put it on its sys.path ({path})",
                      EXIT_NOT_IMPORTABLE)
    raise Failure(f"process {pid}: {result.get('message')}", EXIT_FAILED)


def main(argv):
    """Runs ``pytracekit attach|detach|dump ARGS``; returns the exit
    status."""
    op, args = argv[0], list(argv[1:])
    try:
        pid, req, timeout = parse(op, args)
        result = send(pid, req, timeout)
    except Failure as f:
        if f.status == EXIT_OK:
            sys.stdout.write(USAGE)
            return EXIT_OK
        print(f"pytracekit: {op}: {f}" if not str(f).startswith(op + ":")
              else f"pytracekit: {f}", file=sys.stderr)
        return f.status
    out = result.get("output_dir")
    if op == "attach":
        print(f"pytracekit: attached to process {pid}; reports in {out}/ "
              f"on detach", file=sys.stderr)
    elif op == "detach":
        print(f"pytracekit: detached from process {pid}; reports in {out}/ "
              f"(run.json lists them)", file=sys.stderr)
    else:
        print(f"pytracekit: process {pid} wrote its reports in {out}/",
              file=sys.stderr)
    return EXIT_OK
