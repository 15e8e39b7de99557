"""The span tree of every track (threads and asyncio tasks) of the scenario
program — two threads contending for a lock, three tasks, an exception
through three frames — against the sys.setprofile oracle (oracle.py), for
one output format; both files are read back independently (json, and the
protobuf reader of ptk_timeline_util written against Perfetto's protos).

    test_tree.py json|perfetto
"""
import json
import os
import shutil
import subprocess
import sys

import ptk_timeline_util as U

fmt = sys.argv[1]
script = U.program("scenario.py")
LOOPS = 5


def oracle():
    out = os.path.join(U.tempdir(), "oracle.json")
    p = subprocess.run([U.PYTHON, os.path.join(os.path.dirname(__file__), "oracle.py"),
                        out, script, str(LOOPS)], capture_output=True, text=True, timeout=300,
                       env=U.ORACLE_ENV)
    U.check(p.returncode == 0, "oracle failed: %s" % p.stderr)
    with open(out) as f:
        return json.load(f)


def keep(name):
    return name.startswith(script + ":") or name.startswith("task ")


def as_lists(shape):
    return [[n, as_lists(k)] for n, k in shape]


def cross_check(path):
    """protoc --decode_raw, a protobuf parser that is not ours, sees the
    same packets: as many TrackEvents and TrackDescriptors as our reader."""
    protoc = shutil.which("protoc")
    if protoc is None:
        print("note: protoc not installed (apt-get install protobuf-compiler): "
              "no second parser")
        return
    with open(path, "rb") as f:
        p = subprocess.run([protoc, "--decode_raw"], stdin=f, capture_output=True,
                           text=True, timeout=300)
    U.check(p.returncode == 0, "protoc --decode_raw failed: %s" % p.stderr[:500])
    lines = p.stdout.splitlines()
    items = U.read_perfetto(path)
    for field, kind in (("11", "event"), ("60", "track")):
        theirs = sum(1 for l in lines if l == "  %s {" % field)
        ours = sum(1 for it in items if it["kind"] == kind)
        U.check(theirs == ours, "protoc sees %d field-%s messages, our reader %d %ss"
                % (theirs, field, ours, kind))


def main():
    expect = oracle()
    outdir, proc = U.run(script, "format=" + fmt, args=(LOOPS,))
    tracks = U.load(outdir, fmt)
    trees = U.trees(tracks)
    got = {t: as_lists(U.shape(n, keep)) for t, n in trees.items()}
    got = {t: v for t, v in got.items() if v}
    want = {t: v for t, v in expect["trees"].items() if v}
    U.check(sorted(got) == sorted(want),
            "tracks: got %s, oracle %s" % (sorted(got), sorted(want)))
    for t in sorted(want):
        if got[t] != want[t]:
            U.fail("track %s differs:\n got    %s\n oracle %s"
                   % (t, json.dumps(got[t])[:3000], json.dumps(want[t])[:3000]))
    # args: file and line of every Python span
    for t, nodes in trees.items():
        for n, _ in U.walk(nodes):
            if n[0].startswith(script + ":"):
                line = int(n[0][len(script) + 1:].split("(")[0])
                U.check(n[1] == {"file": script, "line": line},
                        "%s: args %r" % (n[0], n[1]))
            U.check(n[3] >= n[2], "%s: ends before it begins" % n[0])
    # the exception passes through level3, level2, level1 and catcher
    exc = {}
    for t, nodes in trees.items():
        for n, _ in U.walk(nodes):
            if n[0].startswith(script + ":"):
                for i in n[5]:
                    exc.setdefault(t, {}).setdefault(i, 0)
                    exc[t][i] += 1
    got_v = exc.get("MainThread", {}).get("exception ValueError", 0)
    want_v = expect["exceptions"]["MainThread"]["ValueError"]
    U.check(got_v == want_v == 4, "ValueError instants in program frames: %d, oracle %d"
            % (got_v, want_v))
    # per-task figures in the summary
    with open(os.path.join(outdir, "timeline.summary.json")) as f:
        summary = json.load(f)
    tasks = {t["name"]: t for t in summary["tasks"]}
    for name in ("job0", "job1", "job2", "Task-1"):
        steps = sum(1 for n in want[name])
        U.check(tasks[name]["steps"] == steps, "%s: %d steps, oracle %d"
                % (name, tasks[name]["steps"], steps))
        U.check(tasks[name]["done"], "%s not done" % name)
        U.check(0 < tasks[name]["running_ns"] <= tasks[name]["wall_ns"],
                "%s: running %d, wall %d" % (name, tasks[name]["running_ns"],
                                             tasks[name]["wall_ns"]))
    U.check(summary["dropped"] == 0, "dropped %d" % summary["dropped"])
    # gc.collect() in main(): a "gc" span inside <gc.collect> on MainThread
    gcs = [n for nodes in trees.values() for n, d in U.walk(nodes) if n[0] == "gc"]
    U.check(summary["gc_collections"] >= 1 and len(gcs) == summary["gc_collections"],
            "%d gc spans, summary %d" % (len(gcs), summary["gc_collections"]))
    U.check(any(n[0] == "<built-in method gc.collect>" and any(c[0] == "gc" for c in n[4])
                for n, _ in U.walk(trees["MainThread"])), "no gc span in <gc.collect>")
    # counter tracks: a last sample at the end at least
    for c in ("counter:events/s", "counter:GC pause (ms per s)"):
        U.check(tracks.get(c), "no %s samples" % c)
    U.check(all(v > 0 for _, _, v in tracks["counter:events/s"]), "events/s <= 0")
    if fmt == "perfetto":
        cross_check(os.path.join(outdir, U.FILES[fmt]))
    print("OK: %s, %d tracks, %d spans in the program's frames"
          % (fmt, len(want), sum(1 for t in got.values() for _ in t)))


main()
