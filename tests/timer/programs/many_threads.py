"""Starts short threads in two batches and prints the bytes malloc holds
after each, and the count of calls to work()."""
import ctypes
import sys
import threading


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                 "fsmblks", "uordblks", "fordblks", "keepcost")]


libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2


def in_use():
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


def work(i):
    return i + 1


def batch(n):
    for i in range(n):
        t = threading.Thread(target=work, args=(i,))
        t.start()
        t.join()


first, second = int(sys.argv[1]), int(sys.argv[2])
batch(first)
a = in_use()
batch(second)
b = in_use()
print("malloc in use: %d after %d threads, %d after %d more: %.1f bytes a thread"
      % (a, first, b, second, (b - a) / second))
