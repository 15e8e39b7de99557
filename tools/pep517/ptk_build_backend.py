"""pytracekit's PEP 517 build backend: CMake builds and installs the project
into a staging prefix, and that prefix becomes a wheel.

It needs nothing but the standard library, CMake and a C compiler
(pyproject.toml: ``requires = []``), so ``pip install .`` and ``pip wheel .``
work with no package index. The version comes from
include/pytracekit/version.h, as CMake's does.

The wheel maps the prefix onto the install scheme of the environment it is
installed into (a virtual environment's directory, or a Python's prefix):

    lib/pythonX.Y/site-packages/pytracekit/  ->  the wheel's root (platlib)
    bin/pytracekit                           ->  .data/scripts/
    include/, lib/ (library, plugins, pkgconfig, cmake), share/
                                             ->  .data/data/ (the prefix)

so the layout under the prefix is exactly ``cmake --install``'s, and every
relative path the library, the command, pytracekit.pc and the CMake package
rely on holds.

config_settings (``pip wheel . --config-settings KEY=VALUE``):
    build-dir    reuse this CMake build directory (default: a temporary one;
                 see below)
    build-type   CMAKE_BUILD_TYPE (default: Release)
    cmake-args   extra arguments for CMake's configure step, space separated

A compiler launcher in the environment (``CMAKE_C_COMPILER_LAUNCHER=ccache``,
which CMake reads itself) is used; the default build directory is then one
whose name does not change between builds of the same tree for the same
Python (made empty first, removed after, one build at a time), because the
build directory is on the compiler's command line (its generated headers)
and a random name would miss the cache every time.
"""
import base64
import fcntl
import hashlib
import io
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "pytracekit"
SUMMARY = "An event bus for CPython's profile, trace and reference hooks, with plugins"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _version():
    with open(os.path.join(ROOT, "include", "pytracekit", "version.h")) as f:
        text = f.read()
    parts = [re.search(rf"#define PTK_VERSION_{p} (\d+)", text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def _metadata():
    readme = ""
    try:
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = f.read()
    except OSError:
        pass
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
            f"Summary: {SUMMARY}\nRequires-Python: >=3.11\n"
            "Classifier: Programming Language :: C\n"
            "Classifier: Programming Language :: Python :: Implementation :: CPython\n"
            "Classifier: Topic :: Software Development :: Debuggers\n"
            "Description-Content-Type: text/markdown\n\n" + readme)


def _tag():
    impl = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    abi = impl + getattr(sys, "abiflags", "")
    plat = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{impl}-{abi}-{plat}"


def _wheel_file():
    return (f"Wheel-Version: 1.0\nGenerator: ptk_build_backend {_version()}\n"
            f"Root-Is-Purelib: false\nTag: {_tag()}\n")


def _entry_points():
    # pytest finds the pytest plugin through this (docs/pytest.md)
    return "[pytest11]\npytracekit = pytracekit.pytest_plugin\n"


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


# ---- PEP 517 hooks -----------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(_wheel_file())
    with open(os.path.join(d, "entry_points.txt"), "w") as f:
        f.write(_entry_points())
    return _dist_info()


def _run(cmd, **kw):
    print("ptk_build_backend: $", " ".join(shlex.quote(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr, **kw)


def _cmake():
    exe = shutil.which("cmake")
    if exe is None:
        raise RuntimeError("building pytracekit needs CMake (3.25+) on PATH")
    return exe


def _build_and_stage(build_dir, stage, config_settings):
    cs = config_settings or {}
    cmake = _cmake()
    pydir = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
    _run([cmake, "-S", ROOT, "-B", build_dir,
          f"-DCMAKE_BUILD_TYPE={cs.get('build-type', 'Release')}",
          f"-DPython3_EXECUTABLE={sys.executable}",
          "-DPTK_BUILD_TESTS=OFF", "-DCMAKE_INSTALL_LIBDIR=lib",
          "-DPTK_INSTALL_BYTECOMPILE=OFF",  # pip compiles what it installs
          f"-DPTK_INSTALL_PYTHONDIR={pydir}"]
         + shlex.split(cs.get("cmake-args", "")))
    _run([cmake, "--build", build_dir, "-j", os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")])
    _run([cmake, "--install", build_dir, "--prefix", stage])
    return pydir


def _script(path):
    """A Python script's `#!...python...` line becomes `#!python`, which the
    installer replaces with the environment's interpreter; anything else
    (the command is a program) is kept as it is."""
    with open(path, "rb") as f:
        data = f.read()
    first, nl, rest = data.partition(b"\n")
    if first.startswith(b"#!") and b"python" in first:
        return b"#!python" + nl + rest
    return path


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode()


def _stable_build_dir():
    """With a compiler launcher: the build directory of this tree for this
    Python, the same path every time (see the module's comment)."""
    if not os.environ.get("CMAKE_C_COMPILER_LAUNCHER"):
        return None
    key = hashlib.sha256(f"{ROOT}\0{sys.executable}".encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"ptk-wheel-build-{key}")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    cs = config_settings or {}
    tmp = tempfile.mkdtemp(prefix="ptk-wheel-")
    stable = None if cs.get("build-dir") else _stable_build_dir()
    lock = None
    try:
        if stable:
            lock = open(stable + ".lock", "w")
            fcntl.flock(lock, fcntl.LOCK_EX)
            shutil.rmtree(stable, ignore_errors=True)
        build_dir = cs.get("build-dir") or stable or os.path.join(tmp, "build")
        stage = os.path.join(tmp, "stage")
        pydir = _build_and_stage(os.path.abspath(build_dir), stage, cs)
        data = f"{NAME}-{_version()}.data"
        entries = []  # (archive name, file path or bytes, executable)
        for dirpath, dirnames, filenames in os.walk(stage):
            dirnames.sort()
            for fn in sorted(filenames):
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, stage).replace(os.sep, "/")
                if rel.startswith(pydir + "/"):
                    arc = rel[len(pydir) + 1:]
                elif rel.startswith("bin/"):
                    arc = f"{data}/scripts/{rel[4:]}"
                else:
                    arc = f"{data}/data/{rel}"
                # symbolic links (libpytracekit.so -> .so.0 -> .so.0.2.0)
                # become copies: wheels hold regular files only
                mode = os.stat(path).st_mode
                src = path
                if rel.startswith("bin/"):
                    src = _script(path)
                entries.append((arc, src, bool(mode & stat.S_IXUSR)))
        di = _dist_info()
        entries.append((f"{di}/METADATA", _metadata().encode(), False))
        entries.append((f"{di}/WHEEL", _wheel_file().encode(), False))
        entries.append((f"{di}/entry_points.txt", _entry_points().encode(), False))
        name = f"{NAME}-{_version()}-{_tag()}.whl"
        os.makedirs(wheel_directory, exist_ok=True)
        out = os.path.join(wheel_directory, name)
        record = io.StringIO()
        with zipfile.ZipFile(out + ".part", "w", zipfile.ZIP_DEFLATED) as z:
            for arc, src, exe in entries:
                if isinstance(src, bytes):
                    payload = src
                else:
                    with open(src, "rb") as f:
                        payload = f.read()
                info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = ((0o755 if exe else 0o644) | stat.S_IFREG) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, payload)
                record.write(f"{arc},{_record_hash(payload)},{len(payload)}\n")
            record.write(f"{di}/RECORD,,\n")
            info = zipfile.ZipInfo(f"{di}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o644 | stat.S_IFREG) << 16
            z.writestr(info, record.getvalue())
        os.replace(out + ".part", out)
        return name
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if lock:
            shutil.rmtree(stable, ignore_errors=True)
            lock.close()


def _source_files():
    """The files of the source tree: git's list when it is a checkout, else
    every file but build outputs."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        files = [f for f in out.decode().split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames
                       if d not in ("build", ".git", "__pycache__") and
                       not d.startswith("pytracekit-out")]
        files += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in filenames]
    return sorted(files)


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{_version()}"
    name = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    out = os.path.join(sdist_directory, name)
    with tarfile.open(out + ".part", "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel in _source_files():
            path = os.path.join(ROOT, rel)
            if os.path.isfile(path):
                t.add(path, arcname=f"{base}/{rel}", recursive=False)
        pkg = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg)
        t.addfile(info, io.BytesIO(pkg))
    os.replace(out + ".part", out)
    return name
