"""Runs under test_local_events.py: a session whose recorder's filter
selects this file starts while main(), a suspended generator and a thread's
loop are already running here; json (not selected) runs during it."""
import json
import sys
import threading
import time

import pytracekit

REC, OUT, BACKEND = sys.argv[1], sys.argv[2], sys.argv[3]


def gen():
    yield 1
    resumed = 2  # LINE: gen after its resume
    yield resumed


def spin(ready, stop):
    n = 0
    ready.set()
    while not stop.is_set():
        n += 1  # LINE: spin, a loop running in another thread
    return n


def measured(x):
    y = x + 1  # LINE: measured
    return y


def tool_id():
    m = sys.monitoring
    return next(i for i in range(6) if m.get_tool(i) == "pytracekit")


def main():
    g = gen()
    next(g)
    ready, stop = threading.Event(), threading.Event()
    t = threading.Thread(target=spin, args=(ready, stop))
    t.start()
    ready.wait()
    s = pytracekit.Session(
        [REC + ":events=line,include=" + __file__], output_dir=OUT,
        threads="all", backend=BACKEND)
    s.start()
    after_start = 1  # LINE: main after the session started
    next(g)
    measured(after_start)
    json.dumps([after_start])
    info = {}
    if BACKEND == "monitoring":
        m = sys.monitoring
        tool = tool_id()
        info = {
            "tool": tool,
            "LINE": m.events.LINE,
            "global": m.get_events(tool),
            "measured": m.get_local_events(tool, measured.__code__),
            "main": m.get_local_events(tool, main.__code__),
            "unmeasured": m.get_local_events(tool, json.dumps.__code__),
        }
    time.sleep(0.05)  # the thread gets the GIL and runs its loop
    stop.set()
    t.join()
    s.stop()
    s.report()
    s.close()
    if BACKEND == "monitoring":
        m = sys.monitoring
        m.use_tool_id(info["tool"], "check")  # free again after close
        info["after_close"] = m.get_local_events(info["tool"], measured.__code__)
        m.free_tool_id(info["tool"])
    with open(OUT + "/info.json", "w") as f:
        json.dump(info, f)


main()
