"""Live objects per type as counter tracks: with reftrack in the same
session (CPython 3.13+), the timeline shows "live objects: TYPE" for the
types with the most objects, from reftrack's published counts
(services.h). The program keeps 1,000 Blobs for 1.5 s (samples once a
second) and then 400: the Blob track has a sample of 1,000 while they were
kept, its last sample is 400, and that equals reftrack's own report of
__main__.Blob alive at stop. Without reftrack, and with objects=0, there is
no such track.

    test_objects.py json|perfetto
"""
import json
import os
import subprocess
import sys

import ptk_timeline_util as U

fmt = sys.argv[1]
TRACK = "counter:live objects: __main__.Blob"


def run(extra_plugins, opts):
    outdir = U.tempdir()
    cmd = U.command(U.program("objects.py"), "format=%s,gc=false%s" % (fmt, opts),
                    args=(1.5,), outdir=outdir)
    cmd[1:1] = extra_plugins
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    U.check(p.returncode == 0 and p.stdout == "alive 400\n",
            "exit %d: %s %s" % (p.returncode, p.stdout, p.stderr))
    return outdir, U.load(outdir, fmt)


def main():
    if sys.version_info < (3, 13):
        U.skip("reftrack needs the reference tracer of CPython 3.13+")
    outdir, tracks = run(["-p", "reftrack:top=0"], "")
    blob = [v for _, _, v in tracks.get(TRACK, [])]
    U.check(blob, "no %s track: %s" % (TRACK, sorted(tracks)))
    U.check(1000 in blob, "no sample of the 1,000 kept Blobs: %r" % blob)
    U.check(blob[-1] == 400, "last sample %r, expected 400" % blob[-1])
    with open(os.path.join(outdir, "reftrack.json")) as f:
        rt = {t["type"]: t for t in json.load(f)["types"]}
    U.check(rt["__main__.Blob"]["alive"] == 400,
            "reftrack says %r" % rt["__main__.Blob"])
    # a type gets its track the first time it is among the top 5 at a
    # sample (docs/timeline.md): at most 5 at the first sample, 32 in all
    firsts = [min(t for _, t, _ in v) for k, v in tracks.items()
              if k.startswith("counter:live objects: ")]
    n = len(firsts)
    at_first = sum(1 for t in firsts if t == min(firsts))
    U.check(1 <= at_first <= 5 and n <= 32,
            "%d live-object tracks, %d of them from the first sample; "
            "objects=5 by default" % (n, at_first))
    _, alone = run([], "")
    U.check(not any(k.startswith("counter:live objects: ") for k in alone),
            "live-object tracks without reftrack: %r" % sorted(alone))
    _, off = run(["-p", "reftrack:top=0"], ",objects=0")
    U.check(not any(k.startswith("counter:live objects: ") for k in off),
            "live-object tracks with objects=0: %r" % sorted(off))
    print("OK: %s, Blob samples %r, %d live-object tracks" % (fmt, blob, n))


main()
