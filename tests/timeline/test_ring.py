"""The flight recorder, timeline:ring=SECONDS.

    test_ring.py window json|perfetto
    test_ring.py memory perfetto
    test_ring.py session json
    test_ring.py bad json

window: programs/requests.py (two threads of synthetic requests for 3.5 s,
slow ones at 1.5, 1.75 and 2.8 s, then an uncaught exception in a thread and
one in the main thread) under two timelines of the same session: a full
one, the oracle, and ring=1 with trigger=handle_request:250. Both without
GC spans: each timeline reads the clock in its own gc callback, so the same
collection has two slightly different spans. Every dump of the
ring — two trigger dumps (the one at 1.75 s is within 1 s of the first:
suppressed), two exception dumps, the report — holds exactly the full
trace's spans of the same thread that ended within the window before the
dump, and those still running then, ending at the dump; a trigger dump
holds the triggering request's whole span tree; run.json lists them all;
the program's own excepthooks still ran.

memory: the ring's own bytes, and the process's peak RSS, do not grow with
the length of the run (2 s against 4 s, a trigger dump every half second: the
dumps' memory goes back to the system); at ring_mb's cap the ring stays
at the cap and says what of the window it lost.

session: pytracekit.Session with ring: report() writes the ring each time
(the newest window), the session goes on after it, and sys.excepthook is
the program's own again after close().

bad: malformed ring / ring_mb / trigger are refused with the reason.
"""
import collections
import json
import os
import subprocess
import sys

import ptk_testlib as T
import ptk_timeline_util as U

case, fmt = sys.argv[1], sys.argv[2]
EXT = {"json": ".json", "perfetto": ".perfetto-trace"}[fmt]


def spans(path, finished=True):
    """{track: [(name, t0_ns, t1_ns)]} of a trace file (its whole span
    trees), and its tracks' trees."""
    if fmt == "json":
        tracks = U.json_tracks(U.read_json(path, finished))
    else:
        tracks = U.perfetto_tracks(U.read_perfetto(path, finished))
    trees = U.trees(tracks)
    out = {}
    for track, nodes in trees.items():
        out[track] = [(n[0], round(n[2] * 1000), round(n[3] * 1000))
                      for n, _ in U.walk(nodes)]
    return out, trees


def run_pair(opts, args, outdir):
    cli = U.command(U.program("requests.py"), "format=%s,gc=false" % fmt, args, outdir)
    # the same session: the full timeline, and the ring
    i = cli.index("-o")
    cmd = cli[:i] + ["-p", "timeline:format=%s,gc=false,%s" % (fmt, opts)] + cli[i:]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p


