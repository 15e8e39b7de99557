"""A plugin built against the 0.2 headers (plugin ABI 1.1; kept in
tests/plugins/abi11/) loads and runs on this host with exact counts, and
gets the hub's filters like any other plugin."""
import collections
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import run_cli, test_plugin  # noqa: E402
from test_filters import CORPUS, MAIN, oracle  # noqa: E402

KINDS = "call,return,c_call,c_return,line"


def run(old_opts, counter_opts):
    with tempfile.TemporaryDirectory() as d:
        r = run_cli(["-o", d, "-p", test_plugin("abi11_counter") + old_opts,
                     "-p", "counter:events=%s%s" % (KINDS, counter_opts), MAIN], cwd=CORPUS)
        if r.returncode != 0:
            raise AssertionError(r.stderr)
        with open(os.path.join(d, "abi11_counter.json")) as f:
            old = json.load(f)
        with open(os.path.join(d, "counter.json")) as f:
            new = json.load(f)
    return old, new


class OldPlugin(unittest.TestCase):
    def test_loads_and_counts_like_counter(self):
        old, new = run("", "")
        for k in KINDS.split(","):
            self.assertEqual(old["events"][k], new["events"][k], k)
            self.assertGreater(old["events"][k], 0, k)
        for k in ("exception", "opcode", "c_exception"):
            self.assertEqual(old["events"][k], 0, k)

    def test_filtered_like_the_oracle(self):
        old, new = run(":modules=fpkg,max_depth=3", ",modules=fpkg,max_depth=3")
        want = oracle("modules=fpkg,max_depth=3", [MAIN])
        per_kind = collections.Counter()
        calls = collections.Counter()
        for (kind, name, _line, _c), n in want.items():
            per_kind[kind] += n
            if kind == "call":
                calls[name] += n
        for k in KINDS.split(","):
            self.assertEqual(old["events"][k], per_kind[k], k)
            self.assertEqual(new["events"][k], per_kind[k], k)
        self.assertEqual(collections.Counter(old["calls"]), calls)

    def test_listed(self):
        r = run_cli(["--list-plugins", "--plugin-path", os.path.dirname(test_plugin("abi11_counter"))])
        self.assertIn("abi11_counter", r.stdout)
        self.assertNotIn("abi11_counter: ", r.stderr)


SLOTS = r"""
def w_call(n):
    return n
for i in range(%(n)d):
    # a new code object each time, freed at once: addresses get reused
    ns = {}
    exec(compile("def w_fresh():\n    return %%d\n" %% i, "<fresh>", "exec"), ns)
    ns["w_fresh"]()
    del ns
for i in range(50):
    w_call(i)
"""


class CodeSlot(unittest.TestCase):
    def test_one_slot_per_code_object(self):
        n = 300
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "prog.py")
            with open(prog, "w") as f:
                f.write(SLOTS % {"n": n})
            r = run_cli(["-o", d, "-p", test_plugin("slotprobe") + ":include=<fresh>;" + prog, prog])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "slotprobe.json")) as f:
                got = json.load(f)
        self.assertEqual(got["missing"], 0)
        # every fresh code object (each exec'd module and its w_fresh)
        # starts with an empty slot, even at the address of a freed one;
        # w_call keeps its slot over 50 calls
        self.assertEqual(got["names"], {"w_fresh": n, "w_call": 50, "<module>": n + 1})
        self.assertEqual(got["code_objects"], 2 * n + 2)
        self.assertEqual(got["calls"], 2 * n + 51)


if __name__ == "__main__":
    unittest.main()
