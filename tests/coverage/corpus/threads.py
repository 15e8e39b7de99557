"""Worker threads: measured with --threads all."""
import threading

results = {}


def worker(n):
    total = 0
    for i in range(n):
        total += i
    results[n] = total


def only_in_main():
    return sorted(results.items())


threads = [threading.Thread(target=worker, args=(k,)) for k in (10, 20, 30)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(only_in_main())
