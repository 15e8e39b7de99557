"""Generators, yield from, coroutines: resumes are not new calls."""
import asyncio


def count_up(n):
    i = 0
    while i < n:
        yield i
        i += 1
    return "done"


def delegate(n):
    result = yield from count_up(n)
    yield result


def never_exhausted():
    yield 1
    yield 2
    yield 3


def with_throw():
    try:
        yield "first"
    except ValueError:
        yield "caught"
    yield "after"


def genexp_user(values):
    return sum(v * v for v in values if v % 2)


async def sleeper(x):
    await asyncio.sleep(0)
    return x * 2


async def gather_all():
    results = []
    for i in range(3):
        results.append(await sleeper(i))
    return results


class Manual:
    def __await__(self):
        yield "step"
        return "manual"


async def use_manual():
    return await Manual()


def drive(coro):
    try:
        while True:
            coro.send(None)
    except StopIteration as stop:
        return stop.value


def main():
    print(list(count_up(3)))
    print(list(delegate(2)))
    g = never_exhausted()
    print(next(g))
    t = with_throw()
    print(next(t), t.throw(ValueError()), next(t))
    print(genexp_user(range(6)))
    print(asyncio.run(gather_all()))
    print(drive(use_manual()))


main()
