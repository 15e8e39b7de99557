"""asyncio Tasks for the hub's Task numbers (test_tasks.py): Tasks at once
(gather), 30 short Tasks one after another (a new Task may take the address
of one gone), a loop in a thread, then a second loop in the main thread.
With the argument "none": coroutines driven by hand, asyncio never imported.
"""
import sys


def by_hand():
    async def inner(i):
        return i

    async def outer():
        return [await inner(i) for i in range(3)]

    coro = outer()
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value


if sys.argv[1:] == ["none"]:
    print(by_hand(), "asyncio" in sys.modules)
    sys.exit(0)

import asyncio  # noqa: E402
import threading  # noqa: E402


async def leaf(i):
    await asyncio.sleep(0)
    return i


async def worker(k):
    s = 0
    for i in range(3):
        s += await leaf(i + k)
    return s


async def short(i):
    return i


addresses = []


async def main():
    r = await asyncio.gather(*(worker(k) for k in range(4)))
    for i in range(30):
        t = asyncio.create_task(short(i), name="short-%d" % i)
        addresses.append(id(t))
        r.append(await t)
        del t
    return sum(r)


def in_thread():
    asyncio.run(worker(100))


t = threading.Thread(target=in_thread)
t.start()
t.join()
print(asyncio.run(main()), asyncio.run(main()))
print("short Tasks at the address of one gone:", len(addresses) - len(set(addresses)),
      file=sys.stderr)
