"""Generators: each resume is a call."""
import itertools


def count_up(n):
    for i in range(n):
        yield i


def delegate(n):
    yield from count_up(n)
    yield from count_up(2)


def echo():
    total = 0
    while True:
        try:
            got = yield total
        except ValueError:
            got = -1
        total += got


def squares(n):
    return [x * x for x in count_up(n)]


def early_stop():
    yield 1
    return 2


def main():
    list(count_up(10))
    sum(delegate(5))
    sum(x for x in count_up(7))
    squares(4)
    g = echo()
    next(g)
    for i in range(5):
        g.send(i)
    g.throw(ValueError)
    g.close()
    list(itertools.islice(count_up(100), 3))
    for _ in early_stop():
        pass
    it = count_up(3)
    while True:
        try:
            next(it)
        except StopIteration:
            break


main()
