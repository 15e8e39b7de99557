"""Coroutines run by asyncio: await chains, gather, an async generator,
async with, an exception through an await."""
import asyncio


async def co_leaf(n):
    await asyncio.sleep(0)
    return n * 2


async def co_middle(n):
    a = await co_leaf(n)
    b = await co_leaf(n + 1)
    return a + b


async def co_agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


class CoLock:
    async def __aenter__(self):
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc):
        return False


async def co_fails():
    await asyncio.sleep(0)
    raise LookupError("async")


async def co_main():
    total = await co_middle(1)
    total += sum(await asyncio.gather(co_leaf(2), co_leaf(3)))
    async for i in co_agen(3):
        total += i
    async with CoLock():
        total += 1
    try:
        await co_fails()
    except LookupError:
        total += 1
    return total


asyncio.run(co_main())
