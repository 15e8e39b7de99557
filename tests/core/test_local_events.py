"""Per-code events on the monitoring backend (lib/backends/monitoring.c): with a
filter that can reject code, LINE (and JUMP, BRANCH, INSTRUCTION) are set
per code object the filter selects, not for the whole interpreter. What must
still hold, and what sys.monitoring itself says about it:

- lines run after the session started are delivered in frames that were
  already running then: the function that started it, a generator suspended
  before and resumed after, a loop in another thread;
- the code the filter selects has LINE among its local events, the code it
  rejects (json.dumps, run during the session) none, and LINE is not among
  the tool's global events;
- closing the session clears the local events it set."""
import ast
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import BACKEND, MONITORING, PYTHON, run_cli, test_plugin  # noqa: E402

PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "localevents", "prog.py")


def marked_lines():
    """{marker: line} from the '# LINE: marker' comments of the program."""
    out = {}
    with open(PROG) as f:
        for n, text in enumerate(f, 1):
            if "# LINE: " in text:
                out[text.split("# LINE: ")[1].strip()] = n
    return out


_RUN = {}


def run_once():
    """Runs the program once per process; returns (rows, info, marks)."""
    if not _RUN:
        out = tempfile.mkdtemp()
        p = subprocess.run([PYTHON, PROG, test_plugin("recorder"), out, BACKEND],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise AssertionError("program failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
        with open(os.path.join(out, "recorder.json")) as f:
            _RUN["rows"] = json.load(f)
        with open(os.path.join(out, "info.json")) as f:
            _RUN["info"] = json.load(f)
    return _RUN["rows"], _RUN["info"], marked_lines()


class LocalEvents(unittest.TestCase):
    def setUp(self):
        if not MONITORING:
            self.skipTest("per-code events are the monitoring backend's; this is the %s "
                          "backend" % BACKEND)
        self.rows, self.info, self.marks = run_once()

    def lines_of(self, name):
        return {r[2] for r in self.rows if r[0] == "line" and r[1] == name}

    def test_running_frames_get_their_lines(self):
        m = self.marks
        self.assertIn(m["main after the session started"], self.lines_of("main"))
        self.assertIn(m["gen after its resume"], self.lines_of("gen"))
        self.assertIn(m["spin, a loop running in another thread"], self.lines_of("spin"))
        self.assertIn(m["measured"], self.lines_of("measured"))

    def test_only_this_file(self):
        with open(PROG) as f:
            tree = ast.parse(f.read())
        here = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        names = {r[1] for r in self.rows if r[0] == "line"}
        # json.dumps ran during the session: none of its lines came
        self.assertLessEqual(names, here | {"<genexpr>"}, names)

    def test_local_not_global(self):
        i = self.info
        line = i["LINE"]
        self.assertEqual(i["global"] & line, 0, "LINE set for the whole interpreter")
        self.assertTrue(i["measured"] & line, "no LINE on selected code: %r" % i)
        self.assertTrue(i["main"] & line, "no LINE on the frame that started the session: %r" % i)
        self.assertEqual(i["unmeasured"], 0, "events set on code the filter rejects: %r" % i)

    def test_cleared_at_close(self):
        self.assertEqual(self.info["after_close"], 0)

    def test_py_start_switched_off(self):
        # Under line coverage the hub keeps a PY_START on only while the line
        # starting at its RESUME may still lose its LINE (line_needs_start,
        # 3.13+). A function of several lines has its RESUME on its `def`
        # line, which has no instruction of its own: its PY_START is
        # switched off at the first call even though one of its lines never
        # runs (before, all 100 calls came). A one-line function's PY_START
        # stays on until its line has been recorded: 2 calls on 3.13+, 1 on
        # 3.12 (where LINE alone reports that line).
        prog = os.path.join(os.path.dirname(PROG), "starts.py")
        r = run_cli(["-o", tempfile.mkdtemp(), "-p", "coverage:include=%s,reports=false" % prog,
                     prog])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        got = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(got, {"several_lines": 1,
                               "one_line": 1 if sys.version_info < (3, 13) else 2}, r.stderr)


if __name__ == "__main__":
    # A test skipped here is reported to CTest as skipped (77), with why.
    result = unittest.main(exit=False).result
    if result.skipped and result.testsRun == len(result.skipped):
        print("SKIP:", "; ".join(why for _, why in result.skipped))
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
