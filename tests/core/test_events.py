"""The event matrix of the CPython docs, observed through the hub."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import MONITORING, record, rows_of, run_python, session_program, test_plugin  # noqa: E402

FUNCS = """
def leaf(x):
    return len([x])

def middle(x):
    y = leaf(x)
    return y + 1

def raiser(n):
    if n == 0:
        raise ValueError("boom")
    return raiser(n - 1)

def catcher():
    try:
        raiser(2)
    except ValueError:
        return "caught"

def gen(n):
    for i in range(n):
        yield i
"""


class Matrix(unittest.TestCase):
    def test_profile_only_sees_no_trace_events(self):
        (rows,), _ = record("for i in range(3): middle(i)\ncatcher()", FUNCS,
                            ["events=profile"])
        kinds = {r[0] for r in rows}
        self.assertFalse(kinds & {"line", "opcode", "exception"}, kinds)
        self.assertEqual(len(rows_of(rows, "call", "middle")), 3)
        self.assertEqual(len(rows_of(rows, "c_call", "middle")), 0)
        # C calls made by leaf: len, 3 times
        self.assertEqual([r[3] for r in rows_of(rows, "c_call", "leaf")], ["len"] * 3)

    def test_trace_only_sees_no_c_events(self):
        # a profile subscriber beside it makes the hub install both hooks
        (trace, prof), _ = record("for i in range(3): middle(i)", FUNCS,
                                  ["events=call,return,line,exception",
                                   "events=profile"])
        self.assertFalse({r[0] for r in trace} & {"c_call", "c_return", "c_exception"})
        self.assertTrue(rows_of(trace, "line", "middle"))
        self.assertTrue(rows_of(prof, "c_call"))

    def test_both_hooks_call_and_return_once(self):
        (both,), _ = record("for i in range(5): middle(i)", FUNCS,
                            ["events=call,return,line,c_call"])
        self.assertEqual(len(rows_of(both, "call", "middle")), 5)
        self.assertEqual(len(rows_of(both, "return", "middle")), 5)
        self.assertEqual(len(rows_of(both, "call", "leaf")), 5)
        # two lines in middle per call
        self.assertEqual(len(rows_of(both, "line", "middle")), 10)

    def test_generator_creation_is_no_call_each_resume_is(self):
        # the unstarted generator is kept alive: closing it is a CALL on 3.11
        (rows,), _ = record("KEEP.append(gen(3))\nfor x in gen(2): pass",
                            FUNCS + "KEEP = []\n", ["events=call,return"])
        calls = rows_of(rows, "call", "gen")
        rets = rows_of(rows, "return", "gen")
        # h: 2 yields + the final return = 3 resumes; g never started
        self.assertEqual(len(calls), 3)
        self.assertEqual(len(rets), 3)
        self.assertEqual([r[6] for r in calls], [1, 2, 2])     # START, RESUME, RESUME
        self.assertEqual([r[6] for r in rets], [5, 5, 4])      # YIELD, YIELD, RETURN
        self.assertEqual([r[3] for r in rets], ["int", "int", "None"])

    def test_return_arg_is_null_on_unwind(self):
        (rows,), _ = record("catcher()\nmiddle(1)", FUNCS, ["events=call,return"])
        rr = rows_of(rows, "return", "raiser")
        self.assertEqual([r[3] for r in rr], ["NULL"] * 3)
        self.assertEqual([r[6] for r in rr], [6] * 3)           # UNWIND
        self.assertEqual([r[3] for r in rows_of(rows, "return", "catcher")], ["str"])
        self.assertEqual([r[3] for r in rows_of(rows, "return", "middle")], ["int"])

    def test_exception_in_each_frame_it_passes(self):
        (rows,), _ = record("catcher()", FUNCS, ["events=exception"])
        ex = rows_of(rows, "exception")
        self.assertEqual([r[1] for r in ex], ["raiser", "raiser", "raiser", "catcher"])
        self.assertEqual({r[3] for r in ex}, {"tuple"})

    def test_f_trace_lines_false_stops_line(self):
        body = "middle(1)\nmiddle(2)"
        (rows,), _ = record(body, FUNCS, ["events=line,no_lines=middle"])
        if MONITORING:
            # f_trace_lines belongs to the legacy hooks: sys.monitoring
            # does not look at it, so every line of middle still comes
            self.assertEqual(len(rows_of(rows, "line", "middle")), 4)
        else:
            # the first LINE of each middle frame, then nothing from it
            self.assertEqual(len(rows_of(rows, "line", "middle")), 2)
        self.assertEqual(len(rows_of(rows, "line", "leaf")), 2)

    def test_opcode_only_where_f_trace_opcodes_is_set(self):
        (rows,), _ = record("middle(1)", FUNCS, ["events=opcode,opcodes_check=true"])
        ops = rows_of(rows, "opcode")
        self.assertTrue(rows_of(rows, "opcode", "middle"))
        self.assertTrue(rows_of(rows, "opcode", "leaf"))
        # the legacy backend sets f_trace_opcodes on every frame to get
        # OPCODE; sys.monitoring's INSTRUCTION events need no frame flag
        self.assertEqual({r[7] for r in ops}, {False} if MONITORING else {True})

    def test_depth_and_thread(self):
        (rows,), _ = record("middle(1)", FUNCS, ["events=call,return"])
        d = {(r[0], r[1]): r[4] for r in rows}
        self.assertEqual(d[("call", "leaf")], d[("call", "middle")] + 1)
        self.assertEqual(d[("return", "leaf")], d[("call", "leaf")])
        self.assertEqual({r[5] for r in rows}, {0})

    def test_own_stack_same_events_no_depth(self):
        # PTK_FLAG_OWN_STACK everywhere: the monitoring backend keeps no
        # stacks, so depth is -1; the events are the same, in order
        body = "for i in range(3): middle(i)\ncatcher()\nfor x in gen(2): pass"
        spec = "events=profile,unbound=true"
        (own,), _ = record(body, FUNCS, [spec + ",own_stack=true"])
        (kept,), _ = record(body, FUNCS, [spec])
        strip = [[c for i, c in enumerate(r) if i != 4] for r in own]
        self.assertEqual(strip, [[c for i, c in enumerate(r) if i != 4] for r in kept])
        if MONITORING:
            self.assertEqual({r[4] for r in own}, {-1})
        else:
            self.assertEqual([r[4] for r in own], [r[4] for r in kept])

    def test_own_stack_then_depth_again(self):
        # A subscriber that reads depth joins while the stacks are not kept,
        # leaves, and another joins: each sees the same depths, from the
        # frames running when it started, with nothing left over.
        rec = test_plugin("recorder")
        src = FUNCS + f"""
