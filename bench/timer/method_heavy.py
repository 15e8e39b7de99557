"""Method-heavy workload: method calls and property reads on an object,
nearly all the time in Python calls reached through attribute lookups.

run(n) makes 3 Python calls per iteration (a method, a property getter and
a static method) and no C calls.
"""

DESCRIPTION = "methods, properties, static methods: Python calls"
UNIT = "Python call"
WALL_N = 1_000_000
CALLGRIND_N = 7_000

CALLS_PER_ITERATION = 3


class Point:
    __slots__ = ("x",)

    def __init__(self):
        self.x = 0

    def bump(self, d):
        self.x += d
        return self.x

    @property
    def value(self):
        return self.x

    @staticmethod
    def scale(v):
        return v * 2


def units(n):
    """Python calls made by run(n)."""
    return CALLS_PER_ITERATION * n


def run(n):
    p = Point()
    total = 0
    for i in range(n):
        p.bump(1)
        total += p.value
        total += Point.scale(i)
    return total
