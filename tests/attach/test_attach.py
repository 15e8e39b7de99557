"""pytracekit attach / detach / dump on a live server (docs/attach.md).
Usage: test_attach.py CASE.

The target is tests/attach/attach_target.py, an HTTP server on the
loopback answering one request at a time in its main thread; a client
process sends it requests and logs when each was sent and answered. The
way in is sys.remote_exec on 3.14+ and the armed signal on older Pythons
(`pytracekit --armed`); the *_armed cases use the armed way on every
Python.
"""
import atexit
import json
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from ptk_testlib import CLI, PYTHON, check, fail, skip

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "attach_target.py")
CASE = sys.argv[1]
REMOTE = sys.version_info >= (3, 14)
TMP = tempfile.mkdtemp(prefix="ptk-attach-")
SPAWNED = []  # ended at exit, whatever happened: a failure must not hang


def _end_spawned():
    for p in SPAWNED:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(TMP, ignore_errors=True)


atexit.register(_end_spawned)


def cli(*args, timeout=120):
    return subprocess.run([CLI] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout)


class Target:
    """The server process; armed: started by `pytracekit --armed`."""

    def __init__(self, armed, python=PYTHON, env=None, cmd=None):
        self.portfile = os.path.join(TMP, f"port-{time.monotonic_ns()}")
        if cmd is not None:  # "PORT" in it: the port file
            cmd = [self.portfile if a == "PORT" else a for a in cmd]
        else:
            cmd = [CLI, "--armed", TARGET, self.portfile] if armed else \
                [python, TARGET, self.portfile]
        e = dict(os.environ)
        e.update(env or {})
        e = {k: v for k, v in e.items() if v is not None}
        # a file, not a pipe: the plugins' summaries go to the target's
        # stderr, and a full pipe nobody reads would stop it
        self.errfile = open(self.portfile + ".err", "w+")
        self.p = subprocess.Popen(cmd, env=e, stderr=self.errfile)
        SPAWNED.append(self.p)
        self.pid = self.p.pid
        deadline = time.monotonic() + 30
        while not os.path.exists(self.portfile):
            if self.p.poll() is not None or time.monotonic() > deadline:
                fail(f"the target did not start: {self.stderr()}")
            time.sleep(0.02)
        with open(self.portfile) as f:
            self.port = int(f.read())

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}",
                                    timeout=30) as r:
            return r.read()

    def state(self):
        return json.loads(self.get("/state"))

    def end(self):
        if self.p.poll() is None:
            try:
                self.get("/exit")
            except OSError:
                pass
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode, self.stderr()

    def stderr(self):
        self.errfile.seek(0)
        return self.errfile.read()


CLIENT = r"""
import os, sys, time, urllib.request
port, log, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
n = 0
with open(log, "w") as f:
    while not os.path.exists(stop):
        t0 = time.time()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/work/{n}", timeout=30) as r:
            body = r.read()
        t1 = time.time()
        if body != f"/work/{n} done\n".encode():
            sys.exit(f"bad answer {body!r}")
        f.write(f"{t0!r} {t1!r}\n")
        f.flush()
        n += 1
        time.sleep(0.002)
"""


class Client:
    def __init__(self, port):
        self.log = os.path.join(TMP, f"client-{time.monotonic_ns()}.log")
        self.stopfile = self.log + ".stop"
        self.p = subprocess.Popen([PYTHON, "-c", CLIENT, str(port), self.log,
                                   self.stopfile])
        SPAWNED.append(self.p)

    def finish(self):
        open(self.stopfile, "w").close()
        rc = self.p.wait(60)
        check(rc == 0, f"the client failed (status {rc}): a request was not answered")
        with open(self.log) as f:
            return [tuple(map(float, line.split())) for line in f]


def wait_for_report(outdir, name="run.json", timeout=30):
    path = os.path.join(outdir, name)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        check(time.monotonic() < deadline, f"{path} was not written")
        time.sleep(0.02)
    time.sleep(0.05)
    with open(path) as f:
        return json.load(f)


