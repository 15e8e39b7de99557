"""Forks a child that calls functions and exits through the normal path
(atexit: the tracer's report runs in the child too), then goes on."""
import os


def work(n):
    return sum(i * i for i in range(n))


def in_child():
    for _ in range(50):
        work(100)


def in_parent():
    for _ in range(50):
        work(100)


work(10)
pid = os.fork()
if pid == 0:
    in_child()
    raise SystemExit(0)
os.waitpid(pid, 0)
in_parent()
