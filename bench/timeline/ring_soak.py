"""The flight recorder over a long run: tests/timeline/programs/requests.py
(two threads serving synthetic requests, a slow one now and then) under
`timeline:ring=5,trigger=handle_request:250` for SECONDS, its RSS sampled every
STEP seconds from /proc. Prints the samples, the ring's own bytes and
figures from timeline.summary.json, and the dumps.

    ring_soak.py PYTRACEKIT PLUGIN_DIR SECONDS [STEP] [OPTIONS]

(docs/timeline.md, "The flight recorder"; bench/README.md has the figures.)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "..", "..", "tests", "timeline", "programs", "requests.py")


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    cli, plugins, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    step = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    opts = sys.argv[5] if len(sys.argv) > 5 else "ring=5,trigger=handle_request:250"
    out = tempfile.mkdtemp(prefix="ptk-ring-soak-")
    # a slow request every 30 s: a trigger dump each time
    slow = ",".join(str(t) for t in range(15, int(seconds), 30))
    cmd = [cli, "--plugin-path", plugins, "-p", "timeline:" + opts, "-o", out,
           PROG, str(seconds), slow]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = []
    while p.poll() is None:
        time.sleep(step)
        r = rss_kib(p.pid)
        if r is not None:
            samples.append((round(time.monotonic() - t0, 1), r))
            print("t=%6.1f s  RSS %d KiB" % samples[-1], flush=True)
    so, se = p.communicate()
    print(so.strip())
    if p.returncode != 0:
        print(se)
        sys.exit(1)
    with open(os.path.join(out, "timeline.summary.json")) as f:
        ring = json.load(f)["ring"]
    dumps = ring.pop("dumps")
    print(json.dumps(ring, indent=1))
    print("dumps: %d (%s)" % (len(dumps), ", ".join(
        "%s %d spans" % (d["file"], d["spans"]) for d in dumps[-3:])))
    if len(samples) >= 4:
        early = samples[len(samples) // 10][1]
        print("RSS at %.0f s: %d KiB; at the end: %d KiB; growth %d KiB"
              % (samples[len(samples) // 10][0], early, samples[-1][1],
                 samples[-1][1] - early))
    print("output:", out)


main()
