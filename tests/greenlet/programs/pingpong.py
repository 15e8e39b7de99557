"""Three greenlets pass control round 10,000 times (A to B to C to A ...),
each switching from inside a recursion whose depth changes from turn to
turn, so that every switch leaves frames of the greenlet switched away from
on its stack, and returns arrive for frames of another greenlet's stack.
"""
import functools
import sys

import greenlet

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10000


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def descend(depth, nxt):
    if depth == 0:
        target = nxt()
        if not target.dead:
            target.switch()
        return 0
    return descend(depth - 1, nxt) + 1


def worker(i):
    total = 0
    for turn in range(ROUNDS):
        total += fib(3 + i)
        descend((turn + i) % 5, lambda: greenlets[(i + 1) % 3])
    return total


greenlets = [greenlet.greenlet(functools.partial(worker, i)) for i in range(3)]


def main():
    results = [greenlets[0].switch()]
    # A's worker ends first and its parent (main) resumes here; B and C are
    # still suspended inside descend(): finish them in turn.
    for g in greenlets[1:]:
        while not g.dead:
            r = g.switch()
        results.append(r)
    return results


if __name__ == "__main__":
    print(main())
