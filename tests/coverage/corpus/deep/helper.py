"""Excluded (include= names main.py only): recursion in code nobody
measures, calling the measured code back at the bottom."""


def down(n, leaf):
    if n == 0:
        return leaf()
    return down(n - 1, leaf)
