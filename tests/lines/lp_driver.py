"""Runs one of CPython's test suites under line_profiler with one function
of the standard library added to it (LineProfiler.add_function: nothing of
the standard library is edited), and writes line_profiler's figures as JSON.

    python lp_driver.py MODULE:QUALNAME[+MODULE:QUALNAME...] TESTS WITHOUT OUT.json

TESTS is a comma-separated list of unittest names (test.test_difflib),
WITHOUT the ids of tests left out (run_suite.py; empty: none).

QUALNAME is a dotted path of attributes from MODULE. Several targets name
the copies of one function in modules imported afresh (test_json's
pure-Python json): line_profiler gives each function object it is handed a
code object of its own, so each copy that runs has to be handed to it.
"""
import importlib
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_suite import load  # noqa: E402


def target(spec):
    mod, _, qual = spec.partition(":")
    obj = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def main():
    from line_profiler import LineProfiler
    spec, names, without, out = sys.argv[1:5]
    suite = load(names.split(","), [w for w in without.split(",") if w])
    prof = LineProfiler()
    for one in spec.split("+"):
        prof.add_function(target(one))
    cpu = time.process_time()
    prof.enable_by_count()
    try:
        result = unittest.TextTestRunner(verbosity=0).run(suite)
    finally:
        prof.disable_by_count()
    cpu = time.process_time() - cpu
    if not result.wasSuccessful():
        sys.exit("lp_driver: the suite failed")
    stats = prof.get_stats()
    rows = []
    for (fname, first, name), lines in stats.timings.items():
        for lineno, nhits, t in lines:
            rows.append([fname, first, name, lineno, nhits, t * stats.unit * 1e9])
    with open(out, "w") as f:
        json.dump({"rows": rows, "cpu_s": cpu}, f)


main()
