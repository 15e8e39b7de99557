"""Fifty asyncio Tasks on one loop: one runs sleeper(), which awaits
asyncio.sleep(0.05) twenty times (1.0 s of wall time, nearly all of it
suspended); the other 49 run busy(), which computes a little and sleeps
10 ms, 20 times. Under timer:await=true sleeper's inclusive time is its
wall time; by default, and under cProfile, the time its slices ran.

Prints the number of results and sleeper's wall time as the program itself
measured it (time.perf_counter), in seconds.
"""
import asyncio
import time

measured = []


def work(n):
    return sum(i * i for i in range(n))


async def nap(delay):
    await asyncio.sleep(delay)


async def sleeper():
    t0 = time.perf_counter()
    for _ in range(20):
        await nap(0.05)
    measured.append(time.perf_counter() - t0)


async def busy(i):
    total = 0
    for _ in range(20):
        total += work(20 + i)
        await asyncio.sleep(0.01)
    return total


async def main():
    tasks = [asyncio.create_task(sleeper(), name="sleeper")]
    tasks += [asyncio.create_task(busy(i), name="busy-%d" % i) for i in range(49)]
    results = await asyncio.gather(*tasks)
    return len(results)


if __name__ == "__main__":
    print(asyncio.run(main()), "%.6f" % measured[0])
