"""Three threads with known call counts: 1000 x work_a in one thread,
700 x work_b in another (a name a file name cannot hold as it is), 300 x
work_a in the main thread."""
import threading


def work_a():
    return 1


def work_b():
    return 2


def run_a(n):
    for _ in range(n):
        work_a()


def run_b(n):
    for _ in range(n):
        work_b()


def main():
    ta = threading.Thread(target=run_a, args=(1000,), name="thread-a")
    tb = threading.Thread(target=run_b, args=(700,), name="worker b/2 (\u00fc)")
    ta.start()
    ta.join()
    tb.start()
    tb.join()
    run_a(300)


main()
