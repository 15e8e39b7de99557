import asyncio
import json
import threading

from fpkg import util


def w_fib(n):
    return n if n < 2 else w_fib(n - 1) + w_fib(n - 2)


def w_deep(n):
    if n == 0:
        raise KeyError(n)
    w_deep(n - 1)


def w_guard():
    try:
        w_deep(5)
    except KeyError:
        return -1


async def w_step(i):
    await asyncio.sleep(0)
    return util.w_helper(i)


async def w_tasks():
    return sum(await asyncio.gather(*(w_step(i) for i in range(3))))


def w_worker(n):
    acc = util.Acc()
    for v in util.w_gen(n):
        acc.add(v)
    return acc.total


def w_run():
    total = w_fib(8)
    for _ in range(3):
        w_guard()
    total += sum(util.w_gen(5))
    total += len(json.dumps({"k": [1, 2, 3]}))
    total += asyncio.run(w_tasks())
    threads = [threading.Thread(target=w_worker, args=(4,), name="worker-%d" % i)
               for i in range(2)]
    threads.append(threading.Thread(target=w_worker, args=(3,), name="other"))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return total + w_worker(6)
