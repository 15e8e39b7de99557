"""Shared helpers of pytracekit's Python-driven tests."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

if os.environ.get("PTK_RESTORE_PRELOAD") and "LD_PRELOAD" not in os.environ:
    # under the sanitizers, a script not in PTK_PRELOADED_DRIVER_NAMES
    # (tests/CMakeLists.txt) starts without their runtimes: what it starts
    # gets them back (a PLAIN_DRIVER's command links them itself:
    # ptk_sanitize.py)
    os.environ["LD_PRELOAD"] = os.environ["PTK_PRELOAD"]
    os.environ["PYTHONMALLOC"] = "malloc"
PYTHON = os.environ.get("PTK_PYTHON", sys.executable)
CLI = os.environ.get("PTK_CLI")
# The environment for an oracle that loads none of our code (a pure-Python
# settrace or setprofile collector): under the sanitizers without the
# preloaded runtimes and on Python's own allocator, as a PLAIN_DRIVER script
# runs (tests/CMakeLists.txt); what it checks is ours, not its own work.
PLAIN_ENV = {k: v for k, v in os.environ.items()
           if not (os.environ.get("PTK_SANITIZE") and k in ("LD_PRELOAD", "PYTHONMALLOC"))}
TEST_PLUGINS = os.environ.get("PTK_TEST_PLUGIN_DIR", "")
BUILD = os.environ.get("PTK_BUILD_DIR", "")
# The backend this run of a test is for (CTest sets it for each copy of a
# test: NAME on legacy, NAME@monitoring on monitoring).
BACKEND = os.environ.get("PYTRACEKIT_BACKEND", "legacy")
MONITORING = BACKEND == "monitoring"
# The legacy backend's frame hook (lib/backends/frame_hook.c): excluded code runs
# with no trace or profile function (off with PYTRACEKIT_FRAME_HOOK=0).
FRAME_HOOK = (not MONITORING and os.environ.get("PTK_FRAME_HOOK") == "1"
              and os.environ.get("PYTRACEKIT_FRAME_HOOK") != "0")


def skip(why):
    """Exits with CTest's skip code (77), saying why."""
    print("SKIP:", why)
    sys.exit(77)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def shared(area, key, make):
    """The directory of a result that several tests make alike, made once:
    an oracle's run that depends on neither backend, which a test's two
    copies (NAME and NAME@monitoring) both ask for. The first to ask runs
    make(directory), under a lock the others wait on; the directory is
    AREA/HASH under the test's working directory, HASH that of key (JSON:
    everything the result depends on, the sources of the scripts that make
    it included). A make that raises leaves nothing behind."""
    cache = os.path.join(os.getcwd(), area)
    os.makedirs(cache, exist_ok=True)
    out = os.path.join(cache, hashlib.sha256(
        json.dumps(key, sort_keys=True).encode()).hexdigest()[:32])
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isdir(out):
            tmp = out + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            try:
                make(tmp)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            os.replace(tmp, out)
    return out


def source_digest(*paths):
    """A digest of files' bytes (for a key of shared())."""
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + b"\0" + f.read())
    return h.hexdigest()


def load_module(name, path):
    """The Python file at `path` run as a new module `name` (not in
    sys.modules: each call gives a fresh one, which a test may patch)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_plugin(name):
    return os.path.join(TEST_PLUGINS, name + ".so")


def run_python(code, cwd=None, env=None, check=True):
    """Runs `code` in a fresh interpreter of this build; returns the
    CompletedProcess (text)."""
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([PYTHON, "-c", textwrap.dedent(code)], cwd=cwd, env=e,
                       capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"child failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def run_cli(args, cwd=None, env=None, timeout=300):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([CLI] + list(args), cwd=cwd, env=e,
                          capture_output=True, text=True, timeout=timeout)


def session_program(plugins, body, setup="", threads="current", outdir=None):
    """Python source that defines `setup`, runs `body` inside a session with
    `plugins`, and reports."""
    return textwrap.dedent(setup) + textwrap.dedent(f"""
import pytracekit as _ptk
_s = _ptk.Session({plugins!r}, output_dir={outdir!r}, threads={threads!r})
_s.start()
def _body():
{textwrap.indent(textwrap.dedent(body), '    ')}
_body()
_s.stop()
_fail = _s.report()
_s.close()
""")


def record(body, setup="", specs=("events=profile",), threads="current"):
    """Runs `body` under one recorder per spec; returns a list (one per spec)
    of rows [kind, name, line, arg, depth, thread, origin, extra]."""
    with tempfile.TemporaryDirectory() as out:
        plugins = [f"{test_plugin('recorder')}:tag=r{i},{spec}"
                   for i, spec in enumerate(specs)]
        src = session_program(plugins, body, setup, threads, out)
        p = run_python(src, cwd=out)
        rows = []
        for i in range(len(specs)):
            with open(os.path.join(out, f"recorder-r{i}.json")) as f:
                rows.append(json.load(f))
        return rows, p


def rows_of(rows, kind=None, name=None):
    return [r for r in rows if (kind is None or r[0] == kind)
            and (name is None or r[1] == name)]
