"""The least a line-coverage tool on sys.monitoring does, and nothing else:
the floor of bench/realprog/current_pythons.py's `mon_floor` variant.

    python monitoring_floor.py GLOBS SCRIPT [ARGS...]

PY_START for every code object (the only way to learn that one starts),
switched off where it fires (DISABLE); for a code object whose file matches
GLOBS (comma-separated fnmatch patterns, as the coverage variants' include=)
LINE is set on that code object alone (set_local_events), and each line
switched off at its first event. The callbacks record nothing: a tool
that records the lines costs at least this. Then SCRIPT runs as __main__.
"""
import fnmatch
import os
import runpy
import sys

mon = sys.monitoring
TOOL = 5  # a free tool id (coverage.py takes 1, profilers 2, debuggers 0)
globs = sys.argv[1].split(",")
selected = {}


def start(code, offset):
    name = code.co_filename
    want = selected.get(name)
    if want is None:
        want = selected[name] = any(fnmatch.fnmatch(name, g) for g in globs)
    if want:
        mon.set_local_events(TOOL, code, mon.events.LINE)
    return mon.DISABLE


def line(code, lineno):
    return mon.DISABLE


mon.use_tool_id(TOOL, "floor")
mon.register_callback(TOOL, mon.events.PY_START, start)
mon.register_callback(TOOL, mon.events.LINE, line)
mon.set_events(TOOL, mon.events.PY_START)
sys.argv = sys.argv[2:]
sys.path[0] = os.path.dirname(sys.argv[0])
runpy.run_path(sys.argv[0], run_name="__main__")
