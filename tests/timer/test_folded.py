"""timer.folded: every line is `frame;frame;... microseconds`, the values add
up to the total (floor of total_ns / 1000), and each function's leaf values
add up to its own time."""
import collections
import os

import ptk_timer_util as U


def main():
    script = U.program("recursion.py")
    outdir, _ = U.run_timer(script, "folded=true")
    lines = U.parse_folded(os.path.join(outdir, "timer.folded"))
    meta = U.load_json(outdir)
    U.check(lines, "timer.folded is empty")
    total_us = sum(v for _, v in lines)
    U.check(total_us == meta["total_ns"] // 1000,
            "folded sum %d us != total %d us" % (total_us, meta["total_ns"] // 1000))
    # Leaf sums per function against the JSON figures (rounding: < 1 us a line).
    leaf = collections.Counter()
    nlines = collections.Counter()
    for frames, us in lines:
        leaf[frames[-1]] += us
        nlines[frames[-1]] += 1
    own = {f["short"].replace(";", ":"): f["own_ns"] for f in meta["functions"]}
    for name, us in leaf.items():
        U.check(name in own, "folded frame %r is no function of timer.json" % name)
        U.check(abs(us * 1000 - own[name]) <= 1000 * (nlines[name] + 1),
                "%s: leaf sum %d us, own %d ns" % (name, us, own[name]))
    # The deepest fib stack: fib(16) recurses 16 levels below main.
    fib_depth = max(sum(1 for f in fr if f.startswith("fib (")) for fr, _ in lines)
    U.check(fib_depth == 16 or fib_depth == 15,
            "deepest fib stack has %d fib frames" % fib_depth)
    for frames, _ in lines:
        if any(f.startswith("fib (") for f in frames):
            i = next(i for i, f in enumerate(frames) if f.startswith("fib ("))
            U.check(frames[i - 1].startswith("main ("),
                    "fib's outermost caller is %r, not main" % frames[i - 1])
    print("OK: %d lines, %d us" % (len(lines), total_us))


main()
