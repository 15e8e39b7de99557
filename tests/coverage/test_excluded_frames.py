"""Frames of code that no subscriber's filter selects (here: every file but
main.py, with include=) run without LINE tracing on the legacy backend: the
hub sets their f_trace_lines to False when they start (lib/legacy.c,
frame_lines_off, which stores the member directly). A measured frame keeps
it True, and the measured file's lines are still all reported. On
sys.monitoring frames are left alone (True everywhere).
"""
import json
import os

import ptk_coverage_util as u

HELPER = '''import sys
def probe():
    return sys._getframe().f_trace_lines
'''
MAIN = '''import json, sys
sys.path.insert(0, sys.argv[1])
import helper
def measured():
    on = sys._getframe().f_trace_lines  # read before its last line has run
    return on
print(json.dumps([helper.probe(), helper.probe(), measured()]))
'''


def main():
    wd = u.workdir("excluded")
    lib = os.path.join(wd, "lib")
    os.makedirs(lib)
    with open(os.path.join(lib, "helper.py"), "w") as f:
        f.write(HELPER)
    main_py = os.path.join(wd, "main.py")
    with open(main_py, "w") as f:
        f.write(MAIN)
    p, data = u.run_ptk(wd, [main_py, lib], spec="coverage:include='*/main.py'")
    got = json.loads(p.stdout.strip().splitlines()[-1])
    want = [True, True, True] if u.MONITORING else [False, False, True]
    if got != want:
        u.fail("f_trace_lines of (excluded, excluded, measured) frames: %r, expected %r"
               % (got, want))
    if sorted(data["files"]) != [main_py]:
        u.fail("measured %r, expected only main.py" % sorted(data["files"]))
    hits = {n for n, c in data["files"][main_py]["hits"]}
    if hits != {1, 2, 3, 4, 5, 6, 7}:
        u.fail("main.py lines hit: %r" % sorted(hits))
    print("ok: f_trace_lines %r (%s)" % (got, u.BACKEND))


main()
