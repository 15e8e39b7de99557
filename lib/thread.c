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
/* The main interpreter's first thread state is the last in its list
 * (new ones are added at the head): the thread that started Python. */
static unsigned long
main_thread_ident(void)
{
    PyThreadState *ts = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
    while (ts != NULL && PyThreadState_Next(ts) != NULL) {
        ts = PyThreadState_Next(ts);
    }
    return ts != NULL ? ts->thread_id : 0;
}

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
    if (th == NULL && mod == NULL && t->pub.ident == main_thread_ident()) {
        /* threading is not imported yet; it will call this one MainThread */
        name = PyUnicode_FromString("MainThread");
    }
    else if (th == NULL) {
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

/* ---- C calls in progress ------------------------------------------------ */

/* What identifies the C function: a bound builtin method is made anew for
 * each event on 3.12+, so (method def, self) and not the object. */
static void
c_identity(PyObject *callable, const void **fn, const void **self)
{
    if (PyCFunction_Check(callable)) {
        *fn = ((PyCFunctionObject *)callable)->m_ml;
        *self = ((PyCFunctionObject *)callable)->m_self;
    }
    else {
        *fn = callable;
        *self = NULL;
    }
}

int
ptk__cstack_push(ptk__thread *th, PyObject *callable)
{
    if (th->cdepth == th->ccap) {
        int32_t ncap = th->ccap ? th->ccap * 2 : 32;
        ptk__cframe *n = realloc(th->cstack, (size_t)ncap * sizeof *n);
        if (n == NULL) {
            return -1;
        }
        th->cstack = n;
        th->ccap = ncap;
    }
    c_identity(callable, &th->cstack[th->cdepth].fn,
               &th->cstack[th->cdepth].self);
    th->cstack[th->cdepth].depth = th->pub.depth;
    th->cdepth++;
    return 0;
}

int
ptk__cstack_match(ptk__thread *th, PyObject *callable)
{
    const void *fn, *self;
    c_identity(callable, &fn, &self);
    for (int i = th->cdepth - 1; i >= 0; i--) {
        if (th->cstack[i].depth != th->pub.depth) {
            break;
        }
        if (th->cstack[i].fn == fn && th->cstack[i].self == self) {
            return i;
        }
    }
    return -1;
}

/* ---- the frames running when a session starts --------------------------- */

/* The shadow stack of the thread that starts a session starts with the
 * frames already running there (outermost first), so that depth and the
 * innermost function are right from the first event; their CALL was never
 * delivered. The monitoring backend keeps no frame pointers (it never makes
 * frame objects), so with_frames is 0 there. */
void
ptk__seed_stack(int with_frames)
{
    ptk__thread *th = ptk__thread_get();
    if (th == NULL || th->pub.depth > 0) {
        return;
    }
    PyFrameObject *chain[256];
    int n = 0;
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
    Py_XINCREF(f);
    while (f != NULL && n < 256) {
        chain[n++] = f;
        f = PyFrame_GetBack(f);
    }
    Py_XDECREF(f);
    for (int i = n - 1; i >= 0; i--) {
        PyCodeObject *code = PyFrame_GetCode(chain[i]);
        ptk__stack_push(th, code, with_frames ? chain[i] : NULL);
        Py_DECREF(code);   /* the running frame keeps both alive */
        Py_DECREF(chain[i]);
    }
}
