"""Processes: one process, one set of reports; children followed on request;
SIGTERM/SIGHUP/second SIGINT/SIGKILL. Usage: test_process.py CASE [follow|nofollow].

Each case runs a program under the pytracekit command with the counter (and
the timer) and checks the exact calls of marker functions in each process's
reports: the parent's in OUT/, a followed child's in OUT/pid-N/.
"""
import glob
import json
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from ptk_testlib import CLI, PYTHON, check, fail, run_cli, skip, test_plugin

CASE = sys.argv[1]
FOLLOW = len(sys.argv) > 2 and sys.argv[2] == "follow"
PLUGINS = ["-p", "counter:top=0", "-p", "timer:top=0,folded=true"]


def calls(d, name, report="counter.json"):
    """(calls of Python function `name`, pid of the run) in d's counter.json."""
    with open(os.path.join(d, report)) as f:
        data = json.load(f)
    n = sum(f["calls"] for f in data["functions"]
            if f["kind"] == "python" and f["name"] == name)
    return n, data["run"]["pid"]


def check_set(d, pid, expect):
    """d holds one run of process pid: run.json, counter.json, timer.json and
    timer.pstats agree, and the marker functions have the expected calls."""
    with open(os.path.join(d, "run.json")) as f:
        run = json.load(f)
    check(run["format"] == "pytracekit-run" and run["run"]["pid"] == pid,
          f"{d}/run.json is process {run['run']['pid']}'s, expected {pid}")
    for name in ("counter.json", "timer.json", "timer.pstats", "timer.folded"):
        check(name in run["files"], f"{d}/run.json lacks {name}: {run['files']}")
    with open(os.path.join(d, "timer.json")) as f:
        timer = json.load(f)
    check(timer["run"] == run["run"], f"{d}: timer.json from another run")
    st = pstats.Stats(os.path.join(d, "timer.pstats"))
    for name, n in expect.items():
        got, cpid = calls(d, name)
        check(cpid == pid, f"{d}/counter.json is process {cpid}'s, expected {pid}")
        check(got == n, f"{d}: {name} called {got} times, expected {n}")
        tn = sum(v[1] for k, v in st.stats.items() if k[2] == name)
        check(tn == n, f"{d}/timer.pstats: {name} {tn} calls, expected {n}")
    left = [f for f in os.listdir(d) if f.startswith(".")]
    check(not left, f"{d}: temporary files left: {left}")


def children(out):
    return sorted(glob.glob(os.path.join(out, "pid-*")))


def pid_of(d):
    return int(os.path.basename(d)[4:].split(".")[0])


def run(tmp, source, args=(), extra=(), env=None, timeout=120, flag=True):
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(textwrap.dedent(source))
    out = os.path.join(tmp, "out")
    opts = PLUGINS + list(extra) + ["-o", out] + (["--follow-children"] if FOLLOW and flag else [])
    p = run_cli(opts + [prog] + list(args), cwd=tmp, env=env, timeout=timeout)
    return p, out


def wait_gone(pid, limit=30.0):
    end = time.time() + limit
    while time.time() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)
    fail(f"process {pid} still running")


FORK = """\
import os, sys
MODE = sys.argv[1]
def parent_work(): pass
def child_work(): pass
for _ in range(3): parent_work()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    if MODE == "outlive":
        os.read(r, 1)  # EOF once the parent has exited
    for _ in range(5): child_work()
    if MODE == "os_exit":
        os._exit(0)
    sys.exit(0)
os.close(r)
for _ in range(2): parent_work()
print(pid, flush=True)
if MODE != "outlive":
    os.waitpid(pid, 0)
"""


