"""Followed children measured by coverage, timeline and reftrack, and a child
whose plugin fails. Usage: test_follow_plugins.py CASE.

  coverage      Pool(4).map under fork, forkserver and spawn with
                coverage:branch=true and --follow-children: no process fails,
                `pytracekit combine` gives the same lines, arcs and branches
                for each start method, and the only lines missed are the ones
                the program marks `# not run`.
  timeline.M    Pool(4).map under start method M: each worker's trace has one
                span of `task` per task it ran (the pool's own count).
  reftrack.M    the same with reftrack: each worker's report counts the
                objects `task` made (3 per task).
  term_in_restart
                a SIGTERM that reaches a forked child while its plugins start
                again (Pool.terminate() on a worker just forked): the child
                still writes its reports, then ends by the signal.
  remask        a plugin whose init, run again in a forked child, asks for
                an event it has no callback for: refused in the child as at
                the first init (the child's plugin fails and says why).
  child_fails   a forked child's plugin fails: the child's run.json says so,
                the run exits 3 and names the child, `pytracekit combine`
                exits 3 and names it too, and still writes what it has.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import ptk_sanitize  # (a PLAIN_DRIVER: the command gets PYTHONMALLOC back)
from ptk_testlib import CLI, PYTHON, check, fail, run_cli, skip, test_plugin

if ptk_sanitize.PLAIN_DRIVER:
    # and the preloaded runtimes: the pool's spawned workers and fork
    # server are the interpreter itself, which loads our extension
    os.environ["LD_PRELOAD"] = os.environ["PTK_PRELOAD"]
CASE = sys.argv[1]
TASKS = 40

WORK = """\
import os


class Box:
    pass


def task(x):
    boxes = [Box() for _ in range(3)]
    if x % 2:
        kind = "odd"
    else:
        kind = "even"
    return os.getpid(), kind, len(boxes)


def never():
    return 1  # not run
"""

PROG = """\
import json, multiprocessing as mp, sys
from collections import Counter
import work

if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    with ctx.Pool(4) as pool:
        out = pool.map(work.task, range(%d), chunksize=2)
    if len(out) != %d:
        print("lost tasks")  # not run
    print(json.dumps(Counter(pid for pid, _, _ in out)))
