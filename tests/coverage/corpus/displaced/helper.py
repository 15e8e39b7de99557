"""Excluded (include= names main.py only). restore() starts while no trace
function is set, puts the hub back, and goes on running its own lines."""
import sys


def noop():
    pass


def restore(hub):
    sys.settrace(hub)
    noop()
    x = 1
    y = x + 1
    return y
