"""Install-and-consume tests: one CTest test per step.

    python3 consume.py STEP

`stage` installs the build into a staging prefix (the fixture); every other
step uses that prefix alone, the way a downstream user would: pkg-config
with PKG_CONFIG_PATH=<stage>/lib/pkgconfig, CMake with
CMAKE_PREFIX_PATH=<stage>, programs run from <stage>/bin. Nothing of the
build tree is on an include, library or plugin path.

Environment (set by tests/install/CMakeLists.txt): PTK_STAGE, PTK_WORK,
PTK_BUILD_DIR, PTK_SOURCE_DIR, PTK_PYTHON, PTK_CMAKE, PTK_CC, PTK_LIB_TYPE,
PTK_LIBRARY (the built library file), PTK_PLUGINS (names of the shipped
plugins), PTK_VERSION; under PTK_SANITIZE=1 the sanitizer variables of
PTK_TEST_ENV, and PTK_SANITIZE_FLAGS, which the examples are built with.
"""

import json
import os
import re
import shutil
import subprocess
import sys

SKIP = 77

ENV = os.environ
STAGE = ENV["PTK_STAGE"]
WORK = ENV["PTK_WORK"]
BUILD = ENV["PTK_BUILD_DIR"]
SOURCE = ENV["PTK_SOURCE_DIR"]
PYTHON = ENV["PTK_PYTHON"]
CMAKE = ENV.get("PTK_CMAKE", "cmake")
CC = ENV.get("PTK_CC", "cc")
LIB_TYPE = ENV.get("PTK_LIB_TYPE", "SHARED_LIBRARY")
VERSION = ENV["PTK_VERSION"]
SAN_FLAGS = ENV.get("PTK_SANITIZE_FLAGS", "") if ENV.get("PTK_SANITIZE") == "1" else ""
EXAMPLES = os.path.join(SOURCE, "examples")

_SANITIZER_VARS = ("LD_PRELOAD", "PYTHONMALLOC", "ASAN_OPTIONS", "UBSAN_OPTIONS")
_BUILD_TREE_VARS = ("PYTHONPATH", "PYTRACEKIT_PLUGIN_PATH", "PTK_CLI", "PTK_PLUGIN_DIR",
                    "PTK_TEST_PLUGIN_DIR", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH",
                    "CMAKE_PREFIX_PATH", "CPATH", "C_INCLUDE_PATH", "LIBRARY_PATH")


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def build_env(**extra):
    """For compilers and build tools: no sanitizer preload, nothing of the build."""
    env = {k: v for k, v in ENV.items()
           if k not in _SANITIZER_VARS and k not in _BUILD_TREE_VARS}
    env["PKG_CONFIG_PATH"] = os.path.join(STAGE, "lib", "pkgconfig")
    env.update(extra)
    return env


def run_env(**extra):
    """For the programs under test: the sanitizer runtime if any, nothing of the build."""
    env = {k: v for k, v in ENV.items() if k not in _BUILD_TREE_VARS}
    env.update(extra)
    return env


