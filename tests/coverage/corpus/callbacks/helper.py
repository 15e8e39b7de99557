"""Excluded from measurement (include= names main.py only): code no filter
selects, which calls the measured code back in every way a frame can start
or end -- a call, a generator driven from either side, an exception through
it, recursion across it, threads it starts, the program's own profiler."""
import sys
import threading


def apply(f, *args):
    return f(*args)


def relay(gen):
    return [x for x in gen]


def produce(f, n):
    for i in range(n):
        yield f(i)


def catch(f):
    try:
        f()
    except ValueError as e:
        return str(e)


def passthrough(f):
    return f()


def down(f, n):
    return f(n - 1)


def with_profile(f):
    seen = []

    def prof(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    sys.setprofile(prof)
    try:
        f()
    finally:
        sys.setprofile(None)
    return seen


def in_threads(f, n):
    threads = [threading.Thread(target=f, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
