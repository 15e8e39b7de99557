"""The coverage analysis reads a file's code from its __pycache__ .pyc only
when the import system would (plugins/coverage/analysis.py, compile_file):
the same magic number and the source's mtime and size, or its hash. Anything
else (an edited source, a changed hash, a damaged file) is compiled from the
source. Which one was used shows in co_filename: the .pyc's are written with
dfile set to a marker.
"""
import importlib.util
import os
import py_compile
import sys

import ptk_coverage_util as u

sys.path.insert(0, os.path.join(u.env("PTK_SOURCE_DIR"), "plugins", "coverage"))
import analysis  # noqa: E402

MARK = "<from the pyc>"
V1 = "def f(x):\n    if x:\n        return 1\n    return 2\n"
V2 = "def f(x):\n    return 3\n\n\ndef g():\n    pass\n"


def lines_of(code):
    out, todo = set(), [code]
    while todo:
        c = todo.pop()
        out.update(l for _, _, l in c.co_lines() if l)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_lines"))
    return out


def write(path, text, mtime):
    with open(path, "w") as f:
        f.write(text)
    os.utime(path, (mtime, mtime))


def expect(what, path, from_pyc, text):
    code = analysis.compile_file(path)
    if not hasattr(code, "co_filename"):
        u.fail("%s: compile_file gave %r" % (what, code))
    got = code.co_filename == MARK
    if got != from_pyc:
        u.fail("%s: code %s, expected %s" % (
            what, "from the .pyc" if got else "compiled", "the .pyc" if from_pyc else "compiled"))
    want = lines_of(compile(text, path, "exec"))
    if lines_of(code) != want:
        u.fail("%s: lines %s, the source has %s" % (what, sorted(lines_of(code)), sorted(want)))
    print("ok: %s (%s)" % (what, "pyc" if from_pyc else "compiled"))


def main():
    wd = u.workdir("pyc")
    path = os.path.join(wd, "mod.py")
    cache = importlib.util.cache_from_source(path)
    ts = py_compile.PycInvalidationMode.TIMESTAMP
    checked = py_compile.PycInvalidationMode.CHECKED_HASH
    unchecked = py_compile.PycInvalidationMode.UNCHECKED_HASH

    write(path, V1, 1_000_000_000)
    expect("no .pyc", path, False, V1)
    py_compile.compile(path, cfile=cache, dfile=MARK, invalidation_mode=ts, doraise=True)
    expect("timestamp .pyc of this source", path, True, V1)
    write(path, V2, 1_000_000_100)
    expect("source edited after the .pyc", path, False, V2)
    write(path, V1 + "\n", 1_000_000_000)
    expect("same mtime, other size", path, False, V1 + "\n")

    write(path, V1, 1_000_000_200)
    py_compile.compile(path, cfile=cache, dfile=MARK, invalidation_mode=checked, doraise=True)
    write(path, V1, 1_000_000_300)
    expect("checked-hash .pyc, source touched but unchanged", path, True, V1)
    write(path, V2, 1_000_000_300)
    expect("checked-hash .pyc, source changed", path, False, V2)

    # the import system would not check an unchecked-hash .pyc; the
    # analysis does, so a stale one is not used
    py_compile.compile(path, cfile=cache, dfile=MARK, invalidation_mode=unchecked, doraise=True)
    expect("unchecked-hash .pyc of this source", path, True, V2)
    write(path, V1, 1_000_000_400)
    expect("unchecked-hash .pyc, source changed", path, False, V1)

    py_compile.compile(path, cfile=cache, dfile=MARK, invalidation_mode=ts, doraise=True)
    with open(cache, "rb") as f:
        data = f.read()
    with open(cache, "wb") as f:
        f.write(data[:40])
    expect("truncated .pyc", path, False, V1)
    with open(cache, "wb") as f:
        f.write(b"\0\0\0\0" + data[4:])
    expect("wrong magic number", path, False, V1)


if __name__ == "__main__":
    main()
