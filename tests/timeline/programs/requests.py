"""Synthetic request traffic for the flight-recorder tests: two threads
serve requests (parse, query, render) until SECONDS have passed: the main
thread in handle_request, the worker in handle_batch. The main thread's
first request after each time in SLOW (seconds, comma-separated) is slow:
its query sleeps 300 ms. At the end it prints its peak RSS (KiB)
and the requests served.

    requests.py SECONDS [SLOW] [RAISE]

RAISE: "thread" — a worker raises ValueError (uncaught) at the end;
"main" — the main thread does too; "both" — one then the other.
"""
import resource
import sys
import threading
import time

SECONDS = float(sys.argv[1])
SLOW = [float(x) for x in sys.argv[2].split(",") if x] if len(sys.argv) > 2 else []
RAISE = sys.argv[3] if len(sys.argv) > 3 else ""
T0 = time.monotonic()


def parse(i):
    return [str(k) for k in range(i % 7 + 3)]


def query(i, slow):
    time.sleep(0.3 if slow else 0.0005)
    return {"id": i}


def render(row, words):
    return "%s:%s" % (row["id"], ",".join(words))


def handle_request(i, slow=False):
    words = parse(i)
    row = query(i, slow)
    return render(row, words)


def handle_batch(i, slow=False):
    words = parse(i)
    row = query(i, slow)
    return render(row, words)


def serve(slow_at, handle=handle_request):
    n = 0
    pending = list(slow_at)
    while True:
        t = time.monotonic() - T0
        if t >= SECONDS:
            return n
        slow = bool(pending) and t >= pending[0]
        if slow:
            pending.pop(0)
        handle(n, slow)
        n += 1


def fail_in_thread():
    raise ValueError("boom in a thread")


def fail_in_main():
    raise KeyError("boom in main")


counts = []
worker = threading.Thread(target=lambda: counts.append(serve([], handle_batch)), name="worker")
worker.start()
served = serve(SLOW)
worker.join()
print("requests", served + counts[0])
print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.stdout.flush()
if RAISE in ("thread", "both"):
    t = threading.Thread(target=fail_in_thread, name="failer")
    t.start()
    t.join()
if RAISE in ("main", "both"):
    fail_in_main()
