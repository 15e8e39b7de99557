"""The same loop with a branch that never runs: the code object always has
a line left to report, so LINE events can never be switched off for it."""
CALLGRIND_N = 20000


def run(n):
    total = 0
    i = 0
    while i < n:
        a = i * 2
        b = a + 1
        if a < 0:
            total -= 1
        total += b % 7
        i += 1
    return total
