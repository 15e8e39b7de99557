#!/usr/bin/env python3
"""Where a variant's instructions go beyond another's: self instructions per
function (callgrind_annotate, every process of each run summed), the
difference variant - base, largest first, grouped also by object file.

    python3 bench/realprog/cg_diff.py DIR/3.14.10-test_difflib-cov_line \\
        DIR/3.14.10-test_difflib-bare [--top 30]

DIR is current_pythons.py's --keep directory (one callgrind.out.PID per
process of the run).
"""
import argparse
import glob
import os
import re
import subprocess

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([\s\d.]+%\)\s+)?(.*?)\s*$")


def per_function(run_dir):
    """{(function, object): self Ir} summed over the run's processes."""
    out = {}
    for fn in sorted(glob.glob(os.path.join(run_dir, "callgrind.out.*"))):
        text = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", fn],
                              capture_output=True, text=True, check=True).stdout
        started = False
        for line in text.splitlines():
            if "file:function" in line:
                started = True
                continue
            if not started:
                continue
            if line.startswith("---") or line.startswith("-- "):
                if out and started and line.startswith("-- "):
                    break
                continue
            m = LINE.match(line)
            if not m:
                continue
            ir = int(m.group(1).replace(",", ""))
            name = m.group(2)
            obj = ""
            mo = re.search(r"\[(.*)\]$", name)
            if mo:
                obj = os.path.basename(mo.group(1))
                name = name[:mo.start()].strip()
            name = name.split(":", 1)[1] if ":" in name else name
            out[(name, obj)] = out.get((name, obj), 0) + ir
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variant")
    ap.add_argument("base")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    v, b = per_function(a.variant), per_function(a.base)
    tv, tb = sum(v.values()), sum(b.values())
    print("total Ir: variant %d, base %d, difference %d (%.3f×)\n" % (tv, tb, tv - tb, tv / tb))
    objs = {}
    for k in set(v) | set(b):
        objs[k[1]] = objs.get(k[1], 0) + v.get(k, 0) - b.get(k, 0)
    print("| object | Ir above base | share of the difference |")
    print("|---|---:|---:|")
    for o, d in sorted(objs.items(), key=lambda x: -abs(x[1]))[:12]:
        print("| %s | %d | %.1f%% |" % (o or "?", d, 100 * d / (tv - tb) if tv != tb else 0))
    print("\n| function | object | Ir above base | share |")
    print("|---|---|---:|---:|")
    diffs = sorted(((v.get(k, 0) - b.get(k, 0), k) for k in set(v) | set(b)),
                   key=lambda x: -abs(x[0]))
    for d, (name, obj) in diffs[:a.top]:
        print("| `%s` | %s | %d | %.1f%% |" % (name, obj, d,
                                               100 * d / (tv - tb) if tv != tb else 0))


if __name__ == "__main__":
    main()
