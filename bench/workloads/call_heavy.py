"""Call-heavy workload: recursive fib, nearly all the time in Python calls.

run(n) computes fib(n) by naive recursion and makes 2*fib(n+1)-1 Python
calls (each one a CALL and a RETURN event).
"""

DESCRIPTION = "recursive fib(n): Python calls"
UNIT = "Python call"
WALL_N = 31       # 4,356,617 calls
CALLGRIND_N = 20  # 21,891 calls


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def units(n):
    """Python calls made by run(n)."""
    a, b = 0, 1
    for _ in range(n + 1):
        a, b = b, a + b
    return 2 * a - 1


def run(n):
    return fib(n)
