/* _ptk_cthread: a test extension that calls a Python function from a
 * thread made in C, the way an extension's own worker thread does: each call
 * takes the GIL with PyGILState_Ensure and gives it back with
 * PyGILState_Release, so each call runs on a new thread state of the same
 * OS thread (the thread has none between calls).
 *
 *   _ptk_cthread.run(fn, n)   calls fn() n times from one new C thread
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>

typedef struct {
    PyObject *fn;
    long n;
    long failed;
} job;

static void *
worker(void *arg)
{
    job *j = arg;
    for (long i = 0; i < j->n; i++) {
        PyGILState_STATE g = PyGILState_Ensure();
        PyObject *r = PyObject_CallNoArgs(j->fn);
        if (r == NULL) {
            PyErr_Clear();
            j->failed++;
        }
        Py_XDECREF(r);
        PyGILState_Release(g);
    }
    return NULL;
}

static PyObject *
run(PyObject *self, PyObject *args)
{
    (void)self;
    job j = {NULL, 0, 0};
    if (!PyArg_ParseTuple(args, "Ol", &j.fn, &j.n)) {
        return NULL;
    }
    pthread_t t;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = pthread_create(&t, NULL, worker, &j);
    if (rc == 0) {
        pthread_join(t, NULL);
    }
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_create failed");
        return NULL;
    }
    return PyLong_FromLong(j.failed);
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS, "run(fn, n): call fn() n times from a C thread"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef mod = {
    PyModuleDef_HEAD_INIT, "_ptk_cthread", NULL, -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ptk_cthread(void); /* the module's entry, for the importer alone */

PyMODINIT_FUNC
PyInit__ptk_cthread(void)
{
    return PyModule_Create(&mod);
}
