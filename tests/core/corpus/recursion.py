"""Recursion: plain, mutual, and through a C function (map)."""


def rc_fib(n):
    return n if n < 2 else rc_fib(n - 1) + rc_fib(n - 2)


def rc_even(n):
    return True if n == 0 else rc_odd(n - 1)


def rc_odd(n):
    return False if n == 0 else rc_even(n - 1)


def rc_depth(n):
    if n == 0:
        return [0]
    return list(map(rc_depth, [n - 1]))[0] + [n]


def rc_main():
    total = rc_fib(10)
    rc_even(13)
    rc_odd(8)
    total += len(rc_depth(6))
    return total


rc_main()
