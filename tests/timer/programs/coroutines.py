"""Coroutines under asyncio: each resume of a coroutine is a call."""
import asyncio


async def ticker(n):
    for _ in range(n):
        await asyncio.sleep(0)
    return n


async def nested(n):
    return await ticker(n) + 1


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


async def consume(n):
    total = 0
    async for v in agen(n):
        total += v
    return total


async def main():
    await asyncio.gather(ticker(3), ticker(5), nested(2))
    await consume(4)
    await ticker(1)


asyncio.run(main())
