"""Helpers for the timer plugin tests: run a program under the timer and
under cProfile on the same interpreter, load and compare the results."""

import atexit
import json
import marshal
import os
import re
import shutil
import subprocess
import sys
import tempfile

from ptk_testlib import check, fail, skip  # noqa: F401,E402

CLI = os.environ.get("PTK_CLI")
PYTHON = os.environ.get("PTK_PYTHON", sys.executable)
PLUGIN_DIR = os.environ.get("PTK_PLUGIN_DIR")
HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(os.path.dirname(HERE), "timer", "programs")


_made = []


@atexit.register
def _cleanup():
    """Removes the report directories made here, unless PTK_KEEP is set."""
    if not os.environ.get("PTK_KEEP"):
        for d in _made:
            shutil.rmtree(d, ignore_errors=True)


def tempdir(prefix="ptk-timer-"):
    d = tempfile.mkdtemp(prefix=prefix)
    _made.append(d)
    return d








def program(name):
    """Absolute path of a test program in tests/timer/programs."""
    return os.path.join(PROGRAMS, name)


def need_cli():
    if not CLI or not os.path.exists(CLI):
        skip("the pytracekit command is not built (PTK_CLI=%r)" % CLI)


def run_timer(script, opts="", args=(), threads=None, check_rc=True,
              outdir=None):
    """Runs SCRIPT under `pytracekit -p timer:OPTS`. Returns (outdir, proc)."""
    need_cli()
    if outdir is None:
        outdir = tempdir()
    spec = "timer" + (":" + opts if opts else "")
    cmd = [CLI, "-p", spec, "-o", outdir]
    if PLUGIN_DIR:
        cmd += ["--plugin-path", PLUGIN_DIR]
    if threads:
        cmd += ["--threads", threads]
    cmd += [script] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check_rc and proc.returncode != 0:
        fail("%s exited %d\nstdout:\n%s\nstderr:\n%s"
             % (" ".join(cmd), proc.returncode, proc.stdout, proc.stderr))
    return outdir, proc


def cprofile_module():
    """The module that runs cProfile as a command on PYTHON: 3.15 renamed it
    profiling.tracing (cProfile stays as an alias); decided by asking the
    interpreter, not by its version."""
    proc = subprocess.run([PYTHON, "-c", "import importlib.util as u; "
                           "print(u.find_spec('profiling') is not None and "
                           "u.find_spec('profiling.tracing') is not None)"],
                          capture_output=True, text=True, timeout=60)
    return "profiling.tracing" if proc.stdout.strip() == "True" else "cProfile"


def run_cprofile(script, args=()):
    """Runs SCRIPT under `python -m cProfile` (`-m profiling.tracing` where
    the interpreter has it, 3.15+) with the same interpreter and returns its
    stats dict (the pstats file format)."""
    fd, out = tempfile.mkstemp(suffix=".pstats", prefix="ptk-cprofile-")
    os.close(fd)
    module = cprofile_module()
    print("oracle: python -m %s" % module)
    cmd = [PYTHON, "-m", module, "-o", out, script] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        fail("cProfile run failed (%d): %s" % (proc.returncode, proc.stderr))
    with open(out, "rb") as f:
        stats = marshal.load(f)
    os.unlink(out)
    return stats


def load_pstats(path):
    with open(path, "rb") as f:
        return marshal.load(f)


def load_json(outdir):
    with open(os.path.join(outdir, "timer.json")) as f:
        return json.load(f)


def in_program(key, script):
    return key[0] != "~" and os.path.realpath(key[0]) == os.path.realpath(script)


def compare_with_cprofile(ours, theirs, script, ignore_c=()):
    """Compares call counts of the functions defined in SCRIPT, and of every
    edge whose caller is one of them (C callees included), between our stats
    and cProfile's. Returns (problems, nfuncs, nedges, nc_edges).

    The module body is compared only where cProfile has it (from 3.12 its
    profiler starts inside the module frame and never sees its CALL), and is
    not used as a caller for the same reason. C callees whose label contains
    a string of IGNORE_C are left out."""
    problems = []
    funcs = sorted({k for k in list(ours) + list(theirs) if in_program(k, script)})
    nfuncs = 0
    for k in funcs:
        if k[2] == "<module>" and k not in theirs:
            continue
        a, b = ours.get(k), theirs.get(k)
        if a is None or b is None:
            problems.append("%s: timer %s, cProfile %s" % (
                k, a and a[:2], b and b[:2]))
        elif tuple(a[:2]) != tuple(b[:2]):
            problems.append("%s: (primitive, calls) timer %s, cProfile %s"
                            % (k, a[:2], b[:2]))
        nfuncs += 1

    def edges(stats):
        out = {}
        for callee, v in stats.items():
            if callee[0] == "~" and any(s in callee[2] for s in ignore_c):
                continue
            for caller, e in v[4].items():
                if in_program(caller, script) and caller[2] != "<module>":
                    out[(caller, callee)] = tuple(e[:2])
        return out

    eo, et = edges(ours), edges(theirs)
    for k in sorted(set(eo) | set(et), key=str):
        if eo.get(k) != et.get(k):
            problems.append("edge %s -> %s: (calls, primitive) timer %s, "
                            "cProfile %s" % (k[0], k[1], eo.get(k), et.get(k)))
    nc = sum(1 for k in et if k[1][0] == "~")
    return problems, nfuncs, len(et), nc


def check_consistent(stats, what="stats"):
    """Own <= inclusive and no negative figures, for every function and edge."""
    eps = 1e-9
    for k, (cc, nc, tt, ct, callers) in stats.items():
        check(0 <= cc <= nc, "%s %s: primitive %d > calls %d" % (what, k, cc, nc))
        check(tt >= 0 and ct >= 0, "%s %s: negative time %r %r" % (what, k, tt, ct))
        check(tt <= ct + eps, "%s %s: own %.9f > inclusive %.9f" % (what, k, tt, ct))
        for caller, (enc, ecc, ett, ect) in callers.items():
            check(0 <= ecc <= enc, "%s edge %s->%s: counts %d/%d" % (what, caller, k, enc, ecc))
            check(ett >= 0 and ect >= 0, "%s edge %s->%s negative" % (what, caller, k))
            check(ett <= ect + eps, "%s edge %s->%s own > inclusive" % (what, caller, k))
            check(enc <= nc, "%s edge %s->%s: %d calls > callee's %d" % (what, caller, k, enc, nc))


FOLDED_LINE = re.compile(r"^(\S.*) (\d+)$")


def parse_folded(path):
    """[(frames, microseconds)] of a collapsed-stacks file; fails on a bad line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = FOLDED_LINE.match(line.rstrip("\n"))
            check(m is not None, "%s:%d: not 'stack count': %r" % (path, n, line))
            frames = m.group(1).split(";")
            check(all(frames), "%s:%d: empty frame in %r" % (path, n, line))
            out.append((frames, int(m.group(2))))
    return out


def by_name(stats, name, script=None):
    """The stats entries of functions called NAME (in SCRIPT if given)."""
    return {k: v for k, v in stats.items()
            if k[2] == name and (script is None or in_program(k, script))}


def one(stats, name, script=None):
    found = by_name(stats, name, script)
    check(len(found) == 1, "expected one function %r, found %s" % (name, sorted(found)))
    return next(iter(found.values()))
