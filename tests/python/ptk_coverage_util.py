"""Shared helpers of the coverage plugin tests (tests/coverage)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from ptk_testlib import (BACKEND, FRAME_HOOK, MONITORING, fail, shared, skip,  # noqa: F401,E402
                         load_module, source_digest)
# (a PLAIN_DRIVER script: the command gets PYTHONMALLOC=malloc back; the
# oracles, the settrace collector and coverage.py, run as the script started)
from ptk_sanitize import ORACLE_ENV  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("PTK_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
CORPUS = os.path.join(SOURCE_DIR, "tests", "coverage", "corpus")
TRACER = os.path.join(HERE, "ptk_coverage_tracer.py")
COMBINE = os.path.join(SOURCE_DIR, "tools", "pytracekit-coverage.py")


def env(name):
    v = os.environ.get(name)
    if not v:
        fail("environment variable %s is not set (run through ctest)" % name)
    return v






def python():
    return env("PTK_PYTHON")


def workdir(name):
    """A new directory for one test run: unique, since tests that share a name
    (a program run with different arguments, and each test's @monitoring
    copy) run at the same time."""
    return tempfile.mkdtemp(prefix="work-%s-%s-" % (name, BACKEND), dir=os.getcwd())


def copy_corpus(dest, *names):
    """Copies corpus files/dirs into dest (so paths are under our control)."""
    for n in names:
        src = os.path.join(CORPUS, n)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, n))
        else:
            shutil.copy(src, os.path.join(dest, n))
    return dest


def run(cmd, cwd, expect=0, env_extra=None, oracle=False):
    """Runs cmd; oracle: a process that loads none of our code (the
    settrace collector, coverage.py), started in the script's environment
    as it started (under ASan as a PLAIN_DRIVER: without the sanitizer
    runtimes, on Python's own allocator)."""
    e = dict(ORACLE_ENV if oracle else os.environ)
    if env_extra:
        e.update(env_extra)
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=e, timeout=300)
    if expect is not None and p.returncode != expect:
        fail("%s exited with %d (expected %d)\nstdout:\n%s\nstderr:\n%s"
             % (" ".join(cmd), p.returncode, expect, p.stdout, p.stderr))
    return p


def run_ptk(cwd, script_and_args, spec="coverage", outdir="out", threads=None, expect=0,
            env_extra=None):
    """Runs the pytracekit command; returns (process, coverage.json data or None)."""
    cmd = [env("PTK_CLI"), "--plugin-path", env("PTK_PLUGIN_DIR"), "-p", spec, "-o", outdir]
    if threads:
        cmd += ["--threads", threads]
    p = run(cmd + list(script_and_args), cwd, expect=expect, env_extra=env_extra)
    path = os.path.join(cwd, outdir, "coverage.json")
    data = None
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    return p, data


def program_corpus(name, work=None):
    """A corpus directory holding main.py and the modules it imports from
    its first argument (the directory itself), copied to a new work
    directory: returns (workdir, main.py, the directory)."""
    wd = workdir(work or name)
    copy_corpus(wd, name)
    lib = os.path.join(wd, name)
    return wd, os.path.join(lib, "main.py"), lib


def check_bare_output(p, script_and_args, cwd):
    """Fails unless process p printed what the program prints run bare."""
    bare = run([python()] + list(script_and_args), cwd)
    if p.stdout != bare.stdout:
        fail("the program's output changed under pytracekit:\n  bare: %r\n  ptk:  %r"
             % (bare.stdout, p.stdout))


def run_oracle(cwd, script_and_args, threads=False):
    """The pure-Python settrace collector on the same interpreter."""
    out = os.path.join(cwd, "oracle.json")
    cmd = [python(), TRACER, out] + (["--threads"] if threads else []) + list(script_and_args)
    run(cmd, cwd, expect=None, oracle=True)
    with open(out) as f:
        return json.load(f)["files"]


