"""A C function reached through a bound method (classmethod(repr)): 3.12.0
to 3.12.4 report its C_RETURN without a C_CALL (gh-122029)."""


class K:
    m = classmethod(repr)


def work(n):
    total = 0
    for i in range(n):
        K.m()
        total += len(str(i))
    return total


def main():
    for _ in range(4):
        work(10)


main()
