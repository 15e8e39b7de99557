"""timer.speedscope.json, read the way speedscope's published file format
(https://www.speedscope.app/file-format-schema.json) defines it: a shared
frame table and one "evented" profile whose open/close events nest, never go
back in time and end at endValue. The own time of each frame (its width less
its callees') adds up, per function, to exactly the own_ns of timer.json:
with every context kept, with few kept (the rest under "[merged contexts]"),
and nothing of it is written with contexts=false.

If PTK_SPEEDSCOPE_SCHEMA names speedscope's schema file and the jsonschema
module is importable, the file is also validated against it."""
import collections
import json
import os

import ptk_timer_util as U

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


def read(path):
    with open(path) as f:
        doc = json.load(f)
    U.check(doc.get("$schema") == SCHEMA_URL, "$schema is %r" % doc.get("$schema"))
    frames = doc["shared"]["frames"]
    U.check(all(isinstance(fr.get("name"), str) and fr["name"] for fr in frames),
            "a frame without a name")
    U.check(len(doc["profiles"]) == 1, "%d profiles" % len(doc["profiles"]))
    prof = doc["profiles"][0]
    U.check(prof["type"] == "evented" and prof["unit"] == "nanoseconds",
            "profile type %r unit %r" % (prof["type"], prof["unit"]))
    U.check(prof["startValue"] == 0, "startValue %r" % prof["startValue"])
    own = collections.Counter()
    stack = []  # [frame, opened at, callee time]
    last = 0
    for ev in prof["events"]:
        U.check(ev["type"] in ("O", "C"), "event type %r" % ev["type"])
        U.check(0 <= ev["frame"] < len(frames), "frame %r out of range" % ev["frame"])
        U.check(ev["at"] >= last, "event at %d before %d" % (ev["at"], last))
        last = ev["at"]
        if ev["type"] == "O":
            stack.append([ev["frame"], ev["at"], 0])
            continue
        U.check(stack and stack[-1][0] == ev["frame"],
                "close of frame %d does not match the open one" % ev["frame"])
        fr, at, sub = stack.pop()
        width = ev["at"] - at
        U.check(width > 0, "a context of zero time was written")
        own[frames[fr]["name"]] += width - sub
        if stack:
            stack[-1][2] += width
    U.check(not stack, "%d frames never closed" % len(stack))
    own = collections.Counter({k: v for k, v in own.items() if v})
    U.check(last == prof["endValue"], "last event at %d, endValue %d" % (last, prof["endValue"]))
    return doc, own


def check_against_json(outdir, what):
    doc, own = read(os.path.join(outdir, "timer.speedscope.json"))
    meta = U.load_json(outdir)
    U.check(doc["profiles"][0]["endValue"] == meta["total_ns"],
            "%s: endValue %d, total_ns %d" % (what, doc["profiles"][0]["endValue"], meta["total_ns"]))
    merged = own.pop("[merged contexts]", 0)
    U.check(merged == 0, "%s: [merged contexts] has own time" % what)
    want = {f["short"]: f["own_ns"] for f in meta["functions"] if f["own_ns"]}
    U.check(dict(own) == want,
            "%s: own times differ: %s" % (what, sorted(set(own.items()) ^ set(want.items()))[:6]))
    return doc, own, meta, want


def validate_schema(path):
    schema = os.environ.get("PTK_SPEEDSCOPE_SCHEMA")
    if not schema or not os.path.exists(schema):
        print("schema validation skipped: PTK_SPEEDSCOPE_SCHEMA names no file")
        return
    try:
        import jsonschema
    except ImportError:
        print("schema validation skipped: no jsonschema module in this Python")
        return
    with open(schema) as f, open(path) as g:
        jsonschema.validate(json.load(g), json.load(f))
    print("valid against", schema)


def main():
    script = U.program("recursion.py")
    outdir, _ = U.run_timer(script)
    U.check(not os.path.exists(os.path.join(outdir, "timer.folded")),
            "timer.folded written without folded=true")
    doc, own, meta, want = check_against_json(outdir, "default")
    U.check(meta["calling_contexts"]["merged_edges"] == 0, "contexts merged by default")
    names = [fr["name"] for fr in doc["shared"]["frames"]]
    U.check(any(n.startswith("fib (recursion.py:") for n in names),
            "no short frame name for fib: %s" % names[:5])
    validate_schema(os.path.join(outdir, "timer.speedscope.json"))
    calls = {k: v[1] for k, v in U.load_pstats(os.path.join(outdir, "timer.pstats")).items()}

    # Few contexts kept: the 5 heaviest; the lighter ones are merged, shown
    # under "[merged contexts]" frames, and every nanosecond is still there.
    outdir, _ = U.run_timer(script, "max_contexts=5")
    doc, own = read(os.path.join(outdir, "timer.speedscope.json"))
    meta = U.load_json(outdir)
    cc = meta["calling_contexts"]
    U.check(cc["kept_contexts"] == 5 and cc["merged_contexts"] > 0,
            "max_contexts=5: %s" % cc)
    U.check(doc["profiles"][0]["endValue"] == meta["total_ns"], "capped: endValue")
    want = {f["short"]: f["own_ns"] for f in meta["functions"] if f["own_ns"]}
    U.check(all(own[k] <= want.get(k, 0) for k in own if k != "[merged contexts]"),
            "capped: own times larger than the functions'")
    U.check(0 < own["[merged contexts]"] <= cc["merged_ns"] + cc["merged_contexts_ns"],
            "capped: merged time %d, timer.json %s" % (own["[merged contexts]"], cc))
    U.check(any(fr["name"] == "[merged contexts]" for fr in doc["shared"]["frames"]),
            "no [merged contexts] frame")
    c2 = {k: v[1] for k, v in U.load_pstats(os.path.join(outdir, "timer.pstats")).items()}
    U.check(c2 == calls, "call counts change with max_contexts")

    # Contexts off: no file, the same call counts.
    outdir, _ = U.run_timer(script, "contexts=false,folded=true")
    U.check(not os.path.exists(os.path.join(outdir, "timer.speedscope.json")) and
            not os.path.exists(os.path.join(outdir, "timer.folded")),
            "calling-context files written with contexts=false")
    meta = U.load_json(outdir)
    U.check(meta["calling_contexts"]["kept"] is False and
            meta["calling_contexts"]["contexts"] == 0, "contexts=false: %s" % meta["calling_contexts"])
    c3 = {k: v[1] for k, v in U.load_pstats(os.path.join(outdir, "timer.pstats")).items()}
    U.check(c3 == calls, "call counts change with contexts=false")
    print("OK: %d frames, %d functions with own time" % (len(names), len(want)))


main()
