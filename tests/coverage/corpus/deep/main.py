import sys
import threading
sys.path.insert(0, sys.argv[1])
import helper

DEPTH = 30000


def depth(n):
    if n == 0:
        return 0
    return 1 + depth(n - 1)


def leaf():
    return "bottom"


def run(out):
    out.append(depth(DEPTH))
    out.append(helper.down(DEPTH, leaf))


def after(out):
    return len(out)


sys.setrecursionlimit(10 * DEPTH)
out = []
run(out)
t = threading.Thread(target=run, args=(out,))
t.start()
t.join()
print(out, after(out))