def check_window():
    outdir = U.tempdir()
    p = run_pair("ring=1,trigger=handle_request:250", (3.5, "1.5,1.75,2.8", "both"), outdir)
    U.check(p.returncode == 1, "exit %d (an uncaught exception: 1)\n%s" % (p.returncode, p.stderr))
    # the program's own hooks ran after the ring's
    U.check("ValueError: boom in a thread" in p.stderr and "KeyError: 'boom in main'" in p.stderr,
            "the replaced excepthooks did not print the tracebacks:\n" + p.stderr)
    with open(os.path.join(outdir, "timeline.summary-2.json")) as f:
        summary = json.load(f)
    ring = summary["ring"]
    dumps = ring["dumps"]
    reasons = [(d["reason"], d["file"]) for d in dumps]
    want = [("trigger", "timeline.trigger-1" + EXT), ("trigger", "timeline.trigger-2" + EXT),
            ("exception", "timeline.exception-3" + EXT),
            ("exception", "timeline.exception-4" + EXT),
            ("report", "timeline-2" + EXT)]
    U.check(reasons == want, "dumps %r, expected %r" % (reasons, want))
    U.check([d.get("exception") for d in dumps[2:4]] == ["ValueError", "KeyError"],
            "exception types %r" % [d.get("exception") for d in dumps])
    U.check(ring["triggers"] == 2 and ring["triggers_suppressed"] >= 1,
            "triggers %d, suppressed %d: expected 2 and the one at 1.75 s"
            % (ring["triggers"], ring["triggers_suppressed"]))
    U.check(dumps[1]["at_ns"] - dumps[0]["at_ns"] >= 1e9, "two trigger dumps within the window")
    U.check(ring["lost_in_window"] == 0, "spans lost at the cap: %r" % ring)
    with open(os.path.join(outdir, "run.json")) as f:
        files = json.load(f)["files"]
    # the report's file is timeline-2.EXT: the full timeline has the name
    for d in dumps:
        U.check(d["file"] in files, "run.json does not list %s: %r" % (d["file"], files))

    full, ftrees = spans(os.path.join(outdir, "timeline" + EXT))
    origin = 0 if fmt == "json" else ring["origin_ns"]
    # the full timeline is written (and ends) first, at the end of the run:
    # nothing may be in the ring's report that began after it
    full_end = max(t1 for ss in full.values() for _, _, t1 in ss)
    for d in dumps:
        path = os.path.join(outdir, d["file"])
        got, trees = spans(path)
        at, frm = origin + d["at_ns"], origin + d["from_ns"]
        later = [x for ss in got.values() for x in ss if x[1] > full_end]
        U.check(not later, "%s: spans after the full trace's end: %r"
                % (d["file"], later[:5]))
        got = {t: [x for x in ss if x[1] <= full_end] for t, ss in got.items()}
        expect = {}
        for track, ss in full.items():
            sel = [(n, t0, t1) for n, t0, t1 in ss if frm <= t1 <= at]
            sel += [(n, t0, at) for n, t0, t1 in ss if t0 <= at < t1]
            if sel:
                expect[track] = collections.Counter(sel)
        gotc = {t: collections.Counter(ss) for t, ss in got.items() if ss}
        for track in set(expect) | set(gotc):
            e, g = expect.get(track, collections.Counter()), gotc.get(track, collections.Counter())
            if e != g:
                U.fail("%s, track %s: %d spans, the full trace has %d in the window;"
                       " missing %r; extra %r" % (d["file"], track, sum(g.values()),
                                                  sum(e.values()), list((e - g).elements())[:5],
                                                  list((g - e).elements())[:5]))
        n_closed = sum(1 for ss in full.values() for _, _, t1 in ss if frm <= t1 <= at)
        n_open = sum(1 for ss in full.values() for _, t0, t1 in ss if t0 <= at < t1)
        U.check(d["spans"] == n_closed and d["open_spans"] == n_open,
                "%s: summary says %d spans, %d open; the oracle %d, %d"
                % (d["file"], d["spans"], d["open_spans"], n_closed, n_open))
        U.check(n_closed > 1000, "%s: only %d spans in the window" % (d["file"], n_closed))
        if d["reason"] == "trigger":
            # the triggering request's whole tree, as the full trace has it
            b = origin + d["span_begin_ns"]
            f_node = [n for n, _ in U.walk(ftrees["MainThread"])
                      if n[0].endswith("(handle_request)") and round(n[2] * 1000) == b]
            g_node = [n for n, _ in U.walk(trees["MainThread"])
                      if n[0].endswith("(handle_request)") and round(n[2] * 1000) == b]
            U.check(len(f_node) == 1 and len(g_node) == 1,
                    "%s: the triggering request: %d in the full trace, %d in the dump"
                    % (d["file"], len(f_node), len(g_node)))

            def tree(n):
                return (n[0], round(n[2] * 1000), round(n[3] * 1000), tuple(tree(c) for c in n[4]))
            U.check(tree(f_node[0]) == tree(g_node[0]),
                    "%s: the triggering request's tree differs:\n%r\n%r"
                    % (d["file"], tree(f_node[0]), tree(g_node[0])))
            names = [c[0] for c in tree(g_node[0])[3]]
            U.check(any(x.endswith("(query)") for x in names) and
                    round(f_node[0][3] * 1000) - b >= 250e6,
                    "%s: not the slow request: %r" % (d["file"], names))
        if d["reason"] == "exception":
            fn = "(fail_in_thread)" if d["exception"] == "ValueError" else "(fail_in_main)"
            track = "failer" if d["exception"] == "ValueError" else "MainThread"
            U.check(any(n.endswith(fn) for n, _, _ in got.get(track, ())),
                    "%s: no %s span on %s" % (d["file"], fn, track))
    print("OK:", fmt, [(d["file"], d["spans"], d["open_spans"]) for d in dumps])


def ring_start(seconds, opts):
    """Starts requests.py for SECONDS under timeline:OPTS; ring_result()
    waits for it. The memory case's three runs go side by side: each one's
    figures are its own process's."""
    outdir = U.tempdir()
    cmd = U.command(U.program("requests.py"), "format=%s,%s" % (fmt, opts), (seconds,), outdir)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), outdir


def ring_result(started):
    p, outdir = started
    out, err = p.communicate(timeout=300)
    U.check(p.returncode == 0, "exit %d: %s" % (p.returncode, err))
    out = dict(line.split() for line in out.splitlines() if line.strip())
    with open(os.path.join(outdir, "timeline.summary.json")) as f:
        ring = json.load(f)["ring"]
    return ring, int(out["maxrss_kib"]), int(out["requests"])


