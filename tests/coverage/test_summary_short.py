"""The coverage table on stderr stays short on a program with many files:
the 20 least covered and the total, with a line saying the whole table is
in coverage.txt, which lists every file (networkx's 571-line table on
stderr was the complaint)."""
import os

import ptk_coverage_util as U


def main():
    work = U.workdir("summary")
    names = []
    for i in range(25):
        # module i runs i+1 of its 30 one-line functions' bodies
        name = "mod%02d" % i
        names.append(name)
        with open(os.path.join(work, name + ".py"), "w") as f:
            for k in range(30):
                f.write("def f%d():\n    return %d\n" % (k, k))
            f.write("def run():\n")
            for k in range(i + 1):
                f.write("    f%d()\n" % k)
    with open(os.path.join(work, "main.py"), "w") as f:
        f.write("".join("import %s\n%s.run()\n" % (n, n) for n in names))
    p, data = U.run_ptk(work, ["main.py"], spec="coverage:include=%s/*" % work)
    err = p.stderr.splitlines()
    rows = [ln for ln in err if ln.startswith("mod") or ln.startswith("main.py")]
    if len(rows) != 20:
        U.fail("%d file rows on stderr, expected 20:\n%s" % (len(rows), p.stderr))
    shown = [os.path.basename(r.split()[0]) for r in rows]
    # the least covered: the modules that ran the fewest functions, main.py
    # (fully run) not among them
    want = ["mod%02d.py" % i for i in range(20)]
    if shown != want:
        U.fail("stderr rows %s, expected %s" % (shown, want))
    if "(the 20 least covered of 26 files; all of them in coverage.txt)" not in err:
        U.fail("no pointer to coverage.txt:\n%s" % p.stderr)
    if not any(ln.startswith("TOTAL") for ln in err):
        U.fail("no TOTAL row:\n%s" % p.stderr)
    with open(os.path.join(work, "out", "coverage.txt")) as f:
        full = f.read().splitlines()
    files = [ln for ln in full if ln.startswith("mod") or ln.startswith("main.py")]
    total = [ln for ln in err if ln.startswith("TOTAL")][0]
    if len(files) != 26 or full[-1].split() != total.split():
        U.fail("coverage.txt:\n%s" % "\n".join(full))
    print("OK: 20 of 26 files on stderr, all in coverage.txt")


main()