import json, os, tempfile
import pytracekit
out = tempfile.mkdtemp()
lean = pytracekit.Session([{rec!r} + ":tag=lean,events=profile,unbound=true,own_stack=true"],
                          output_dir=out, threads="current")
lean.start()
def depths(tag):
    s = pytracekit.Session([{rec!r} + ":tag=" + tag + ",events=call,return"],
                           output_dir=out, threads="current")
    s.start()
    middle(1)
    s.stop()
    s.report()
    s.close()
    with open(os.path.join(out, "recorder-" + tag + ".json")) as f:
        rows = json.load(f)
    return [(r[0], r[1], r[4]) for r in rows if r[1] in ("middle", "leaf")]
def nested(tag):
    return depths(tag)
a = depths("a")
middle(2)
b = nested("b")
lean.stop()
lean.report()
lean.close()
print(json.dumps([a, b]))
"""
        p = run_python(src)
        a, b = json.loads(p.stdout)
        self.assertEqual([r[:2] for r in a], [["call", "middle"], ["call", "leaf"],
                                              ["return", "leaf"], ["return", "middle"]])
        d = [r[2] for r in a]
        self.assertGreaterEqual(d[0], 1)
        self.assertEqual(d, [d[0], d[0] + 1, d[0] + 1, d[0]])
        # one frame deeper (nested), and nothing stale from session a
        self.assertEqual([r[2] for r in b], [x + 1 for x in d])

    def test_settrace_gettrace_round_trip(self):
        body = """
import sys
middle(1)
t = sys.gettrace()
import os
if os.environ.get("PYTRACEKIT_BACKEND") == "monitoring":
    # the hub leaves the legacy slots to the program
    assert t is None and sys.getprofile() is None, (t, sys.getprofile())
else:
    assert 'pytracekit hub' in repr(t), repr(t)
