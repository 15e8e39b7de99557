"""Helpers of the timeline plugin tests: run a program under the plugin,
read its output — the Chrome JSON with `json`, the Perfetto trace with a
protobuf reader written here against Perfetto's published protos
(protos/perfetto/trace/trace.proto, trace_packet.proto,
track_event/track_event.proto, track_descriptor.proto,
debug_annotation.proto, interned_data/interned_data.proto) — and turn
either into span trees per track."""

import atexit
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from ptk_testlib import check, fail, skip  # noqa: F401

CLI = os.environ.get("PTK_CLI")
PYTHON = os.environ.get("PTK_PYTHON", sys.executable)
PLUGIN_DIR = os.environ.get("PTK_PLUGIN_DIR")
HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(os.path.dirname(HERE), "timeline", "programs")
FILES = {"json": "timeline.json", "perfetto": "timeline.perfetto-trace"}
# the timeline tests are PLAIN_DRIVERs (tests/CMakeLists.txt)
from ptk_sanitize import ORACLE_ENV  # noqa: E402

_made = []


@atexit.register
def _cleanup():
    if not os.environ.get("PTK_KEEP"):
        for d in _made:
            shutil.rmtree(d, ignore_errors=True)


def tempdir():
    d = tempfile.mkdtemp(prefix="ptk-timeline-")
    _made.append(d)
    return d


def program(name):
    return os.path.join(PROGRAMS, name)


def command(script, opts="", args=(), outdir=None):
    if not CLI or not os.path.exists(CLI):
        skip("the pytracekit command is not built (PTK_CLI=%r)" % CLI)
    spec = "timeline" + (":" + opts if opts else "")
    cmd = [CLI, "-p", spec, "-o", outdir]
    if PLUGIN_DIR:
        cmd += ["--plugin-path", PLUGIN_DIR]
    return cmd + [script] + [str(a) for a in args]