def check_memory():
    runs = [ring_start(2, "ring=0.5,trigger=parse:0"), ring_start(4, "ring=0.5,trigger=parse:0"),
            ring_start(4, "ring=100,ring_mb=1")]
    (short, rss1, n1), (long_, rss2, n2), (capped, _, _) = [ring_result(r) for r in runs]
    print("2 s: %d requests, %d records made, ring %d bytes, peak RSS %d KiB"
          % (n1, short["recorded"], short["bytes"], rss1))
    print("4 s: %d requests, %d records made, ring %d bytes, peak RSS %d KiB"
          % (n2, long_["recorded"], long_["bytes"], rss2))
    # (a loaded machine serves fewer requests a second: only more, not twice)
    U.check(n2 > n1 and long_["recorded"] > short["recorded"],
            "the longer run did not do more")
    # a record is 32 bytes: the longer run made far more than its ring holds
    U.check(long_["recorded"] * long_["record_bytes"] > 2 * long_["bytes"],
            "the ring holds everything: the window is too long for the test")
    # the ring follows the rate (which the machine's load may change a
    # little between the runs), not the length: at most two chunks apart
    U.check(long_["bytes"] <= short["bytes"] + 2 * short["chunk_bytes"],
            "the ring grew with the run: %d -> %d bytes" % (short["bytes"], long_["bytes"]))
    U.check(len(long_["dumps"]) >= 6, "too few trigger dumps: %d" % len(long_["dumps"]))
    if os.environ.get("PTK_SANITIZE"):
        # ASan keeps freed memory in its quarantine: RSS says nothing here
        print("peak RSS not compared under the sanitizers (ASan's quarantine)")
    else:
        # with qsort(3)'s buffers from malloc this grew by ~1 MB (4 more dumps)
        U.check(rss2 - rss1 < 600, "peak RSS grew by %d KiB (%d -> %d)"
                % (rss2 - rss1, rss1, rss2))
    # at the cap: the oldest spans of the window (the whole run) go, the
    # ring stays there
    U.check(capped["recorded"] * 32 > 1.5 * capped["cap_bytes"],
            "the run made too few spans to fill 1 MiB: %r" % capped["recorded"])
    U.check(capped["bytes"] == capped["cap_bytes"] and capped["lost_in_window"] > 0,
            "at ring_mb=1: %r" % {k: v for k, v in capped.items() if k != "dumps"})
    last = capped["dumps"][-1]
    U.check(last["complete"] is False and last["spans"] * 32 <= capped["cap_bytes"],
            "the capped dump: %r" % last)
    print("OK: memory", short["bytes"], long_["bytes"], rss1, rss2, capped["lost_in_window"])


SESSION = r"""
import gc, json, sys, time
import pytracekit
hook = sys.excepthook
def first(k):
    return sum(range(k))
def second(k):
    return sum(range(k))
s = pytracekit.Session(["timeline:ring=0.3,format=json"], output_dir=OUT)
s.start()
for i in range(50):
    first(i)
gc.collect()
s.stop()
s.report()
res = {"hooked": sys.excepthook is not hook}
with open(OUT + "/timeline.json") as f:
    res["one"] = f.read()
time.sleep(0.5)
s.start()
for i in range(20):
    second(i)
s.stop()
s.report()
with open(OUT + "/timeline.json") as f:
    res["two"] = f.read()
with open(OUT + "/timeline.summary.json") as f:
    res["summary"] = json.load(f)
s.close()
res["restored"] = sys.excepthook is hook
print(json.dumps(res))
"""


def check_session():
    outdir = U.tempdir()
    p = T.run_python(SESSION.replace("OUT", repr(outdir)))
    res = json.loads(p.stdout.strip().splitlines()[-1])
    U.check(res["hooked"] and res["restored"],
            "sys.excepthook: wrapped while running %s, restored %s" % (res["hooked"], res["restored"]))

    def names(text):
        evs = U.json_tracks(json.loads(text))
        return collections.Counter(e[2].rsplit("(", 1)[-1] for evs_ in evs.values()
                                   for e in evs_ if e[0] == "B")
    one, two = names(res["one"]), names(res["two"])
    U.check(one["first)"] == 50 and one["second)"] == 0 and one["gc"] >= 1,
            "first report: %r" % one)
    # the second report is the newest window: 0.5 s later, only `second`
    U.check(two["second)"] == 20 and two["first)"] == 0, "second report: %r" % two)
    dumps = res["summary"]["ring"]["dumps"]
    U.check([d["reason"] for d in dumps] == ["report", "report"], "dumps %r" % dumps)
    U.check(res["summary"]["after_report"] == 0, "events left out after the report")
    print("OK: session", dict(one), dict(two))


def check_bad():
    for opts, why in (("ring=-1", "ring must be"), ("ring=1,ring_mb=0", "ring_mb must be"),
                      ("trigger=f:5", "trigger needs ring"),
                      ("ring=1,trigger=f", "is not GLOB:MS"),
                      ("ring=1,trigger=f:x", "is not GLOB:MS")):
        outdir = U.tempdir()
        cmd = U.command(U.program("calls.py"), opts, (10,), outdir)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        U.check(p.returncode != 0 and why in p.stderr,
                "%s: exit %d, stderr %r (expected %r)" % (opts, p.returncode, p.stderr, why))
    print("OK: bad options refused")


{"window": check_window, "memory": check_memory, "session": check_session,
 "bad": check_bad}[case]()
