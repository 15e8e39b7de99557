"""A program with a known call-depth profile, for the calldepth plugin.

Counted from main() (depth 1), it makes these Python calls:

    depth 1: main                                 1 call
    depth 2: branch x3, rec(5)                    4 calls
    depth 3: leaf x6 (1 + 2 + 3), rec(4)          7 calls
    depth 4..7: rec(3), rec(2), rec(1), rec(0)    1 call each

so `pytracekit -p ./calldepth.so:root=main demo.py` reports a total of 16
calls, a maximum depth of 7 and the chain main > rec > rec > ... > rec.
"""


def leaf():
    return 1


def branch(k):
    # A plain loop: a comprehension would add a frame on Python 3.11 only.
    total = 0
    for _ in range(k):
        total += leaf()
    return total


def rec(n):
    return rec(n - 1) + 1 if n else 0


def main():
    total = 0
    for k in range(1, 4):
        total += branch(k)
    total += rec(5)
    print(f"demo: total {total}")


if __name__ == "__main__":
    main()
