#!/usr/bin/env python3
"""What following children costs: whole-process wall time (min of N runs).

    python3 bench/process/bench_follow.py --build build/py311 [--reps 5]
                                          [--methods fork,spawn,forkserver]

Workload (pool.py next to this file): a multiprocessing Pool of 8 workers
running 1,000 short tasks, per start method, run as

  bare      python pool.py METHOD
  traced    pytracekit -p counter:top=0 pool.py METHOD   (the parent only)
  followed  pytracekit -p counter:top=0 --follow-children pool.py METHOD
            (the parent, the 8 workers and the helper processes, each
            writing its own reports)

and prints followed / traced and traced / bare. Then the start-up of one
process: `python -c pass` bare, under the command, with a session the
program starts itself (pytracekit.Session + atexit) and as a followed child
(the start-up hook on PYTHONPATH starting the same session), so the ways of
starting a session compare directly.
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
POOL = os.path.join(HERE, "pool.py")


def cache_value(build, key):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            m = re.match(r"%s:[A-Z]+=(.*)" % re.escape(key), line)
            if m:
                return m.group(1)
    raise SystemExit("%s: no %s in CMakeCache.txt" % (build, key))


def best(cmd, reps, env=None, cwd=None, out=None):
    """(min wall s, min CPU s) over reps; CPU is user+system of the process
    and of every descendant that was waited for (the workers)."""
    times, cpus = [], []
    for _ in range(reps):
        if out:
            shutil.rmtree(out, ignore_errors=True)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        if p.returncode != 0:
            raise SystemExit("%s failed (%d): %s" % (cmd, p.returncode, p.stderr))
    return min(times), min(cpus)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--methods", default="fork,spawn,forkserver")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    python = cache_value(build, "Python3_EXECUTABLE")
    cli = os.path.join(build, "tools", "pytracekit")
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()
    env = dict(os.environ)
    env.pop("PYTRACEKIT_FOLLOW", None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        for method in a.methods.split(","):
            bare = best([python, POOL, method], a.reps, env, tmp)
            traced = best([cli, "-p", "counter:top=0", "-o", out, POOL, method], a.reps, env,
                          tmp, out)
            followed = best([cli, "-p", "counter:top=0", "--follow-children", "-o", out,
                             POOL, method], a.reps, env, tmp, out)
            nsets = sum(1 for d in os.listdir(out) if d.startswith("pid-")) + 1
            rows.append((method, bare, traced, followed, nsets))
        # One process's start-up: a session from the command, and from the
        # start-up hook of a followed child.
        su_bare = best([python, "-c", "pass"], a.reps * 2, env, tmp)
        su_cmd = best([cli, "-p", "counter:top=0", "-o", out, "-c", "pass"], a.reps * 2, env,
                      tmp, out)
        penv = dict(env)
        penv["PYTHONPATH"] = os.path.join(build, "python")
        su_prog = best([python, "-c", "import atexit, pytracekit\n"
                        "s = pytracekit.Session(['counter:top=0'], output_dir=%r, threads='all')\n"
                        "s.start()\n"
                        "atexit.register(lambda: (s.stop(), s.report()))\n" % out],
                       a.reps * 2, penv, tmp, out)
        fenv = dict(env)
        spec = {"plugins": ["counter:top=0"], "output_dir": out, "threads": "all",
                "backend": env.get("PYTRACEKIT_BACKEND", "auto"), "plugin_path": None,
                "pkgdir": os.path.join(build, "python")}
        fenv["PYTRACEKIT_FOLLOW"] = json.dumps(spec)
        fenv["PYTHONPATH"] = os.path.join(build, "python", "pytracekit", "_follow")
        os.makedirs(out, exist_ok=True)
        su_follow = best([python, "-c", "pass"], a.reps * 2, fenv, tmp)

    print("Python %s, %s, min of %d runs: whole-process wall time, and CPU time "
          "(user+system, with the workers)" % (
              version, os.environ.get("PYTRACEKIT_BACKEND", "default backend"), a.reps))
    print()
    print("Pool(8), 1,000 short tasks")
    print("| start method | bare s | traced s | followed s | report sets "
          "| traced/bare | followed/traced | CPU traced/bare | CPU followed/traced |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for method, bare, traced, followed, nsets in rows:
        print("| %s | %.3f | %.3f | %.3f | %d | %.2fx | %.2fx | %.2fx | %.2fx |" % (
            method, bare[0], traced[0], followed[0], nsets, traced[0] / bare[0],
            followed[0] / traced[0], traced[1] / bare[1], followed[1] / traced[1]))
    print()
    print("Start-up of one process (`-c pass`)")
    print("| | wall s | wall minus bare (ms) | CPU s | CPU minus bare (ms) |")
    print("|---|---:|---:|---:|---:|")
    for label, t in (("bare python", su_bare), ("session from the command", su_cmd),
                     ("session started by the program (pytracekit.Session)", su_prog),
                     ("session from the start-up hook (followed child)", su_follow)):
        print("| %s | %.4f | %.1f | %.4f | %.1f |" % (
            label, t[0], (t[0] - su_bare[0]) * 1000, t[1], (t[1] - su_bare[1]) * 1000))


if __name__ == "__main__":
    main()
