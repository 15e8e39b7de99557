"""Runs one of CPython's test suites as `python -m unittest -q test.SUITE` does,
without the tests whose amount of work is set by the wall clock.

    python run_suite.py test_email
    python run_suite.py --floor DIR test_email   # under the monitoring floor

--floor DIR: first install bench/floor's do-nothing sys.monitoring callbacks
(the _ptkfloor module built into DIR by bench/run.py, 3.12+) for the events a
profiler takes: what CPython itself spends delivering them, which cProfile
and the timer both pay.

Such a test does not run a fixed workload: test_email's
test_make_msgid_collisions makes message ids in 5 threads for 3 seconds of
wall time, so it does as much work as fits, and its CPU time is whatever the
machine's cores give 5 busy threads for 3 s, under a profiler or not (4.2 s of
a 4.6 s bare run of test_email on 3.13 here). Kept in, it pulls every
profiler's ratio towards 1 and swings with the machine's load; under
callgrind it runs a tenth of the iterations. Every variant of the benchmark
runs this same script, so they all run the same tests.
"""
import sys
import unittest

# test id suffix -> why it is left out
WALL_CLOCK_BOUND = {
    "TestMiscellaneous.test_make_msgid_collisions":
        "test_email: make_msgid in 5 threads until 3 s of wall time have passed",
}


def without(suite, dropped):
    """suite with the tests in WALL_CLOCK_BOUND taken out (their ids go to
    dropped)."""
    kept = unittest.TestSuite()
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            kept.addTest(without(test, dropped))
        elif any(test.id().endswith(s) for s in WALL_CLOCK_BOUND):
            dropped.append(test.id())
        else:
            kept.addTest(test)
    return kept


def main(argv):
    if len(argv) == 4 and argv[1] == "--floor":
        sys.path.insert(0, argv[2])
        import _ptkfloor
        _ptkfloor.install_monitoring(5)
        argv = argv[:1] + argv[3:]
    if len(argv) != 2:
        sys.exit("usage: run_suite.py [--floor DIR] SUITE (as in test.SUITE)")
    dropped = []
    suite = without(unittest.defaultTestLoader.loadTestsFromName("test." + argv[1]),
                    dropped)
    for d in dropped:
        print("run_suite: left out %s (work bounded by the wall clock)" % d,
              file=sys.stderr)
    result = unittest.TextTestRunner(verbosity=0).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main(sys.argv)
