/* _ptk_refprobe: a test-only extension that looks at and uses CPython's
 * reference-tracer slot directly, as a third-party tool would.
 *
 *   slot()            -> (function address, data address) now in the slot
 *   tracer_address()  -> address of this module's own tracer
 *   install(type)     -> puts this module's tracer in the slot (evicting
 *                        whoever is there); it counts CREATE and DESTROY of
 *                        objects whose type is exactly `type`
 *   counts()          -> (creates, destroys, events with a ValueError
 *                        pending) seen so far
 *   others()          -> events of other kinds seen since install (3.15's
 *                        PyRefTracer_TRACKER_REMOVED, when it is replaced)
 *   uninstall()       -> empties the slot if it still holds this tracer
 *   save(), restore() -> remember the slot's (function, data) and put that
 *                        pair back later, as a tool that "restores" does
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

static PyObject *target;
static unsigned long long n_create, n_destroy, n_pending;
static unsigned long long n_other; /* events other than CREATE and DESTROY */
static int probe_token;

static int
probe_tracer(PyObject *obj, PyRefTracerEvent event, void *data)
{
    if (data == &probe_token && PyErr_Occurred() &&
        PyErr_ExceptionMatches(PyExc_ValueError)) {
        n_pending++;
    }
    /* Only CREATE and DESTROY carry an object: 3.15 also calls the tracer
     * being replaced with PyRefTracer_TRACKER_REMOVED and NULL. */
    if (event != PyRefTracer_CREATE && event != PyRefTracer_DESTROY) {
        if (data == &probe_token) {
            n_other++;
        }
        return 0;
    }
    if (data == &probe_token && (PyObject *)Py_TYPE(obj) == target) {
        if (event == PyRefTracer_CREATE) {
            n_create++;
        }
        else if (event == PyRefTracer_DESTROY) {
            n_destroy++;
        }
    }
    return 0;
}

static PyObject *
probe_slot(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    void *data = NULL;
    PyRefTracer fn = PyRefTracer_GetTracer(&data);
    return Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)fn,
                         (unsigned long long)(uintptr_t)data);
}

static PyObject *
probe_tracer_address(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromUnsignedLongLong((uintptr_t)probe_tracer);
}

static PyObject *
probe_install(PyObject *m, PyObject *type)
{
    (void)m;
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "install() needs a type");
        return NULL;
    }
    Py_XSETREF(target, Py_NewRef(type));
    n_create = n_destroy = n_pending = n_other = 0;
    if (PyRefTracer_SetTracer(probe_tracer, &probe_token) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
probe_counts(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return Py_BuildValue("(KKK)", n_create, n_destroy, n_pending);
}

static PyObject *
probe_others(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyLong_FromUnsignedLongLong(n_other);
}

static PyObject *
probe_uninstall(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    void *data = NULL;
    if (PyRefTracer_GetTracer(&data) == probe_tracer &&
        PyRefTracer_SetTracer(NULL, NULL) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyRefTracer saved_fn;
static void *saved_data;

static PyObject *
probe_save(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    saved_fn = PyRefTracer_GetTracer(&saved_data);
    Py_RETURN_NONE;
}

static PyObject *
probe_restore(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    if (PyRefTracer_SetTracer(saved_fn, saved_data) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef probe_methods[] = {
    {"save", probe_save, METH_NOARGS, "remember the slot"},
    {"restore", probe_restore, METH_NOARGS, "put the remembered pair back"},
    {"slot", probe_slot, METH_NOARGS, "the reference-tracer slot"},
    {"tracer_address", probe_tracer_address, METH_NOARGS, "this tracer"},
    {"install", probe_install, METH_O, "install the counting tracer"},
    {"counts", probe_counts, METH_NOARGS, "(creates, destroys)"},
    {"others", probe_others, METH_NOARGS,
     "events other than CREATE and DESTROY since install (3.15: TRACKER_REMOVED)"},
    {"uninstall", probe_uninstall, METH_NOARGS, "empty the slot if ours"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef probe_module = {
    PyModuleDef_HEAD_INIT, "_ptk_refprobe", NULL, -1, probe_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ptk_refprobe(void); /* the module's entry, for the importer alone */

PyMODINIT_FUNC
PyInit__ptk_refprobe(void)
{
    return PyModule_Create(&probe_module);
}
