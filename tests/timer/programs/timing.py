"""Known time: a 50 ms sleep and some CPU work. Writes its own measure of
main() to the file named by argv[1] (JSON), for the test to compare."""
import json
import sys
import time


def sleeper():
    time.sleep(0.05)


def spin(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def caller(k, n):
    for _ in range(k):
        spin(n)


def main():
    t0 = time.perf_counter()
    c0 = time.thread_time()
    sleeper()
    caller(60, 20000)
    c1 = time.thread_time()
    t1 = time.perf_counter()
    return t1 - t0, c1 - c0


wall, cpu = main()
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        json.dump({"main_wall_s": wall, "main_cpu_s": cpu}, f)
