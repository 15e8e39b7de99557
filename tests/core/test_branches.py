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


# What DISABLE from a BRANCH callback switches off, per version: run with
# sys.monitoring alone (no pytracekit). f(6) twice; every callback returns
# DISABLE. Offsets are turned into (from line, to line).
DISABLE_PROBE = textwrap.dedent('''
    import json, sys
    m = sys.monitoring; E = m.events
    def f(n):
        t = 0
        for i in range(n):
            if i % 2:
                t += 1
        return t
    lines = {}
    for start, end, line in f.__code__.co_lines():
        for off in range(start, end, 2):
            lines[off] = line
    def first_line_from(off):
        # the line of the first instruction at or after off that has one
        while off not in lines or lines[off] is None:
            off += 2
        return lines[off]
    seen = []
    def mk(name):
        def cb(code, src, dst):
            if code is f.__code__:
                seen.append([name, lines[src], first_line_from(dst)])
                return m.DISABLE
        return cb
    m.use_tool_id(3, "probe")
    names = sys.argv[1].split(",")
    bits = 0
    for name in names:
        m.register_callback(3, getattr(E, name), mk(name))
        bits |= getattr(E, name)
    m.set_events(3, bits)
    f(6); f(6)
    m.set_events(3, 0)
    print(json.dumps(seen))
''')


class CPythonBranchEvents(unittest.TestCase):
    """CPython's own BRANCH events, which the monitoring backend feeds
    branch from: docs/events.md, "Branch events and DISABLE". f's lines:
    6 the for, 7 the if, 8 its body, 9 the return (the program's line 1 is
    empty); a direction's line is that of the instruction it leads to (the
    for loop's next item is stored on line 6, the if's fall-through starts
    with NOT_TAKEN on line 7, its jump leads to the backward jump, which is
    on line 8)."""

    def probe(self, names):
        p = subprocess.run([PYTHON, "-c", DISABLE_PROBE, names], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        return [tuple(r) for r in json.loads(p.stdout)]

    def test_branch_disable(self):
        if sys.version_info < (3, 12):
            self.skipTest("no sys.monitoring before 3.12; this is %d.%d" % sys.version_info[:2])
        got = self.probe("BRANCH")
        if sys.version_info >= (3, 14):
            # DISABLE switches off the direction taken only; the for loop's
            # exit is never reported once its other direction is off.
            self.assertEqual(got, [("BRANCH", 6, 6), ("BRANCH", 7, 7), ("BRANCH", 7, 8)])
        else:
            # DISABLE switches off the location, both directions.
            self.assertEqual(got, [("BRANCH", 6, 6), ("BRANCH", 7, 7)])

    def test_left_right_disable(self):
        if sys.version_info < (3, 14):
            self.skipTest("BRANCH_LEFT / BRANCH_RIGHT are 3.14+; this is %d.%d"
                          % sys.version_info[:2])
        # each direction once, the for loop's exit included
        self.assertEqual(self.probe("BRANCH_LEFT,BRANCH_RIGHT"),
                         [("BRANCH_LEFT", 6, 6), ("BRANCH_LEFT", 7, 7),
                          ("BRANCH_RIGHT", 7, 8), ("BRANCH_RIGHT", 6, 9)])

    def test_branch_hides_left_right(self):
        if sys.version_info < (3, 14):
            self.skipTest("BRANCH_LEFT / BRANCH_RIGHT are 3.14+; this is %d.%d"
                          % sys.version_info[:2])
        # with BRANCH on too, the tool's BRANCH_LEFT / BRANCH_RIGHT
        # callbacks are never called
        got = self.probe("BRANCH_LEFT,BRANCH_RIGHT,BRANCH")
        self.assertEqual({r[0] for r in got}, {"BRANCH"})


if __name__ == "__main__":
    # A test skipped here is reported to CTest as skipped (77), with why.
    result = unittest.main(exit=False).result
    if result.skipped and result.testsRun == len(result.skipped):
        print("SKIP:", "; ".join(why for _, why in result.skipped))
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
