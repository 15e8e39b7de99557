"""C functions and methods called from Python."""
import math


def strings(n):
    out = []
    for i in range(n):
        s = "a,b,%d" % i
        out.append(s.split(","))
        out.append(s.upper())
        str.lower(s)
    return ",".join(str(x) for x in out)


def containers(n):
    d = {}
    lst = []
    for i in range(n):
        d[i] = i
        d.get(i)
        d.setdefault(i, 0)
        lst.append(i)
        list.append(lst, i)
    lst.sort()
    lst.reverse()
    return len(lst), len(d), dict.fromkeys(lst), sorted(d.items())


def numbers(n):
    total = 0
    for i in range(1, n):
        total += math.sqrt(i) + abs(-i) + max(i, 3) + min(i, 2)
        isinstance(i, int)
        int.from_bytes(b"\x01\x02", "big")
    return round(total)


def functional(n):
    return sum(map(abs, range(-n, n))), list(filter(None, range(n))), any([0, 1])


def main():
    strings(20)
    containers(30)
    numbers(25)
    functional(10)
    getattr(math, "pi")
    hasattr(math, "tau")


main()