def sh(cmd, env, cwd=None, expect=0, quiet=False):
    print("$", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if p.stdout and not quiet:
        print(p.stdout, end="" if p.stdout.endswith("\n") else "\n")
    if p.stderr:
        print(p.stderr, end="" if p.stderr.endswith("\n") else "\n", file=sys.stderr)
    if expect is not None and p.returncode != expect:
        raise Failure(f"{cmd[0]} exited with {p.returncode}, expected {expect}")
    return p


def pkg_config(*args, env=None):
    return sh(["pkg-config", *args, "pytracekit"], env or build_env()).stdout.strip()


class Skip(Exception):
    pass


def need(*tools):
    """Skips the step (exit 77) when a tool it runs is not installed."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise Skip(f"needs {', '.join(missing)}, not found on PATH")


def fresh_dir(name):
    path = os.path.join(WORK, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def cli():
    return os.path.join(STAGE, "bin", "pytracekit")


def cmake_example(name, **defs):
    """Configures and builds examples/NAME against the staging prefix."""
    bdir = fresh_dir(name)
    cmd = [CMAKE, "-S", os.path.join(EXAMPLES, name), "-B", bdir,
           f"-DCMAKE_PREFIX_PATH={STAGE}", "-DCMAKE_BUILD_TYPE=Debug",
           "-DCMAKE_C_FLAGS=-Werror " + SAN_FLAGS]
    if SAN_FLAGS:
        for kind in ("EXE", "SHARED", "MODULE"):
            cmd.append(f"-DCMAKE_{kind}_LINKER_FLAGS={SAN_FLAGS}")
    cmd += [f"-D{k}={v}" for k, v in defs.items()]
    sh(cmd, build_env())
    sh([CMAKE, "--build", bdir, "-j2"], build_env())
    return bdir


def no_build_paths(path):
    """No installed text file names the build or the source tree."""
    with open(path, errors="replace") as f:
        text = f.read()
    for tree in (BUILD, SOURCE):
        check(tree not in text, f"{path} mentions {tree}")


# ---- steps ------------------------------------------------------------------

def step_stage():
    shutil.rmtree(STAGE, ignore_errors=True)
    sh([CMAKE, "--install", BUILD, "--prefix", STAGE], build_env())
    check(os.path.isdir(os.path.join(STAGE, "include", "pytracekit")), "no headers installed")


def step_layout():
    need("readelf", "ldd")
    def exists(rel):
        check(os.path.exists(os.path.join(STAGE, rel)), f"missing {rel}")
        print("ok", rel)

    headers = sorted(os.listdir(os.path.join(SOURCE, "include", "pytracekit")))
    installed = sorted(os.listdir(os.path.join(STAGE, "include", "pytracekit")))
    check(headers == installed, f"headers: source {headers}, installed {installed}")
    major = VERSION.split(".")[0]
    if LIB_TYPE == "SHARED_LIBRARY":
        exists(f"lib/libpytracekit.so.{VERSION}")
        for link, target in ((f"lib/libpytracekit.so.{major}", f"libpytracekit.so.{VERSION}"),
                             ("lib/libpytracekit.so", f"libpytracekit.so.{major}")):
            p = os.path.join(STAGE, link)
            check(os.path.islink(p) and os.readlink(p) == target,
                  f"{link} should be a symlink to {target}")
            print("ok", link, "->", target)
        soname = sh(["readelf", "-d", os.path.join(STAGE, "lib", "libpytracekit.so")],
                    build_env(), quiet=True).stdout
        check(f"[libpytracekit.so.{major}]" in soname, "SONAME is not libpytracekit.so.MAJOR")
    else:
        exists("lib/libpytracekit.a")
    for name in ENV.get("PTK_PLUGINS", "").split(","):
        if name:
            exists(f"lib/pytracekit/plugins/{name}.so")
    exists("bin/pytracekit")
    # every command installed is one a user can read about: named, as a
    # command, in the getting-started guide
    with open(os.path.join(SOURCE, "docs", "getting-started.md"), encoding="utf-8") as f:
        guide = f.read()
    for prog in sorted(os.listdir(os.path.join(STAGE, "bin"))):
        check(f"`{prog}`" in guide or f"\n    {prog} " in guide,
              f"bin/{prog} is installed but docs/getting-started.md does not name it")
        print("ok bin/%s documented" % prog)
    exists("lib/pkgconfig/pytracekit.pc")
    for f in ("pytracekitConfig.cmake", "pytracekitConfigVersion.cmake",
              "pytracekitTargets.cmake"):
        exists(f"lib/cmake/pytracekit/{f}")
    exists("share/doc/pytracekit/README.md")
    exists("share/doc/pytracekit/examples/plugin/calldepth.c")

    no_build_paths(os.path.join(STAGE, "lib/pkgconfig/pytracekit.pc"))
    cmakedir = os.path.join(STAGE, "lib/cmake/pytracekit")
    for f in os.listdir(cmakedir):
        no_build_paths(os.path.join(cmakedir, f))
    # The installed command finds the installed library, not the build's.
    dyn = sh(["readelf", "-d", cli()], build_env(), quiet=True).stdout
    check(BUILD not in dyn, "bin/pytracekit has the build tree in its RUNPATH")
    if LIB_TYPE == "SHARED_LIBRARY":
        check("$ORIGIN/../lib" in dyn, "bin/pytracekit lacks RUNPATH $ORIGIN/../lib")
        ldd = sh(["ldd", cli()], run_env()).stdout
        lib = re.search(r"libpytracekit\.so\.\d+ => (\S+)", ldd)
        check(lib and os.path.realpath(lib.group(1)).startswith(os.path.realpath(STAGE)),
              "bin/pytracekit does not load the staged libpytracekit")
        print("ok bin/pytracekit loads", lib.group(1))


def _nm_exports(path):
    """Names of the defined dynamic symbols (the version node itself aside)."""
    out = sh(["nm", "-D", "--defined-only", path], build_env()).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] != "A":
            names.add(parts[2].split("@")[0])
    return names


def _header_api():
    names = set()
    inc = os.path.join(SOURCE, "include", "pytracekit")
    decl = re.compile(r"\bPTK_API\b([^;{]*?)\b([A-Za-z_][A-Za-z_0-9]*)\s*\(", re.S)
    for h in sorted(os.listdir(inc)):
        with open(os.path.join(inc, h)) as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)   # comments
        text = re.sub(r"^\s*#.*?(?<!\\)$", "", text, flags=re.M | re.S)  # directives
        for m in decl.finditer(text):
            names.add(m.group(2))
    return names


def _listed(path, pattern):
    with open(path) as f:
        return {m.group(1) for m in re.finditer(pattern, f.read(), re.M)}


def step_exports():
    need("nm")
    headers = _header_api()
    listed = _listed(os.path.join(SOURCE, "lib", "exports.txt"), r"^(ptk_\w+)\s*$")
    mapped = _listed(os.path.join(SOURCE, "lib", "pytracekit.map"), r"^\s*(ptk_\w+);")
    print(f"{len(headers)} PTK_API declarations, {len(listed)} in lib/exports.txt, "
          f"{len(mapped)} in lib/pytracekit.map")
    problems = []
    for a, an, b, bn in ((listed, "lib/exports.txt", headers, "PTK_API in the headers"),
                         (mapped, "lib/pytracekit.map", listed, "lib/exports.txt")):
        for n in sorted(a - b):
            problems.append(f"{n}: in {an}, not in {bn}")
        for n in sorted(b - a):
            problems.append(f"{n}: in {bn}, not in {an}")
    if LIB_TYPE == "SHARED_LIBRARY":
        lib = os.path.realpath(os.path.join(STAGE, "lib", "libpytracekit.so"))
        exported = _nm_exports(lib)
        print(f"{len(exported)} symbols exported by {lib}")
        for n in sorted(exported - listed):
            problems.append(f"{n}: exported by the library, not in lib/exports.txt")
        for n in sorted(listed - exported):
            problems.append(f"{n}: in lib/exports.txt, not exported by the library")
        # Each public symbol carries the version node of the map.
        out = sh(["nm", "-D", "--defined-only", "--with-symbol-versions", lib],
                 build_env(), quiet=True).stdout
        for n in sorted(listed & exported):
            if not re.search(rf"\b{n}@@PYTRACEKIT_0\b", out):
                problems.append(f"{n}: exported without the version PYTRACEKIT_0")
    else:
        print("static library: no dynamic symbol table; header/list/map checked only")
    for p in problems:
        print("MISMATCH", p)
    check(not problems, f"{len(problems)} export mismatches")


def step_pkgconfig():
    need("pkg-config")
    env = build_env()
    check(pkg_config("--modversion", env=env) == VERSION, "--modversion")
    cflags = pkg_config("--cflags", env=env).split()
    incs = [f[2:] for f in cflags if f.startswith("-I")]
    check(any(os.path.isfile(os.path.join(d, "pytracekit", "plugin.h")) and
              os.path.realpath(d).startswith(os.path.realpath(STAGE)) for d in incs),
          f"--cflags {cflags} lacks the staged include directory")
    check(any(os.path.isfile(os.path.join(d, "Python.h")) for d in incs),
          f"--cflags {cflags} lacks Python's include directory")
    libs = pkg_config("--libs", env=env).split()
    check("-lpytracekit" in libs, f"--libs {libs}")
    check(any(f.startswith("-L") and os.path.realpath(f[2:]) ==
              os.path.realpath(os.path.join(STAGE, "lib")) for f in libs), f"--libs {libs}")
    plugindir = pkg_config("--variable=plugindir", env=env)
    check(os.path.realpath(plugindir) == os.path.realpath(
        os.path.join(STAGE, "lib", "pytracekit", "plugins")), f"plugindir {plugindir}")
    check(os.path.isfile(os.path.join(plugindir, "counter.so")), "no counter.so in plugindir")
    pyver = pkg_config("--variable=python_version", env=env)
    check(pyver == "%d.%d" % sys.version_info[:2] or pyver == sh(
        [PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        run_env()).stdout.strip(), f"python_version {pyver}")

    # Relocatable: a copy of the tree elsewhere describes itself.
    moved = os.path.join(fresh_dir("moved"), "prefix")
    shutil.copytree(STAGE, moved, symlinks=True)
    menv = build_env(PKG_CONFIG_PATH=os.path.join(moved, "lib", "pkgconfig"))
    mflags = pkg_config("--cflags", "--libs", env=menv)
    check(os.path.realpath(pkg_config("--variable=plugindir", env=menv)) == os.path.realpath(
        os.path.join(moved, "lib", "pytracekit", "plugins")), "moved plugindir")
    # ... and a program built from the moved tree links and runs.
    src = os.path.join(WORK, "moved", "version.c")
    with open(src, "w") as f:
        f.write('#include <pytracekit/pytracekit.h>\n#include <stdio.h>\n#include <string.h>\n'
                'int main(void) {\n'
                '    printf("%s\\n", ptk_version_string());\n'
                '    return ptk_version() == PTK_VERSION_HEX\n'
                '        && strcmp(ptk_err_name(PTK_ENOENT), "PTK_ENOENT") == 0 ? 0 : 1;\n'
                '}\n')
    exe = os.path.join(WORK, "moved", "version")
    pylib = pkg_config("--variable=python_libdir", env=menv)
    pyver = pkg_config("--variable=python_version", env=menv)
    # libpytracekit takes Python's symbols from the process: link libpython.
    sh([CC, "-std=c11", "-Wall", "-Werror", *SAN_FLAGS.split(), src, "-o", exe,
        *mflags.split(), f"-L{pylib}", f"-lpython{pyver}", f"-Wl,-rpath,{pylib}",
        f"-Wl,-rpath,{os.path.join(moved, 'lib')}"], menv)
    out = sh([exe], run_env()).stdout.strip()
    check(out == VERSION, f"moved program printed {out!r}")
    # ... and the moved command finds the moved library and its plugins.
    listing = sh([os.path.join(moved, "bin", "pytracekit"), "--list-plugins"], run_env()).stdout
    files = re.findall(r"^\s*file: (\S+)", listing, re.M)
    check(files and all(os.path.realpath(f).startswith(os.path.realpath(moved) + os.sep)
                        for f in files), f"moved command lists plugins {files}")
    check(any(f.endswith("/counter.so") for f in files), "moved command does not find counter")


def step_cmake_package():
    probe = os.path.join(SOURCE, "tests", "install", "cmake-probe")
    minor = ".".join(VERSION.split(".")[:2])
    for want, more, ok in ((VERSION, "", True), (minor, "", True),
                           ("99.0", "", False), (minor, "no_such_component", False)):
        bdir = fresh_dir("cmake-probe")
        p = sh([CMAKE, "-S", probe, "-B", bdir, f"-DCMAKE_PREFIX_PATH={STAGE}",
                f"-DPROBE_VERSION={want}", f"-DPROBE_STAGE={STAGE}",
                f"-DPROBE_MORE_COMPONENTS={more}",
                f"-DCMAKE_C_FLAGS={SAN_FLAGS}", f"-DCMAKE_EXE_LINKER_FLAGS={SAN_FLAGS}"],
               build_env(), expect=None)
        what = f"find_package(pytracekit {want} COMPONENTS embed {more})"
        if ok:
            check(p.returncode == 0, f"{what} failed")
            sh([CMAKE, "--build", bdir], build_env())
            out = sh([os.path.join(bdir, "probe")], run_env()).stdout.strip()
            check(out == VERSION, f"probe printed {out!r}")
        else:
            check(p.returncode != 0 and "pytracekit" in p.stderr, f"{what} should fail")
            print(f"ok: {what} rejected")


def step_plugin():
    need("make", "pkg-config")
    src = os.path.join(EXAMPLES, "plugin")
    wdir = fresh_dir("plugin")
    for f in ("Makefile", "calldepth.c", "demo.py"):
        shutil.copy(os.path.join(src, f), wdir)
    make = ["make", "-C", wdir, f"CC={CC}", "PKG_CONFIG=pkg-config"]
    if SAN_FLAGS:
        make.append(f"CFLAGS=-O1 -g {SAN_FLAGS}")
    sh(make, build_env())
    out = os.path.join(wdir, "out")
    p = sh([cli(), "-o", out, "-p", "./calldepth.so:root=main", "demo.py"],
           run_env(), cwd=wdir)
    check("demo: total 11" in p.stdout, "demo.py did not run")
    with open(os.path.join(out, "calldepth.txt")) as f:
        got = f.read()
    want = ("# calldepth: Python calls by depth below main()\n"
            "depth calls\n1 1\n2 4\n3 7\n4 1\n5 1\n6 1\n7 1\n"
            "total 16\nmax 7\n"
            "deepest main > rec > rec > rec > rec > rec > rec\n")
    check(got == want, f"calldepth.txt:\n{got}\nexpected:\n{want}")
    check("calldepth: 16 calls, max depth 7 below main()" in p.stderr, "no summary")
    # The Makefile's own run target does the same.
    sh(["make", "-C", wdir, "run", f"PYTRACEKIT={cli()}"], run_env(
        PKG_CONFIG_PATH=os.path.join(STAGE, "lib", "pkgconfig")))
    # An option the plugin does not declare is an error, not silence.
    p = sh([cli(), "-o", out, "-p", "./calldepth.so:depth=3", "demo.py"], run_env(),
           cwd=wdir, expect=None)
    check(p.returncode != 0 and "depth" in p.stderr, "unknown option accepted")


def step_extension():
    bdir = cmake_example("extension")
    p = sh([PYTHON, os.path.join(EXAMPLES, "extension", "demo.py")],
           run_env(PYTHONPATH=bdir), cwd=bdir)
    check("matches sys.setprofile" in p.stdout, "demo.py did not finish")
    check(re.search(r"fib +line +\d+ +465 calls", p.stdout), "fib count missing")


def step_embed():
    bdir = cmake_example("embed")
    out = os.path.join(bdir, "out")
    p = sh([os.path.join(bdir, "embed"), out], run_env(), cwd=bdir)
    check(p.stdout.count("embed: top words [('the', 5), ('events', 2), ('and', 1)]\n") == 3,
          "unexpected result (three rounds of initialize, trace, finalize)")
    check(re.findall(r"embed: round (\d)", p.stdout) == ["1", "2", "3"], "three rounds")
    with open(os.path.join(out, "counter.json")) as f:
        report = json.load(f)
    calls = {f["qualname"]: f["calls"] for f in report["functions"]
             if f.get("kind") == "python" and f.get("file") == "<string>"}
    # 21 words, 16 distinct; one traced run only.
    want = {"<module>": 1, "analyse": 1, "Stats.__init__": 1, "Stats.add": 21,
            "words": 22, "Stats.top": 1, "Stats.top.<locals>.<lambda>": 16}
    check(calls == want, f"counter.json calls {calls}, expected {want}")


def step_workload():
    wl = os.path.join(EXAMPLES, "workload")
    with open(os.path.join(wl, "expected-output.txt")) as f:
        want = f.read()
    bare = sh([PYTHON, os.path.join(wl, "main.py")], run_env()).stdout
    check(bare == want, "bare output differs from expected-output.txt")
    out = fresh_dir("workload")
    p = sh([cli(), "-o", out, "-p", "counter", os.path.join(wl, "main.py")], run_env())
    check(p.stdout == want, "traced output differs from the bare one")
    with open(os.path.join(out, "counter.json")) as f:
        report = json.load(f)
    calls = {(f["qualname"], os.path.basename(f["file"] or ""), f["line"]): f["calls"]
             for f in report["functions"] if f.get("kind") == "python"}
    oracle = json.loads(sh([PYTHON, os.path.join(SOURCE, "tests", "install",
                                                 "workload_oracle.py"), wl],
                           run_env(), quiet=True).stdout)
    check(len(oracle) > 50, "the oracle counted too little")
    for name, n in sorted(oracle.items()):
        qual, where = name.split("@")
        base, line = where.split(":")
        got = calls.get((qual, base, int(line)))
        check(got == n, f"{qual} ({base}:{line}): counter says {got}, sys.setprofile {n}")
    print(f"ok: {len(oracle)} workload functions counted as sys.setprofile counts them")


def step_python_module():
    import glob
    sites = glob.glob(os.path.join(STAGE, "lib", "python3.*", "site-packages"))
    check(len(sites) == 1, f"expected one lib/python3.X/site-packages, found {sites}")
    pkg = os.path.join(sites[0], "pytracekit")
    check(os.path.isfile(os.path.join(pkg, "__init__.py")), "no pytracekit/__init__.py")
    check(glob.glob(os.path.join(pkg, "_pytracekit*.so")), "no _pytracekit extension")
    out = fresh_dir("python-module")
    code = f"""
import json, os, pytracekit
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
assert os.path.realpath(pytracekit.__file__).startswith(os.path.realpath({STAGE!r}))
with pytracekit.Session(["counter"], output_dir={out!r}):
    fib(10)
with open(os.path.join({out!r}, "counter.json")) as f:
    calls = {{fn["qualname"]: fn["calls"] for fn in json.load(f)["functions"]}}
assert calls["fib"] == 177, calls
print("pytracekit", pytracekit.__version__, "from", os.path.dirname(pytracekit.__file__))
"""
    p = sh([PYTHON, "-c", code], run_env(PYTHONPATH=sites[0]), cwd=out)
    check(p.stdout.startswith("pytracekit " + VERSION), "the staged module did not run")
    # python -m pytracekit runs a script under the counter, like the command.
    wl = os.path.join(EXAMPLES, "workload", "main.py")
    with open(os.path.join(EXAMPLES, "workload", "expected-output.txt")) as f:
        want = f.read()
    p = sh([PYTHON, "-m", "pytracekit", "-o", out, "-p", "counter", wl],
           run_env(PYTHONPATH=sites[0]), cwd=out)
    check(p.stdout == want, "python -m pytracekit changed the program's output")
    # Its bytecode is installed, naming the installed sources; with DESTDIR,
    # the paths without DESTDIR (where the files will be).
    check_bytecode(pkg, pkg)
    dest = fresh_dir("destdir")
    sh([CMAKE, "--install", BUILD, "--prefix", STAGE, "--component", "python"],
       build_env(DESTDIR=dest))
    check_bytecode(dest + pkg, pkg)


def check_bytecode(pkg, named):
    """Every module under `pkg` has its bytecode for PYTHON, compiled from
    it (the source's size and time in the header) and naming it as it is
    under `named`."""
    code = f"""
import importlib.util, marshal, os, sys
pkg, named = sys.argv[1], sys.argv[2]
n = 0
for d, dirs, files in os.walk(pkg):
    for f in files:
        if not f.endswith(".py"):
            continue
        src = os.path.join(d, f)
        pyc = importlib.util.cache_from_source(src)
        assert os.path.isfile(pyc), "no bytecode for " + src
        with open(pyc, "rb") as fp:
            head = fp.read(16)
            co = marshal.load(fp)
        st = os.stat(src)
        assert head[:4] == importlib.util.MAGIC_NUMBER, pyc
        assert int.from_bytes(head[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF, pyc
        assert int.from_bytes(head[12:16], "little") == st.st_size, pyc
        want = os.path.join(named, os.path.relpath(src, pkg))
        assert co.co_filename == want, (co.co_filename, want)
        n += 1
assert n >= 10, n
print("ok: bytecode of", n, "modules, naming", named)
"""
    sh([PYTHON, "-c", code, pkg, named], run_env())


STEPS = {
    "stage": step_stage,
    "layout": step_layout,
    "exports": step_exports,
    "pkgconfig": step_pkgconfig,
    "cmake-package": step_cmake_package,
    "plugin": step_plugin,
    "extension": step_extension,
    "embed": step_embed,
    "workload": step_workload,
    "python-module": step_python_module,
}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in STEPS:
        print(f"usage: consume.py {{{','.join(STEPS)}}}", file=sys.stderr)
        return 2
    os.makedirs(WORK, exist_ok=True)
    try:
        STEPS[sys.argv[1]]()
    except Failure as exc:
        print(f"FAIL: {exc}", file=sys.stderr)
        return 1
    except Skip as exc:
        print(f"SKIP: {exc}")
        return SKIP
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
