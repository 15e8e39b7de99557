"""Many calls of small functions."""
CALLGRIND_N = 10000


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) * 2 % 1000


def run(n):
    total = 0
    for i in range(n):
        total = middle(total + i)
    return total