def counted(outdir, name):
    with open(os.path.join(outdir, "counter.json")) as f:
        data = json.load(f)
    return sum(f["calls"] for f in data["functions"]
               if f["kind"] == "python" and f["name"] == name)


# what the cases wait for an answer: not the command's 10 s, which is about
# a target that is stuck, but the time a target four processes share two
# cores with may take to reach its next safe point
ANSWER = ("--timeout", "60")


def attach_ok(pid, *args):
    r = cli("attach", pid, *args, *ANSWER)
    check(r.returncode == 0, f"attach failed ({r.returncode}): {r.stderr}")
    return r


def detach_ok(pid):
    r = cli("detach", pid, *ANSWER)
    check(r.returncode == 0, f"detach failed ({r.returncode}): {r.stderr}")
    return r


def body_line():
    """The line of answer()'s body in the target."""
    with open(TARGET) as f:
        return next(i for i, line in enumerate(f, 1)
                    if line.strip().startswith('return f"{path} done'))


def need_way(armed):
    if not armed and not REMOTE:
        skip(f"sys.remote_exec is 3.14+ (this is {sys.version.split()[0]}); "
             f"the *_armed case covers this Python")


# ---- the window: every request answered while attached is counted --------------

def window(armed):
    need_way(armed)
    t = Target(armed)
    c = Client(t.port)
    time.sleep(0.5)
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter:top=0", "-p", "timer:top=0",
              "-p", "coverage:counts=true", "-o", out)
    time.sleep(3.0)
    r = detach_ok(t.pid)
    time.sleep(0.3)
    log = c.finish()
    rc, err = t.end()
    check(rc == 0, f"the target ended with {rc}: {err}")
    run = wait_for_report(out)
    check("attached" in run and run["attached"]["by_pid"] > 0 and
          run["attached"]["at"].endswith("Z"), f"run.json: {run.get('attached')}")
    check(run["run"]["pid"] == t.pid, f"run.json is {run['run']['pid']}'s")
    start, end = run["run"]["started"], run["ended"]
    inside = sum(1 for t0, t1 in log if t0 >= start and t1 <= end)
    overlap = sum(1 for t0, t1 in log if t1 >= start and t0 <= end)
    n = counted(out, "answer")
    print(f"answer() counted {n}; requests answered inside the window "
          f"{inside}, overlapping it {overlap}; {len(log)} in all")
    check(inside >= 50, f"too few requests in the window ({inside})")
    check(inside <= n <= overlap and overlap - inside <= 2,
          f"answer() counted {n}, expected {inside}..{overlap}")
    # the timer's pstats agree; the coverage of answer()'s body line too
    st = pstats.Stats(os.path.join(out, "timer.pstats"))
    tn = sum(v[1] for k, v in st.stats.items() if k[2] == "answer")
    check(tn == n, f"timer.pstats: answer {tn} calls, counter {n}")
    with open(os.path.join(out, "coverage.json")) as f:
        cov = json.load(f)
    rec = cov["files"].get(TARGET)
    check(rec is not None, f"coverage.json has no {TARGET}: {list(cov['files'])}")
    hits = dict(map(tuple, rec["hits"]))
    check(hits.get(body_line()) == n, f"coverage.json: line {body_line()} ran "
          f"{hits.get(body_line())} times, answer() {n}")
    # nothing of pytracekit's own in the reports
    with open(os.path.join(out, "counter.json")) as f:
        files = {f.get("file") or "" for f in json.load(f)["functions"]}
    ours = sorted(x for x in files if "pytracekit" in x)
    check(not ours, f"pytracekit's own code in the profile: {ours}")


def case_window():
    window(armed=False)


def case_window_armed():
    window(armed=True)


# ---- the other ways to arm --------------------------------------------------------