""" % (TASKS, TASKS)


def write_program(tmp):
    for name, text in (("work.py", WORK), ("prog.py", PROG)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(textwrap.dedent(text))


def marked(tmp, name):
    with open(os.path.join(tmp, name)) as f:
        return {i for i, line in enumerate(f, 1) if "# not run" in line}


def load(path):
    with open(path) as f:
        return json.load(f)


def children(out):
    return sorted(glob.glob(os.path.join(out, "pid-*")))


def wait_for_manifests(out, limit=30.0):
    """Helpers of the pool (fork server, resource tracker) may still be
    writing when the parent has exited."""
    end = time.time() + limit
    while time.time() < end:
        if all(os.path.exists(os.path.join(d, "run.json")) for d in children(out)):
            return
        time.sleep(0.05)


def run_pool(tmp, method, plugins):
    out = os.path.join(tmp, "out-" + method)
    p = run_cli(plugins + ["--follow-children", "-o", out, "prog.py", method], cwd=tmp)
    check(p.returncode == 0, f"{method}: exit {p.returncode}: {p.stderr}")
    per_worker = {int(k): v for k, v in json.loads(p.stdout).items()}
    check(sum(per_worker.values()) == TASKS, f"{method}: tasks {per_worker}")
    wait_for_manifests(out)
    for d in children(out):
        m = os.path.join(d, "run.json")
        if os.path.exists(m):
            check(load(m)["failed_plugins"] == 0,
                  f"{method}: a plugin failed in {d}: {open(os.path.join(d, 'summary.txt')).read()}")
    return out, per_worker


def combine(out, dest):
    p = subprocess.run([CLI, "combine", "-o", dest, out], capture_output=True, text=True,
                       timeout=300)
    return p


def case_coverage(tmp):
    write_program(tmp)
    results = {}
    for method in ("fork", "forkserver", "spawn"):
        out, _ = run_pool(tmp, method, ["-p", "coverage:branch=true"])
        dest = os.path.join(tmp, "comb-" + method)
        p = combine(out, dest)
        check(p.returncode == 0, f"{method}: combine exit {p.returncode}: {p.stderr}")
        data = load(os.path.join(dest, "coverage.json"))["files"]
        got = {}
        for name in ("work.py", "prog.py"):
            path = os.path.join(os.path.realpath(tmp), name)
            check(path in data, f"{method}: {name} not in the combined report: {sorted(data)}")
            rec = data[path]
            hit = {ln for ln, n in rec["hits"] if n}
            missed = set(rec["lines"]) - hit
            check(missed == marked(tmp, name),
                  f"{method}: {name} missed lines {sorted(missed)}, "
                  f"expected {sorted(marked(tmp, name))}")
            got[name] = (sorted(hit), json.dumps(rec.get("branches"), sort_keys=True))
        others = [f for f in data if not f.startswith(os.path.realpath(tmp) + "/")]
        check(not others, f"{method}: files outside the program measured: {others}")
        results[method] = got
    check(results["fork"] == results["forkserver"] == results["spawn"],
          f"combined coverage differs by start method: {results}")


def case_timeline(tmp, method):
    import ptk_timeline_util as U
    write_program(tmp)
    out, per_worker = run_pool(tmp, method, ["-p", "timeline:format=json"])
    seen = {}
    for d in children(out):
        if not os.path.exists(os.path.join(d, "timeline.json")):
            continue
        trees = U.trees(U.load(d, "json"))
        n = sum(1 for nodes in trees.values() for node, _ in U.walk(nodes)
                if node[0].endswith("(task)"))
        seen[int(os.path.basename(d)[4:].split(".")[0])] = n
    for pid, n in per_worker.items():
        check(seen.get(pid) == n, f"worker {pid}: {n} tasks, its timeline has {seen.get(pid)}")
    extra = {pid: n for pid, n in seen.items() if pid not in per_worker and n}
    check(not extra, f"processes that ran no task have task spans: {extra}")


def case_reftrack(tmp, method):
    if sys.version_info < (3, 13):
        skip("reftrack needs PyRefTracer (CPython 3.13+)")
    write_program(tmp)
    out, per_worker = run_pool(tmp, method, ["-p", "reftrack"])
    for pid, n in per_worker.items():
        d = os.path.join(out, "pid-%d" % pid)
        rep = load(os.path.join(d, "reftrack.json"))
        rows = [r for r in rep["types"] if r["type"] == "work.Box"]
        check(len(rows) == 1, f"worker {pid}: rows of work.Box: {rows}")
        check(rows[0]["created"] == 3 * n,
              f"worker {pid}: {rows[0]['created']} Boxes created, expected {3 * n}")


CHILD = """\
import os


def parent_work():
    pass


parent_work()
pid = os.fork()
if pid == 0:
    import childonly  # the plugin's first counted call, in the child only
    childonly.work()
    os._exit(0)
