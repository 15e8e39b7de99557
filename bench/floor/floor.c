/* The floor: the cheapest profile function CPython can call. Installed with
 * PyEval_SetProfile, it returns at once; what a run with it costs above a
 * bare run is what CPython itself spends to report profile events, the
 * least any C profiler on this hook can cost.
 *
 * Also exports run(callable): calls it inside ptkbench_region(), a C
 * function that bench/run.py names to callgrind (--toggle-collect), so that
 * instruction counts cover the workload only, not start-up and teardown.
 *
 * Built by bench/run.py against the interpreter under test; not installed. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static int
floor_profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj, (void)frame, (void)what, (void)arg;
    return 0;
}

static PyObject *
floor_install(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyEval_SetProfile(floor_profile, NULL);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
floor_uninstall(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyEval_SetProfile(NULL, NULL);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The measured region: callgrind collects from entry to exit of this. */
__attribute__((noinline, visibility("default"))) PyObject *
ptkbench_region(PyObject *callable)
{
    return PyObject_CallNoArgs(callable);
}

static PyObject *
floor_run(PyObject *self, PyObject *callable)
{
    (void)self;
    return ptkbench_region(callable);
}

static PyMethodDef floor_methods[] = {
    {"install", floor_install, METH_NOARGS,
     "install the do-nothing profile function on this thread"},
    {"uninstall", floor_uninstall, METH_NOARGS, "remove it"},
    {"run", floor_run, METH_O,
     "call the argument inside the region callgrind measures"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef floor_module = {
    PyModuleDef_HEAD_INIT, "_ptkfloor",
    "a do-nothing profile function, the floor for bench/run.py", -1,
    floor_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__ptkfloor(void)
{
    return PyModule_Create(&floor_module);
}