def armed_by(cmd, env=None, signum=signal.SIGUSR2):
    t = Target(armed=True, cmd=cmd, env=env)
    with open(f"/tmp/pytracekit-{os.getuid()}/{t.pid}.armed") as f:
        info = json.load(f)
    check(info["pid"] == t.pid and info["signal"] == signum,
          f"the .armed file: {info}, expected signal {signum}")
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter:top=0", "-o", out)
    for _ in range(3):
        t.get("/work")
    detach_ok(t.pid)
    check(counted(out, "answer") == 3, f"{counted(out, 'answer')} calls")
    rc, err = t.end()
    check(rc == 0, f"target: {rc} {err}")
    check(not os.path.exists(f"/tmp/pytracekit-{os.getuid()}/{t.pid}.armed"),
          "the .armed file is left after the exit")


def case_armed_module():
    """python -m pytracekit --armed SCRIPT"""
    armed_by([PYTHON, "-m", "pytracekit", "--armed", TARGET, "PORT"])


def case_armed_env():
    """PYTRACEKIT_ARM=1 and PYTRACEKIT_ARM_SIGNAL=SIGUSR1 in a program that
    imports pytracekit"""
    armed_by([PYTHON, TARGET, "PORT", "import"], env={"PYTRACEKIT_ARM": "1",
                                    "PYTRACEKIT_ARM_SIGNAL": "SIGUSR1"},
             signum=signal.SIGUSR1)


def case_armed_call():
    """pytracekit.arm() called by the program"""
    armed_by([PYTHON, TARGET, "PORT", "arm"])


def case_armed_usage():
    r = cli("--armed", "-p", "counter", TARGET)
    check(r.returncode == 2 and "--armed starts no session: give the plugins to "
          "`pytracekit attach PID`" in r.stderr, f"{r.returncode} {r.stderr}")


# ---- --duration; dump; the target's exit; SIGTERM --------------------------------

def case_duration():
    t = Target(armed=not REMOTE)
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter", "-o", out, "--duration", "0.5")
    run = wait_for_report(out, timeout=10)
    took = run["ended"] - run["run"]["started"]
    check(0.45 <= took <= 2.0, f"attached {took:.3f} s for --duration 0.5")
    r = cli("detach", t.pid)
    check(r.returncode == 12 and "not attached" in r.stderr,
          f"detach after --duration: {r.returncode} {r.stderr}")
    attach_ok(t.pid, "-p", "counter", "-o", out + "2")  # attachable again
    detach_ok(t.pid)
    rc, err = t.end()
    check(rc == 0, f"target: {rc} {err}")


def case_dump():
    t = Target(armed=not REMOTE)
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter:top=0", "-o", out)
    for _ in range(7):
        t.get("/work")
    r = cli("dump", t.pid)
    check(r.returncode == 0, f"dump: {r.returncode} {r.stderr}")
    check(counted(out, "answer") == 7, f"dump: {counted(out, 'answer')} calls")
    for _ in range(5):
        t.get("/work")
    detach_ok(t.pid)
    check(counted(out, "answer") == 12, f"detach: {counted(out, 'answer')} calls")
    r = cli("dump", t.pid)
    check(r.returncode == 12 and "not attached" in r.stderr, f"{r.returncode} {r.stderr}")
    t.end()


def case_dump_by_signal():
    """kill -USR2 on an armed process with an attached session: its
    reports now, as `pytracekit dump`; on one with none: nothing."""
    t = Target(armed=True)
    os.kill(t.pid, signal.SIGUSR2)  # nothing attached: nothing happens
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter:top=0", "-o", out)
    for _ in range(3):
        t.get("/work")
    os.kill(t.pid, signal.SIGUSR2)
    t.get("/work")  # the handler has run before this is answered
    check(counted(out, "answer") == 3, f"{counted(out, 'answer')} calls")
    detach_ok(t.pid)
    check(counted(out, "answer") == 4, f"{counted(out, 'answer')} calls")
    rc, err = t.end()
    check(rc == 0, f"target: {rc} {err}")


