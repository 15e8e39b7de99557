"""The floor of `lines:modules=M` on the monitoring backend: what CPython
alone charges for a LINE event on every line of one module, delivered to a
C function that does nothing.

    python3 bench/lines/line_floor.py --build build/r313 [--suite test_difflib]

Runs the suite three times under callgrind (instructions: the machine is
shared and wall time is noisy), whole process:

  bare    python -m unittest -q test.SUITE
  floor   the same, with sys.monitoring's LINE event switched on (local
          events) in every code object of the module the suite tests, into
          `operator.is_` (a built-in that takes the two arguments, compares
          them and returns): no tool can deliver a LINE event for less
  lines   pytracekit -p lines:modules=M

and prints each one's instructions and ratio to bare. With the floor above
the target's ratio, no LINE-event design meets it; what is left to a tool
is (lines - floor).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SUITES = {"test_difflib": "difflib", "test_json": "json", "test_textwrap": "textwrap"}

FLOOR = r"""
import importlib, operator, sys, types, unittest
suite, name = sys.argv[1], sys.argv[2]
mod = importlib.import_module(name)
files = {mod.__file__}
if hasattr(mod, "__path__"):  # a package: its submodules imported so far
    files = {m.__file__ for k, m in list(sys.modules.items())
             if (k == name or k.startswith(name + ".")) and getattr(m, "__file__", None)}
seen = set()
def codes(co):
    if id(co) in seen:
        return
    seen.add(id(co))
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)
def functions(ns, depth=0):
    for v in list(vars(ns).values()):
        for f in (v, getattr(v, "__func__", None), getattr(v, "fget", None),
                  getattr(v, "fset", None)):
            co = getattr(f, "__code__", None)
            if isinstance(co, types.CodeType) and co.co_filename in files:
                yield co
        if isinstance(v, type) and v.__module__.startswith(name) and depth < 3:
            yield from functions(v, depth + 1)
mon = sys.monitoring
mon.use_tool_id(4, "floor")
mon.register_callback(4, mon.events.LINE, operator.is_)
n = 0
for m in {sys.modules[k] for k in sys.modules if k == name or k.startswith(name + ".")}:
    for top in functions(m):
        for co in codes(top):
            mon.set_local_events(4, co, mon.events.LINE)
            n += 1
print("floor: LINE on", n, "code objects", file=sys.stderr)
unittest.main(module=None, argv=["floor", "-q", "test." + suite])
"""


def python_of(build):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("Python3_EXECUTABLE:"):
                return line.split("=", 1)[1].strip()
    raise SystemExit("no Python3_EXECUTABLE in the build's CMakeCache.txt")


def instructions(cmd, tmp, name):
    log = os.path.join(tmp, name + ".log")
    with open(log, "w") as f:
        subprocess.run(["valgrind", "--tool=callgrind",
                        "--callgrind-out-file=" + os.path.join(tmp, name + ".cg")] + cmd,
                       stdout=f, stderr=subprocess.STDOUT)
    with open(log) as f:
        text = f.read()
    m = re.search(r"Collected : (\d+)", text)
    if not m:
        raise SystemExit("%s: no callgrind total:\n%s" % (name, text[-2000:]))
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--suite", default="test_difflib", choices=sorted(SUITES))
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    py = python_of(build)
    mod = SUITES[a.suite]
    tmp = tempfile.mkdtemp(prefix="ptk-line-floor-")
    script = os.path.join(tmp, "floor.py")
    with open(script, "w") as f:
        f.write(FLOOR)
    runs = {
        "bare": [py, "-m", "unittest", "-q", "test." + a.suite],
        "floor": [py, script, a.suite, mod],
        "lines": [os.path.join(build, "tools", "pytracekit"), "--plugin-path",
                  os.path.join(build, "plugins"), "-o", os.path.join(tmp, "out"),
                  "-p", "lines:modules=" + mod, "-m", "unittest", "-q", "test." + a.suite],
    }
    got = {k: instructions(cmd, tmp, k) for k, cmd in runs.items()}
    for k, n in got.items():
        print("%-6s %15s instructions  %.2fx bare" % (k, format(n, ","), n / got["bare"]))
    print("lines beyond the floor: %.2fx bare" % ((got["lines"] - got["floor"]) / got["bare"]))


if __name__ == "__main__":
    main()
