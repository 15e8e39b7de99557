/*
 * _pytracekit._coverage_analyze (cov_analyze_py.c): the coverage plugin's
 * C analysis for completing deferred coverage data.
 */
#ifndef PTK_COV_ANALYZE_PY_H
#define PTK_COV_ANALYZE_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/**
 * `_coverage_analyze(code, want_arcs, flags, caches)`: analysis.py's
 * `analyze(code, want_arcs)` (lines, funcs, branches) computed by the
 * plugin's C analysis; `flags` and `caches` are the 256-entry opcode tables
 * of analysis.py's `c_optable()`.
 */
PyObject *ptk_py_coverage_analyze(PyObject *self, PyObject *args);

#endif
