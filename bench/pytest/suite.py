"""What the benchmarks of a pytest suite share (contexts.py, per_context.py):
the environments of the runs and their CPU time, the rounds interleaved."""
import os
import resource
import subprocess
import sys


def environments(build, pkg):
    """(plain, ours): the environments of a run without and with this
    tree's Python package on the path, PKG on both. One hash seed for every
    run: networkx iterates sets of nodes, and which branch a test takes may
    change with the seed (so would its lines and calls)."""
    base = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    base.pop("PYTEST_ADDOPTS", None)
    plain = dict(base, PYTHONPATH=pkg)
    ours = dict(base, PYTHONPATH=os.path.join(os.path.abspath(build), "python") + ":" + pkg)
    return plain, ours


def cpu_of(cmd, env, cwd):
    """The CPU time (user + system, of the process and its children) of
    one run; exits unless the tests passed or failed (status 0 or 1)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):
        sys.exit(f"{cmd} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best_cpu(variants, rounds, cwd):
    """{name: least CPU s} of each (cmd, env) of `variants` run `rounds`
    times, one round of every variant after the other."""
    cpu = {k: [] for k in variants}
    for _ in range(rounds):
        for name, (cmd, env) in variants.items():
            cpu[name].append(cpu_of(cmd, env, cwd))
    return {k: min(v) for k, v in cpu.items()}
