"""pip install tests: a wheel built from a clean copy of the checkout with no
network, installed into a fresh virtual environment, used from there.

    python3 wheel.py PYTHON STEP

PYTHON is the interpreter the wheel is built for and the venv made with
(any of the supported ones, not only the one this build is configured for).
`build` (the fixture) copies the checkout's files (git ls-files: tracked and
new, nothing ignored, no build tree), runs `pip wheel` on it in a network
namespace of its own (unshare -n: no network at all; where that is not
possible, pip with --no-index, which says so), makes a venv, installs the
wheel with `pip install --no-index` and puts a package into the venv only.
Every other step uses that venv alone: nothing of the build tree is on any
path.

Environment (tests/install/CMakeLists.txt): PTK_WORK, PTK_SOURCE_DIR,
PTK_VERSION, PTK_PLUGINS, PTK_CLI (this build's command, for PTK_PYTHON's
version only), PTK_PYTHON.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

SKIP = 77
ENV = os.environ
SOURCE = ENV["PTK_SOURCE_DIR"]
VERSION = ENV["PTK_VERSION"]
_CLEAN = ("PYTHONPATH", "PYTRACEKIT_PLUGIN_PATH", "PTK_PLUGIN_DIR", "LD_LIBRARY_PATH",
          "PKG_CONFIG_PATH", "CMAKE_PREFIX_PATH", "VIRTUAL_ENV", "PYTHONHOME",
          "LD_PRELOAD", "PYTHONMALLOC", "ASAN_OPTIONS", "UBSAN_OPTIONS",
          "PYTRACEKIT_BACKEND")

PROGRAM = r'''
import json, sys
import ptk_venv_only
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print(json.dumps({"prefix": sys.prefix, "base_prefix": sys.base_prefix,
                  "path": sys.path[1:], "argv": sys.argv,
                  "venv_only": ptk_venv_only.VALUE, "fib": fib(12)}))
'''


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def clean_env(**extra):
    env = {k: v for k, v in ENV.items() if k not in _CLEAN}
    env.update(extra)
    return env


def sh(cmd, env=None, cwd=None, expect=0):
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env or clean_env(), cwd=cwd, capture_output=True,
                       text=True, timeout=600)
    if p.stdout:
        print(p.stdout[-4000:], end="" if p.stdout.endswith("\n") else "\n")
    if p.stderr:
        print(p.stderr[-4000:], end="" if p.stderr.endswith("\n") else "\n",
              file=sys.stderr)
    if expect is not None and p.returncode != expect:
        raise Failure(f"{cmd[0]} exited with {p.returncode}, expected {expect}")
    return p


class Ctx:
    def __init__(self, python):
        self.python = python
        out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout
        self.ver = out.strip()
        self.root = os.path.join(ENV["PTK_WORK"], "wheel-py" + self.ver)
        self.venv = os.path.join(self.root, "venv")
        self.bin = os.path.join(self.venv, "bin")
        self.vpython = os.path.join(self.bin, "python")
        self.site = os.path.join(self.venv, "lib", f"python{self.ver}", "site-packages")
        self.work = os.path.join(self.root, "work")

    def fresh(self, name):
        d = os.path.join(self.work, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "prog.py"), "w") as f:
            f.write(PROGRAM)
        return d


def source_files():
    try:
        out = subprocess.run(["git", "-C", SOURCE, "ls-files", "-co", "--exclude-standard", "-z"],
                             check=True, capture_output=True).stdout.decode()
        return [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(SOURCE):
        dirnames[:] = [d for d in dirnames if d not in ("build", ".git", "__pycache__")]
        files += [os.path.relpath(os.path.join(dirpath, f), SOURCE) for f in filenames]
    return files


def offline(cmd):
    """cmd in a network namespace of its own, if this machine allows it."""
    if shutil.which("unshare") and subprocess.run(
            ["unshare", "-n", "true"], capture_output=True).returncode == 0:
        print("no network: unshare -n")
        return ["unshare", "-n"] + cmd
    print("NOTE: cannot unshare the network here; pip runs with --no-index only")
    return cmd


# ---- steps ------------------------------------------------------------------

def step_build(c):
    shutil.rmtree(c.root, ignore_errors=True)
    src = os.path.join(c.root, "src")
    for rel in source_files():
        p = os.path.join(SOURCE, rel)
        if os.path.isfile(p):
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            shutil.copy2(p, os.path.join(src, rel))
    check(not os.path.exists(os.path.join(src, "build")), "the copy has a build tree")
    wheels = os.path.join(c.root, "wheels")
    env = clean_env(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    sh(offline([c.python, "-m", "pip", "wheel", "--no-index", "--no-deps",
                "-w", wheels, src]), env)
    found = os.listdir(wheels)
    check(len(found) == 1 and found[0].endswith(".whl"), f"wheels: {found}")
    tag = "cp" + c.ver.replace(".", "")
    check(found[0].startswith(f"pytracekit-{VERSION}-{tag}-{tag}"),
          f"wheel name {found[0]} (version {VERSION}, {tag})")
    sh([c.python, "-m", "venv", c.venv], env)
    sh(offline([c.vpython, "-m", "pip", "install", "--no-index",
                os.path.join(wheels, found[0])]), env)
    os.makedirs(os.path.join(c.site, "ptk_venv_only"))
    with open(os.path.join(c.site, "ptk_venv_only", "__init__.py"), "w") as f:
        f.write("VALUE = 'only in the venv'\n")


def step_contents(c):
    wheels = os.path.join(c.root, "wheels")
    whl = os.path.join(wheels, os.listdir(wheels)[0])
    names = zipfile.ZipFile(whl).namelist()
    data = f"pytracekit-{VERSION}.data/"
    want = ["pytracekit/__init__.py", "pytracekit/__main__.py", "pytracekit/__init__.pyi",
            "pytracekit/py.typed", data + "scripts/pytracekit",
            data + "data/lib/pkgconfig/pytracekit.pc",
            data + "data/lib/cmake/pytracekit/pytracekitConfig.cmake",
            data + "data/lib/cmake/pytracekit/pytracekitConfigVersion.cmake",
            data + "data/lib/libpytracekit.so.0",
            f"pytracekit-{VERSION}.dist-info/METADATA"]
    want += [data + "data/include/pytracekit/" + h
             for h in os.listdir(os.path.join(SOURCE, "include", "pytracekit"))]
    plugins = [p for p in ENV.get("PTK_PLUGINS", "").split(",") if p]
    if c.ver < "3.13":
        plugins = [p for p in plugins if p != "reftrack"]  # 3.13+ only
    want += [data + f"data/lib/pytracekit/plugins/{p}.so" for p in plugins]
    missing = [w for w in want if w not in names]
    check(not missing, f"not in the wheel: {missing}")
    check(any(re.match(r"pytracekit/_pytracekit\.cpython-.*\.so$", n) for n in names),
          "no extension module in the wheel")
    meta = zipfile.ZipFile(whl).read(f"pytracekit-{VERSION}.dist-info/METADATA").decode()
    check(f"\nVersion: {VERSION}\n" in meta, "METADATA version")
    # pytest finds the plugin through the pytest11 entry point (docs/pytest.md)
    p = sh([c.vpython, "-c", "import importlib.metadata as m; print([(e.name, e.value) for e "
            "in m.entry_points(group='pytest11') if e.dist.name == 'pytracekit'])"])
    check(p.stdout.strip() == "[('pytracekit', 'pytracekit.pytest_plugin')]",
          f"pytest11 entry point: {p.stdout.strip()}")
    check("pytracekit/pytest_plugin.py" in names, "no pytest plugin in the wheel")
    # what pip installed, where the layout wants it
    for rel in ("bin/pytracekit", "lib/pkgconfig/pytracekit.pc", "include/pytracekit/session.h",
                "lib/pytracekit/plugins/counter.so"):
        check(os.path.exists(os.path.join(c.venv, rel)), f"venv lacks {rel}")
    # a Python script among the commands runs with the venv's interpreter
    with open(os.path.join(c.bin, "pytracekit-coverage")) as f:
        first = f.readline().strip()
    check(first.startswith("#!" + c.bin + "/python"), f"pytracekit-coverage: {first}")
    print("ok:", len(names), "files")


def _as_python(c, d):
    """What the venv's python itself says about prog.py."""
    p = sh([c.vpython, "prog.py", "a", "-v"], cwd=d)
    return json.loads(p.stdout)


