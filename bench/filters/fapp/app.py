"""The "application" of the filter benchmark: about 10% of the calls and
lines, the part filters select."""
from fapp import lib


def step(i):
    return lib.work(i)


def run(n):
    s = 0
    for i in range(n):
        s += step(i)
    return s
