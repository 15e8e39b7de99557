"""A run stopped by Ctrl-C (SIGINT), SIGTERM or kill -9 leaves a readable
file: finished (every span ended, JSON closed) when the reports are written
(Ctrl-C; SIGTERM once the command writes reports on it), and otherwise the
readable prefix the writer thread had put on disk.

    test_signals.py int|term|kill json|perfetto
"""
import os
import signal
import subprocess
import sys
import time

import ptk_timeline_util as U

which, fmt = sys.argv[1], sys.argv[2]
SIG = {"int": signal.SIGINT, "term": signal.SIGTERM, "kill": signal.SIGKILL}[which]


def main():
    outdir = U.tempdir()
    cmd = U.command(U.program("forever.py"), "format=%s,flush_ms=50,buffer_kb=64" % fmt,
                    outdir=outdir)
    path = os.path.join(outdir, U.FILES[fmt])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        if os.path.exists(path) and os.path.getsize(path) > 200000:
            break
        if p.poll() is not None:
            U.fail("the program ended by itself: %s" % p.stderr.read())
        time.sleep(0.05)
    else:
        p.kill()
        U.fail("no data on disk after 60 s")
    p.send_signal(SIG)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        U.fail("still running 120 s after the signal")
    summary = os.path.join(outdir, "timeline.summary.json")
    finished = os.path.exists(summary)
    if which == "int":
        U.check(finished, "Ctrl-C wrote no summary: %s" % err)
    if which == "kill":
        U.check(not finished, "a summary after kill -9?")
    tracks = U.load(outdir, fmt, finished=finished)
    trees = U.trees(tracks, finished=finished)
    main_track = trees.get("MainThread", [])
    n = sum(1 for node, _ in U.walk(main_track) if node[0].endswith("(inner)"))
    U.check(n > 100, "only %d inner() spans in the file" % n)
    for node, _ in U.walk(main_track):
        if finished or node[3] is not None:
            U.check(node[3] is not None and node[3] >= node[2], "bad span %r" % node[:4])
    print("OK: %s after SIG%s (%s): %d bytes, %d inner() spans, exit %d"
          % (fmt, which.upper(), "finished" if finished else "readable prefix",
             os.path.getsize(os.path.join(outdir, U.FILES[fmt])), n, p.returncode))


main()
