"""timeline:blocking=50ms on programs/blocking.py against asyncio's own
debug mode (PYTHONASYNCIODEBUG=1, slow_callback_duration 50 ms), which
warns about every step that held the loop that long: the summary lists the
same steps (the 'slow' Task's three, none of the others), each with its
duration and the stack of its slowest call (slow -> blocker -> helper ->
time.sleep); the counter track shows them; without the option there is no
list.

    test_blocking.py json|perfetto
"""
import json
import os
import re
import subprocess
import sys

import ptk_timeline_util as TU
from ptk_testlib import check

PROG = TU.program("blocking.py")
PYTHON = TU.PYTHON


def oracle():
    """The Tasks asyncio's debug mode says held the loop, in order."""
    env = dict(os.environ, PYTHONASYNCIODEBUG="1")
    p = subprocess.run([PYTHON, PROG], capture_output=True, text=True, env=env, timeout=120)
    check(p.returncode == 0 and p.stdout.strip() == "6", "debug run: %r %r" % (p.stdout, p.stderr))
    warned = re.findall(r"Executing <Task[^>]*name='([^']+)'.*? took ([0-9.]+) seconds",
                        p.stderr)
    return [name for name, _ in warned]


def main():
    fmt = sys.argv[1]
    want = oracle()
    check(want == ["slow"] * 3, "asyncio's debug mode warned about %r" % (want,))
    out, p = TU.run(PROG, "blocking=50ms,format=" + fmt)
    check(p.stdout.strip() == "6", "run: %r %r" % (p.stdout, p.stderr))
    s = json.load(open(os.path.join(out, "timeline.summary.json")))
    got = s["blocking"]
    check([b["task"] for b in got] == want, "blocking steps %r, asyncio's %r"
          % ([b["task"] for b in got], want))
    check(s["blocking_ns"] == 50000000, "blocking_ns %r" % s["blocking_ns"])
    for b in got:
        check(150000000 <= b["slowest_ns"] <= b["duration_ns"],
              "a step of %d ns whose slowest call took %d ns" % (b["duration_ns"], b["slowest_ns"]))
        names = [re.sub(r"^.*\((.*)\)$", r"\1", n) for n in b["slowest_stack"]]
        check(names == ["slow", "blocker", "helper", "<built-in method time.sleep>"],
              "the slowest call's stack: %r" % b["slowest_stack"])
    if fmt == "json":
        events = json.load(open(os.path.join(out, "timeline.json")))
        samples = [e for e in events if e.get("ph") == "C"
                   and e.get("name") == "blocking Task steps (ms)"]
        values = [list(e["args"].values())[0] for e in samples]
        check(len(values) == 6 and values[1::2] == [0, 0, 0]
              and all(v >= 150 for v in values[0::2]),
              "the counter track's samples: %r" % values)
    off, p = TU.run(PROG, "format=" + fmt)
    s = json.load(open(os.path.join(off, "timeline.summary.json")))
    check(s["blocking"] == [] and s["blocking_ns"] == 0, "without the option: %r" % s["blocking"])
    print("OK:", [(b["task"], b["duration_ns"]) for b in got])


main()
