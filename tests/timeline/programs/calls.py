"""N calls of inner() from outer(), 200 at a time; a 3 ms sleep each 100
outer() calls, and one slow() call of 20 ms."""
import sys
import time


def inner(i):
    return i * 2


def outer():
    s = 0
    for i in range(200):
        s += inner(i)
    return s


def slow():
    time.sleep(0.02)


def main(n):
    slow()
    for k in range(n // 200):
        outer()
        if k % 100 == 99:
            time.sleep(0.003)


main(int(sys.argv[1]) if len(sys.argv) > 1 else 100000)
