"""Six asyncio Tasks: 'slow' calls blocker() -> helper() -> time.sleep(0.15)
in three of its steps, holding the loop 150 ms each time; the five 'fast-N'
Tasks only yield. Under asyncio's debug mode with slow_callback_duration
50 ms, asyncio warns about exactly those three steps.
"""
import asyncio
import time


def helper():
    time.sleep(0.15)


def blocker():
    helper()


async def slow(n):
    for _ in range(n):
        blocker()
        await asyncio.sleep(0)


async def fast():
    for _ in range(10):
        await asyncio.sleep(0)


async def main():
    asyncio.get_running_loop().slow_callback_duration = 0.05
    tasks = [asyncio.create_task(slow(3), name="slow")]
    tasks += [asyncio.create_task(fast(), name="fast-%d" % i) for i in range(5)]
    await asyncio.gather(*tasks)
    return len(tasks)


if __name__ == "__main__":
    print(asyncio.run(main()))
