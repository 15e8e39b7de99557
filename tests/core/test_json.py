"""The host's JSON writer (ptk_host::json_write, lib/core/json.c) against
its oracle, Python's json.dumps: the same text, byte for byte, for every
kind of value json writes, in the three layouts (compact, json's default
separators, indent=N); the same refusals. The library writes run.json and
every plugin's JSON report with it, and the coverage plugin its deferred
coverage.json; none of them imports json. Reached through
pytracekit._pytracekit._json_dumps (a file from tmpfile(), read back)."""
import collections
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import run_cli  # noqa: E402

from pytracekit import _pytracekit as ext  # noqa: E402

LAYOUTS = {-1: dict(separators=(",", ":")), -2: {}, 0: dict(indent=0), 1: dict(indent=1),
           3: dict(indent=3)}


class IntSub(int):
    def __repr__(self):
        return "not json's"


class FloatSub(float):
    def __repr__(self):
        return "not json's"


class StrSub(str):
    pass


def reordered():
    """An OrderedDict whose items() order is not its dict's: json follows
    items()."""
    d = collections.OrderedDict(z=1, a=2, m=3)
    d.move_to_end("z")
    return d


def corpus():
    every_char = "".join(map(chr, range(0, 0x250))) + "\ud800\udc00\udcff\uffff\U0010ffff"
    return {
        "scalars": [None, True, False, 0, -1, 7, -10, 99, 100, 2 ** 63 - 1, -(2 ** 63),
                    2 ** 63, -(2 ** 63) - 1, -(2 ** 200), 0.0, -0.0, 0.1, 1e300,
                    -1e-300, 1.5e16, float("nan"), float("inf"), float("-inf"), "", "x"],
        "every character to U+024F, surrogates, the last of the BMP and beyond": every_char,
        "quotes and escapes": ['"', "\\", "\b\f\n\r\t", "\x00\x1f\x7f\x80", "a\u2028b"],
        "non-UTF-8 file name": os.fsdecode(b"/tmp/caf\xe9/\xff.py"),
        "keys": {1: "int", -2: "neg", 0: "zero", -(2 ** 63): "least", 2 ** 70: "big",
                 1.5: "float", True: "true",
                 None: "null", "é": "str", StrSub("sub"): "str subclass"},
        "empty": [{}, [], (), [[]], {"a": {}}, [{}]],
        "nested": {"a": [1, [2, [3, {"b": (4, 5)}]]], "c": {"d": {"e": [None]}}},
        "subclasses": [IntSub(7), FloatSub(2.5), StrSub("s"), reordered(),
                       collections.defaultdict(list, k=[1])],
        "long string (past the writer's buffer)": "ab\u00e9" * 20000,
        "many items": list(range(-15000, 15000)),
        "coverage-like": {"meta": {"format": "pytracekit-coverage", "version": 2},
                          "files": {"/p/a.py": {"hits": [[1, 1], [3, 2]], "functions": [
                              ["<module>", 1, 1]], "contexts": {3: ["", "t|call"]},
                              "source": [120, "0011aabb"]}}},
    }


class Writer(unittest.TestCase):
    def test_same_text_as_json_dumps(self):
        checked = 0
        for name, value in corpus().items():
            for indent, kw in LAYOUTS.items():
                want = json.dumps(value, **kw)
                got = ext._json_dumps(value, indent)
                if got != want:
                    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                              min(len(got), len(want)))
                    self.fail("%s, indent %d: differs from json.dumps at %d:\nours: %r\n"
                              "json: %r" % (name, indent, at, got[at - 30:at + 50],
                                            want[at - 30:at + 50]))
                checked += 1
        print("ok: %d values x %d layouts written as json.dumps writes them"
              % (len(corpus()), len(LAYOUTS)))
        self.assertEqual(checked, len(corpus()) * len(LAYOUTS))

    def test_refusals_are_json_s(self):
        deep = []
        for _ in range(200000):
            deep = [deep]
        for value, exc in (({1, 2}, TypeError), ({(1, 2): 3}, TypeError), (b"bytes", TypeError),
                           ([object()], TypeError), ({"a": [1, {2j: 1}]}, TypeError),
                           (deep, RecursionError)):
            # compact: with indent= the text of a deep value grows as the
            # square of its depth
            with self.assertRaises(exc, msg=exc.__name__):
                ext._json_dumps(value, -1)
            # json refuses the same values
            with self.assertRaises(exc):
                json.dumps(value, separators=(",", ":"), check_circular=False)

    def test_reports_import_no_json(self):
        """A run whose program imports nothing writes run.json and the
        counter's report without importing json (the import was most of
        the end of a short run): PYTHONPROFILEIMPORTTIME shows every
        import of the process."""
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "p.py")
            with open(prog, "w") as f:
                f.write("x = 1\n")
            p = run_cli(["-o", os.path.join(d, "out"), "-p", "counter", prog],
                        env={"PYTHONPROFILEIMPORTTIME": "1"})
            self.assertEqual(p.returncode, 0, p.stderr)
            imported = {ln.rsplit("|", 1)[1].strip() for ln in p.stderr.splitlines()
                        if ln.startswith("import time:") and "|" in ln}
            self.assertIn("site", imported)  # the oracle sees imports at all
            self.assertNotIn("json", imported, sorted(imported))
            with open(os.path.join(d, "out", "run.json"), encoding="utf-8") as f:
                text = f.read()
            self.assertEqual(text, json.dumps(json.loads(text), indent=1) + "\n")
            with open(os.path.join(d, "out", "counter.json"), encoding="utf-8") as f:
                text = f.read()
            self.assertEqual(text, json.dumps(json.loads(text), indent=1) + "\n")


if __name__ == "__main__":
    unittest.main()