def coveragepy_available():
    """(True, version) if coverage.py's C tracer runs on this interpreter."""
    p = subprocess.run([python(), "-c",
                        "import coverage, coverage.tracer; print(coverage.__version__)"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        return False, "coverage.py (with its C tracer) is not importable by %s" % python()
    return True, p.stdout.strip()


def run_coveragepy(cwd, script_and_args, branch=False, core="ctrace", include=None):
    """coverage.py's measured (raw) data: {file: {"lines": set, "arcs": set}}.

    core is coverage.py's measuring core (COVERAGE_CORE). The default,
    ctrace, is its C trace function: its arcs are the line-to-line
    transitions a trace function sees, on every version. Its own default
    differs by version: from 3.14 (coverage.py 7.9+) it is sysmon, whose
    branch data are (n, n) for each line run and (line, destination) for
    each branch direction taken (BRANCH_LEFT / BRANCH_RIGHT), not
    transitions. include: coverage.py's --include patterns instead of
    --source=cwd."""
    datafile = os.path.join(cwd, ".coverage-oracle")
    cmd = [python(), "-m", "coverage", "run", "--data-file=" + datafile]
    cmd.append("--include=" + include if include else "--source=" + cwd)
    if branch:
        cmd.append("--branch")
    run(cmd + list(script_and_args), cwd, expect=None, oracle=True,
        env_extra={"COVERAGE_RCFILE": os.devnull, "COVERAGE_CORE": core})
    code = ("import coverage, json, sys\n"
            "d = coverage.CoverageData(basename=sys.argv[1]); d.read()\n"
            "out = {}\n"
            "for f in d.measured_files():\n"
            "    out[f] = {'lines': sorted(d.lines(f) or []),\n"
            "              'arcs': sorted(d.arcs(f) or []) if d.has_arcs() else None,\n"
            "              'tracer': d.file_tracer(f)}\n"
            "print(json.dumps(out))\n")
    p = run([python(), "-c", code, datafile], cwd, oracle=True)
    raw = json.loads(p.stdout)
    return {f: {"lines": set(v["lines"]),
                "arcs": set(map(tuple, v["arcs"])) if v["arcs"] is not None else None}
            for f, v in raw.items()}


# ---- reading our data ----------------------------------------------------


def executed(data):
    """{file: set of executed lines} from our coverage.json."""
    return {f: {n for n, c in rec["hits"]} for f, rec in data["files"].items()}


def possible(data):
    return {f: set(rec["lines"]) for f, rec in data["files"].items()}


def arcs(data):
    return {f: {(a, b): c for a, b, c in rec["arcs"]} for f, rec in data["files"].items()}


def functions(data):
    return {f: {(n, l): c for n, l, c in rec["functions"]} for f, rec in data["files"].items()}


def oracle_lines(oracle, files):
    return {f: {int(n) for n in oracle.get(f, {}).get("lines", {})} for f in files}


def oracle_arcs(oracle, files):
    return {f: {(a, b): c for a, b, c in oracle.get(f, {}).get("arcs", [])} for f in files}


def oracle_starts(oracle, files):
    return {f: {(q, l): c for q, l, c in oracle.get(f, {}).get("starts", [])} for f in files}


def compare_sets(what, ours, theirs, oracle_name):
    """Fails with a per-file diff unless the two {file: set} maps are equal."""
    errors = []
    for f in sorted(set(ours) | set(theirs)):
        a, b = ours.get(f, set()), theirs.get(f, set())
        if a != b:
            errors.append("%s: %s\n  only ours: %s\n  only %s: %s"
                          % (what, f, sorted(a - b), oracle_name, sorted(b - a)))
    if errors:
        fail("\n".join(errors))


def compare_maps(what, ours, theirs, oracle_name):
    errors = []
    for f in sorted(set(ours) | set(theirs)):
        a, b = ours.get(f, {}), theirs.get(f, {})
        if a != b:
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            errors.append("%s: %s\n  %s" % (what, f, "\n  ".join(
                "%r: ours %r, %s %r" % (k, a.get(k), oracle_name, b.get(k)) for k in diff)))
    if errors:
        fail("\n".join(errors))


def python_version():
    p = run([python(), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], ".")
    return p.stdout.strip()


def format_module():
    """The coverage plugin's report writer (tools/pytracekit-coverage.py),
    a fresh module each call."""
    return load_module("_ptk_coverage_format", COMBINE)


def modeled(data):
    """coverage.json's data as its reports count it: each file's record in
    coverage.py's statement model (the report writer's model_record, which
    coverage.model.* checks against coverage.py itself)."""
    fmt = format_module()
    branch = bool(data["meta"].get("branch"))
    return dict(data, files={p: fmt.model_record(p, rec, branch)
                             for p, rec in data["files"].items()})
