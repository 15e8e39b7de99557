"""Loops: for and while, one-line loops, nested loops, break, continue,
else clauses, a loop over a generator."""


def lp_one_line():
    i = 0
    while i < 3: i += 1
    for j in range(3): i += j
    return i


def lp_nested():
    n = 0
    for a in range(3):
        for b in range(a):
            if b == 1:
                continue
            n += b
        else:
            n += 1
    return n


def lp_while():
    k = 10
    while True:
        k -= 3
        if k < 0:
            break
    while k < 5:
        k += 2
    else:
        k += 100
    return k


def lp_gen(n):
    x = 0
    while x < n:
        yield x
        x += 1


def lp_main():
    total = lp_one_line() + lp_nested() + lp_while()
    for v in lp_gen(4): total += v
    return total


lp_main()
