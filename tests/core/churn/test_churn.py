"""Churn and soak (label `slow` for the soak).

churn: threads start and end while sessions start and stop and plugin
instances attach to running sessions; every session's counts of the main
thread's own calls are exact, nothing crashes, and RSS stays within a
stated bound.

soak: one traced program produces at least 10^8 events; the counts are
exact and RSS after the first tenth stays flat within a stated bound.

usage: test_churn.py churn|soak
"""
import json
import os
import resource
import sys
import tempfile
import threading

from ptk_loader_util import CLI, Failure, Scratch, check, clean_env, run


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


ROUNDS = 150
THREADS = 4
# Thread records are kept for the life of the process (a few kB each);
# the sessions, their plugins and tables must not add to that.
CHURN_BOUND_KB = 4096


def churn():
    import pytracekit

    go = threading.Event()

    def worker():
        def f(x):
            return x
        # threads start while the session starts and the second instance
        # attaches; their counted calls wait for both, so that "a worker's
        # calls were cut" means lost events, not a thread that began before
        # an instance attached
        go.wait()
        for i in range(300):
            f(i)

    def target():
        return 1

    base = tempfile.mkdtemp(prefix="ptk-churn-", dir=os.getcwd())
    before = None
    for r in range(ROUNDS):
        if r == 10:
            before = rss_kb()
        out = os.path.join(base, "s%d" % (r % 3))
        ts = [threading.Thread(target=worker) for _ in range(THREADS)]
        s = pytracekit.Session(["counter:top=0"], output_dir=out, threads="all")
        ts[0].start()
        s.start()
        ts[1].start()
        s.add_plugin("counter:top=0,events=call")
        go.set()
        ts[2].start()
        for _ in range(7):
            target()
        ts[0].join()
        ts[3].start()
        for t in ts:
            t.join()
        go.clear()
        s.stop()
        failed = s.report()
        check(failed == 0, "round %d: %d plugins failed" % (r, failed))
        s.close()
        for name in sorted(os.listdir(out)):
            if name == "run.json":  # the run's identity, not a report
                os.unlink(os.path.join(out, name))
                continue
            with open(os.path.join(out, name)) as f:
                d = json.load(f)
            calls = {fn["qualname"]: fn["calls"] for fn in d["functions"]}
            check(calls.get("churn.<locals>.target") == 7,
                  "round %d %s: target counted %r" % (r, name, calls.get("churn.<locals>.target")))
            check(calls.get("churn.<locals>.worker.<locals>.f", 0) % 300 == 0,
                  "round %d %s: a worker's calls were cut: %r"
                  % (r, name, calls.get("churn.<locals>.worker.<locals>.f")))
            os.unlink(os.path.join(out, name))
    after = rss_kb()
    print("churn: %d rounds x %d threads, 2 plugin instances per session; RSS %d kB after "
          "round 10, %d kB at the end (+%d kB; bound %d kB)"
          % (ROUNDS, THREADS, before, after, after - before, CHURN_BOUND_KB))
    if os.environ.get("PTK_SANITIZE") == "1":
        print("RSS not asserted under ASan: its quarantine keeps freed memory")
    else:
        check(after - before <= CHURN_BOUND_KB, "RSS grew by %d kB" % (after - before))


SOAK = """\
import os, sys
def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
def step(n):
    for i in range(n):
        pass
N = int(sys.argv[1])
step(N // 10)
before = rss_kb()
for c in range(9):
    step(N // 10)
print(before, rss_kb())
"""
SOAK_ITERATIONS = 50_000_000  # two LINE events each: 10^8 events
SOAK_BOUND_KB = 1024


def soak():
    with Scratch("soak") as s:
        prog = s.write("soak.py", SOAK)
        out = s.join("out")
        env = clean_env(remove=("PYTRACEKIT_BACKEND",))  # the default backend
        r = run([CLI, "-o", out, "-p", "counter:top=0,events=line", prog,
                 str(SOAK_ITERATIONS)], cwd=s.path, env=env, timeout=600)
        check(r.rc == 0, "the soak run failed", r)
        before, after = map(int, r.out.split())
        with open(os.path.join(out, "counter.json")) as f:
            d = json.load(f)
        lines = d["events"]["line"]
        # per step(n): the def line's body: `for` n+1 times, `pass` n times
        want = 10 * (2 * (SOAK_ITERATIONS // 10) + 1)
        print("soak: %d LINE events (program: %d); RSS %d kB after the first tenth, %d kB "
              "at the end (+%d kB; bound %d kB)"
              % (lines, want, before, after, after - before, SOAK_BOUND_KB))
        check(lines >= 10 ** 8, "only %d events" % lines, r)
        check(lines >= want, "%d LINE events, the program alone makes %d" % (lines, want), r)
        if os.environ.get("PTK_SANITIZE") == "1":
            print("RSS not asserted under ASan: its quarantine keeps freed memory")
        else:
            check(after - before <= SOAK_BOUND_KB, "RSS grew by %d kB" % (after - before), r)


if __name__ == "__main__":
    try:
        {"churn": churn, "soak": soak}[sys.argv[1]]()
    except Failure as e:
        print("FAIL:", e)
        sys.exit(1)
    print("ok")
