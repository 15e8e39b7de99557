"""Run under `pytracekit -p coverage:include=THIS_FILE` on the monitoring
backend: how many PY_START callbacks the hub gets for each function called
100 times. The hub's own PY_START callback is wrapped in one that counts,
through sys.monitoring's public API (register_callback returns the one it
replaces), and the hub's answer (DISABLE) passed back. Prints
{"several_lines": N, "one_line": N}."""
import json
import sys

m = sys.monitoring
TOOL = next(i for i in range(6) if m.get_tool(i) == "pytracekit")
starts = {}


def several_lines(x):
    if x < 0:
        return -x  # never runs: the function's lines are never all off
    return x


def one_line(x): return x  # noqa: E704  (its line starts at its RESUME)


def counting(code, offset):
    starts[code.co_name] = starts.get(code.co_name, 0) + 1
    return hub(code, offset)


hub = m.register_callback(TOOL, m.events.PY_START, counting)
for i in range(100):
    several_lines(i)
    one_line(i)
m.register_callback(TOOL, m.events.PY_START, hub)
print(json.dumps({k: starts.get(k, 0) for k in ("several_lines", "one_line")}))
