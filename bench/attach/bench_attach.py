"""What attaching leaves behind in a live server (docs/attach.md).

    python bench/attach/bench_attach.py --build BUILD [--cycles 200] [--armed]
                                        [--control] [--rounds 15] [--during 50]
                                        [--backend legacy|monitoring]
    python bench/attach/bench_attach.py --build BUILD --instructions [--armed]

Runs tests/attach/attach_target.py (an HTTP server answering in its main
thread) with the build's Python, and measures from outside:

- the server's CPU per request (its main thread's on-CPU time from
  /proc/PID/schedstat, in ns, over 100 requests; the median of 3 rounds)
  before any attach, and again after one attach/detach;
- the same interleaved ROUNDS times: 100 requests, a cycle, 100 requests,
  100 more; the cycle is either an attach/detach of the server (counter
  and timer, DURING requests answered while attached, so that the code
  that serves them is instrumented) or the same commands sent to a second,
  identical server (a decoy) while the server answers the same DURING
  requests unattached: the same pause and the same processes running on
  the machine, nothing attached. The medians of the ratios to the 100
  before, for both: a pause and a few processes starting on the machine
  cost the next requests as much as anything attached did, and only the
  difference between the two is the detach's;
- CYCLES attach/detach cycles (counter and timer) while a client keeps
  sending requests: failed requests, and the server's RSS after the 5th
  and after the last cycle; then the CPU per request again.

With --control, nothing is attached to the server: every cycle goes to the
decoy (the 200 for --seconds at least), for comparison (a loopback
server's CPU per request grows with the connections the kernel keeps in
TIME_WAIT).

With --instructions, the server runs under callgrind (valgrind) and the
figure is the instructions it executes per request, which the machine's
load does not change: 100 requests before an attach, the first and the
next 100 after the detach (an attach with DURING requests answered), the
median of 3; and the same with the attach left out (control). Nothing else
is measured then.

The way in is sys.remote_exec on 3.14+, the armed signal before (or with
--armed). Prints one line per figure; nothing is asserted here (the tests
assert the RSS bound on 50 cycles: tests/attach, attach.cycles_*).
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TARGET = os.path.join(SRC, "tests", "attach", "attach_target.py")


def cache_python(build):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith("Python3_EXECUTABLE:"):
                return line.split("=", 1)[1].strip()
    raise SystemExit(f"{build}: no Python3_EXECUTABLE in CMakeCache.txt")


def oncpu_ns(pid):
    with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def send(url, n):
    for i in range(n):
        with urllib.request.urlopen(f"{url}/work/{i}", timeout=60) as r:
            r.read()


def cpu_per_request(pid, url, n=100, rounds=3):
    per = []
    for _ in range(rounds):
        c0 = oncpu_ns(pid)
        send(url, n)
        per.append((oncpu_ns(pid) - c0) / n)
    return statistics.median(per), per


class Server:
    """One attach_target.py process (under *wrap*, e.g. valgrind)."""

    def __init__(self, python, cli, env, tmp, name, armed, wrap=()):
        portfile = os.path.join(tmp, f"{name}.port")
        if wrap:  # the launcher would be what runs under valgrind
            cmd = list(wrap) + [python, TARGET, portfile] + (["arm"] if armed else [])
        elif armed:
            cmd = [cli, "--armed", TARGET, portfile]
        else:
            cmd = [python, TARGET, portfile]
        self.err = open(os.path.join(tmp, f"{name}.err"), "w")
        self.proc = subprocess.Popen(cmd, env=env, stderr=self.err)
        self.pid = self.proc.pid
        while not os.path.exists(portfile):
            if self.proc.poll() is not None:
                raise SystemExit(f"{name} server ended ({self.proc.returncode}); "
                                 f"see {self.err.name}")
            time.sleep(0.02)
        with open(portfile) as f:
            self.url = f"http://127.0.0.1:{int(f.read())}"

    def end(self):
        if self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/exit", timeout=60) as r:
                    r.read()
                self.proc.wait(120)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        return self.proc.returncode


BACKEND = []  # --backend NAME for every attach


def cycle(cli, env, pid, out, during_url=None, during=0, timeout=None):
    """Attaches counter and timer to *pid*, sends *during* requests to
    *during_url* (the measured server, attached or not), detaches."""
    extra = ["--timeout", str(timeout)] if timeout else []
    for op in (["attach", str(pid), "-p", "counter", "-p", "timer", "-o", out]
               + BACKEND + extra,
               ["detach", str(pid)] + extra):
        r = subprocess.run([cli] + op, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"{op[0]} {pid} failed ({r.returncode}): {r.stderr}")
        if op[0] == "attach" and during:
            send(during_url, during)


def pct(x):
    return f"{(x - 1) * 100:+.1f}%"


def instructions(a, python, cli, env, tmp, armed):
    """--instructions: the server under callgrind; instructions per
    request before an attach and after the detach."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"--instructions needs {tool} (valgrind) on PATH")
    out = os.path.join(tmp, "callgrind.out")
    s = Server(python, cli, env, tmp, "server", armed,
               wrap=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
    try:
        def ctl(*args):
            subprocess.run(["callgrind_control", *args, str(s.pid)], check=True,
                           capture_output=True)

        def measure(n=100):
            """Instructions per request over *n* requests."""
            ctl("-z")
            send(s.url, n)
            ctl("-d")
            last = max(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
            with open(last) as f:
                ir = next(int(line.split()[1]) for line in f
                          if line.startswith(("summary:", "totals:")))
            os.unlink(last)
            return ir / n

        pyver = subprocess.run([python, "-V"], capture_output=True, text=True).stdout.strip()
        print(f"{pyver}, {'armed signal' if armed else 'sys.remote_exec'}, "
              f"{a.backend or 'default'} backend, instructions per request (callgrind)")
        send(s.url, 300)  # warm up
        got = {"attach": [], "control": []}
        for k in range(a.rounds_instructions):
            for kind in ("attach", "control"):
                before = measure()
                if kind == "attach":
                    cycle(cli, env, s.pid, os.path.join(tmp, "out"), s.url,
                          a.during, timeout=300)
                else:
                    send(s.url, a.during)
                first, nxt = measure(), measure()
                got[kind].append((before, first, nxt))
        # what stays after the first attach, for good: 100 requests now
        # against the 100 before the first attach
        never, steady = got["attach"][0][0], measure()
        print(f"never attached: {never:,.0f}; after {a.rounds_instructions} "
              f"cycles, 500 requests on: {steady:,.0f} ({pct(steady / never)})")
        for kind, rs in got.items():
            b = statistics.median(r[0] for r in rs)
            print(f"{kind:8s} 100 before: {b:,.0f}; first 100 after: "
                  f"{statistics.median(r[1] for r in rs):,.0f} "
                  f"({pct(statistics.median(r[1] / r[0] for r in rs))}, rounds "
                  f"{', '.join(pct(r[1] / r[0]) for r in rs)}); next 100: "
                  f"{statistics.median(r[2] for r in rs):,.0f} "
                  f"({pct(statistics.median(r[2] / r[0] for r in rs))})")
    finally:
        s.end()


CLIENT = r"""
import os, sys, time, urllib.request
port, stop = int(sys.argv[1]), sys.argv[2]
n = failed = 0
while not os.path.exists(stop):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/work/{n}", timeout=30) as r:
            r.read()
    except OSError:
        failed += 1
    n += 1
    time.sleep(0.005)  # a steady load, not a flood of loopback connections
print(n, failed)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--armed", action="store_true")
    ap.add_argument("--control", action="store_true",
                    help="the same, with nothing attached to the server: "
                         "every cycle goes to the decoy; the 200 cycles' "
                         "part for --seconds at least")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=15,
                    help="interleaved rounds (each: one attach, one decoy)")
    ap.add_argument("--during", type=int, default=50,
                    help="requests answered while attached in the measured "
                         "cycles (the code serving them gets instrumented)")
    ap.add_argument("--instructions", action="store_true",
                    help="callgrind's instructions per request instead")
    ap.add_argument("--rounds-instructions", type=int, default=3)
    ap.add_argument("--backend", help="the attached session's backend "
                    "(default: the session's, monitoring on 3.12+)")
    ap.add_argument("--settle", type=float, default=65.0,
                    help="seconds to wait after the cycles before measuring "
                         "again: the loopback connections of the traffic "
                         "leave TIME_WAIT (60 s), which otherwise cost the "
                         "server more per request than anything attached")
    a = ap.parse_args()
    if a.backend:
        BACKEND[:] = ["--backend", a.backend]
    build = os.path.abspath(a.build)
    python = cache_python(build)
    cli = os.path.join(build, "tools", "pytracekit")
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    version = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 14))"],
                             capture_output=True, text=True).stdout.strip()
    armed = a.armed or version != "True"
    tmp = tempfile.mkdtemp(prefix="ptk-bench-attach-")
    if a.instructions:
        instructions(a, python, cli, env, tmp, armed)
        return
    t = Server(python, cli, env, tmp, "server", armed)
    decoy = Server(python, cli, env, tmp, "decoy", armed)
    url = t.url
    try:
        pyver = subprocess.run([python, "-V"], capture_output=True, text=True).stdout.strip()
        print(f"{pyver}, {'armed signal' if armed else 'sys.remote_exec'}"
              f"{' (control: every cycle to the decoy)' if a.control else ''}")
        cpu_per_request(t.pid, url, n=200, rounds=1)  # warm up
        cpu_per_request(decoy.pid, decoy.url, n=200, rounds=1)
        before, b_rounds = cpu_per_request(t.pid, url)
        measured = decoy.pid if a.control else t.pid
        cycle(cli, env, measured, os.path.join(tmp, "out0"), url, a.during)
        after, a_rounds = cpu_per_request(t.pid, url)
        print(f"CPU per request before attach: {before / 1000:.1f} us "
              f"(rounds {[round(x / 1000, 1) for x in b_rounds]})")
        print(f"CPU per request after detach:  {after / 1000:.1f} us "
              f"(rounds {[round(x / 1000, 1) for x in a_rounds]}): "
              f"{(after / before - 1) * 100:+.1f}%")
        # interleaved: 100 requests, a cycle, 100 requests, 100 more;
        # the medians of the ratios to the 100 before (drift cancels),
        # for an attach/detach of the server and for the same commands
        # sent to the decoy (the same pause, the same processes running)
        got = {"attach": ([], []), "decoy": ([], [])}
        for k in range(a.rounds):
            for kind in (("attach", "decoy") if k % 2 == 0 else ("decoy", "attach")):
                b1, _ = cpu_per_request(t.pid, url, rounds=1)
                pid = t.pid if kind == "attach" and not a.control else decoy.pid
                cycle(cli, env, pid, os.path.join(tmp, "out0"), url, a.during)
                a1, _ = cpu_per_request(t.pid, url, rounds=1)
                a2, _ = cpu_per_request(t.pid, url, rounds=1)
                got[kind][0].append(a1 / b1)
                got[kind][1].append(a2 / b1)
        for kind, (first, second) in got.items():
            what = "attach/detach of the server" if kind == "attach" and not a.control \
                else "the same commands to the decoy"
            for name, rs in (("first 100 after", first), ("next 100 after", second)):
                print(f"interleaved, {what}: {name} / 100 before: median "
                      f"{(statistics.median(rs) - 1) * 100:+.1f}% "
                      f"({', '.join(f'{(r - 1) * 100:+.1f}%' for r in rs)})")
        stop = os.path.join(tmp, "stop")
        c = subprocess.Popen([python, "-c", CLIENT, str(t.url.rsplit(":", 1)[1]), stop],
                             stdout=subprocess.PIPE, text=True)
        rss = {}
        t0 = time.monotonic()
        for i in range(a.cycles):
            cycle(cli, env, measured, os.path.join(tmp, f"out{i % 2}"))
            if a.control:
                time.sleep(max(0.0, a.seconds / a.cycles - (time.monotonic() - t0) / (i + 1)))
            if i in (4, a.cycles - 1):
                rss[i + 1] = rss_kb(t.pid)
        took = time.monotonic() - t0
        open(stop, "w").close()
        n, failed = map(int, c.communicate(timeout=60)[0].split())
        print(f"{a.cycles} attach/detach cycles in {took:.1f} s "
              f"({took / a.cycles * 1000:.0f} ms each), {n} requests, "
              f"{failed} failed; RSS {rss[5]} kB after cycle 5, "
              f"{rss[a.cycles]} kB after cycle {a.cycles}: "
              f"{rss[a.cycles] - rss[5]:+d} kB")
        time.sleep(a.settle)
        after2, r2 = cpu_per_request(t.pid, url)
        print(f"CPU per request after {a.cycles + 1} cycles and {a.settle:g} s: "
              f"{after2 / 1000:.1f} us (rounds {[round(x / 1000, 1) for x in r2]}): "
              f"{(after2 / before - 1) * 100:+.1f}%")
        print(f"server exit status {t.end()}")
    finally:
        t.end()
        decoy.end()


if __name__ == "__main__":
    main()
