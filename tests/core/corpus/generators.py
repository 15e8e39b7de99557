"""Generators: plain iteration, send, throw (caught and not), close, yield
from, generator expressions, a generator that returns a value."""


def gn_count(n):
    for i in range(n):
        yield i


def gn_echo():
    got = None
    while True:
        try:
            got = yield got
        except KeyError:
            got = "thrown"
        if got == "stop":
            return "done"


def gn_closable():
    try:
        yield 1
        yield 2
    finally:
        gn_cleanup()


def gn_cleanup():
    return 0


def gn_delegate():
    r = yield from gn_echo()
    yield r


def gn_main():
    total = sum(gn_count(5))
    total += sum(x * 2 for x in gn_count(4))
    e = gn_echo()
    next(e)
    e.send(1)
    e.send(2)
    e.throw(KeyError("k"))
    try:
        e.send("stop")
    except StopIteration as stop:
        total += len(stop.value)
    c = gn_closable()
    next(c)
    c.close()
    d = gn_delegate()
    next(d)
    d.send("a")
    d.send("stop")
    d.close()
    t = gn_count(3)
    next(t)
    try:
        t.throw(ValueError("into the generator"))
    except ValueError:
        total += 1
    return total


gn_main()
