"""Creates exactly N Widgets and keeps K of them alive; the others die
through C code (list.clear), so every DESTROY comes from CPython itself."""
import sys

N = int(sys.argv[1])
K = int(sys.argv[2])


class Widget:
    pass


keep = []


def make(n, k):
    tmp = []
    for i in range(n):
        w = Widget()  # CREATE-LINE
        (keep if i < k else tmp).append(w)
    tmp.clear()


make(N, K)
print("kept", len(keep))