def case_fork(tmp, mode):
    p, out = run(tmp, FORK, [mode])
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    child = int(p.stdout.split()[0])
    if mode == "outlive":
        wait_gone(child)
    with open(os.path.join(out, "run.json")) as f:
        parent = json.load(f)["run"]["pid"]
    check(parent != child, "parent and child pids")
    check_set(out, parent, {"parent_work": 5, "child_work": 0})
    kids = children(out)
    if not FOLLOW:
        check(kids == [], f"an unfollowed child wrote {kids}")
        return
    check([pid_of(k) for k in kids] == [child], f"child directories {kids}, child {child}")
    check_set(kids[0], child, {"parent_work": 0, "child_work": 5})


EIGHT = """\
import os, sys
def parent_work(): pass
def child_work(): pass
for _ in range(3): parent_work()
r, w = os.pipe()
pids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        for _ in range(i + 1): child_work()
        sys.exit(0)
    pids.append(pid)
os.close(r)
os.close(w)  # every child wakes and exits at once
for pid in pids:
    os.waitpid(pid, 0)
parent_work()
print(" ".join(map(str, pids)))
"""


def case_eight(tmp):
    for rep in range(3):
        sub = os.path.join(tmp, str(rep))
        os.mkdir(sub)
        p, out = run(sub, EIGHT)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
        pids = [int(x) for x in p.stdout.split()]
        with open(os.path.join(out, "run.json")) as f:
            parent = json.load(f)["run"]["pid"]
        check_set(out, parent, {"parent_work": 4, "child_work": 0})
        kids = children(out)
        if not FOLLOW:
            check(kids == [], f"unfollowed children wrote {kids}")
            continue
        check(sorted(pid_of(k) for k in kids) == sorted(pids), f"{kids} vs {pids}")
        for k in kids:
            i = pids.index(pid_of(k))
            check_set(k, pids[i], {"parent_work": 0, "child_work": i + 1})


POOL = """\
import json, multiprocessing as mp, os, sys
from collections import Counter
def task(x):
    return os.getpid()
if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    with ctx.Pool(4) as pool:
        pids = pool.map(task, range(200), chunksize=5)
    print(json.dumps(Counter(pids)))
"""


def case_pool(tmp, method):
    p, out = run(tmp, POOL, [method])
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    per_worker = {int(k): v for k, v in json.loads(p.stdout).items()}
    check(sum(per_worker.values()) == 200, f"tasks {per_worker}")
    got, parent = calls(out, "task")
    check(got == 0, f"the parent ran {got} tasks")
    kids = children(out)
    if not FOLLOW:
        check(kids == [], f"unfollowed workers wrote {kids}")
        return
    # Other helpers (resource tracker, fork server) are followed too; they
    # may still be finishing when the parent has exited.
    for d in kids:
        pid = pid_of(d)
        if pid not in per_worker:
            wait_gone(pid)
    seen = {}
    for d in kids:
        if not os.path.exists(os.path.join(d, "run.json")):
            check(pid_of(d) not in per_worker,
                  f"worker {pid_of(d)} ran {per_worker.get(pid_of(d))} tasks, wrote nothing")
            continue  # stopped while starting up
        n, pid = calls(d, "task")
        check(pid == pid_of(d), f"{d} holds process {pid}'s counts")
        seen[pid] = n
    for pid, n in per_worker.items():
        check(seen.get(pid) == n, f"worker {pid}: {n} tasks, its report says {seen.get(pid)}")
    extra = {pid: n for pid, n in seen.items() if pid not in per_worker and n}
    check(not extra, f"processes that ran no task report tasks: {extra}")


SUBPROCESS = """\
import subprocess, sys
def parent_work(): pass
parent_work()
p = subprocess.run([sys.executable, "-c",
                    "import os\\ndef sub(): pass\\nfor _ in range(4): sub()\\nprint(os.getpid())"],
                   capture_output=True, text=True, check=True)
print(p.stdout.strip())
print(repr(p.stderr))
"""


