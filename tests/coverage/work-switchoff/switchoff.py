"""Each probe runs every one of its lines on its first call, and its first
line records whether LINE tracing is on for its frame. On the second call
the hub should have switched LINE events off for the code object
(f_trace_lines False when the frame starts), since the coverage plugin
disabled every line of it on the first call."""
import json
import sys

SEEN = []


def on():
    SEEN.append(sys._getframe(1).f_trace_lines)


class Ctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def straight(x):
    on()
    y = x + 1
    return y * 2


def loop(n):
    on()
    total = 0
    for i in range(n):
        total += i
    return total


def while_loop(n):
    on()
    while n > 0:
        n -= 1
    return n


def with_block():
    on()
    with Ctx():
        x = 1
    return x


def try_finally():
    on()
    try:
        x = 1
    finally:
        x += 1
    return x


def try_except():
    on()
    try:
        raise KeyError(1)
    except KeyError:
        x = 2
    return x


def closure():
    on()

    def inner():
        return 1
    return inner()


def comprehension(n):
    on()
    values = [i for i in range(n)]
    return len(values)


def generator(n):
    on()
    for i in range(n):
        yield i


def multi_line(a,
               b):
    on()
    return (a +
            b)


PROBES = [
    ("straight", lambda: straight(1)),
    ("loop", lambda: loop(3)),
    ("while_loop", lambda: while_loop(2)),
    ("with_block", with_block),
    ("try_finally", try_finally),
    ("try_except", try_except),
    ("closure", closure),
    ("comprehension", lambda: comprehension(2)),
    ("generator", lambda: list(generator(2))),
    ("multi_line", lambda: multi_line(1, 2)),
]

out = {}
for name, probe in PROBES:
    del SEEN[:]
    probe()
    probe()
    out[name] = [bool(v) for v in SEEN]
print(json.dumps(out))
