"""Loops, comprehensions, match, one-line bodies."""
import sys


def loops(n):
    total = 0
    for i in range(n):
        if i % 2:
            continue
        total += i
    else:
        total += 100
    while n > 0:
        n -= 1
        if n == 2:
            break
    else:
        total -= 1
    return total


def comprehensions(n):
    squares = [i * i for i in range(n)]
    evens = {i for i in squares if i % 2 == 0}
    table = {i: str(i) for i in range(n)}
    return len(squares), len(evens), len(table)


def matcher(value):
    match value:
        case 0:
            return "zero"
        case [x, y]:
            return "pair %s %s" % (x, y)
        case {"key": v}:
            return "dict %s" % v
        case _:
            return "other"


def one_liners(x):
    if x: return "yes"
    while x < 0: x += 1
    return "no"


def tight(n):
    s = 0
    i = 0
    while i < n:
        s += i
        i += 1
    return s


def pairs(items):
    yield from ((p, p) for p in items)


def first_best(items):
    # The `break` line is a lone POP_TOP on 3.12+; it first runs in the
    # second call, after every other line of the function has run.
    best = 5
    body = None
    for prio, part in pairs(items):
        if prio < best:
            best = prio
            body = part
            if prio == 0:
                break
    return body


print(loops(5), loops(3))
print(first_best([3, 2, 4]), first_best([1, 0, 2]), first_best([4, 0]))
print(comprehensions(4))
print(matcher(0), matcher([1, 2]), matcher({"key": 3}), matcher("x"))
print(one_liners(1), one_liners(0))
print(tight(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