def case_subprocess(tmp, env=None):
    p, out = run(tmp, SUBPROCESS, env=env, flag=env is None)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    child = int(p.stdout.split()[0])
    got, parent = calls(out, "parent_work")
    check(got == 1, f"parent_work {got}")
    kids = children(out)
    if not FOLLOW:
        check(kids == [], f"an unfollowed subprocess wrote {kids}")
        return
    check([pid_of(k) for k in kids] == [child], f"{kids} vs {child}")
    check_set(kids[0], child, {"sub": 4, "parent_work": 0})
    # its summary went to its directory, not into the stderr its parent read
    check(p.stdout.splitlines()[1] == "''", f"the child's stderr: {p.stdout}")
    with open(os.path.join(kids[0], "summary.txt")) as f:
        check("pytracekit counter" in f.read(), "summary.txt lacks the counter's summary")


FILTERED = """\
import json, os, subprocess, sys
def parent_work(): pass
parent_work()
p = subprocess.run([sys.executable, "-c",
                    "import os\\ndef sub(): pass\\ndef other(): pass\\n"
                    "for _ in range(4): sub(); other()\\nprint(os.getpid())"],
                   capture_output=True, text=True, check=True)
print(p.stdout.strip())
print(json.dumps(json.loads(os.environ.get("PYTRACEKIT_FOLLOW", "{}")).get("filter")))
"""


def case_subprocess_filter(tmp):
    """The session's filter reaches a followed child as Session keywords
    (lists of items, max_depth an int), and selects there as here."""
    p, out = run(tmp, FILTERED, extra=["--functions", "sub , parent_work",
                                       "--functions", "nothing*", "--max-depth", "9",
                                       "--max-depth", "2"])
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    child, spec = p.stdout.splitlines()
    got, _ = calls(out, "parent_work")
    check(got == 1, f"parent_work {got}")
    if not FOLLOW:
        check(spec == "null", f"an unfollowed run set PYTRACEKIT_FOLLOW: {spec}")
        check(children(out) == [], "an unfollowed subprocess reported")
        return
    check(json.loads(spec) == {"functions": ["sub", "parent_work", "nothing*"],
                               "max_depth": 2}, f"the child's filter: {spec}")
    kids = children(out)
    check([pid_of(k) for k in kids] == [int(child)], f"{kids} vs {child}")
    for name, n in (("sub", 4), ("other", 0)):
        got, pid = calls(kids[0], name)
        check((got, pid) == (n, int(child)), f"the child's {name}: {got} calls, pid {pid}")


EXEC = """\
import os, sys
def pre(): pass
for _ in range(3): pre()
print(os.getpid(), flush=True)
os.execv(sys.executable, [sys.executable, "-c",
         "def post(): pass\\nfor _ in range(4): post()"])
"""


def case_execv(tmp):
    p, out = run(tmp, EXEC)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    pid = int(p.stdout.split()[0])
    check_set(out, pid, {"pre": 3, "post": 0})
    kids = children(out)
    if not FOLLOW:
        check(kids == [], f"an unfollowed exec wrote {kids}")
        return
    check([pid_of(k) for k in kids] == [pid], f"{kids} vs {pid}")
    check_set(kids[0], pid, {"pre": 0, "post": 4})