def _check_program_view(c, got, want, who):
    check(got["venv_only"] == "only in the venv", f"{who}: the venv's package")
    check(os.path.realpath(got["prefix"]) == os.path.realpath(c.venv),
          f"{who}: sys.prefix {got['prefix']}, not the venv")
    check(got["path"] == want["path"], f"{who}: sys.path {got['path']} != python's {want['path']}")
    check(got["argv"] == ["prog.py", "a", "-v"], f"{who}: argv {got['argv']}")
    check(got["base_prefix"] == want["base_prefix"], f"{who}: base_prefix")


def step_command(c):
    d = c.fresh("command")
    want = _as_python(c, d)
    # installed in the venv, run by path: no activation
    p = sh([os.path.join(c.bin, "pytracekit"), "-o", "out", "prog.py", "a", "-v"], cwd=d)
    _check_program_view(c, json.loads(p.stdout), want, "venv/bin/pytracekit")
    calls = {f["qualname"]: f["calls"] for f in
             json.load(open(os.path.join(d, "out", "counter.json")))["functions"]}
    check(calls.get("fib") == 465, f"fib calls {calls.get('fib')}")
    # activated (PATH and VIRTUAL_ENV), by name
    env = clean_env(VIRTUAL_ENV=c.venv, PATH=c.bin + os.pathsep + ENV.get("PATH", ""))
    p = sh(["pytracekit", "-o", "out2", "prog.py", "a", "-v"], env=env, cwd=d)
    _check_program_view(c, json.loads(p.stdout), want, "pytracekit (activated)")
    p = sh([os.path.join(c.bin, "pytracekit"), "--version"])
    check(p.stdout.startswith(f"pytracekit {VERSION} (built for Python {c.ver}."),
          f"--version: {p.stdout!r}")
    # This build's own command (not installed in the venv), run with the venv
    # activated: the venv's, if it is for the same Python.
    cli = ENV.get("PTK_CLI")
    if cli and os.path.realpath(ENV.get("PTK_PYTHON", "")) and _same_version(c, ENV["PTK_PYTHON"]):
        p = sh([cli, "-o", "out3", "prog.py", "a", "-v"], env=env, cwd=d)
        _check_program_view(c, json.loads(p.stdout), want, "build-tree pytracekit (activated)")
    else:
        print("(the build tree's command is for another Python: not run with this venv)")


