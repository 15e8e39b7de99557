"""tools/run-demo, one of the README's two commands, as written: on a clean
copy of the checkout, for this build's Python and then again (built once:
the second run must be quick). It must say which Python and backend it
used, head every plugin's table (reftrack's on 3.13+), not repeat a
section, and end with what opens each report; without an argument it must
take the newest CPython of pyenv's and PATH's. usage: demo.py PYTHON;
demo.py --setup: what tools/setup-machine --demo installs."""
import os
import re
import shutil
import subprocess
import sys
import time

ENV = os.environ
SOURCE = ENV["PTK_SOURCE_DIR"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wheel import clean_env, source_files  # noqa: E402


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    python = sys.argv[1]
    v = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                       capture_output=True, text=True, check=True).stdout.strip()
    root = os.path.join(ENV["PTK_WORK"], "demo")
    shutil.rmtree(root, ignore_errors=True)
    for f in source_files():
        src, dst = os.path.join(SOURCE, f), os.path.join(root, f)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
    for attempt in ("first", "again"):
        t0 = time.time()
        p = subprocess.run([os.path.join(root, "tools", "run-demo"), python], cwd=root,
                           env=clean_env(),
                           capture_output=True, text=True, timeout=900)
        spent = time.time() - t0
        if p.returncode != 0:
            fail("run-demo exited %d:\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
        print("%s run: %.1f s" % (attempt, spent))
    out = p.stdout
    if not os.path.isdir(os.path.join(root, "build", "demo-" + v)):
        fail("no build directory of its own for Python %s" % v)
    if spent > 60:
        fail("a second run took %.0f s" % spent)
    backend = "monitoring" if tuple(map(int, v.split(".")[:2])) >= (3, 12) else "legacy"
    if not re.search(r"Python %s, backend %s" % (re.escape(v), backend), out):
        fail("it does not say Python %s and backend %s:\n%s" % (v, backend, out))
    heads = [ln for ln in out.splitlines() if ln.startswith("== ")]
    if len(heads) != len(set(heads)):
        fail("a repeated section: %s" % heads)
    for want in ("== counter:", "== timer:", "== coverage:", "== timeline:",
                 "== lines:", "== what was written, and what opens it"):
        if not any(h.startswith(want) for h in heads):
            fail("no section %r: %s" % (want, heads))
    for opener in ("pstats", "speedscope", "ui.perfetto.dev", "genhtml", "index.html",
                   "lines.html"):
        if opener not in out.split("== what was written")[-1]:
            fail("the list does not say what opens the reports (%s)" % opener)
    # the counter's table appears once
    if out.count("pytracekit counter:") != 1:
        fail("the counter's figures are shown %d times" % out.count("pytracekit counter:"))
    if tuple(map(int, v.split(".")[:2])) >= (3, 13) and \
            not any(h.startswith("== reftrack:") for h in heads):
        fail("no reftrack section on Python %s: %s" % (v, heads))
    older = default_python(root, python, v)
    print("ok: demo for Python %s (%s), second run %.1f s; without an argument it "
          "took it over %s" % (v, backend, spent, older or "no older interpreter here"))


def version_key(python):
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:3])"],
                         capture_output=True, text=True).stdout.split()
    return tuple(map(int, out)) if len(out) == 3 else None


def default_python(root, python, v):
    """tools/run-demo with no argument takes the newest CPython 3.11+ of
    pyenv's versions and python3 on PATH: here PYENV_ROOT holds this build's
    Python and an older one where there is one, and PATH's python3 is the
    older (the first on PATH is not the one to take); it must say it used
    this build's Python. Returns the older."""
    fake = os.path.join(ENV["PTK_WORK"], "demo-pythons")
    shutil.rmtree(fake, ignore_errors=True)
    pool = [(v, python)]
    mine = version_key(python)
    for cand in ("/usr/bin/python3", "/usr/bin/python3.11"):
        k = version_key(cand) if os.path.exists(cand) else None
        if k is not None and (3, 11) <= k < mine:
            pool.append(("%d.%d.%d" % k, cand))
            break
    for ver, exe in pool:
        os.makedirs(os.path.join(fake, "versions", ver, "bin"))
        os.symlink(exe, os.path.join(fake, "versions", ver, "bin", "python3"))
    os.makedirs(os.path.join(fake, "bin"))
    os.symlink(pool[-1][1], os.path.join(fake, "bin", "python3"))
    env = clean_env(PYENV_ROOT=fake,
                    PATH=os.path.join(fake, "bin") + os.pathsep + ENV.get("PATH", ""))
    p = subprocess.run([os.path.join(root, "tools", "run-demo")], cwd=root, env=env,
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        fail("run-demo without an argument exited %d:\n%s\n%s"
             % (p.returncode, p.stdout, p.stderr))
    if not re.search(r"^== building pytracekit for Python %s \(" % re.escape(v), p.stdout,
                     re.M):
        fail("without an argument it did not take the newest, %s, of %s:\n%s"
             % (v, [x[0] for x in pool], p.stdout))
    return pool[1][0] if len(pool) > 1 else None


def setup_packages():
    """tools/setup-machine --demo, on a machine where nothing is installed
    (dpkg-query and apt-get stand-ins on PATH that record what is asked):
    it installs what a build needs and nothing of the test set-up
    (chromium, protobuf-compiler, speedscope, the unstable root, venvs)."""
    fake = os.path.join(ENV["PTK_WORK"], "demo-setup")
    shutil.rmtree(fake, ignore_errors=True)
    os.makedirs(fake)
    log = os.path.join(fake, "asked")
    for name, body in (("dpkg-query", "exit 1"),
                       ("apt-get", 'echo "apt-get $*" >> "%s"' % log),
                       ("npm", 'echo "npm $*" >> "%s"' % log)):
        with open(os.path.join(fake, name), "w") as f:
            f.write("#!/bin/sh\n%s\n" % body)
        os.chmod(os.path.join(fake, name), 0o755)
    env = clean_env(PATH=fake + os.pathsep + ENV.get("PATH", ""))
    p = subprocess.run([os.path.join(SOURCE, "tools", "setup-machine"), "--demo"],
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("setup-machine --demo exited %d: %s" % (p.returncode, p.stderr))
    with open(log) as f:
        asked = f.read().split("\n")
    installs = [ln.split() for ln in asked if ln.startswith("apt-get install")]
    if len(installs) != 1:
        fail("apt-get calls %r" % asked)
    pkgs = sorted(w for w in installs[0][2:] if not w.startswith("-"))
    if pkgs != sorted(["cmake", "gcc", "make", "pkg-config", "python3", "python3-dev"]):
        fail("setup-machine --demo installs %s" % pkgs)
    if any(ln.startswith("npm") for ln in asked):
        fail("setup-machine --demo ran npm: %r" % asked)
    print("ok: setup-machine --demo installs only %s" % " ".join(pkgs))


if sys.argv[1:] == ["--setup"]:
    setup_packages()
else:
    main()
