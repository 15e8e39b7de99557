"""bench/process workload: a Pool of 8 workers running 1,000 short tasks."""
import multiprocessing as mp
import sys


def task(x):
    return sum(i * i for i in range(50)) + x


if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1] if len(sys.argv) > 1 else "fork")
    with ctx.Pool(8) as pool:
        total = sum(pool.map(task, range(1000), chunksize=1))
    print(total)
