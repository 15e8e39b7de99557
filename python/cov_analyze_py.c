/*
 * _pytracekit._coverage_analyze: the coverage plugin's C analysis
 * (plugins/coverage/analyze.c) for the report commands, which complete
 * deferred coverage data (reports=false) from the sources: the same
 * analysis an immediate run made, without analysis.py's Python.
 */
#include "cov_analyze_py.h"

#include "analyze.h"

#include <string.h>

typedef struct an_out {
    PyObject *lines;    /* set */
    PyObject *funcs;    /* list */
    PyObject *branches; /* dict: line -> [destinations] */
} an_out;

static PyObject *
int_list(const int32_t *v, int32_t n)
{
    PyObject *list = PyList_New(n);
    for (int32_t i = 0; list && i < n; i++) {
        PyObject *x = PyLong_FromLong(v[i]);
        if (!x) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, x);
    }
    return list;
}

static int
an_code(void *ctx, PyCodeObject *code, int32_t start, const int32_t *own, int32_t nown)
{
    an_out *o = ctx;
    for (int32_t i = 0; i < nown; i++) {
        PyObject *x = PyLong_FromLong(own[i]);
        if (!x || PySet_Add(o->lines, x) < 0) {
            Py_XDECREF(x);
            return -1;
        }
        Py_DECREF(x);
    }
    PyObject *ownl = int_list(own, nown);
    PyObject *item = ownl ? Py_BuildValue("(OOiiN)", (PyObject *)code, code->co_qualname,
                                          code->co_firstlineno, (int)start, ownl)
                          : NULL;
    int rc = item ? PyList_Append(o->funcs, item) : -1;
    Py_XDECREF(item);
    return rc;
}

static int
an_branch(void *ctx, int32_t line, const int32_t *dest, int32_t ndest)
{
    an_out *o = ctx;
    PyObject *key = PyLong_FromLong(line);
    PyObject *have = key ? PyDict_GetItemWithError(o->branches, key) : NULL; /* borrowed */
    if (!have && key && !PyErr_Occurred()) {
        have = PyList_New(0);
        if (have && PyDict_SetItem(o->branches, key, have) < 0) {
            Py_CLEAR(have);
        }
        Py_XDECREF(have); /* the dict keeps it */
    }
    Py_XDECREF(key);
    if (!have) {
        return -1;
    }
    for (int32_t i = 0; i < ndest; i++) {
        PyObject *d = PyLong_FromLong(dest[i]);
        int in = d ? PySequence_Contains(have, d) : -1;
        if (in < 0 || (in == 0 && PyList_Append(have, d) < 0)) {
            Py_XDECREF(d);
            return -1;
        }
        Py_DECREF(d);
    }
    return 0;
}

PyObject *
ptk_py_coverage_analyze(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *code;
    int want_arcs;
    Py_buffer flags, caches;
    if (!PyArg_ParseTuple(args, "O!py*y*", &PyCode_Type, &code, &want_arcs, &flags,
                          &caches)) {
        return NULL;
    }
    PyObject *res = NULL;
    if (flags.len != 256 || caches.len != 256) {
        PyErr_SetString(PyExc_ValueError, "the opcode tables have 256 entries each");
        goto done;
    }
    cov_optable ops;
    memcpy(ops.flags, flags.buf, 256);
    memcpy(ops.caches, caches.buf, 256);
    ops.jump_adds_caches = PY_VERSION_HEX >= 0x030C0000;
    an_out o = {PySet_New(NULL), PyList_New(0), PyDict_New()};
    const cov_an_sink sink = {&o, an_code, an_branch};
    PyObject *lines = NULL;
    if (o.lines && o.funcs && o.branches && cov_analyze(&ops, (PyCodeObject *)code, want_arcs, &sink) == 0 && (lines = PySequence_List(o.lines)) != NULL && PyList_Sort(lines) == 0) {
        res = PyTuple_Pack(3, lines, o.funcs, o.branches);
    }
    Py_XDECREF(lines);
    Py_XDECREF(o.lines);
    Py_XDECREF(o.funcs);
    Py_XDECREF(o.branches);
done:
    PyBuffer_Release(&flags);
    PyBuffer_Release(&caches);
    return res;
}
