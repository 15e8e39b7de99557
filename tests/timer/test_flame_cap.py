"""max_contexts keeps the heaviest calling contexts in the flame graph, not
the first ones seen: 400 light contexts come before the one that takes
almost all the time, and with max_contexts=50 that one is still its own
frame while the light tail is merged, its share stated in timer.json."""
import json
import os

import ptk_timer_util as U


def main():
    script = U.program("late_heavy.py")
    outdir, proc = U.run_timer(script, "max_contexts=50")
    meta = U.load_json(outdir)
    cc = meta["calling_contexts"]
    with open(os.path.join(outdir, "timer.speedscope.json")) as f:
        doc = json.load(f)
    names = [fr["name"] for fr in doc["shared"]["frames"]]
    prof = doc["profiles"][0]
    U.check(prof["endValue"] == meta["total_ns"], "endValue %r != total %r"
            % (prof["endValue"], meta["total_ns"]))
    # time spent in each frame, inclusive, from the open/close events
    incl = {}
    opened = []
    for ev in prof["events"]:
        if ev["type"] == "O":
            opened.append((ev["frame"], ev["at"]))
        else:
            fr, at = opened.pop()
            incl[names[fr]] = incl.get(names[fr], 0) + ev["at"] - at
    heavy = [n for n in names if n.startswith("heavy (")]
    U.check(heavy, "heavy() is not a frame of its own: %s" % names)
    stats = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    ct = U.one(stats, "heavy", script)[3]
    share = incl[heavy[0]] / (ct * 1e9)
    U.check(share > 0.99, "the flame graph shows %.1f%% of heavy()'s "
            "cumulative time" % (100 * share))
    U.check(cc["kept_contexts"] <= 50 and cc["merged_contexts"] > 0,
            "calling_contexts: %s" % cc)
    merged = incl.get("[merged contexts]", 0)
    U.check(merged == cc["merged_contexts_ns"], "merged time %d, timer.json "
            "says %d" % (merged, cc["merged_contexts_ns"]))
    U.check(merged < 0.05 * meta["total_ns"], "%.1f%% merged"
            % (100.0 * merged / meta["total_ns"]))
    U.check("heaviest calling contexts" in proc.stderr, proc.stderr)
    print("OK: heavy() %.1f%% kept, %.2f%% in %d light contexts merged"
          % (100 * share, 100.0 * merged / meta["total_ns"],
             cc["merged_contexts"]))


main()