def case_target_exit():
    t = Target(armed=not REMOTE)
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter:top=0", "-o", out)
    for _ in range(3):
        t.get("/work")
    rc, err = t.end()
    check(rc == 0, f"target: {rc} {err}")
    run = wait_for_report(out)
    check("attached" in run, "run.json does not say attached")
    check(counted(out, "answer") == 3, f"{counted(out, 'answer')} calls")


def case_sigterm():
    t = Target(armed=not REMOTE)
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter:top=0", "-o", out)
    for _ in range(4):
        t.get("/work")
    os.kill(t.pid, signal.SIGTERM)
    rc = t.p.wait(30)
    check(rc == -signal.SIGTERM, f"the target ended with {rc}, not by SIGTERM")
    run = wait_for_report(out)
    check("attached" in run, "run.json does not say attached")
    check(counted(out, "answer") == 4, f"{counted(out, 'answer')} calls")


# ---- detach leaves nothing behind; cycles ---------------------------------------

def cycles(n, armed, backend):
    if backend == "monitoring" and sys.version_info < (3, 12):
        skip("sys.monitoring is 3.12+")
    need_way(armed)
    t = Target(armed)
    before = t.state()
    c = Client(t.port)
    rss = []
    for i in range(n):
        out = os.path.join(TMP, f"cyc{i % 2}")
        # coverage in the first two cycles: what it switches off where it
        # ran (DISABLE) must be on again for the sessions after (the last
        # attach below checks it). Not later: the RSS bound (from cycle 5)
        # is the hub's; a coverage report's own allocations raise RSS by
        # ~75 kB a session until it levels off ~4 MB up after ~60 of them
        # (bench/README.md, "Attach and detach")
        cov = ["-p", "coverage"] if i < 2 else []
        attach_ok(t.pid, "-p", "counter", "-p", "timer", *cov,
                  "--backend", backend, "-o", out)
        time.sleep(0.01)
        detach_ok(t.pid)
        after = t.state()
        rss.append(after.pop("rss_kb"))
        expect = dict(before)
        expect.pop("rss_kb")
        if i == 0:
            # once per process: the library's atexit callback (it stops
            # the sessions still running at the interpreter's end) and
            # pytracekit._attach's (it reports an attached session)
            check(after["atexit"] - before["atexit"] <= 2,
                  f"atexit callbacks: {before['atexit']} -> {after['atexit']}")
            first_atexit = after["atexit"]
        expect["atexit"] = first_atexit
        # what the target imports of pytracekit stays imported
        expect["modules_pytracekit"] = after["modules_pytracekit"]
        if after != expect:
            diff = {k: (expect.get(k), after.get(k)) for k in after
                    if expect.get(k) != after.get(k)}
            fail(f"cycle {i}: after detach, (before, after): {diff}")
    log = c.finish()
    # once more, counting: what the cycles' coverage switched off where it
    # ran (DISABLE) runs again for a new session
    out = os.path.join(TMP, "last")
    attach_ok(t.pid, "-p", "counter:top=0", "-p", "coverage", "--backend", backend,
              "-o", out)
    for _ in range(5):
        t.get("/work")
    detach_ok(t.pid)
    check(counted(out, "answer") == 5, f"the last attach counted "
          f"{counted(out, 'answer')} calls of answer(), expected 5")
    with open(os.path.join(out, "coverage.json")) as f:
        hits = dict(map(tuple, json.load(f)["files"][TARGET]["hits"]))
    check(body_line() in hits, f"coverage after {n} cycles: answer()'s body "
          f"line {body_line()} not covered: {sorted(hits)}")
    rc, err = t.end()
    check(rc == 0, f"target: {rc} {err}")
    growth = rss[-1] - rss[min(4, n - 1)]
    print(f"{n} cycles, {len(log)} requests answered; RSS {rss[0]} kB after the "
          f"first, {rss[-1]} kB after the last: +{growth} kB since cycle 5")
    if os.environ.get("PTK_SANITIZE"):
        # ASan keeps freed memory in its quarantine: RSS says nothing here
        print("RSS growth not bounded under the sanitizers (ASan's quarantine)")
    else:
        check(growth < 2048, f"RSS grew {growth} kB over {n} cycles")


