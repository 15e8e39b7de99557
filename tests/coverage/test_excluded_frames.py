"""Frames of code that no subscriber's filter selects (here: every file but
main.py, with include=) run without LINE tracing on the legacy backend, and
the measured file's lines are still all reported, those of functions that
excluded code calls back among them.

- Legacy backend with its frame hook (lib/backends/frame_hook.c, CPython 3.11):
  excluded frames run with no trace or profile function at all, and so do
  new frames of measured code whose lines have all been covered (madd,
  after its first call). They never
  reach the hub (f_trace_lines stays True), and CPython specialises their
  instructions as in an untraced run: `a + b` on ints becomes
  BINARY_OP_ADD_INT, which it never does while a thread is traced.
- Legacy backend without it (3.12, 3.13, or PYTRACEKIT_FRAME_HOOK=0): the
  hub sets their f_trace_lines to False when they start (lib/backends/legacy.c,
  frame_lines_off, which stores the member directly); their instructions
  are not specialised. Run here too, where the hook exists, so that the
  specialisation check is seen to tell the two apart.
- sys.monitoring: frames are left alone (True everywhere).
"""
import json
import os

import ptk_coverage_util as u

HELPER = '''import dis, sys
def probe():
    return sys._getframe().f_trace_lines
def add(a, b):
    return a + b
def specialised():
    for i in range(100):
        add(i, 1)
    ops = {i.opname for i in dis.get_instructions(add, adaptive=True)}
    return "BINARY_OP_ADD_INT" in ops
def apply(f, x):
    return f(x)
def gen(f, n):
    for i in range(n):
        yield f(i)
'''
MAIN = '''import json, sys
sys.path.insert(0, sys.argv[1])
import helper
def measured():
    on = sys._getframe().f_trace_lines  # read before its last line has run
    return on
def twice(x):
    return 2 * x
def madd(a, b):
    return a + b
def main():
    total = helper.apply(twice, 3) + sum(helper.gen(twice, 3))
    for i in range(100):
        madd(i, 1)
    ops = {i.opname for i in helper.dis.get_instructions(madd, adaptive=True)}
    return [helper.probe(), helper.probe(), measured(), helper.specialised(), total,
            "BINARY_OP_ADD_INT" in ops]
print(json.dumps(main()))
'''


def check(wd, main_py, lib, hook, env_extra=None, outdir="out"):
    p, data = u.run_ptk(wd, [main_py, lib], spec="coverage:include='*/main.py'",
                        outdir=outdir, env_extra=env_extra)
    got = json.loads(p.stdout.strip().splitlines()[-1])
    if got[4] != 12:
        u.fail("the program computed %r, expected 12" % got[4])
    lines = got[:3]
    want = [True, True, True] if u.MONITORING or hook else [False, False, True]
    if lines != want:
        u.fail("f_trace_lines of (excluded, excluded, measured) frames: %r, expected %r "
               "(frame hook %s)" % (lines, want, "on" if hook else "off"))
    if not u.MONITORING and os.environ.get("PTK_FRAME_HOOK") == "1":
        if got[3] != hook:
            u.fail("excluded code specialised: %r, expected %r (frame hook %s)"
                   % (got[3], hook, "on" if hook else "off"))
        if got[5] != hook:
            u.fail("measured code whose lines are all covered specialised: %r, expected %r "
                   "(frame hook %s)" % (got[5], hook, "on" if hook else "off"))
    if sorted(data["files"]) != [main_py]:
        u.fail("measured %r, expected only main.py" % sorted(data["files"]))
    hits = {n for n, c in data["files"][main_py]["hits"]}
    if hits != set(range(1, 19)):
        u.fail("main.py lines hit: %r, expected 1-18" % sorted(hits))
    print("ok: f_trace_lines %r, specialised %r (%s, frame hook %s)"
          % (lines, got[3], u.BACKEND, "on" if hook else "off"))


def main():
    wd = u.workdir("excluded")
    lib = os.path.join(wd, "lib")
    os.makedirs(lib)
    with open(os.path.join(lib, "helper.py"), "w") as f:
        f.write(HELPER)
    main_py = os.path.join(wd, "main.py")
    with open(main_py, "w") as f:
        f.write(MAIN)
    check(wd, main_py, lib, u.FRAME_HOOK)
    if u.FRAME_HOOK:
        check(wd, main_py, lib, False, env_extra={"PYTRACEKIT_FRAME_HOOK": "0"},
              outdir="out-nohook")


main()
