"""Allocation-failure injection (a build with -DPTK_FAULT_INJECTION=ON):
for the allocations the library makes in a short traced run, the run with
the Nth allocation failing must

  * never crash (no signal, no sanitizer report);
  * either refuse before the program runs (exit 2, a message saying so), or
    run the program to its own end with its own output and status (or 3,
    the documented status of a run whose program ended with 0 but whose
    reports are not all there);
  * and then either give the same reports as without the failure, or say
    that a plugin failed (no report silently short).

Which Ns: at every allocation site, the first PER_SITE_FIRST allocations
made there, the last PER_SITE_LAST, and evenly spaced ones between, up to
PER_SITE allocations per site (the reference run logs the sites: lib/fault.c).
A site that allocates in a loop is then failed early, late and in between,
not hundreds of times over: reftrack's type-name copy is 244 of the 288
allocations of its run on the monitoring backend. --all fails every N up to
the run's total instead.

Prints the matrix: allocation site x outcome.

With --plugin NAME the allocations counted and failed are plugin NAME's own
(PYTRACEKIT_FAIL_ALLOC_PLUGIN=NAME:N, lib/fault.c built into each plugin) instead of the
library's.

--modules M1,M2 passes the same to the command (a bus filter): fewer events,
the same allocation sites, a shorter matrix.

usage: test_faults.py PLUGINS [PART/PARTS] [--plugin NAME] [--modules M1,M2] [--all]
"""
import collections
import json
import os
import re
import sys
import tempfile

from ptk_loader_util import CLI, Failure, Scratch, check, clean_env, run, skip

PROGRAM = """\
import threading
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def work():
    return sorted([fib(12), len("abc"), max(1, 2)])
t = threading.Thread(target=work)
t.start()
t.join()
print("result", work(), fib(15))
"""
OUTPUT = "result [2, 3, 144] 610\n"


def load(out, name):
    path = os.path.join(out, name)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        try:
            return json.load(f)
        except ValueError:
            return {"unreadable": name}


def counts(out):
    """What the reports say that does not change from run to run: the files
    written, the counter's events and calls, the timer's calls, the lines
    coverage saw, the timeline's span names, the lines plugin's hits."""
    got = {}
    run = load(out, "run.json")
    got["files"] = sorted(run["files"]) if run else None
    d = load(out, "counter.json")
    if d is not None:
        got["counter"] = (d["events"],
                          sorted((f["qualname"], f["calls"]) for f in d["functions"]))
    d = load(out, "timer.json")
    if d is not None:
        got["timer"] = sorted((f["name"], f["calls"]) for f in d["functions"]
                              if f["file"].endswith("prog.py"))
    d = load(out, "coverage.json")
    if d is not None:
        got["coverage"] = {k: v["hits"] for k, v in d["files"].items()}
    d = load(out, "timeline.json")
    if d is not None:
        events = d.get("traceEvents", [d]) if isinstance(d, dict) else d
        got["timeline"] = sorted(collections.Counter(
            e["name"] for e in events if e.get("ph") == "B").items())
    d = load(out, "lines.json")
    if d is not None:  # hits are the same every run; times are not
        got["lines"] = {f: sorted((n, v["hits"]) for n, v in e["lines"].items())
                        for f, e in d["files"].items()}
    d = load(out, "reftrack.json")
    if d is not None:  # its counts vary from run to run; its types do not
        got["reftrack"] = (sorted(t["type"] for t in d["types"]),
                           d["dropped"], d["sites_dropped"], d["overflow"])
    return got


def said(err):
    """Did the run say that something is missing? (the hub's messages, or a
    plugin's own summary line telling of what it could not count)"""
    return re.search(r"^pytracekit: |^\w+: .*out of memory", err, re.M) is not None


def one(s, prog, plugins, n, tag):
    out = s.join("out-%s" % tag)
    log = s.join("log-%s" % tag)
    if PLUGIN:
        env = clean_env({"PYTRACEKIT_FAIL_ALLOC_PLUGIN": "%s:%d" % (PLUGIN, n),
                         "PYTRACEKIT_FAIL_ALLOC_LOG": log})
    else:
        env = clean_env({"PYTRACEKIT_FAIL_ALLOC": str(n), "PYTRACEKIT_FAIL_ALLOC_LOG": log})
    args = ["-o", out] + (["--modules", MODULES] if MODULES else [])
    for p in plugins:
        args += ["-p", p]
    r = run([CLI] + args + [prog], cwd=s.path, env=env, timeout=120)
    prefix = "plugin-" if PLUGIN else ""  # lib/fault.c: a plugin's copy, or the library's
    site, total, sites = None, None, {}
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                w = line.split()
                if w[0] == prefix + "fail":
                    site = w[2]
                elif w[0] == prefix + "total":
                    total = int(w[1])
                elif w[0] == prefix + "site":
                    sites[w[1]] = [int(x) for x in w[2:]]
                elif w[0] == prefix + "sites-incomplete":
                    sites = None
    return r, out, site, total, sites


