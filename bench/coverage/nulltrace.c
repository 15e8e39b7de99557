/* The floor for line coverage: a do-nothing C trace function. Installed
 * with PyEval_SetTrace, it returns at once for every event (CALL, LINE,
 * RETURN, ...); what a run with it costs above a bare run is what CPython
 * spends to deliver trace events, the least a tracer that never turns
 * LINE events off can cost.
 *
 * run(callable) calls it inside ptkcov_region(), the function that
 * bench_coverage.py names to callgrind (--toggle-collect), so instruction
 * counts cover the workload only.
 *
 * Built by bench_coverage.py against the interpreter under test. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static int
null_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj, (void)frame, (void)what, (void)arg;
    return 0;
}

static PyObject *
nt_install(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyEval_SetTrace(null_trace, NULL);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
nt_uninstall(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyEval_SetTrace(NULL, NULL);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

__attribute__((noinline, visibility("default"))) PyObject *
ptkcov_region(PyObject *callable)
{
    return PyObject_CallNoArgs(callable);
}

static PyObject *
nt_run(PyObject *self, PyObject *callable)
{
    (void)self;
    return ptkcov_region(callable);
}

static PyMethodDef nt_methods[] = {
    {"install", nt_install, METH_NOARGS, "install the do-nothing trace function"},
    {"uninstall", nt_uninstall, METH_NOARGS, "remove it"},
    {"run", nt_run, METH_O, "call the argument inside the measured region"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef nt_module = {
    PyModuleDef_HEAD_INIT, "_ptkcovnull", NULL, -1, nt_methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit__ptkcovnull(void)
{
    return PyModule_Create(&nt_module);
}