def _same_version(c, python):
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True).stdout.strip()
    return out == c.ver


def step_module(c):
    d = c.fresh("module")
    want = _as_python(c, d)
    p = sh([c.vpython, "-m", "pytracekit", "-o", "out", "-p", "counter", "-p", "timer:top=0",
            "prog.py", "a", "-v"], cwd=d)
    _check_program_view(c, json.loads(p.stdout), want, "python -m pytracekit")
    p2 = sh([os.path.join(c.bin, "pytracekit"), "-o", "outc", "-p", "counter", "-p",
             "timer:top=0", "prog.py", "a", "-v"], cwd=d)
    check(p.stdout == p2.stdout, "the program's output differs")
    # the same reports for the program's own code
    prog = os.path.join(d, "prog.py")

    def counted(out):
        j = json.load(open(os.path.join(d, out, "counter.json")))
        return sorted((f["qualname"], f["line"], f["calls"]) for f in j["functions"]
                      if f["file"] == prog)

    def timed(out):
        import marshal
        with open(os.path.join(d, out, "timer.pstats"), "rb") as f:
            stats = marshal.load(f)
        return sorted((k, v[0], v[1]) for k, v in stats.items() if k[0] == prog)
    check(counted("out") == counted("outc") and counted("out"),
          f"counter: {counted('out')} vs {counted('outc')}")
    check(timed("out") == timed("outc") and timed("out"),
          f"timer: {timed('out')} vs {timed('outc')}")
    print("same reports:", counted("out"))