PER_SITE_FIRST, PER_SITE_LAST, PER_SITE = 3, 2, 8


def chosen(at):
    """The allocations of one site to fail (at: all of them, in order)."""
    if len(at) <= PER_SITE:
        return list(at)
    pick = set(range(PER_SITE_FIRST)) | set(range(len(at) - PER_SITE_LAST, len(at)))
    between = PER_SITE - len(pick)
    lo, hi = PER_SITE_FIRST, len(at) - PER_SITE_LAST  # indices lo .. hi-1
    for k in range(1, between + 1):
        pick.add(lo + (hi - lo) * k // (between + 1))
    return [at[i] for i in sorted(pick)]


PLUGIN = None
MODULES = None


def main():
    global PLUGIN, MODULES
    args = sys.argv[1:]
    if "--plugin" in args:
        i = args.index("--plugin")
        PLUGIN = args[i + 1]
        del args[i:i + 2]
    if "--modules" in args:
        i = args.index("--modules")
        MODULES = args[i + 1]
        del args[i:i + 2]
    every = "--all" in args
    if every:
        args.remove("--all")
    plugins = args[0].split("+")
    if PLUGIN == "reftrack" and sys.version_info < (3, 13):
        skip("reftrack needs the reference tracer of CPython 3.13+")
    part, parts = (int(x) for x in (args[1] if len(args) > 1 else "0/1").split("/"))
    with Scratch("faults") as s:
        prog = s.write("prog.py", PROGRAM)
        ref, ref_out, _, total, sites = one(s, prog, plugins, 0, "ref")
        check(ref.rc == 0 and ref.out == OUTPUT, "the reference run", ref)
        check(total and total > 0, "no allocation count in the reference run", ref)
        check(sites is not None and sum(len(v) for v in sites.values()) == total,
              "the reference run's site log does not account for its %s allocations" % total,
              ref)
        if every:
            ns = list(range(1, total + 1))
        else:
            ns = sorted(n for at in sites.values() for n in chosen(at))
        ns = ns[part::parts]
        want = counts(ref_out)
        matrix = collections.defaultdict(collections.Counter)
        bad = []
        for n in ns:
            r, out, site, _, _ = one(s, prog, plugins, n, str(n))
            site = site or "(not reached)"
            crashed = r.rc < 0 or r.rc > 128 or "Sanitizer" in r.err or "Fatal Python" in r.err
            if crashed:
                outcome = "CRASH"
            elif r.rc == 2 and "program ran" not in r.out and r.out == "":
                outcome = "refused" if r.err.startswith("pytracekit: ") else "REFUSED-SILENTLY"
            # 3: the program's 0 turned into PTK_EXIT_REPORT_FAILED because a
            # report could not be written or a plugin was detached
            elif r.rc in (0, 3) and r.out == OUTPUT:
                if counts(out) == want and r.rc == 0:
                    outcome = "absorbed"
                elif said(r.err):
                    outcome = "reported"
                else:
                    outcome = "SILENT-LOSS"
            else:
                outcome = "PROGRAM-CHANGED"
            matrix[site][outcome] += 1
            if outcome.isupper():
                bad.append((n, site, outcome, r))
        print("allocations of %s in the run: %d at %d sites; failed here: %d (%s; part %d/%d)"
              % ("plugin " + PLUGIN if PLUGIN else "the library", total, len(sites), len(ns),
                 "every one" if every else
                 "up to %d per site: the first %d, the last %d, evenly between"
                 % (PER_SITE, PER_SITE_FIRST, PER_SITE_LAST), part, parts))
        print("%-28s %s" % ("site", "outcomes"))
        for site in sorted(matrix):
            print("%-28s %s" % (site, ", ".join("%s %d" % kv for kv in sorted(matrix[site].items()))))
        for n, site, outcome, r in bad[:5]:
            print("--- N=%d at %s: %s\n%s" % (n, site, outcome, r.describe()[:3000]))
        check(not bad, "%d runs went wrong (above)" % len(bad))
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print("FAIL:", e)
        sys.exit(1)
