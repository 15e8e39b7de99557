/* The floor: the cheapest profile function CPython can call. Installed with
 * PyEval_SetProfile, it returns at once; what a run with it costs above a
 * bare run is what CPython itself spends to report profile events, the
 * least any C profiler on this hook can cost.
 *
 * install_monitoring(): the same floor for sys.monitoring (3.12+): a tool
 * whose callbacks, builtin functions, return None at once, for the events a
 * profiler takes there (cProfile's set, the hub's for the timer): what
 * CPython spends delivering them, which every monitoring profiler pays.
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

/* A sys.monitoring callback that does nothing. */
static PyObject *
floor_event(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self, (void)args, (void)nargs;
    Py_RETURN_NONE;
}

static PyMethodDef floor_event_def = {
    "floor_event", (PyCFunction)(void (*)(void))floor_event, METH_FASTCALL,
    "a sys.monitoring callback that returns None at once"};

/* install_monitoring(tool_id): registers floor_event for PY_START,
 * PY_RESUME, PY_THROW, PY_RETURN, PY_YIELD, PY_UNWIND, CALL, C_RETURN and
 * C_RAISE and turns them on for the whole interpreter. */
static PyObject *
floor_install_monitoring(PyObject *self, PyObject *tool)
{
    (void)self;
    static const char *events[] = {"PY_START", "PY_RESUME", "PY_THROW",
                                   "PY_RETURN", "PY_YIELD", "PY_UNWIND",
                                   "CALL", "C_RETURN", "C_RAISE"};
    PyObject *mon = PySys_GetObject("monitoring"), *ev = NULL; /* borrowed */
    PyObject *fn = PyCFunction_New(&floor_event_def, NULL), *r = NULL;
    long mask = 0;
    if (mon == NULL || fn == NULL) {
        if (mon == NULL && !PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "no sys.monitoring (3.12+)");
        }
        goto done;
    }
    ev = PyObject_GetAttrString(mon, "events");
    r = ev ? PyObject_CallMethod(mon, "use_tool_id", "Os", tool, "ptkfloor") : NULL;
    for (size_t i = 0; r != NULL && i < sizeof events / sizeof *events; i++) {
        Py_DECREF(r);
        PyObject *bit = PyObject_GetAttrString(ev, events[i]);
        r = bit ? PyObject_CallMethod(mon, "register_callback", "OOO", tool, bit, fn)
                : NULL;
        mask |= bit ? PyLong_AsLong(bit) : 0;
        Py_XDECREF(bit);
    }
    if (r != NULL) {
        Py_DECREF(r);
        r = PyObject_CallMethod(mon, "set_events", "Ol", tool, mask);
    }
done:
    Py_XDECREF(ev);
    Py_XDECREF(fn);
    return r;
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
    {"install_monitoring", floor_install_monitoring, METH_O,
     "install_monitoring(tool_id): do-nothing sys.monitoring callbacks for "
     "the profiling events (3.12+)"},
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