def case_session_fork(tmp):
    """The Python API: Session(follow_children=...) and a fork inside."""
    out = os.path.join(tmp, "out")
    code = f"""
import os, sys, pytracekit
def parent_work(): pass
def child_work(): pass
with pytracekit.Session(["counter:top=0", "timer:top=0,folded=true"], output_dir={out!r},
                        follow_children={FOLLOW!r}):
    parent_work()
    pid = os.fork()
    if pid == 0:
        child_work(); child_work()
    else:
        os.waitpid(pid, 0)
        parent_work()
if pid:
    print(pid)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    child = int(p.stdout.split()[0])
    got, parent = calls(out, "parent_work")
    check_set(out, parent, {"parent_work": 2, "child_work": 0})
    kids = children(out)
    if not FOLLOW:
        check(kids == [], f"an unfollowed child wrote {kids}")
        return
    check([pid_of(k) for k in kids] == [child], f"{kids} vs {child}")
    check_set(kids[0], child, {"parent_work": 0, "child_work": 2})


SLEEPER = """\
import time
def work(): pass
for _ in range(7): work()
print("ready", flush=True)
time.sleep(60)
"""


def case_signal(tmp, name):
    sig = getattr(signal, name)
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(SLEEPER)
    out = os.path.join(tmp, "out")
    p = subprocess.Popen([CLI] + PLUGINS + ["-o", out, prog], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    check(p.stdout.readline().strip() == "ready", "the program did not start")
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    check(p.returncode == -sig, f"ended with {p.returncode}, expected -{sig}: {err}")
    with open(os.path.join(out, "run.json")) as f:
        pid = json.load(f)["run"]["pid"]
    check(pid == p.pid, f"run.json of {pid}, expected {p.pid}")
    check_set(out, p.pid, {"work": 7})


STOPPED = """\
import os, signal, sys, time
import pytracekit
def work(): pass
s = pytracekit.Session(["counter:top=0", "timer:top=0,folded=true"], output_dir=sys.argv[2])
s.start()
for _ in range(7): work()
s.stop()
# What a multiprocessing worker's exit hook meets when Pool.terminate()
# comes between its session's stop and its report.
if sys.argv[1] == "_exit":
    os._exit(4)
