"""Three gevent greenlets pass a token round through gevent queues, 10,000
times each by default, each waiting for it from inside a recursion whose
depth changes from turn to turn: every wait switches to gevent's hub
greenlet, which switches to the greenlet the token was put for.

    python gevent_pingpong.py [ROUNDS]
"""
import sys

import gevent
from gevent.queue import Queue

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
queues = [Queue() for _ in range(3)]


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def descend(depth, i):
    if depth == 0:
        token = queues[i].get()
        queues[(i + 1) % 3].put(token + 1)
        return token
    return descend(depth - 1, i)


def worker(i):
    last = 0
    for turn in range(ROUNDS):
        fib(3 + i)
        last = descend((turn + i) % 5, i)
    return last


def main():
    greenlets = [gevent.spawn(worker, i) for i in range(3)]
    queues[0].put(0)
    gevent.joinall(greenlets)
    return [g.value for g in greenlets]


if __name__ == "__main__":
    print(main())
