"""A tight loop with a 5-line body: every line runs on every iteration."""
CALLGRIND_N = 20000


def run(n):
    total = 0
    i = 0
    while i < n:
        a = i * 2
        b = a + 1
        c = b % 7
        total += c
        i += 1
    return total
