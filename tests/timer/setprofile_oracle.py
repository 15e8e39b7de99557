"""The oracle of tests/timer/test_realprog.py: runs `-m MODULE ARGS...` under
sys.setprofile and counts the 'call' events of each Python function, keyed
as pstats keys them: (co_filename, co_firstlineno, co_name).

    python setprofile_oracle.py OUT -m MODULE [ARGS...]

The counts go to OUT (marshal) at the very end of the run: the dump is the
first atexit handler registered, so it runs after the program's own. What
is imported here before the profile function is set is marshal (loaded at
start), atexit, which leaves sys.modules again as pytracekit makes it
leave (the interpreter keeps the registration), and runpy, which `python -m`
imports first thing and `pytracekit -m` imports before it starts. The
program's own imports run, and are counted, as they would be without the
oracle.
"""
import sys

_had_atexit = "atexit" in sys.modules
import atexit  # noqa: E402
import marshal  # noqa: E402

if not _had_atexit:
    del sys.modules["atexit"]

out, dash_m, module = sys.argv[1:4]
assert dash_m == "-m", "usage: setprofile_oracle.py OUT -m MODULE [ARGS...]"
sys.argv = [module] + sys.argv[4:]
counts = {}


def profile(frame, event, arg):
    if event == "call":
        co = frame.f_code
        key = (co.co_filename, co.co_firstlineno, co.co_name)
        counts[key] = counts.get(key, 0) + 1


def dump():
    sys.setprofile(None)
    with open(out, "wb") as f:
        marshal.dump(counts, f)


atexit.register(dump)
import runpy  # noqa: E402

sys.setprofile(profile)

try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
except SystemExit as e:
    if e.code not in (None, 0):
        raise
