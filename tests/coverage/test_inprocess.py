"""A session started after the measured module was imported (the Python
module's in-process API): the first code object seen of the file is a
function's, so the denominator comes from compiling the file's source.
Executed lines must equal those a sys.settrace collector started at the
same point sees; functions never called must still be listed as missed.
"""
import json
import os
import subprocess
import sys

import ptk_coverage_util as u

DRIVER = r'''
import json, os, sys
sys.path.insert(0, sys.argv[2])
from app import util          # imported before measuring starts
mode, out = sys.argv[1], sys.argv[3]
if mode == "ptk":
    import pytracekit
    s = pytracekit.Session(["coverage"], output_dir=out)
    s.start()
else:
    seen = set()
    def local(frame, event, arg):
        if event == "line":
            seen.add((frame.f_code.co_filename, frame.f_lineno))
        return local
    sys.settrace(lambda frame, event, arg: local)
util.mode_a(util.parse("a, b"))
if mode == "ptk":
    s.stop()
    s.report()
else:
    sys.settrace(None)
    with open(os.path.join(out, "oracle.json"), "w") as f:
        json.dump(sorted(seen), f)
'''


def main():
    wd = u.workdir("inprocess")
    u.copy_corpus(wd, "app")
    drv = os.path.join(wd, "driver.py")
    with open(drv, "w") as f:
        f.write(DRIVER)
    os.makedirs(os.path.join(wd, "out"))
    env = {"PYTRACEKIT_PLUGIN_PATH": u.env("PTK_PLUGIN_DIR")}
    u.run([u.python(), drv, "ptk", wd, os.path.join(wd, "out")], wd, env_extra=env)
    u.run([u.python(), drv, "oracle", wd, wd], wd)
    with open(os.path.join(wd, "out", "coverage.json")) as f:
        data = json.load(f)
    with open(os.path.join(wd, "oracle.json")) as f:
        oracle = {}
        for fn, line in json.load(f):
            oracle.setdefault(fn, set()).add(line)
    util = os.path.join(wd, "app", "util.py")
    measured = sorted(data["files"])
    if util not in measured or os.path.join(wd, "app", "__init__.py") in measured:
        u.fail("measured %s: app/util.py ran, app/__init__.py did not" % measured)
    u.compare_sets("executed lines", {util: u.executed(data)[util]},
                   {util: oracle.get(util, set())}, "oracle")
    rec = data["files"][util]
    # The denominator is the whole file's: compare with a fresh compile's
    # code objects (module and every nested one).
    code = compile(open(util).read(), util, "exec")
    lines, todo = set(), [code]
    while todo:
        c = todo.pop()
        lines.update(l for _, _, l in c.co_lines() if l)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_lines"))
    # Module-level lines (1, 6, 13, 19) and the bodies of the functions that
    # never ran (14-16, 20) are known although their code never ran.
    if not set(rec["lines"]) <= lines or not {1, 6, 13, 14, 15, 16, 19, 20} <= set(rec["lines"]):
        u.fail("denominator %r is not the file's (code objects have %r)"
               % (rec["lines"], sorted(lines)))
    funcs = {n: c for n, l, c in rec["functions"] if "<" not in n}
    if funcs != {"parse": 1, "mode_a": 1, "mode_b": 0, "never_used": 0}:
        u.fail("functions %r" % rec["functions"])
    module_lines = {1, 6, 13, 19}
    if module_lines & u.executed(data)[util]:
        u.fail("module-level lines ran before the session started but are reported executed")
    print("ok: %d executed of %d lines; functions %r"
          % (len(rec["hits"]), len(rec["lines"]), funcs))


main()
