"""Runs one of CPython's test suites under line_profiler with one function
of the standard library added to it (LineProfiler.add_function: nothing of
the standard library is edited), and writes line_profiler's figures as JSON.

    python lp_driver.py MODULE:QUALNAME[+MODULE:QUALNAME...] TESTS OUT.json

TESTS is a comma-separated list of unittest names (test.test_difflib).

QUALNAME is a dotted path of attributes from MODULE. Several targets name
the copies of one function in modules imported afresh (test_json's
pure-Python json): line_profiler gives each function object it is handed a
code object of its own, so each copy that runs has to be handed to it.
"""
import importlib
import json
import sys
import time
import unittest


def target(spec):
    mod, _, qual = spec.partition(":")
    obj = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def main():
    from line_profiler import LineProfiler
    spec, suite, out = sys.argv[1:4]
    prof = LineProfiler()
    for one in spec.split("+"):
        prof.add_function(target(one))
    cpu = time.process_time()
    prof.enable_by_count()
    try:
        unittest.main(module=None, exit=False, argv=["lp_driver", "-q", *suite.split(",")])
    finally:
        prof.disable_by_count()
    cpu = time.process_time() - cpu
    stats = prof.get_stats()
    rows = []
    for (fname, first, name), lines in stats.timings.items():
        for lineno, nhits, t in lines:
            rows.append([fname, first, name, lineno, nhits, t * stats.unit * 1e9])
    with open(out, "w") as f:
        json.dump({"rows": rows, "cpu_s": cpu}, f)


main()
