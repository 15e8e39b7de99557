"""Runs until a signal stops it (at most 120 s): a steady stream of calls."""
import time


def inner(i):
    return i * 2


def outer():
    s = 0
    for i in range(200):
        s += inner(i)
    return s


deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    outer()
