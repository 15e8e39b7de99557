"""Heavy churn from several threads: each thread creates PER objects of
several kinds and keeps every KEEP-th Widget."""
import sys
import threading

THREADS = int(sys.argv[1])
PER = int(sys.argv[2])
KEEP = int(sys.argv[3])


class Widget:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


kept = [[] for _ in range(THREADS)]


def work(t):
    mine = kept[t]
    scratch = []
    for i in range(PER):
        w = Widget(i)  # CHURN-LINE
        scratch.append((w, [i], {"i": i}))
        if i % KEEP == 0:
            mine.append(w)
        if len(scratch) >= 64:
            scratch.clear()
    scratch.clear()


threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print("kept", sum(len(k) for k in kept))
