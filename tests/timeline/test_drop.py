"""The drop policy: the file is a FIFO that the test reads slowly (a disk
that cannot keep up). The program is never blocked: events that find both
buffers full are dropped and counted; spans already begun still end (their
ENDs are written when there is room again); a "dropped events (total)"
counter sample marks each gap; the result is a complete, well-nested trace
whose last counter sample equals the summary's count.

    test_drop.py json|perfetto
"""
import json
import os
import subprocess
import sys
import threading
import time

import ptk_timeline_util as U

fmt = sys.argv[1]


def main():
    outdir = U.tempdir()
    path = os.path.join(outdir, U.FILES[fmt])
    os.mkfifo(path)
    cmd = U.command(U.program("calls.py"), "format=%s,buffer_kb=8,gc=false" % fmt,
                    args=(300000,), outdir=outdir)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    data = bytearray()

    def reader():
        with open(path, "rb", buffering=0) as f:
            while True:
                b = f.read(4096)
                if not b:
                    break
                data.extend(b)
                time.sleep(0.002)

    r = threading.Thread(target=reader)
    r.start()
    out, err = p.communicate(timeout=300)
    r.join(timeout=300)
    U.check(p.returncode == 0, "exit %d: %s" % (p.returncode, err))
    with open(os.path.join(outdir, "timeline.summary.json")) as f:
        summary = json.load(f)
    U.check(summary["dropped"] > 0, "nothing dropped: the test needs a slower reader (%r)"
            % summary)
    U.check(summary["bytes"] == len(data), "summary says %d bytes, the reader got %d"
            % (summary["bytes"], len(data)))
    os.unlink(path)
    with open(path, "wb") as f:
        f.write(data)
    tracks = U.load(outdir, fmt)
    trees = U.trees(tracks)   # every span ends, time order per track
    drops = tracks.get("counter:dropped events (total)", [])
    U.check(drops, "no dropped-events counter samples")
    U.check(drops[-1][2] == summary["dropped"], "last counter sample %r, summary %d"
            % (drops[-1], summary["dropped"]))
    U.check(len(drops) == summary["drop_episodes"],
            "%d counter samples, %d drop episodes" % (len(drops), summary["drop_episodes"]))
    n = sum(1 for node, _ in U.walk(trees["MainThread"]) if node[0].endswith("(inner)"))
    U.check(0 < n < 300000, "%d inner() spans" % n)
    print("OK: %s, %d bytes, %d events dropped in %d episodes, %d of 300000 inner() spans kept"
          % (fmt, len(data), summary["dropped"], summary["drop_episodes"], n))


main()
