"""threading's start hook, which the hub sets without importing threading
(docs/threads.md), under `--threads all`.

    test_threading_hook.py late | never

late: the program imports threading first on a thread started with _thread
(which the legacy backend does not trace, so threading's module body
returns unseen), then runs a module body on the main thread and starts a
threading.Thread: that thread's functions must be counted (once each).

never: a program that never imports threading ends with threading in
sys.modules exactly when it does in the bare interpreter (absent, unless the
interpreter's site imports it: pyenv's 3.11 does); the hub looks threading
up at module-body returns and must not import it. Its own functions are
counted.
"""
import json
import os
import shutil
import sys
import tempfile

import ptk_testlib as t

LATE = """import _thread
import time

done = []


def importer():
    import threading  # on a thread the legacy backend does not trace
    done.append(1)


_thread.start_new_thread(importer, ())
while not done:
    time.sleep(0.01)
exec(compile("x = 1\\n", "<late>", "exec"))  # a module body returns here
import threading


def work():
    return sum(range(10))


def in_thread():
    work()


th = threading.Thread(target=in_thread, name="late")
th.start()
th.join()
"""

NEVER = """import sys


def f():
    return 1


for _ in range(3):
    f()
import json  # module bodies return while the hook waits
with open(sys.argv[1], "w") as out:
    out.write("threading" in sys.modules and "imported" or "absent")
"""


def run(wd, src, *args):
    prog = os.path.join(wd, "prog.py")
    with open(prog, "w") as f:
        f.write(src)
    out = os.path.join(wd, "out")
    p = t.run_cli(["--plugin-path", os.environ["PTK_PLUGIN_DIR"], "-p", "counter",
                   "--threads", "all", "-o", out, prog] + list(args), cwd=wd)
    t.check(p.returncode == 0, "pytracekit exited %d:\n%s" % (p.returncode, p.stderr))
    with open(os.path.join(out, "counter.json")) as f:
        return json.load(f)


def calls(data, name, path):
    return sum(f["calls"] for f in data["functions"]
               if f["kind"] == "python" and f["name"] == name and f["file"] == path)


def main():
    case = sys.argv[1]
    wd = tempfile.mkdtemp(prefix="ptk-threading-hook-")
    try:
        prog = os.path.join(wd, "prog.py")
        if case == "late":
            data = run(wd, LATE)
            # (Not its name: threading imported on another thread than the
            # main one takes that thread for its MainThread, and the late
            # thread may reuse its id, so monitoring, which sees the late
            # thread before threading registers it, may name it MainThread.)
            print("backend %s: threads %s"
                  % (t.BACKEND, [(th["name"], th["events"]) for th in data["threads"]]))
            for fn in ("in_thread", "work"):
                n = calls(data, fn, prog)
                t.check(n == 1, "%s: %d calls, expected 1" % (fn, n))
            print("ok: the late thread's in_thread and work counted once each")
        elif case == "never":
            flag = os.path.join(wd, "flag")
            data = run(wd, NEVER, flag)
            with open(flag) as f:
                state = f.read()
            bare_flag = os.path.join(wd, "bare-flag")
            t.run_python(NEVER.replace("sys.argv[1]", repr(bare_flag)), cwd=wd)
            with open(bare_flag) as f:
                bare = f.read()
            t.check(state == bare, "threading at the end: %s under pytracekit, %s in the "
                    "bare interpreter" % (state, bare))
            n = calls(data, "f", prog)
            t.check(n == 3, "f: %d calls, expected 3" % n)
            print("ok: threading %s at the end, as in the bare interpreter; f counted 3 times"
                  % state)
        else:
            t.fail("unknown case %r" % case)
    finally:
        shutil.rmtree(wd, ignore_errors=True)


main()
