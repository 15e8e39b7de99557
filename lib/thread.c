/* Thread records: found through C11 thread-local storage on the hot path;
 * also kept in a dense array (ptk_thread::index) for reports. */
#include "ptk_internal.h"

#include <stdlib.h>
#include <string.h>

_Thread_local ptk__thread *ptk__tls __attribute__((tls_model("initial-exec")));

static ptk__thread **threads;
static size_t nthreads, cap_threads;

ptk__thread *
ptk__thread_get_slow(void)
{
    ptk__thread *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    if (nthreads == cap_threads) {
        size_t ncap = cap_threads ? cap_threads * 2 : 16;
        ptk__thread **n = realloc(threads, ncap * sizeof *n);
        if (n == NULL) {
            free(t);
            return NULL;
        }
        threads = n;
        cap_threads = ncap;
    }
    t->pub.struct_size = sizeof(ptk_thread);
    t->pub.ident = (uint64_t)PyThread_get_thread_ident();
    t->pub.index = (uint32_t)nthreads;
    t->tstate = PyThreadState_Get();
    t->slow = 1; /* the name is looked up at the first event */
    threads[nthreads++] = t;
    ptk__tls = t;
    return t;
}

size_t
ptk__thread_count(void)
{
    return nthreads;
}

ptk__thread *
ptk__thread_at(size_t index)
{
    return index < nthreads ? threads[index] : NULL;
}

/* The name threading knows the thread by ("MainThread", "Thread-1 (run)"),
 * if `threading` is imported and knows the thread. Needs the GIL; calls
 * Python, so never from the reference tracer. Saves and restores any
 * pending exception. */
void
ptk__thread_set_name(ptk__thread *t)
{
    if (t->name_tried && (t->name_storage != NULL || !t->name_retry)) {
        return;
    }
    t->name_retry = 0;
    t->name_tried = 1;
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *modname = PyUnicode_FromString("threading");
    PyObject *mod = modname ? PyImport_GetModule(modname) : NULL;
    PyObject *active = mod ? PyObject_GetAttrString(mod, "_active") : NULL;
    PyObject *key = PyLong_FromUnsignedLongLong(t->pub.ident);
    PyObject *th = NULL, *name = NULL;
    if (active != NULL && key != NULL && PyDict_Check(active)) {
        th = PyDict_GetItemWithError(active, key); /* borrowed */
        if (th != NULL) {
            name = PyObject_GetAttrString(th, "name");
        }
    }
    if (th == NULL) {
        t->name_retry = 1; /* not known to threading (yet) */
    }
    if (name != NULL && PyUnicode_Check(name)) {
        const char *u = PyUnicode_AsUTF8(name);
        if (u != NULL) {
            t->name_storage = ptk__strdup(u);
            t->pub.name = t->name_storage;
        }
    }
    Py_XDECREF(name);
    Py_XDECREF(key);
    Py_XDECREF(active);
    Py_XDECREF(mod);
    Py_XDECREF(modname);
    PyErr_Clear();
    PyErr_Restore(exc_type, exc_value, exc_tb);
}

int
ptk__stack_grow(ptk__thread *t)
{
    int32_t ncap = t->stack_cap ? t->stack_cap * 2 : 64;
    ptk_stack_entry *n = realloc(t->stack, (size_t)ncap * sizeof *n);
    if (n == NULL) {
        return PTK_ENOMEM;
    }
    t->stack = n;
    t->stack_cap = ncap;
    t->pub.stack = n;
    return PTK_OK;
}

void
ptk__thread_names_refresh(void)
{
    for (size_t i = 0; i < nthreads; i++) {
        if (threads[i]->name_storage == NULL) {
            ptk__thread_set_name(threads[i]);
        }
    }
}
