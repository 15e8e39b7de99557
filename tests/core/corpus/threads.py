"""Threads started with threading, one at a time, each joined before the
next starts (so thread indexes are in start order)."""
import threading


def th_work(n, out):
    acc = 0
    for i in range(n):
        acc += th_step(i)
    out.append(acc)


def th_step(i):
    return i * i


def th_main():
    out = []
    for n in (3, 5):
        t = threading.Thread(target=th_work, args=(n, out))
        t.start()
        t.join()
    th_work(2, out)
    return sum(out)


th_main()
