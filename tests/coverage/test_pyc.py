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


T0 = 1_000_000_000

# Each case: what is done to the source and its .pyc (in order, after the
# cases before it), then whether compile_file must take the .pyc's code.
#   ("write", text, mtime)    the source, with its mtime
#   ("compile", mode)         py_compile into __pycache__ (dfile = MARK)
#   ("cut", n) / ("magic",)   the .pyc truncated to n bytes / its magic zeroed
CASES = [
    ("no .pyc", [("write", V1, T0)], False),
    ("timestamp .pyc of this source", [("compile", "ts")], True),
    ("source edited after the .pyc", [("write", V2, T0 + 100)], False),
    ("same mtime, other size", [("write", V1 + "\n", T0)], False),
    ("checked-hash .pyc, source touched but unchanged",
     [("write", V1, T0 + 200), ("compile", "checked"), ("write", V1, T0 + 300)], True),
    ("checked-hash .pyc, source changed", [("write", V2, T0 + 300)], False),
    # the import system would not check an unchecked-hash .pyc; the
    # analysis does, so a stale one is not used
    ("unchecked-hash .pyc of this source", [("compile", "unchecked")], True),
    ("unchecked-hash .pyc, source changed", [("write", V1, T0 + 400)], False),
    ("truncated .pyc", [("compile", "ts"), ("cut", 40)], False),
    ("wrong magic number", [("compile", "ts"), ("magic",)], False),
]

MODES = {
    "ts": py_compile.PycInvalidationMode.TIMESTAMP,
    "checked": py_compile.PycInvalidationMode.CHECKED_HASH,
    "unchecked": py_compile.PycInvalidationMode.UNCHECKED_HASH,
}


def main():
    wd = u.workdir("pyc")
    path = os.path.join(wd, "mod.py")
    cache = importlib.util.cache_from_source(path)
    text = None
    for what, actions, from_pyc in CASES:
        for act in actions:
            if act[0] == "write":
                text = act[1]
                write(path, text, act[2])
            elif act[0] == "compile":
                py_compile.compile(path, cfile=cache, dfile=MARK,
                                   invalidation_mode=MODES[act[1]], doraise=True)
            else:
                with open(cache, "rb") as f:
                    data = f.read()
                with open(cache, "wb") as f:
                    f.write(data[:act[1]] if act[0] == "cut" else b"\0\0\0\0" + data[4:])
        expect(what, path, from_pyc, text)


if __name__ == "__main__":
    main()
