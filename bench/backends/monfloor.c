/* The sys.monitoring floor (CPython 3.12+, PEP 669): a do-nothing callback
 * implemented in C. `_ptkmonfloor.null` is an instance of a callable type
 * with vectorcall (no argument tuple, no frame object) that returns None
 * at once. bench_backends.py registers it with sys.monitoring for PY_START
 * and PY_RETURN (call workloads), CALL and C_RETURN (C-call workloads) or
 * LINE (line workloads); what a run with it costs above a bare run is what
 * CPython itself spends to deliver those events to a C callback, the least
 * any tool on sys.monitoring that never returns DISABLE can cost.
 *
 * Built by bench/backends/bench_backends.py against the interpreter under
 * test; not installed. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} nullcb;

static PyObject *
nullcb_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                  PyObject *kwnames)
{
    (void)self, (void)args, (void)nargsf, (void)kwnames;
    Py_RETURN_NONE;
}

static PyTypeObject nullcb_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_ptkmonfloor.NullCallback",
    .tp_doc = "a sys.monitoring callback that does nothing and returns None",
    .tp_basicsize = sizeof(nullcb),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(nullcb, vectorcall),
    .tp_call = PyVectorcall_Call,
};

static struct PyModuleDef monfloor_module = {
    PyModuleDef_HEAD_INIT, "_ptkmonfloor",
    "a do-nothing C sys.monitoring callback (`null`), the floor for "
    "bench/backends", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__ptkmonfloor(void)
{
    if (PyType_Ready(&nullcb_type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&monfloor_module);
    if (m == NULL) {
        return NULL;
    }
    nullcb *cb = PyObject_New(nullcb, &nullcb_type);
    if (cb == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    cb->vectorcall = nullcb_vectorcall;
    if (PyModule_AddObject(m, "null", (PyObject *)cb) < 0) {
        Py_DECREF(cb);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
