"""Lines left for three and more other lines, in turn; arcs far from the
first line of their code. Every count of every arc must still be exact."""
import sys


def three_ways(k):
    try:
        if k > 0: return 10 // (k - 1)  # on to the next line, an exit or the except
        k += 5
    except ZeroDivisionError:
        k = -1
    return k


def four_ways(n):
    total = 0
    for i in range(n):
        k = i % 4
        if k == 0: continue  # to the loop, or on
        total += 1 if k == 1 else (2 if k == 2 else 3)
        if total > 10 * n: break
    return total


def long_body(n):
    x = n
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    x += 1
    if x % 3 == 0:
        return x
    elif x % 3 == 1:
        return -x
    return 0


def main(n):
    out = []
    for i in range(n):
        out.append(three_ways(i % 3))
        out.append(long_body(i))
    out.append(four_ways(n))
    return out


if __name__ == "__main__":
    print(sum(main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)))