os.kill(os.getpid(), getattr(signal, sys.argv[1]))
time.sleep(30)
"""


def case_stopped(tmp):
    """A session stopped and not yet reported when SIGTERM, SIGHUP or
    os._exit comes still writes its reports (a Pool worker's exit hook
    stops, then reports; Pool.terminate() may fall in between)."""
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(STOPPED)
    for how, status in (("SIGTERM", -signal.SIGTERM), ("SIGHUP", -signal.SIGHUP),
                        ("_exit", 4)):
        out = os.path.join(tmp, how)
        p = subprocess.Popen([PYTHON, prog, how, out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        _, err = p.communicate(timeout=60)
        check(p.returncode == status, f"{how}: ended with {p.returncode}, "
              f"expected {status}: {err}")
        check_set(out, p.pid, {"work": 7})


def case_second_sigint(tmp):
    """Ctrl-C, then Ctrl-C again while the reports are written (the
    atreport plugin raises SIGINT from its report, between the counter's and
    the timer's): every report is written and the exit is by SIGINT."""
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write("import os, signal, time\ndef work(): pass\nfor _ in range(7): work()\n"
                "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(30)\n")
    out = os.path.join(tmp, "out")
    p = run_cli(["-p", "counter:top=0", "-p", test_plugin("atreport") + ":signal=2",
                 "-p", "timer:top=0,folded=true", "-o", out, prog], cwd=tmp)
    check(p.returncode == -signal.SIGINT,
          f"ended with {p.returncode}, expected -2: {p.stderr}")
    check("KeyboardInterrupt" in p.stderr, f"no KeyboardInterrupt: {p.stderr}")
    check_set(out, json.load(open(os.path.join(out, "run.json")))["run"]["pid"], {"work": 7})
    check(os.path.exists(os.path.join(out, "atreport.json")), "atreport.json missing")


def case_sigint_while_reporting(tmp):
    """A program that ends normally, with a Ctrl-C while its reports are
    written: all reports are written, then the exit is by SIGINT."""
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write("def work(): pass\nfor _ in range(7): work()\n")
    out = os.path.join(tmp, "out")
    p = run_cli(["-p", "counter:top=0", "-p", test_plugin("atreport") + ":signal=2",
                 "-p", "timer:top=0,folded=true", "-o", out, prog], cwd=tmp)
    check(p.returncode == -signal.SIGINT,
          f"ended with {p.returncode}, expected -2: {p.stderr}")
    check_set(out, json.load(open(os.path.join(out, "run.json")))["run"]["pid"], {"work": 7})


def case_report_fails(tmp):
    prog = os.path.join(tmp, "prog.py")
    for status, expect in ((0, 3), (5, 5)):
        with open(prog, "w") as f:
            f.write(f"import sys\ndef work(): pass\nwork()\nsys.exit({status})\n")
        out = os.path.join(tmp, "out%d" % status)
        p = run_cli(["-p", "counter:top=0", "-p", test_plugin("atreport") + ":fail=true",
                     "-o", out, prog], cwd=tmp)
        check(p.returncode == expect, f"exit {p.returncode}, expected {expect}: {p.stderr}")
        check("atreport: told to fail" in p.stderr, f"no message: {p.stderr}")
        with open(os.path.join(out, "run.json")) as f:
            run = json.load(f)
        check(run["failed_plugins"] == 1 and run["files"] == ["counter.json"], str(run))


def case_sigkill_rerun(tmp):
    """A run killed while reporting leaves its other files from the previous
    run, told apart by the run identity; temporary files of dead runs are
    removed by the next run there, those of live processes are not."""
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write("def work(): pass\nfor _ in range(3): work()\n")
    out = os.path.join(tmp, "out")
    p = run_cli(PLUGINS + ["-o", out, prog], cwd=tmp)
    check(p.returncode == 0, p.stderr)
    first = json.load(open(os.path.join(out, "run.json")))["run"]
    p = run_cli(["-p", "counter:top=0", "-p", test_plugin("atreport") + ":signal=9",
                 "-p", "timer:top=0,folded=true", "-o", out, prog], cwd=tmp)
    check(p.returncode == -9, f"exit {p.returncode}")
    counter = json.load(open(os.path.join(out, "counter.json")))["run"]
    timer = json.load(open(os.path.join(out, "timer.json")))["run"]
    manifest = json.load(open(os.path.join(out, "run.json")))["run"]
    check(counter != first and timer == first and manifest == first,
          "the killed run's counter.json is not told apart from the earlier files")
    # What a run killed between writing and renaming leaves behind.
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip().replace("-", "")
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    ident = ".pytracekit-tmp.%s.%d" % (boot, os.stat("/proc/self/ns/pid").st_ino)
    stale = os.path.join(out, "%s.%d.%d.counter.json.AbC123" % (ident, dead.pid, start))
    live = os.path.join(out, "%s.%d.%d.timer.json.XyZ789" % (ident, os.getpid(), start))
    for path in (stale, live):
        with open(path, "w") as f:
            f.write("{half")
    p = run_cli(PLUGINS + ["-o", out, prog], cwd=tmp)
    check(p.returncode == 0, p.stderr)
    check(not os.path.exists(stale), "a dead run's temporary file was not removed")
    check(os.path.exists(live), "a live process's temporary file was removed")
    os.unlink(live)
    check_set(out, json.load(open(os.path.join(out, "run.json")))["run"]["pid"], {"work": 3})


LATE = """\
import subprocess, sys
def parent_work(): pass
child = '''
import atexit, sys, time
def child_work(): pass
for _ in range(4): child_work()
atexit.register(time.sleep, float(sys.argv[1]))  # runs before the report
'''
parent_work()
p = subprocess.Popen([sys.executable, "-c", child, sys.argv[1]],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(p.pid, flush=True)
# no wait: the program ends while the child has not written its report
"""


def case_late_child(tmp):
    """The command waits for a followed child that is still writing."""
    p, out = run(tmp, LATE, ["1.5"])
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    child = int(p.stdout.split()[0])
    kids = children(out)
    if not FOLLOW:
        check(kids == [], f"an unfollowed child wrote {kids}")
        wait_gone(child)
        return
    check([pid_of(k) for k in kids] == [child], f"child directories {kids}")
    # right after the command returned: complete
    check_set(kids[0], child, {"parent_work": 0, "child_work": 4})
    check("no complete report" not in p.stderr, p.stderr)


def case_stuck_child(tmp):
    """A followed child that outlives the wait is named, the wait bounded."""
    t0 = time.time()
    p, out = run(tmp, LATE, ["60"], env={"PYTRACEKIT_CHILD_WAIT": "1"})
    spent = time.time() - t0
    child = int(p.stdout.split()[0])
    try:
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
        check(spent < 20, f"the command took {spent:.1f} s")
        # named, with or without its directory made yet
        said = [ln for ln in p.stderr.splitlines()
                if ln.startswith(f"pytracekit: followed child {child} has no ")
                and "still running after the wait" in ln]
        check(len(said) == 1, f"child {child} not named once in:\n{p.stderr}")
    finally:
        os.kill(child, signal.SIGKILL)
        wait_gone(child)


def case_manifest(tmp):
    """run.json lists every file and directory the run wrote, also those a
    plugin writes itself (the timeline's trace, coverage's html/), and
    nothing an earlier run left."""
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    old = os.path.join(out, "earlier.json")
    with open(old, "w") as f:
        f.write("{}")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write("def work(): pass\nfor _ in range(3): work()\n")
    p = run_cli(["-p", "counter:top=0", "-p", "timeline", "-p",
                 "coverage:html=true", "-o", out, prog], cwd=tmp)
    check(p.returncode == 0, p.stderr)
    with open(os.path.join(out, "run.json")) as f:
        files = json.load(f)["files"]
    want = {n + "/" if os.path.isdir(os.path.join(out, n)) else n
            for n in os.listdir(out)} - {"run.json", "earlier.json"}
    check(len(files) == len(set(files)), f"listed twice: {files}")
    check(set(files) == want, f"run.json lists {sorted(files)}, the run wrote {sorted(want)}")
    for must in ("timeline.perfetto-trace", "html/", "coverage.json"):
        check(must in files, f"{must} not in {files}")
    # the other form of the timeline's trace, the timer's optional files and
    # coverage.py's .coverage (written where coverage.py is importable)
    out2 = os.path.join(tmp, "out2")
    p = run_cli(["-p", "timeline:format=json", "-p", "coverage:coveragepy=auto", "-p",
                 "timer:top=0,folded=true,per_thread=true", "-o", out2, prog], cwd=tmp)
    check(p.returncode == 0, p.stderr)
    with open(os.path.join(out2, "run.json")) as f:
        files = json.load(f)["files"]
    want = {n + "/" if os.path.isdir(os.path.join(out2, n)) else n
            for n in os.listdir(out2)} - {"run.json"}
    check(sorted(files) == sorted(want), f"run.json lists {sorted(files)}, the run "
          f"wrote {sorted(want)}")
    for must in ("timeline.json", "timer.folded", "timer.thread-0-MainThread.pstats"):
        check(must in files, f"{must} not in {files}")
    print("run.json complete;", ".coverage" in files and ".coverage listed" or
          "coverage.py not importable here: no .coverage written")


SESSION_CHILD = """\
import subprocess, sys
import pytracekit
out = sys.argv[1]
child = '''
import atexit, time
atexit.register(time.sleep, 1.0)
print("running", flush=True)
'''
s = pytracekit.Session(["counter:top=0"], output_dir=out, follow_children=True)
s.start()
p = subprocess.Popen([sys.executable, "-c", child],
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
# until the child runs its own code: its session has started and it writes
# nothing until it exits (once in CI, a stop() made as soon as the child's
# directory appeared named no child: the child was still starting)
p.stdout.readline()
s.stop()
print(p.pid, flush=True)
s.report()
s.close()
p.wait()
"""


SESSION_WRITING = """\
import os, subprocess, sys, time
import pytracekit
out, plugin = sys.argv[1], sys.argv[2]
s = pytracekit.Session([plugin + ":hold=1500"], output_dir=out, follow_children=True)
s.start()
p = subprocess.Popen([sys.executable, "-c", "def work(): pass\\nwork()\\nwork()\\n"])
d = os.path.join(out, "pid-%d" % p.pid)
end = time.time() + 60
# until the child writes its report (the report's temporary file is there;
# not the probe of the directory a session makes when it starts)
while time.time() < end and not (os.path.isdir(d) and any(
        n.startswith(".pytracekit-tmp.") and ".atreport.json." in n
        for n in os.listdir(d))):
    time.sleep(0.002)
t0 = time.time()
s.stop()
print(p.pid, os.path.exists(os.path.join(d, "run.json")), "%.2f" % (time.time() - t0),
      flush=True)
p.wait()
s.report()
s.close()
"""


def case_session_writing(tmp):
    """Session.stop() with follow_children waits for a child that is writing
    its report (atreport holds its file open 1.5 s) and returns once that
    child's run.json is there, saying nothing about it."""
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(SESSION_WRITING)
    out = os.path.join(tmp, "out")
    p = subprocess.run([PYTHON, prog, out, test_plugin("atreport")], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0, p.stderr)
    child, complete, waited = p.stdout.split()
    check(complete == "True", f"stop() returned before child {child} wrote run.json "
          f"(after {waited} s): {p.stderr}")
    check(f"followed child {child}" not in p.stderr, p.stderr)
    with open(os.path.join(out, f"pid-{child}", "run.json")) as f:
        files = json.load(f)["files"]
    check("atreport.json" in files, f"the child's run.json lists {files}")


def case_session_child(tmp):
    """Session.stop() with follow_children names a child still running."""
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(SESSION_CHILD)
    out = os.path.join(tmp, "out")
    p = subprocess.run([PYTHON, prog, out], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, p.stderr)
    child = int(p.stdout.split()[0])
    want = (f"pytracekit: followed child {child} is still running: its report will "
            f"be in {out}/pid-{child} when it ends")
    check(want in p.stderr, f"wanted {want!r} in:\\n{p.stderr}")
    # and it does, once it has ended
    check(os.path.exists(os.path.join(out, f"pid-{child}", "run.json")), "no report")


def main():
    if CLI is None:
        skip("PTK_CLI is not set")
    with tempfile.TemporaryDirectory() as tmp:
        if CASE.startswith("fork."):
            case_fork(tmp, CASE[5:])
        elif CASE == "eight":
            case_eight(tmp)
        elif CASE.startswith("pool."):
            case_pool(tmp, CASE[5:])
        elif CASE == "subprocess":
            case_subprocess(tmp)
        elif CASE == "subprocess_filter":
            case_subprocess_filter(tmp)
        elif CASE == "subprocess_env":
            case_subprocess(tmp, env={"PYTRACEKIT_FOLLOW_CHILDREN": "1" if FOLLOW else "0"})
        elif CASE == "execv":
            case_execv(tmp)
        elif CASE == "session_fork":
            case_session_fork(tmp)
        elif CASE in ("SIGTERM", "SIGHUP"):
            case_signal(tmp, CASE)
        elif CASE == "stopped":
            case_stopped(tmp)
        elif CASE == "second_sigint":
            case_second_sigint(tmp)
        elif CASE == "sigint_while_reporting":
            case_sigint_while_reporting(tmp)
        elif CASE == "report_fails":
            case_report_fails(tmp)
        elif CASE == "sigkill_rerun":
            case_sigkill_rerun(tmp)
        elif CASE == "session_child":
            case_session_child(tmp)
        elif CASE == "session_writing":
            case_session_writing(tmp)
        elif CASE == "manifest":
            case_manifest(tmp)
        elif CASE == "late_child":
            case_late_child(tmp)
        elif CASE == "stuck_child":
            case_stuck_child(tmp)
        else:
            fail(f"unknown case {CASE}")
    print("ok", CASE, "follow" if FOLLOW else "")


if __name__ == "__main__":
    main()
