"""Many light calling contexts first, then the heavy one: a cap that keeps
the first contexts seen would hide the heavy one in the flame graph."""
import time


def light(n):
    return n + 1


def make(i):
    # a distinct function each: a distinct calling context each
    ns = {}
    exec("def light_%d(n):\n    return light(n)\n" % i, {"light": light}, ns)
    return ns["light_%d" % i]


def heavy():
    end = time.perf_counter() + 0.3
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def main():
    for i in range(400):
        make(i)(i)
    heavy()


main()
