"""Fuzzes `pytracekit combine --paths` patterns, as the libFuzzer targets fuzz
the option and filter parsers, for SECONDS (argv[1]): random rules and paths
over a small alphabet ('a', 'b', '/', '\\', '*', '.') given to PathMap,
compared with an independent matcher, a regular expression over short
strings ('*' is [^/\\]*, the first rule and pattern matching a prefix that
ends at a separator or the end wins, trailing separators of a pattern do not
count); and patterns of up to 60 '*' against paths of 300 characters, which
must each map in well under a second (a backtracking regex took minutes).
Iteration N uses random.Random(N)."""
import re
import random
import sys
import time

from ptk_testlib import fail
from pytracekit.combining import PathMap

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
ALPHABET = "ab/\\*."


def oracle(rules, path):
    ends = [i for i, c in enumerate(path) if c in "/\\"] + [len(path)]
    for canonical, patterns in rules:
        for pat in patterns:
            pat = pat.rstrip("/\\")
            rx = "".join("[^/\\\\]*" if c == "*" else re.escape(c) for c in pat)
            for end in ends:
                if re.fullmatch(rx, path[:end]):
                    return canonical.rstrip("/\\") + path[end:].replace("\\", "/")
    return path


def word(rng, n, alphabet=ALPHABET):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))


def main():
    end = time.monotonic() + SECONDS
    n = slowest = 0
    while n == 0 or time.monotonic() < end:
        rng = random.Random(n)
        if n % 10 == 9:
            # the hard ones: many stars, long paths, little to match
            stars = rng.randint(10, 60)
            pat = "/x" + "".join(rng.choice(["*", "*a", "**", "*/"]) for _ in range(stars)) + "y"
            rules = [("/c", [pat])]
            path = "/x" + "".join(rng.choice("aaaa/b") for _ in range(300))
            t = time.perf_counter()
            PathMap(rules)(path)
            took = time.perf_counter() - t
            slowest = max(slowest, took)
            if took > 1.0:
                fail(f"iteration {n}: {pat!r} on a {len(path)}-character path took {took:.1f} s")
        else:
            rules = [(word(rng, 4), [word(rng, 7) for _ in range(rng.randint(1, 3))])
                     for _ in range(rng.randint(1, 3))]
            for _ in range(8):
                path = word(rng, 12)
                got, want = PathMap(rules)(path), oracle(rules, path)
                if got != want:
                    fail(f"iteration {n}: rules {rules!r}, path {path!r}: "
                         f"{got!r}, expected {want!r}")
        n += 1
    print(f"fuzz.paths: {n} iterations in {SECONDS:g} s, no finding; "
          f"slowest many-star match {slowest * 1000:.1f} ms")


if __name__ == "__main__":
    main()
