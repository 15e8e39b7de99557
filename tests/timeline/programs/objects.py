"""Objects of one class made, kept for a while (with calls going on, so that
the timeline samples its counters), then most of them dropped."""
import sys
import time


class Blob:
    pass


def tick():
    pass


keep = [Blob() for _ in range(1000)]
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    tick()
    time.sleep(0.01)
del keep[400:]
print("alive", len(keep))
