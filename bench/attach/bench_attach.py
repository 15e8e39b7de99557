"""What attaching leaves behind in a live server (docs/attach.md).

    python bench/attach/bench_attach.py --build BUILD [--cycles 200] [--armed]

Runs tests/attach/attach_target.py (an HTTP server answering in its main
thread) with the build's Python, and measures from outside:

- the server's CPU per request (its main thread's on-CPU time from
  /proc/PID/schedstat, in ns, over 100 requests; the median of 3 rounds)
  before any attach, and again after one attach/detach;
- CYCLES attach/detach cycles (counter and timer) while a client keeps
  sending requests: failed requests, and the server's RSS after the 5th
  and after the last cycle; then the CPU per request again.

With --control, nothing is attached: the same traffic for --seconds (give
it what the cycles took), for comparison (a loopback server's CPU per
request grows with the connections the kernel keeps in TIME_WAIT).

The way in is sys.remote_exec on 3.14+, the armed signal before (or with
--armed). Prints one line per figure; nothing is asserted here (the tests
assert the RSS bound on 50 cycles: tests/attach, attach.cycles_*).
"""
import argparse
import json
import os
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


def cpu_per_request(pid, url, n=100, rounds=3):
    per = []
    for _ in range(rounds):
        c0 = oncpu_ns(pid)
        for i in range(n):
            with urllib.request.urlopen(f"{url}/work/{i}") as r:
                r.read()
        per.append((oncpu_ns(pid) - c0) / n)
    return statistics.median(per), per


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
                    help="the same, with no attach at all: the client's "
                         "traffic for as long as the cycles took (--seconds)")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--settle", type=float, default=65.0,
                    help="seconds to wait after the cycles before measuring "
                         "again: the loopback connections of the traffic "
                         "leave TIME_WAIT (60 s), which otherwise cost the "
                         "server more per request than anything attached")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    python = cache_python(build)
    cli = os.path.join(build, "tools", "pytracekit")
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    version = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 14))"],
                             capture_output=True, text=True).stdout.strip()
    armed = a.armed or version != "True"
    tmp = tempfile.mkdtemp(prefix="ptk-bench-attach-")
    portfile = os.path.join(tmp, "port")
    cmd = [cli, "--armed", TARGET, portfile] if armed else [python, TARGET, portfile]
    err = open(os.path.join(tmp, "target.err"), "w")
    t = subprocess.Popen(cmd, env=env, stderr=err)
    try:
        while not os.path.exists(portfile):
            time.sleep(0.02)
        with open(portfile) as f:
            port = int(f.read())
        url = f"http://127.0.0.1:{port}"
        pyver = subprocess.run([python, "-V"], capture_output=True, text=True).stdout.strip()
        print(f"{pyver}, {'armed signal' if armed else 'sys.remote_exec'}"
              f"{' (control: no attach)' if a.control else ''}")
        cpu_per_request(t.pid, url, n=200, rounds=1)  # warm up
        before, b_rounds = cpu_per_request(t.pid, url)

        def cycle(out):
            for op in (["attach", str(t.pid), "-p", "counter", "-p", "timer", "-o", out],
                       ["detach", str(t.pid)]):
                r = subprocess.run([cli] + op, env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    raise SystemExit(f"{op[0]} failed ({r.returncode}): {r.stderr}")
        if not a.control:
            cycle(os.path.join(tmp, "out0"))
        after, a_rounds = cpu_per_request(t.pid, url)
        print(f"CPU per request before attach: {before / 1000:.1f} us "
              f"(rounds {[round(x / 1000, 1) for x in b_rounds]})")
        print(f"CPU per request after detach:  {after / 1000:.1f} us "
              f"(rounds {[round(x / 1000, 1) for x in a_rounds]}): "
              f"{(after / before - 1) * 100:+.1f}%")
        # the same, interleaved: 100 requests, an attach/detach, 100
        # requests, 100 more, 5 times; the medians of the ratios to the
        # 100 before (drift cancels). The first 100 after a detach pay
        # for the interpreter taking its instrumentation out of the code
        # that runs and specialising it again; the next 100 do not.
        first, second = [], []
        for k in range(5):
            b1, _ = cpu_per_request(t.pid, url, rounds=1)
            if not a.control:
                cycle(os.path.join(tmp, "out0"))
            a1, _ = cpu_per_request(t.pid, url, rounds=1)
            a2, _ = cpu_per_request(t.pid, url, rounds=1)
            first.append(a1 / b1)
            second.append(a2 / b1)
        for name, rs in (("first 100 after", first), ("next 100 after", second)):
            print(f"interleaved, {name} / 100 before one attach/detach: median "
                  f"{(statistics.median(rs) - 1) * 100:+.1f}% "
                  f"({', '.join(f'{(r - 1) * 100:+.1f}%' for r in rs)})")
        stop = os.path.join(tmp, "stop")
        c = subprocess.Popen([python, "-c", CLIENT, str(port), stop],
                             stdout=subprocess.PIPE, text=True)
        rss = {}
        t0 = time.monotonic()
        for i in range(a.cycles):
            if a.control:
                time.sleep(a.seconds / a.cycles)
            else:
                cycle(os.path.join(tmp, f"out{i % 2}"))
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
        with urllib.request.urlopen(f"{url}/exit") as r:
            r.read()
        t.wait(30)
        print(f"server exit status {t.returncode}")
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()


if __name__ == "__main__":
    main()
