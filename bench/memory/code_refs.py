"""What a plugin keeps of code objects and threads that are gone.

Usage: code_refs.py [--functions N] [--threads N] [PLUGIN...]

For each plugin alone (and "bare": no session), in a fresh process with this
build's pytracekit on PYTHONPATH: N generated functions, each with a 100 KB
constant, are compiled, called once and dropped, under a started session;
then N threads are started and ended. It prints the growth of the bytes in
use from malloc (glibc's mallinfo2, after gc.collect: what the plugins' C
state and the 100 KB constants take; RSS is noisier) per dropped function
and per ended thread, measured before the report. A plugin that keeps a
strong reference to every code object it saw grows by about the constant's
size per function; one that keeps names only, by the name's bytes.
"""
import argparse
import os
import subprocess
import sys
import tempfile

CHILD = r'''
import ctypes, gc, os, sys, threading
import pytracekit
libc = ctypes.CDLL(None)
class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                 "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = Mallinfo2
def rss():
    gc.collect()
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd
N, T, plugin, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = pytracekit.Session([plugin], output_dir=out, threads="all") if plugin != "bare" else None
if s: s.start()
def batch(k, n):
    for i in range(n):
        ns = {}
        exec(compile(f"def g{k}_{i}():\n    return {(str(i) + ' ' + 'x' * 100000)!r}\n",
                     f"gen_{k}_{i}.py", "exec"), ns)
        ns[f"g{k}_{i}"]()
        del ns
batch("warm", 50)
r0 = rss()
batch("m", N)
r1 = rss()
def body():
    pass
for _ in range(T):
    t = threading.Thread(target=body)
    t.start(); t.join()
r2 = rss()
if s:
    s.stop(); s.report(); s.close()
print(r1 - r0, r2 - r1)
'''


def measure(python, plugin, n, t, env):
    with tempfile.TemporaryDirectory() as out:
        p = subprocess.run([python, "-c", CHILD, str(n), str(t), plugin, out],
                           env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{plugin}: exit {p.returncode}: {p.stderr[-2000:]}")
    code, threads = (int(x) for x in p.stdout.split()[-2:])
    return code, threads


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--functions", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=2000)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--build", default="build/dev")
    ap.add_argument("plugins", nargs="*",
                    default=["bare", "counter", "timer", "timeline", "coverage", "reftrack"])
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.abspath(os.path.join(a.build, "python")))
    print(f"{'plugin':10} {'MB per %d functions' % a.functions:>22} {'B/function':>11} "
          f"{'B/thread':>9}")
    for p in a.plugins:
        code, threads = measure(a.python, p, a.functions, a.threads, env)
        print(f"{p:10} {code / 1e6:22.1f} {code / a.functions:11.0f} "
              f"{threads / max(a.threads, 1):9.0f}")


if __name__ == "__main__":
    main()
