"""Helpers for the reftrack tests: run programs under the reftrack plugin
(through the pytracekit command or an in-process Session), read
reftrack.json, and reach the test-only reference-tracer probe."""

import json
import os
import subprocess
import sys
import tempfile

from ptk_testlib import MONITORING, check, fail, skip  # noqa: F401,E402

CLI = os.environ.get("PTK_CLI")
PLUGIN_DIR = os.environ.get("PTK_PLUGIN_DIR")
TEST_PLUGIN_DIR = os.environ.get("PTK_TEST_PLUGIN_DIR")
BUILD_DIR = os.environ.get("PTK_BUILD_DIR")
SOURCE_DIR = os.environ.get("PTK_SOURCE_DIR")
PROGRAMS = os.path.join(SOURCE_DIR or "", "tests", "reftrack", "programs")








def eq(found, expected, what):
    """Fails with both values unless found == expected."""
    if found != expected:
        fail("%s: expected %r, found %r" % (what, expected, found))


def program(name):
    return os.path.join(PROGRAMS, name)


def marker_line(path, marker):
    """The 1-based line of PATH that has the comment `# MARKER` (one)."""
    with open(path) as f:
        hits = [i + 1 for i, line in enumerate(f) if "# " + marker in line]
    if len(hits) != 1:
        fail("marker %r found %d times in %s" % (marker, len(hits), path))
    return hits[0]


def need_cli():
    if not CLI or not os.path.exists(CLI):
        fail("the pytracekit command is not built (PTK_CLI=%r)" % CLI)


def run_cli(plugins, target, args=(), expect_rc=0, threads=None):
    """Runs `pytracekit -p P... -o OUT TARGET ARGS`; TARGET is a script path
    or ("-c", code). Returns (outdir, completed process)."""
    need_cli()
    outdir = tempfile.mkdtemp(prefix="ptk-reftrack-")
    cmd = [CLI]
    for p in plugins:
        cmd += ["-p", p]
    cmd += ["-o", outdir]
    if threads:
        cmd += ["--threads", threads]
    cmd += list(target) if isinstance(target, tuple) else [target]
    cmd += [str(a) for a in args]
    env = dict(os.environ)
    if TEST_PLUGIN_DIR:
        env["PYTRACEKIT_PLUGIN_PATH"] = TEST_PLUGIN_DIR
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env=env)
    if expect_rc is not None and proc.returncode != expect_rc:
        fail("%s exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s"
             % (" ".join(cmd), proc.returncode, expect_rc, proc.stdout,
                proc.stderr))
    return outdir, proc


def load(outdir):
    with open(os.path.join(outdir, "reftrack.json")) as f:
        return json.load(f)


def row(report, type_name, section="program"):
    """The per-type row of TYPE_NAME (program types, or the tracing ones)."""
    rows = report["types"] if section == "program" else report["tracing"]["types"]
    hits = [r for r in rows if r["type"] == type_name]
    if len(hits) != 1:
        fail("type %r appears %d times in the %s types" % (type_name, len(hits),
                                                           section))
    return hits[0]


def no_row(report, type_name, section="program"):
    rows = report["types"] if section == "program" else report["tracing"]["types"]
    return not any(r["type"] == type_name for r in rows)


def balanced(report):
    """Every row: created == destroyed + alive + untracked, nothing negative."""
    for section, rows in (("program", report["types"]),
                          ("tracing", report["tracing"]["types"])):
        for r in rows:
            for k in ("created", "destroyed", "alive", "peak", "untracked"):
                check(isinstance(r[k], int) and 0 <= r[k] < 2**62,
                      "%s %s: %s = %r" % (section, r["type"], k, r[k]))
            check(r["created"] == r["destroyed"] + r["alive"] + r["untracked"],
                  "%s %s does not balance: %r" % (section, r["type"], r))
            check(r["peak"] >= r["alive"], "%s %s: peak < alive: %r"
                  % (section, r["type"], r))


def leaks_of(report, type_name):
    return [g for g in report["leaks"] if g["type"] == type_name]


def probe():
    """The _ptk_refprobe test extension (tests/reftrack/refprobe.c)."""
    sys.path.insert(0, os.path.join(BUILD_DIR, "tests", "reftrack"))
    import _ptk_refprobe
    return _ptk_refprobe


def session(plugins, threads="current"):
    """An in-process pytracekit.Session writing into a new directory."""
    import pytracekit
    outdir = tempfile.mkdtemp(prefix="ptk-reftrack-")
    s = pytracekit.Session(plugins=plugins, output_dir=outdir, threads=threads,
                           plugin_path=TEST_PLUGIN_DIR)
    return s, outdir