sys.settrace(sys.gettrace())
middle(2)
sys.setprofile(sys.getprofile())
middle(3)
"""
        (rows,), _ = record(body, FUNCS, ["events=call,line"])
        self.assertEqual(len(rows_of(rows, "call", "middle")), 3)
        self.assertEqual(len(rows_of(rows, "line", "middle")), 6)

    def test_hooks_removed_when_last_subscriber_leaves(self):
        p = run_python(session_program(
            [f"{test_plugin('recorder')}:events=call,line"], "pass",
            setup="import sys\n", outdir=tempfile.mkdtemp())
            + "print(sys.getprofile(), sys.gettrace())\n")
        self.assertEqual(p.stdout.strip().splitlines()[-1], "None None")

    METHODS = """
def methods(x):
    lst = []
    lst.append(x)
    d = {x: 1}
    d.get(x)
    "a".upper()
    len(lst)
    return lst
"""

    def c_rows(self, rows):
        return [(r[0], r[3], tuple(r[7])) for r in rows_of(rows, None, "methods")
                if r[0] in ("c_call", "c_return")]

    def expected_c_rows(self, form):
        out = []
        for name, self_type, f in (("append", "list", form), ("get", "dict", form),
                                   ("upper", "str", form), ("len", "module", "bound")):
            out += [("c_call", name, (f, self_type)), ("c_return", name, (f, self_type))]
        return out * 2

    def test_unbound_c_methods_alone(self):
        # With PTK_FLAG_UNBOUND_C alone on monitoring, a method call comes as
        # its descriptor with the object in c_self (no bound method made);
        # the legacy hooks always report the bound method. Built-in
        # functions are the same object either way.
        (rows,), _ = record("for i in range(2): methods(i)", self.METHODS,
                            ["events=profile,unbound=true"])
        self.assertEqual(self.c_rows(rows),
                         self.expected_c_rows("descriptor" if MONITORING else "bound"))

    def test_unbound_c_methods_beside_a_plugin_that_needs_them_bound(self):
        # one subscriber without the flag: everyone gets the bound method,
        # with the same name and self
        (unb, plain), _ = record("for i in range(2): methods(i)", self.METHODS,
                                 ["events=profile,unbound=true", "events=profile"])
        self.assertEqual(self.c_rows(unb), self.expected_c_rows("bound"))
        self.assertEqual([(r[0], r[1], r[3]) for r in rows_of(plain, None, "methods")
                          if r[0] in ("c_call", "c_return")],
                         [(k, "methods", n) for k, n, _ in self.expected_c_rows("bound")])

    def test_disable_line_per_location(self):
        # r0 disables every LINE; r1 beside it keeps getting them all
        body = "for i in range(4): middle(i)"
        (r0, r1), _ = record(body, FUNCS, ["events=line,disable=line", "events=line"])
        self.assertEqual(len(rows_of(r0, "line", "middle")), 2)
        self.assertEqual(len(rows_of(r1, "line", "middle")), 8)

    def test_disabled_lines_come_back_for_a_new_subscriber(self):
        # A disables every line of loop() (on monitoring: sys.monitoring.DISABLE
        # at each location); B, started afterwards, must still get them all
        # (the hub restarts the disabled events for it), and A still none.
        rec = test_plugin("recorder")
        with tempfile.TemporaryDirectory() as out:
            src = f"""
import pytracekit
def loop():
    t = 0
    for i in range(3):
        t += i
    return t
a = pytracekit.Session([{rec!r} + ":events=line,disable=line,tag=a,only=loop"],
                       output_dir={out!r})
a.start(); loop(); loop()
b = pytracekit.Session([{rec!r} + ":events=line,tag=b,only=loop"], output_dir={out!r})
b.start(); loop(); loop()
b.stop(); a.stop(); a.report(); b.report()
"""
            run_python(src, cwd=out)
            rows = {}
            for tag in "ab":
                with open(os.path.join(out, f"recorder-{tag}.json")) as f:
                    rows[tag] = [r[2] for r in json.load(f)]
        # loop() runs lines 3, 4, 5, 4, 5, 4, 5, 4, 6 (relative to its def at 2)
        self.assertEqual(sorted(rows["a"]), [4, 5, 6, 7])
        self.assertEqual(len(rows["b"]), 18)
        self.assertEqual(sorted(set(rows["b"])), [4, 5, 6, 7])


if __name__ == "__main__":
    unittest.main()