# 50 cycles bound the RSS a cycle may leave to 41 kB; under the sanitizers,
# where RSS is not bounded, 20 cycles check the same state after each one
CYCLES = 20 if os.environ.get("PTK_SANITIZE") else 50


def case_cycles_legacy():
    cycles(CYCLES, armed=False, backend="legacy")


def case_cycles_monitoring():
    cycles(CYCLES, armed=False, backend="monitoring")


def case_cycles_armed():
    cycles(CYCLES, armed=True, backend="legacy" if sys.version_info < (3, 12)
           else "monitoring")


def no_garbage(backend):
    """After a detach, the program's next collection finds nothing of the
    session. The monitoring backend's probe at every start (does LINE
    alone report a one-line function?) ran Python functions whose
    namespace and functions made a cycle: 4 objects a session, left for
    the program's collections. The legacy backend's probe runs once per
    process (before the attach measured here). The oracle: the same
    requests with nothing attached leave none."""
    if backend == "monitoring" and sys.version_info < (3, 12):
        skip("sys.monitoring is 3.12+")
    armed = sys.version_info < (3, 14)
    need_way(armed)
    t = Target(armed)
    for _ in range(5):
        t.get("/work")
    t.get("/gc/off")  # nothing collected by itself from here to /gc
    for _ in range(20):
        t.get("/work")
    alone = json.loads(t.get("/gc"))
    check(alone == 0, f"the server alone left {alone} objects for the GC")
    # one attach first: what the first one imports stays, by design
    attach_ok(t.pid, "-p", "counter", "--backend", backend,
              "-o", os.path.join(TMP, "gc0"))
    detach_ok(t.pid)
    t.get("/gc/off")
    attach_ok(t.pid, "-p", "counter", "-p", "timer", "--backend", backend,
              "-o", os.path.join(TMP, "gc1"))
    for _ in range(20):
        t.get("/work")
    detach_ok(t.pid)
    for _ in range(20):
        t.get("/work")
    found = json.loads(t.get("/gc"))
    check(found == 0, f"after the detach the GC found {found} unreachable "
          f"objects (0 with nothing attached)")
    rc, err = t.end()
    check(rc == 0, f"target: {rc} {err}")
    print(f"{backend}: 0 objects for the GC after the detach")


def case_detach_no_garbage_monitoring():
    no_garbage("monitoring")


def case_detach_no_garbage_legacy():
    no_garbage("legacy")


