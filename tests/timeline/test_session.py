"""In-process sessions (pytracekit.Session): the GC callback is added when
the session's first event arrives — not when the plugin is loaded — and
removed at the end; two sessions one after the other each write a complete
file.

    test_session.py json|perfetto
"""
import json
import os
import sys

import ptk_testlib as T
import ptk_timeline_util as U

fmt = sys.argv[1]
CODE = r"""
import gc, json, sys
import pytracekit
out = sys.argv[1]
n0 = len(gc.callbacks)
def body(k):
    return sum(range(k))
res = {}
for i in range(2):
    s = pytracekit.Session(["timeline:format=%s"], output_dir=out + "/s%%d" %% i)
    res["after_new_%%d" %% i] = len(gc.callbacks) - n0
    s.start()
    body(10)
    res["running_%%d" %% i] = len(gc.callbacks) - n0
    s.stop()
    s.report()
    s.close()
    res["after_report_%%d" %% i] = len(gc.callbacks) - n0
print(json.dumps(res))
""" % fmt


def main():
    outdir = U.tempdir()
    p = T.run_python(CODE.replace("sys.argv[1]", repr(outdir)))
    res = json.loads(p.stdout.strip().splitlines()[-1])
    for i in range(2):
        U.check(res["after_new_%d" % i] == 0, "gc callback added before the session ran: %r" % res)
        U.check(res["running_%d" % i] == 1, "no gc callback while running: %r" % res)
        U.check(res["after_report_%d" % i] == 0, "gc callback left behind: %r" % res)
        trees = U.trees(U.load(os.path.join(outdir, "s%d" % i), fmt))
        names = [n[0] for nodes in trees.values() for n, _ in U.walk(nodes)]
        U.check(any(n.endswith("(body)") for n in names), "session %d: no body span" % i)
    print("OK:", fmt, res)


main()
