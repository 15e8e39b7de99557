"""timer.folded with folded_depth=N: no line has more than N frames plus one
'[deeper]' frame, frames below depth N are merged into it, and the values
still add up to the total."""
import os

import ptk_timer_util as U


def main():
    script = U.program("recursion.py")
    outdir, _ = U.run_timer(script, opts="folded_depth=5,folded=true")
    lines = U.parse_folded(os.path.join(outdir, "timer.folded"))
    meta = U.load_json(outdir)
    total_us = sum(v for _, v in lines)
    U.check(total_us == meta["total_ns"] // 1000,
            "folded sum %d us != total %d us" % (total_us, meta["total_ns"] // 1000))
    deepest = max(len(fr) for fr, _ in lines)
    U.check(deepest == 6, "deepest line has %d frames, expected 5 + [deeper]" % deepest)
    deeper = [fr for fr, _ in lines if fr[-1] == "[deeper]"]
    U.check(deeper, "no line ends in [deeper] although fib recurses 16 deep")
    U.check(all(len(fr) == 6 and "[deeper]" not in fr[:-1] for fr in deeper),
            "[deeper] is not always the 6th and last frame")
    U.check(all("[deeper]" not in fr for fr, _ in lines if len(fr) < 6),
            "[deeper] in a short line")
    # without the option (default 128) the same program has no [deeper]
    outdir, _ = U.run_timer(script, "folded=true")
    lines = U.parse_folded(os.path.join(outdir, "timer.folded"))
    U.check(all(fr[-1] != "[deeper]" for fr, _ in lines), "[deeper] at the default depth")
    print("OK: %d lines, deepest %d frames" % (len(lines), deepest))


main()