def step_import(c):
    d = c.fresh("import")
    code = r'''
import json, os, sys
import pytracekit
assert pytracekit.__file__.startswith(sys.prefix), pytracekit.__file__
names = [p.name for p in pytracekit.plugins()]
assert "counter" in names and "timer" in names, names
with pytracekit.Session(["counter:top=0"], output_dir="out") as s:
    import prog
with open(os.path.join("out", "counter.json")) as f:
    assert s.results["counter"] == json.load(f)
calls = {f["qualname"]: f["calls"] for f in s.results["counter"]["functions"]}
assert calls["fib"] == 465, calls
print("import ok", pytracekit.__version__)
'''
    p = sh([c.vpython, "-c", code], cwd=d)
    check(f"import ok {VERSION}" in p.stdout, "the venv's module did not run")


def step_pkgconfig(c):
    d = c.fresh("plugin")
    pc = sh([c.vpython, "-c", "import pytracekit; print(pytracekit.pkgconfig_dir())"]).stdout.strip()
    check(pc == os.path.join(c.venv, "lib", "pkgconfig"), f"pkgconfig_dir() = {pc}")
    for f in ("calldepth.c", "Makefile", "demo.py"):
        shutil.copy(os.path.join(SOURCE, "examples", "plugin", f), d)
    env = clean_env(PKG_CONFIG_PATH=pc)
    sh(["make", "-C", d, f"PYTRACEKIT={os.path.join(c.bin, 'pytracekit')}"], env=env)
    p = sh(["make", "-C", d, "run", f"PYTRACEKIT={os.path.join(c.bin, 'pytracekit')}"], env=env)
    check(os.listdir(os.path.join(d, "pytracekit-out")), "the plugin wrote nothing")
    print("plugin reports:", os.listdir(os.path.join(d, "pytracekit-out")))
    cflags = sh(["pkg-config", "--cflags", "pytracekit"], env=env).stdout
    check(os.path.join(c.venv, "lib", "pkgconfig", "..", "..", "include") in cflags or
          os.path.join(c.venv, "include") in cflags, f"cflags {cflags}")


def step_cmake(c):
    """find_package(pytracekit) from the venv: its prefix as CMAKE_PREFIX_PATH."""
    if shutil.which(ENV.get("PTK_CMAKE", "cmake")) is None:
        print("SKIP: needs cmake")
        sys.exit(SKIP)
    cmake = ENV.get("PTK_CMAKE", "cmake")
    d = c.fresh("cmake-probe")
    cmd = sh([c.vpython, "-c", "import pytracekit; print(pytracekit.cmake_dir())"]).stdout.strip()
    check(cmd == os.path.join(c.venv, "lib", "cmake", "pytracekit"), f"cmake_dir() = {cmd}")
    probe = os.path.join(SOURCE, "tests", "install", "cmake-probe")
    sh([cmake, "-S", probe, "-B", d, f"-DCMAKE_PREFIX_PATH={c.venv}",
        f"-DPROBE_VERSION={VERSION}", f"-DPROBE_STAGE={c.venv}"])
    sh([cmake, "--build", d])
    out = sh([os.path.join(d, "probe")]).stdout.strip()
    check(out == VERSION, f"probe printed {out!r}")


STEPS = {"build": step_build, "cmake": step_cmake, "contents": step_contents, "command": step_command,
         "module": step_module, "import": step_import, "pkgconfig": step_pkgconfig}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in STEPS:
        print(f"usage: wheel.py PYTHON {{{','.join(STEPS)}}}", file=sys.stderr)
        return 2
    python = sys.argv[1]
    if not os.access(python, os.X_OK):
        print(f"SKIP: no interpreter at {python}")
        return SKIP
    if sys.argv[2] != "build" and shutil.which("make") is None and sys.argv[2] == "pkgconfig":
        print("SKIP: needs make")
        return SKIP
    try:
        STEPS[sys.argv[2]](Ctx(python))
    except Failure as exc:
        print(f"FAIL: {exc}", file=sys.stderr)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
