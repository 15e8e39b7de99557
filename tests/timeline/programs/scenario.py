"""Two threads contending for a lock, three asyncio tasks and an exception
through three frames: the timeline tests' program (deterministic call trees)."""
import asyncio
import gc
import sys
import threading

lock = threading.Lock()
shared = []


def critical(i):
    shared.append(i)
    return len(shared)


def worker(n):
    for i in range(n):
        with lock:
            critical(i)


def level3():
    raise ValueError("three frames down")


def level2():
    level3()


def level1():
    level2()


def catcher():
    try:
        level1()
    except ValueError:
        return 1
    return 0


async def leaf(k):
    await asyncio.sleep(0)
    return k


async def job(i):
    total = 0
    for k in range(i + 1):
        total += await leaf(k)
    return total


async def amain():
    tasks = [asyncio.create_task(job(i), name="job%d" % i) for i in range(3)]
    return await asyncio.gather(*tasks)


def main(loops):
    threads = [threading.Thread(target=worker, args=(loops,), name="w%d" % i)
               for i in range(2)]
    with lock:  # both workers start and wait on the lock
        for t in threads:
            t.start()
    for t in threads:
        t.join()
    catcher()
    gc.collect()
    asyncio.run(amain())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
