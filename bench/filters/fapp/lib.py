"""The "library" of the filter benchmark: about 90% of the calls and lines
of a run happen here, and filters exclude it."""


def _h(x):
    return x * 3 + 1


def work(i):
    t = 0
    for j in range(8):
        t += _h(i + j)
    return t