def case_resent_runs_once():
    """On 3.14+ the command sends its request again (sys.remote_exec) while
    the target has neither answered nor taken it: a target blocked in C for
    2.5 s gets it three times (0, 1 and 3 s) and runs it once — one session,
    attached, counting, detached, no "already attached". (Guards the
    re-sending; the lost request it is for was not reproduced at will.)"""
    need_way(False)
    prog = os.path.join(TMP, "sleeper.py")
    with open(prog, "w") as f:
        f.write("import time\n"
                "def tick():\n    return 1\n"
                "print('ready', flush=True)\n"
                "time.sleep(2.5)\n"
                "t = time.monotonic()\n"
                "while time.monotonic() - t < 4:\n    tick()\n    time.sleep(0.001)\n")
    p = subprocess.Popen([PYTHON, prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    SPAWNED.append(p)
    check(p.stdout.readline().strip() == "ready", "the target did not start")
    out = os.path.join(TMP, "resent")
    t0 = time.monotonic()
    r = cli("attach", p.pid, "-p", "counter", "-o", out, *ANSWER)
    took = time.monotonic() - t0
    check(r.returncode == 0, f"attach failed ({r.returncode}): {r.stderr}")
    check(took > 1.0, f"answered in {took:.2f} s: the target was not blocked, "
          f"nothing was sent again")
    time.sleep(0.3)
    detach_ok(p.pid)
    _, err = p.communicate(timeout=60)
    check(p.returncode == 0 and "already" not in err, f"target: {p.returncode} {err}")
    n = counted(out, "tick")
    check(n > 10, f"tick() counted {n} times")
    print(f"answered after {took:.2f} s (sent at 0, 1 and 2.5+ s); one session, "
          f"tick() counted {n} times")


def case_coverage_sessions_keep_no_modules():
    """Many sessions in one process (attach, detach, again): the coverage
    plugin's start-up findings are made once; each session used to import
    sysconfig and co. afresh and leave a copy of `warnings` behind."""
    r = subprocess.run([PYTHON, "-c", """if 1:
        import gc, types, pytracekit
        def modules():
            gc.collect()
            return sum(isinstance(o, types.ModuleType) for o in gc.get_objects())
        def one():
            s = pytracekit.Session(["coverage"], output_dir=OUT)
            s.start(); s.stop(); s.close()
        one()
        first = modules()
        for _ in range(10):
            one()
        print(first, modules())
        """.replace("OUT", repr(os.path.join(TMP, "cov")))],
        capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, r.stderr)
    first, last = map(int, r.stdout.split())
    check(last == first, f"module objects after 1 coverage session: {first}, "
          f"after 11: {last}")


# ---- the errors: a message and a status each; the target unharmed ----------------

def expect_error(args, status, *parts):
    r = cli(*args)
    check(r.returncode == status, f"{args}: status {r.returncode}, expected "
          f"{status}: {r.stderr}")
    for p in parts:
        check(p in r.stderr, f"{args}: {p!r} not in: {r.stderr}")
    print(f"{args[0]} {args[1]} -> {r.returncode}: {r.stderr.strip()}")


def case_err_no_process():
    # a pid that is free: one of a process just ended
    p = subprocess.Popen(["true"])
    p.wait()
    expect_error(["attach", p.pid, "-p", "counter"], 4, f"no process {p.pid}")


def case_err_not_python():
    p = subprocess.Popen(["sleep", "30"])
    try:
        expect_error(["attach", p.pid, "-p", "counter"], 5,
                     f"process {p.pid} (", "is not a Python process")
        check(p.poll() is None, "the target ended")
    finally:
        p.kill()
        p.wait()


def case_stale_armed_file():
    """A .armed file left by a killed armed process, its pid now another
    (unarmed) process's: the command does not signal that one (SIGUSR2
    would end it) and takes the stale file away."""
    if REMOTE:
        skip("3.14+ gets into an unarmed process by sys.remote_exec")
    t = Target(armed=False)
    d = f"/tmp/pytracekit-{os.getuid()}"
    os.makedirs(d, mode=0o700, exist_ok=True)
    stale = os.path.join(d, f"{t.pid}.armed")
    with open(stale, "w") as f:
        json.dump({"pid": t.pid, "start": 1, "signal": int(signal.SIGUSR2),
                   "python": "3.x", "executable": PYTHON}, f)
    expect_error(["attach", t.pid, "-p", "counter"], 10, "it is not armed")
    check(not os.path.exists(stale), "the stale .armed file is still there")
    t.get("/work")
    rc, err = t.end()
    check(rc == 0, f"the target: {rc} {err}")


def case_err_unarmed():
    if REMOTE:
        skip("a 3.14+ target needs no arming (sys.remote_exec)")
    t = Target(armed=False)
    v = "%d.%d" % sys.version_info[:2]
    expect_error(["attach", t.pid, "-p", "counter"], 10,
                 f"process {t.pid} runs Python {v}, which has no sys.remote_exec",
                 "it is not armed", "pytracekit --armed")
    t.get("/work")
    rc, err = t.end()
    check(rc == 0, f"the target: {rc} {err}")


def case_err_version():
    if not REMOTE:
        skip("the version check is sys.remote_exec's (3.14+)")
    other = next((p for p in ("/usr/bin/python3.15", "/usr/bin/python3.14")
                  if os.path.exists(p) and not p.endswith("%d.%d" % sys.version_info[:2])),
                 None)
    if other is None:
        skip("no other Python 3.14+ on this machine")
    t = Target(armed=False, python=other, env={"PYTHONPATH": None})
    ov = other[-4:]
    expect_error(["attach", t.pid, "-p", "counter"], 7,
                 f"process {t.pid} runs Python {ov}, this pytracekit runs on "
                 f"Python {sys.version_info[0]}.{sys.version_info[1]}")
    t.get("/work")
    t.end()


def case_err_remote_disabled():
    if not REMOTE:
        skip("remote debugging is 3.14+")
    t = Target(armed=False, env={"PYTHON_DISABLE_REMOTE_DEBUG": "1"})
    expect_error(["attach", t.pid, "-p", "counter"], 8,
                 f"remote debugging is disabled in process {t.pid}")
    t.get("/work")
    t.end()


def case_err_not_importable():
    if not REMOTE:
        skip("an armed target has imported pytracekit already (3.14+ only)")
    t = Target(armed=False, env={"PYTHONPATH": None})
    expect_error(["attach", t.pid, "-p", "counter"], 9,
                 f"pytracekit is not importable in process {t.pid}",
                 "No module named 'pytracekit'")
    t.get("/work")
    rc, err = t.end()
    check(rc == 0, f"the target: {rc} {err}")


def case_err_permission():
    if os.getuid() != 0:
        skip("needs root, to run the target as another user")
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        skip("no user 'nobody'")
    # the command as 'nobody' against a target of root's
    t = Target(armed=not REMOTE)
    r = subprocess.run([CLI, "attach", str(t.pid), "-p", "counter"],
                       capture_output=True, text=True, timeout=60,
                       user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
                       cwd="/")
    if r.returncode == 127 or "is not installed next to" in r.stderr or \
            "Permission denied: '/" in r.stderr or \
            f"{t.pid}" not in r.stderr and "cannot run" in r.stderr:
        skip(f"'nobody' cannot run this build: {r.stderr.strip()}")
    check(r.returncode == 6, f"status {r.returncode}: {r.stderr}")
    check(f"permission denied for process {t.pid} (user 0's, and this is user "
          f"{nobody.pw_uid}): cannot read /proc/{t.pid}/maps" in r.stderr and
          "CAP_SYS_PTRACE" in r.stderr, r.stderr)
    print(f"as nobody -> {r.returncode}: {r.stderr.strip()}")
    t.get("/work")
    t.end()


def case_err_already():
    t = Target(armed=not REMOTE)
    out = os.path.join(TMP, "out")
    attach_ok(t.pid, "-p", "counter", "-o", out)
    expect_error(["attach", t.pid, "-p", "timer"], 12,
                 f"process {t.pid}: already attached: a session runs here, "
                 f"reporting into {out}/")
    detach_ok(t.pid)
    expect_error(["detach", t.pid], 12,
                 f"process {t.pid}: not attached: no session runs here")
    t.end()


def case_err_usage():
    expect_error(["attach", "x"], 2, "attach: expected a process id, found 'x'")
    expect_error(["attach", "1", "--duration", "0"], 2,
                 "--duration expects a number of seconds > 0, found '0'")
    expect_error(["attach", "1", "-p", "counter", "prog.py"], 2,
                 "attach: unexpected argument 'prog.py'")
    expect_error(["detach", "1", "--duration", "3"], 2,
                 "detach: unknown option '--duration'")


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

if __name__ == "__main__":
    if CASE not in CASES:
        fail(f"no case {CASE}")
    CASES[CASE]()
    print("ok")
