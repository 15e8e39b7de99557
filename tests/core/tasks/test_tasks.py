"""The hub's number of the asyncio Task running (ptk_host::running_task),
asked at every event by tests/plugins/recorder.c (task=true).

    test_tasks.py CASE

  numbers  on program.py (Tasks at once, 30 short ones one after another, a
           loop in a thread, a second loop): at every call (and resume) of
           the program's functions, the Task's number and name equal an
           oracle's that asks asyncio at every sys.setprofile call and
           numbers the Tasks in the order first seen, holding each: 71
           Tasks of the program (and each asyncio.run's two at its end),
           each its own number, though Tasks that are gone leave their
           addresses to new ones
  none     coroutines driven by hand, no asyncio: the number is 0 at every
           event, and asking never imports asyncio
"""
import json
import os
import subprocess
import sys
import tempfile

from ptk_testlib import CLI, PYTHON, PLAIN_ENV, check, fail

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "program.py")
REC = os.path.join(os.environ["PTK_TEST_PLUGIN_DIR"], "recorder.so")
NAMES = ("leaf", "worker", "short", "main", "in_thread")


def record(args=()):
    out = tempfile.mkdtemp(prefix="ptk-tasks-")
    cmd = [CLI, "-p", REC + ":task=true,events=call", "-o", out, PROG] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    with open(os.path.join(out, "recorder.json")) as f:
        return p.stdout, json.load(f), p.stderr


def case_numbers():
    out = os.path.join(tempfile.mkdtemp(prefix="ptk-tasks-oracle-"), "oracle.json")
    p = subprocess.run([PYTHON, os.path.join(HERE, "oracle.py"), out, PROG],
                       capture_output=True, text=True, timeout=120, env=PLAIN_ENV)
    check(p.returncode == 0, "the oracle exited %d:\n%s" % (p.returncode, p.stderr))
    with open(out) as f:
        o = json.load(f)
    want = [tuple(r) for r in o["rows"] if r[0] in NAMES]
    stdout, rows, stderr = record()
    check(stdout == p.stdout, "the program's output: %r, the oracle's %r" % (stdout, p.stdout))
    # [kind, function, line, arg, depth, thread, origin, [number, name]]
    got = [(r[1].rsplit(".", 1)[-1], r[7][0], r[7][1]) for r in rows
           if r[1].rsplit(".", 1)[-1] in NAMES]
    # the program's 71 Tasks, and each asyncio.run's own two at its end
    # (shutdown_asyncgens, shutdown_default_executor)
    check(o["tasks"] == 71 + 3 * 2, "the oracle saw %d Tasks, expected 77" % o["tasks"])
    numbers = {n for _, n, _ in got if n}
    check(len(numbers) == 71 and numbers <= set(range(1, 78)),
          "the hub numbered %d of the program's Tasks: %r" % (len(numbers), sorted(numbers)))
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        fail("row %d of %d/%d: hub %r, oracle %r" % (i, len(got), len(want), got[i:i + 3],
                                                       want[i:i + 3]))
    print("OK: %d calls in %d Tasks, equal to the oracle's (which holds every Task); %s"
          % (len(got), len(numbers), stderr.strip()))


def case_none():
    stdout, rows, _ = record(["none"])
    check(stdout.split() == ["[0,", "1,", "2]", "False"],
          "the program: %r (asyncio must not be imported)" % stdout)
    mine = [r for r in rows if r[1].rsplit(".", 1)[-1] in ("by_hand", "outer", "inner")]
    check(len(mine) == 5, "%d calls of the program's functions, expected 5: %r" % (len(mine), mine))
    bad = [r for r in rows if r[7] != [0, None]]
    check(not bad, "a Task number without asyncio: %r" % bad[:3])
    print("OK: %d events, no Task, asyncio not imported" % len(rows))


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
