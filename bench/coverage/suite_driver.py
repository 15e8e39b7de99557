"""Runs `-m MODULE ARGS...` under a pytracekit.Session in this interpreter.

    python suite_driver.py OUTDIR PLUGIN_PATH BACKEND SPEC -m MODULE [ARGS...]

bench_suites.py uses it to measure the plugin inside the same interpreter
binary as bare and coverage.py. The pytracekit command embeds the
interpreter: on Debian it links the static libpython3.X.a
(cmake/libpython.cmake), built with PGO but without the link-time
optimisation /usr/bin/python3 has, which costs the command's runs about 3%
more instructions (bench/README.md, coverage).
"""
import runpy
import sys

import pytracekit

out, plugin_path, backend, spec, dash_m, module = sys.argv[1:7]
assert dash_m == "-m"
sys.argv = [module] + sys.argv[7:]
session = pytracekit.Session([spec], output_dir=out, threads="all", backend=backend,
                             plugin_path=plugin_path)
with session:
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
