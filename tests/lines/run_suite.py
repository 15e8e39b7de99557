"""Runs a part of one of CPython's test suites: what unittest loads for the
names given, less the tests whose id starts with one of the ids after
--without. Exits 1 if a test fails or errs, or if a --without id matched
nothing (a renamed test would otherwise come back unnoticed).

    python run_suite.py NAME[,NAME...] [--without ID[,ID...]]

The lines plugin's oracle runs it under both tools (test_oracle.py, and
lp_driver.py, which imports load()).
"""
import sys
import unittest


def _flat(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flat(t)
        else:
            yield t


def load(names, without):
    """The tests of names (unittest names, load_tests honoured) but those
    whose id starts with an id of without; raises if one of without matched
    nothing."""
    tests = list(_flat(unittest.defaultTestLoader.loadTestsFromNames(names)))
    unused = [w for w in without if not any(t.id().startswith(w) for t in tests)]
    if unused:
        raise SystemExit(f"run_suite: no test matches {unused}")
    return unittest.TestSuite(t for t in tests if not any(t.id().startswith(w) for w in without))


def main():
    names = sys.argv[1].split(",")
    without = [w for w in sys.argv[3].split(",") if w] if sys.argv[2:3] == ["--without"] else []
    suite = load(names, without)
    result = unittest.TextTestRunner(verbosity=0).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