def run(script, opts="", args=(), check_rc=True):
    """Runs SCRIPT under `pytracekit -p timeline:OPTS`; returns (outdir, proc)."""
    outdir = tempdir()
    cmd = command(script, opts, args, outdir)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check_rc and p.returncode != 0:
        fail("%s exited %d\n%s\n%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return outdir, p


# ---- Chrome JSON ------------------------------------------------------------

def read_json(path, finished=True):
    """The events of a timeline.json. With finished=False, a prefix is
    accepted: it must end between two events (the missing ']' is allowed by
    the trace event format) and is completed with ']'."""
    with open(path) as f:
        text = f.read()
    if finished:
        return json.loads(text)
    body = text.rstrip()
    if body.endswith("]"):
        return json.loads(body)
    try:
        return json.loads(body + "\n]")
    except ValueError:
        # the documented recovery: a kill that lands in the middle of a
        # write(2) can cut the last record; drop it (every record starts
        # on a new line with ',')
        cut = body.rfind(",\n{")
        check(cut > 0, "no complete record in the prefix")
        return json.loads(body[:cut] + "\n]")


def json_tracks(events):
    """{track name: [("B", ts, name, args) | ("E", ts) | ("i", ts, name) ...]}
    in file order; counters under "counter:NAME"."""
    names, out = {}, {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[e["tid"]] = e["args"]["name"]
    for e in events:
        ph = e["ph"]
        if ph == "M":
            continue
        if ph == "C":
            out.setdefault("counter:" + e["name"], []).append(("C", e["ts"], e["args"]["value"]))
            continue
        track = names.get(e["tid"])
        check(track is not None, "event on tid %s without a thread_name: %r" % (e["tid"], e))
        if ph == "B":
            out.setdefault(track, []).append(("B", e["ts"], e["name"], e.get("args", {})))
        elif ph == "E":
            out.setdefault(track, []).append(("E", e["ts"]))
        elif ph == "i":
            out.setdefault(track, []).append(("i", e["ts"], e["name"]))
        else:
            fail("unexpected phase %r" % ph)
    return out


# ---- Perfetto protobuf ---------------------------------------------------------

def _varint(buf, i):
    shift = v = 0
    while True:
        if i >= len(buf):
            raise EOFError
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i
        if shift > 70:
            raise ValueError("varint too long")


def _msg(buf):
    """{field number: [values]} of one message; a value is an int (varint)
    or bytes (fixed64, fixed32, length-delimited). One loop, one-byte
    varints (most keys, lengths and small values) read inline: a generator
    step per field and a call per varint made reading the larger part of
    the Perfetto tests' time."""
    d = {}
    i, n = 0, len(buf)
    while i < n:
        key = buf[i]
        if key < 0x80:
            i += 1
        else:
            key, i = _varint(buf, i)
        wt = key & 7
        if wt == 0 or wt == 2:
            if i >= n:
                raise EOFError
            v = buf[i]
            if v < 0x80:
                i += 1
            else:
                v, i = _varint(buf, i)
            if wt == 2:
                if i + v > n:
                    raise EOFError
                v, i = buf[i:i + v], i + v
        elif wt == 1:
            if i + 8 > n:
                raise EOFError
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        num = key >> 3
        have = d.get(num)
        if have is None:
            d[num] = [v]
        else:
            have.append(v)
    return d


def _one(d, num, default=None):
    return d[num][0] if num in d else default


def read_perfetto(path, finished=True):
    """Decodes a Trace (repeated TracePacket packet = 1). Returns a list of
    dicts: {"kind": "track", uuid, name, thread/process/counter...} and
    {"kind": "event", ts, type, track, name, args}. With finished=False a
    truncated last packet is ignored (the readable prefix)."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    names, ann_names, strings = {}, {}, {}
    cleared = False
    i = 0
    while i < len(data):
        try:
            key, j = _varint(data, i)
            check(key == (1 << 3 | 2), "Trace field %d wire %d at %d" % (key >> 3, key & 7, i))
            n, j = _varint(data, j)
            if j + n > len(data):
                raise EOFError
        except EOFError:
            check(not finished, "truncated packet at byte %d of %d" % (i, len(data)))
            break
        pkt = _msg(data[j:j + n])
        i = j + n
        check(_one(pkt, 10) == 1, "packet without trusted_packet_sequence_id 1")
        flags = _one(pkt, 13, 0)
        if flags & 1:
            cleared = True
            names.clear(), ann_names.clear(), strings.clear()
        if 12 in pkt:
            check(cleared, "interned data before the incremental state was cleared")
            idata = _msg(pkt[12][0])
            for e in idata.get(2, []):      # event_names: EventName{iid=1,name=2}
                m = _msg(e)
                names[_one(m, 1)] = _one(m, 2).decode()
            for e in idata.get(3, []):      # debug_annotation_names
                m = _msg(e)
                ann_names[_one(m, 1)] = _one(m, 2).decode()
            for e in idata.get(29, []):     # debug_annotation_string_values
                m = _msg(e)
                strings[_one(m, 1)] = _one(m, 2).decode()
        if 60 in pkt:                        # track_descriptor
            td = _msg(pkt[60][0])
            t = {"kind": "track", "uuid": _one(td, 1), "parent": _one(td, 5)}
            if 2 in td:
                t["name"] = _one(td, 2).decode()
            if 3 in td:
                pd = _msg(_one(td, 3))
                t["pid"] = _one(pd, 1)
                t["name"] = _one(pd, 6, b"").decode()
            if 4 in td:
                th = _msg(_one(td, 4))
                t["pid"], t["tid"] = _one(th, 1), _one(th, 2)
                t["name"] = _one(th, 5, b"").decode()
            t["counter"] = 8 in td
            out.append(t)
        if 11 in pkt:                        # track_event
            check(8 in pkt, "track event without a timestamp")
            te = _msg(pkt[11][0])
            ev = {"kind": "event", "ts": _one(pkt, 8), "type": _one(te, 9),
                  "track": _one(te, 11)}
            if 10 in te:
                check(flags & 2, "interned name without SEQ_NEEDS_INCREMENTAL_STATE")
                iid = _one(te, 10)
                check(iid in names, "name iid %d not interned" % iid)
                ev["name"] = names[iid]
            args = {}
            for a in te.get(4, []):
                m = _msg(a)
                key = ann_names[_one(m, 1)]
                if 17 in m:
                    args[key] = strings[_one(m, 17)]
                elif 4 in m:
                    v = _one(m, 4)
                    args[key] = v - (1 << 64) if v >= 1 << 63 else v
            ev["args"] = args
            if 44 in te:
                ev["value"] = struct.unpack("<d", _one(te, 44))[0]
            out.append(ev)
    return out


def perfetto_tracks(items):
    """The same shape as json_tracks, from read_perfetto's list."""
    tracks, out = {}, {}
    for it in items:
        if it["kind"] == "track":
            tracks[it["uuid"]] = it
    for it in items:
        if it["kind"] != "event":
            continue
        t = tracks.get(it["track"])
        check(t is not None, "event on undescribed track %r" % it)
        ts = it["ts"] / 1000.0
        if it["type"] == 4:
            out.setdefault("counter:" + t["name"], []).append(("C", ts, it["value"]))
        elif it["type"] == 1:
            out.setdefault(t["name"], []).append(("B", ts, it["name"], it["args"]))
        elif it["type"] == 2:
            out.setdefault(t["name"], []).append(("E", ts))
        elif it["type"] == 3:
            out.setdefault(t["name"], []).append(("i", ts, it["name"]))
        else:
            fail("unexpected TrackEvent type %r" % it["type"])
    return out


def load(outdir, fmt, finished=True):
    path = os.path.join(outdir, FILES[fmt])
    if fmt == "json":
        return json_tracks(read_json(path, finished))
    return perfetto_tracks(read_perfetto(path, finished))


# ---- span trees ---------------------------------------------------------------

def trees(tracks, finished=True):
    """{track: [node]}, node = [name, args, t0, t1, children, instants]."""
    out = {}
    for track, evs in tracks.items():
        if track.startswith("counter:"):
            continue
        root = ["<root>", {}, 0, 0, [], []]
        stack = [root]
        last = None
        for e in evs:
            if last is not None:
                check(e[1] >= last - 1e-3 or e[0] == "i",
                      "%s: time goes back (%r after %r)" % (track, e, last))
            if e[0] == "B":
                node = [e[2], e[3], e[1], None, [], []]
                stack[-1][4].append(node)
                stack.append(node)
            elif e[0] == "E":
                check(len(stack) > 1, "%s: END without BEGIN at %r" % (track, e))
                stack[-1][3] = e[1]
                stack.pop()
            else:
                stack[-1][5].append(e[2])
            if e[0] != "i":
                last = e[1]
        if finished:
            check(len(stack) == 1, "%s: %d spans never end: %s"
                  % (track, len(stack) - 1, [s[0] for s in stack[1:]]))
        out[track] = root[4]
    return out


def shape(nodes, keep):
    """Nested (name, children) of the nodes `keep(name)` accepts; the
    children of a dropped node take its place."""
    res = []
    for n in nodes:
        kids = shape(n[4], keep)
        if keep(n[0]):
            res.append((n[0], tuple(kids)))
        else:
            res.extend(kids)
    return res


def walk(nodes, depth=1):
    for n in nodes:
        yield n, depth
        yield from walk(n[4], depth + 1)