_, status = os.waitpid(pid, 0)
print(pid, os.WTERMSIG(status) if os.WIFSIGNALED(status) else -1)
"""


def case_child_fails(tmp):
    with open(os.path.join(tmp, "childonly.py"), "w") as f:
        f.write("def work():\n    pass\n")
    with open(os.path.join(tmp, "prog.py"), "w") as f:
        f.write(CHILD)
    out = os.path.join(tmp, "out")
    p = run_cli(["-p", "counter:top=0", "-p",
                 test_plugin("fail_nth") + ":n=1,kind=call,file=childonly.py",
                 "--follow-children", "-o", out, "prog.py"], cwd=tmp)
    child, sig = (int(w) for w in p.stdout.split())
    check(sig == -1, f"the child ended by signal {sig}")
    kid = os.path.join(out, "pid-%d" % child)
    m = load(os.path.join(kid, "run.json"))
    check(m["failed_plugins"] == 1, f"the child's run.json: {m}")
    check(load(os.path.join(out, "run.json"))["failed_plugins"] == 0,
          "the parent's plugins did not fail")
    check(p.returncode == 3, f"exit {p.returncode}, expected 3: {p.stderr}")
    want = f"pytracekit: process {child}: plugin 'fail_nth' failed"
    check(want in p.stderr, f"stderr does not say {want!r}: {p.stderr}")
    dest = os.path.join(tmp, "comb")
    c = combine(out, dest)
    check(c.returncode == 3, f"combine exit {c.returncode}, expected 3: {c.stderr}")
    want = f"{os.path.realpath(kid)} (process {child}): plugin 'fail_nth' failed"
    check(want in c.stderr, f"combine does not say {want!r}: {c.stderr}")
    man = load(os.path.join(dest, "run.json"))
    check([(f["pid"], f["plugins"]) for f in man["failed"]] == [(child, ["fail_nth"])],
          f"combined run.json failed: {man['failed']}")
    check("counter.json" in man["files"], f"combine wrote {man['files']}")


def case_remask(tmp):
    with open(os.path.join(tmp, "childonly.py"), "w") as f:
        f.write("def work():\n    pass\n")
    with open(os.path.join(tmp, "prog.py"), "w") as f:
        f.write(CHILD)
    out = os.path.join(tmp, "out")
    p = run_cli(["-p", "counter:top=0", "-p", test_plugin("remask"),
                 "--follow-children", "-o", out, "prog.py"], cwd=tmp)
    check(p.stdout.split(), f"no child pid: {p.returncode} {p.stderr}")
    child, sig = (int(w) for w in p.stdout.split())
    check(sig == -1, f"the child ended by signal {sig}")
    kid = os.path.join(out, "pid-%d" % child)
    check(os.path.exists(os.path.join(kid, "run.json")),
          f"the child wrote no run.json (exit {p.returncode}): {p.stderr}")
    check(load(os.path.join(kid, "run.json"))["failed_plugins"] == 1,
          "the child's remask did not fail")
    check(load(os.path.join(out, "run.json"))["failed_plugins"] == 0,
          "the parent's plugins failed")
    check(p.returncode == 3, f"exit {p.returncode}, expected 3: {p.stderr}")
    summary = open(os.path.join(kid, "summary.txt")).read()
    want = "plugin 'remask' subscribes to 'ref_create' but has no on_ref callback"
    check(want in summary, f"the child's summary does not say {want!r}: {summary}")
    check(load(os.path.join(kid, "counter.json")) is not None, "no child counter report")


TERMCHILD = """\
import os, signal

PARENT = os.getpid()  # imported by the parent's plugin init


def hit():
    if os.getpid() != PARENT:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # Python's handler runs here, inside init
            pass
"""



def case_term_in_restart(tmp):
    for name, text in (("termchild.py", TERMCHILD), ("prog.py", CHILD),
                       ("childonly.py", "def work():\n    pass\n")):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    out = os.path.join(tmp, "out")
    p = run_cli(["-p", test_plugin("hostileplug") + ":init_call=termchild:hit,functions=parent_work",
                 "--follow-children", "-o", out, "prog.py"], cwd=tmp,
                env={"PYTHONPATH": tmp + os.pathsep + os.environ.get("PYTHONPATH", "")})
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    child, sig = (int(w) for w in p.stdout.split())
    check(sig == 15, f"the child ended by {sig}, expected SIGTERM (15)")
    kid = os.path.join(out, "pid-%d" % child)
    check(os.path.exists(os.path.join(kid, "run.json")),
          f"the child wrote no run.json: {sorted(os.listdir(kid))}")
    check(load(os.path.join(kid, "run.json"))["failed_plugins"] == 0,
          f"the child's plugin failed: {open(os.path.join(kid, 'summary.txt')).read()}")
    check(load(os.path.join(kid, "hostileplug.json"))["calls"] == 0,
          "the child's report counts calls made after its SIGTERM")
    calls = load(os.path.join(out, "hostileplug.json"))["calls"]
    check(calls == 1, f"the parent's report counts {calls} calls of parent_work(), expected 1")


def main():
    if CLI is None:
        skip("PTK_CLI is not set")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = os.path.realpath(tmp)
        if CASE == "coverage":
            case_coverage(tmp)
        elif CASE.startswith("timeline."):
            case_timeline(tmp, CASE.split(".", 1)[1])
        elif CASE.startswith("reftrack."):
            case_reftrack(tmp, CASE.split(".", 1)[1])
        elif CASE == "term_in_restart":
            case_term_in_restart(tmp)
        elif CASE == "remask":
            case_remask(tmp)
        elif CASE == "child_fails":
            case_child_fails(tmp)
        else:
            fail(f"unknown case {CASE}")
    print("ok", CASE)


if __name__ == "__main__":
    main()
