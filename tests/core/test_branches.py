"""BRANCH and JUMP events (sys.monitoring, CPython 3.12+) against
sys.monitoring itself used from Python; and a clear refusal where the
backend cannot deliver them."""
import collections
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import MONITORING, PYTHON, run_cli, test_plugin  # noqa: E402

PROG = textwrap.dedent('''
    def w_classify(n):
        out = []
        for i in range(n):
            if i % 3 == 0:
                out.append("fizz")
            elif i % 5 == 0 and i > 4:
                out.append("buzz")
            else:
                continue
        while n > 0:
            n -= 4
        return out if out else None

    for k in (0, 7, 16):
        w_classify(k)
''')

ORACLE = textwrap.dedent('''
    import json, runpy, sys
    m = sys.monitoring
    T = 2
    rows = []
    prog = sys.argv[1]
    def cb(kind):
        def f(code, src, dst):
            if code.co_filename == prog:
                rows.append([kind, code.co_name, src, dst])
        return f
    m.use_tool_id(T, "oracle")
    m.register_callback(T, m.events.BRANCH, cb("branch"))
    m.register_callback(T, m.events.JUMP, cb("jump"))
    m.set_events(T, m.events.BRANCH | m.events.JUMP)
    runpy.run_path(prog, run_name="__main__")
    m.set_events(T, 0)
    json.dump(rows, open(sys.argv[2], "w"))
''')


class EventTable(unittest.TestCase):
    def test_docs_list_every_kind_of_the_table(self):
        src = os.environ.get("PTK_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
        import re
        with open(os.path.join(src, "include", "pytracekit", "event.h")) as f:
            header = f.read()
        table = header[header.index("#define PTK_EVENT_TABLE(X)"):]
        rows = re.findall(r'X\((\w+), "(\w+)"', table)
        enum = dict((k, int(v)) for k, v in re.findall(r"PTK_EV_(\w+) = (\d+)", header))
        self.assertEqual([enum[k] for k, _ in rows], list(range(len(rows))),
                         "table rows in ptk_event_kind order")
        self.assertEqual(enum["COUNT"], len(rows))
        with open(os.path.join(src, "docs", "events.md")) as f:
            docs = f.read()
        documented = re.findall(r"^\| `PTK_EV_(\w+)` \((\d+)\) \|", docs, re.M)
        self.assertEqual([(k, int(n)) for k, n in documented],
                         [(k, enum[k]) for k, _ in rows])


class Branches(unittest.TestCase):
    def test_against_sys_monitoring(self):
        if sys.version_info < (3, 12):
            self.skipTest("BRANCH/JUMP need sys.monitoring (CPython 3.12+); this is %d.%d"
                          % sys.version_info[:2])
        if not MONITORING:
            self.skipTest("the legacy backend does not deliver branch/jump (test_refused_on_legacy)")
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "prog.py")
            with open(prog, "w") as f:
                f.write(PROG)
            p = subprocess.run([PYTHON, "-c", ORACLE, prog, os.path.join(d, "oracle.json")],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(d, "oracle.json")) as f:
                want = collections.Counter(tuple(r) for r in json.load(f))
            r = run_cli(["-o", d, "-p", "%s:events=branches,include=%s" % (test_plugin("recorder"), prog), prog])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "recorder.json")) as f:
                got = collections.Counter((row[0], row[1], row[7][0], row[7][1]) for row in json.load(f))
        self.assertGreater(sum(v for k, v in want.items() if k[0] == "branch"), 10)
        self.assertGreater(sum(v for k, v in want.items() if k[0] == "jump"), 10)
        self.assertEqual(got, want)

    def test_refused_on_legacy(self):
        r = run_cli(["--backend", "legacy", "-p", test_plugin("recorder") + ":events=call,branch",
                     "-c", "print('ran')"])
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertNotIn("ran", r.stdout)
        self.assertIn("subscribes to branch, which the legacy backend does not deliver "
                      "(branch and jump need the monitoring backend, CPython 3.12+)", r.stderr)


if __name__ == "__main__":
    # A test skipped here is reported to CTest as skipped (77), with why.
    result = unittest.main(exit=False).result
    if result.skipped and result.testsRun == len(result.skipped):
        print("SKIP:", "; ".join(why for _, why in result.skipped))
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
