"""The pytracekit example workload: runs a batch of calculator programs.

    python3 main.py [--rounds N]

Two worker threads each evaluate half of the programs; the main thread checks
and summarises the results. The output is the same on every run.
"""

import argparse
import sys
import threading

from calc import EvalError, Evaluator, ParseError, TokenError

DEFINITIONS = [
    "def fib(n) = if n < 2 then n else fib(n - 1) + fib(n - 2)",
    "def fact(n) = if n <= 1 then 1 else n * fact(n - 1)",
    "def hyp(a, b) = sqrt(a ** 2 + b ** 2)",
    "def collatz(n) = if n == 1 then 0 else 1 + collatz(if n % 2 == 0 then n / 2 else 3 * n + 1)",
    "def forever(n) = forever(n + 1)",
]

BROKEN = [
    "1 +",              # ParseError: unexpected end
    "(2 * 3",           # ParseError: expected ')'
    "4 $ 5",            # TokenError
    "7 / (3 - 3)",      # EvalError: division by zero
    "undefined(1)",     # EvalError: unknown function
    "forever(0)",       # EvalError: recursion too deep
    "sqrt(0 - 1)",      # EvalError: math domain error
    "let x = 2 in y",   # EvalError: unknown name
]


def programs(rounds):
    """Yields the programs to run: generated ones, with the broken ones mixed in."""
    for i in range(rounds):
        yield f"fib({i % 15}) + {i} * 2 - floor(sqrt({i * i + 1}))"
        yield f"let x = {i} in hyp(x, x + 1) + fact({i % 10})"
        yield f"collatz({i + 1}) + gcd({i * 6}, 36) + max({i}, 7, min(3, {i}))"
        if i % 5 == 0:
            yield BROKEN[(i // 5) % len(BROKEN)]


def worker(jobs, results):
    ev = Evaluator()
    for line in DEFINITIONS:
        ev.run(line)
    for index, text in jobs:
        try:
            results[index] = ("ok", ev.run(text))
        except (ParseError, TokenError) as exc:
            results[index] = ("syntax", type(exc).__name__)
        except EvalError as exc:
            results[index] = ("error", str(exc).split(":")[0])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=120)
    args = ap.parse_args(argv)

    jobs = list(enumerate(programs(args.rounds)))
    results = [None] * len(jobs)
    threads = [threading.Thread(target=worker, args=(jobs[k::2], results),
                                name=f"worker-{k}") for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    if None in results:
        print("a worker thread failed", file=sys.stderr)
        return 1
    ok = [value for status, value in results if status == "ok"]
    failures = sorted({(s, v) for s, v in results if s != "ok"})
    print(f"programs: {len(jobs)}")
    print(f"ok: {len(ok)}  checksum: {sum(ok):.6f}")
    print(f"largest: {max(ok):.3f}  smallest: {min(ok):.3f}")
    for status, what in failures:
        count = sum(1 for r in results if r == (status, what))
        print(f"{status}: {what} x{count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
