"""C-call-heavy workload: a tight loop of calls to builtins and method
descriptors, nearly all the time in C calls (C_CALL and C_RETURN events).

run(n) makes 8 C calls per iteration: list.append, list.pop, len, dict.get,
str.upper, str.startswith, isinstance, abs.
"""

DESCRIPTION = "loop of builtins and methods: C calls"
UNIT = "C call"
WALL_N = 600_000
CALLGRIND_N = 5_000

CALLS_PER_ITERATION = 8


def units(n):
    """C calls made by run(n)."""
    return CALLS_PER_ITERATION * n


def run(n):
    lst = [0, 1, 2]
    d = {"a": 1, "b": 2}
    s = "abc"
    total = 0
    for i in range(n):
        lst.append(i)
        lst.pop()
        total += len(lst)
        total += d.get("a")
        s.upper()
        s.startswith("a")
        isinstance(i, int)
        total += abs(i)
    return total
