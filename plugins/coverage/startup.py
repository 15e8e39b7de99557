# The coverage plugin's set-up: what it needs from Python when it starts,
# beyond the opcode tables compiled into it (analysis.py's op_tables(),
# baked at build time by embed.py). Compiled into the plugin like
# analysis.py; run once per interpreter by cov_life.c's python_setup().
#
#   setup(find_coveragepy, need_dirs, op_tables) -> (dirs, found, tables)
#     dirs    the directories of the standard library and of installed
#             packages (the default scope leaves them out), [] without
#             need_dirs
#     found   whether coverage.py is importable (find_coveragepy), else 0
#     tables  op_tables() where it is given (the interpreter is not the one
#             the plugin was built with), else None
#
# Whatever this imports (sysconfig, opcode, importlib.util) is taken out of
# sys.modules again: the program must start with the modules it would have
# without the plugin, and import (and run, and be measured in) them itself.


def _dirs():
    import os
    import sys
    import sysconfig
    out = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = paths.get(key)
        if p:
            out.add(os.path.abspath(p))
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        v = "python%d.%d" % sys.version_info[:2]
        out.add(os.path.join(os.path.abspath(p), "lib", v))
    site = sys.modules.get("site")
    try:
        out.update(os.path.abspath(p) for p in site.getsitepackages())
        out.add(os.path.abspath(site.getusersitepackages()))
    except Exception:
        pass
    ptk = sys.modules.get("pytracekit")
    if getattr(ptk, "__file__", None):
        out.add(os.path.dirname(os.path.abspath(ptk.__file__)))
    return sorted(out)


def setup(find_coveragepy, need_dirs, op_tables):
    import sys
    before = set(sys.modules)
    try:
        tables = op_tables() if op_tables is not None else None
        dirs = _dirs() if need_dirs else []
        found = 0
        if find_coveragepy:
            import importlib.util
            found = int(importlib.util.find_spec("coverage") is not None)
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
    return (dirs, found, tables)
