/* Thread records: found through C11 thread-local storage on the hot path;
 * also kept in a dense array (ptk_thread::index) for reports. */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

_Thread_local ptk__thread *ptk__tls __attribute__((tls_model("initial-exec")));

static ptk__thread **threads;
static size_t nthreads, cap_threads;

/* The parts of t a running thread needs (ptk__thread_hot), made new: 0 or
 * -1 (no memory). */
static int
thread_hot_make(ptk__thread *t)
{
    ptk__thread_hot *h = calloc(1, sizeof *h);
    if (h == NULL) {
        return -1;
    }
    t->hot = h;
    if (ptk__hub_ops != NULL && ptk__hub_ops->thread_hot_init != NULL) {
        ptk__hub_ops->thread_hot_init(t);
    }
    return 0;
}

ptk__thread *
ptk__thread_get_slow(void)
{
    ptk__thread *t = ptk__tls;
    if (t != NULL) {
        /* its thread state ended (ptk__thread_end) and this OS thread calls
         * Python again: the same record carries on */
        if (thread_hot_make(t) < 0) {
            ptk__hub_out_of_memory("a thread record");
            return NULL;
        }
        t->tstate = PyThreadState_Get();
        ptk__thread_mark_slow(t);
        return t;
    }
    t = calloc(1, sizeof *t);
    if (t == NULL || thread_hot_make(t) < 0) {
        free(t);
        ptk__hub_out_of_memory("a thread record");
        return NULL;
    }
    if (nthreads == cap_threads) {
        size_t ncap = cap_threads ? cap_threads * 2 : 16;
        ptk__thread **n = realloc(threads, ncap * sizeof *n);
        if (n == NULL) {
            free(t->hot);
            free(t);
            ptk__hub_out_of_memory("a thread record");
            return NULL;
        }
        threads = n;
        cap_threads = ncap;
    }
    t->pub.struct_size = sizeof(ptk_thread);
    t->pub.ident = (uint64_t)PyThread_get_thread_ident();
    t->pub.index = (uint32_t)nthreads;
    t->tstate = PyThreadState_Get();
    ptk__thread_mark_slow(t); /* the name is looked up at the first event */
    threads[nthreads++] = t;
    ptk__tls = t;
    return t;
}

/* ---- the end of a thread ------------------------------------------------ */

/* A small object kept in the dict of the thread state a record was last
 * seen with (PyThreadState_GetDict()). CPython clears that dict, with the
 * GIL held, when it clears the thread state: when a thread started by
 * `threading` or `_thread` finishes (PyThreadState_Clear in thread_run,
 * 3.11-3.13, on the ending thread itself), when a C thread gives its state
 * up (PyGILState_Release), and at finalization or in a forked child (then
 * from another thread). Its dealloc is how the hub learns that a thread has
 * ended: the record forgets the thread state (no dangling pointer), the
 * plugins hear of it (on_thread_end), and the shadow stacks are freed. The
 * record itself stays, readable, with an empty stack; if the same OS thread
 * calls Python again under a new thread state, the same record (same
 * index) carries on and a new watch is made at its next event. */
typedef struct tswatch {
    PyObject_HEAD
    ptk__thread *th;
} tswatch;

static void
tswatch_dealloc(PyObject *self)
{
    tswatch *w = (tswatch *)self;
    ptk__thread *th = w->th;
    if (th != NULL && th->tstate_watch == self) {
        th->tstate_watch = NULL;
        th->check = 1;
        th->tstate = NULL;
        ptk__thread_end(th);
    }
    PyObject_Free(self);
}

static PyTypeObject tswatch_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pytracekit.ThreadStateWatch",
    .tp_basicsize = sizeof(tswatch),
    .tp_dealloc = tswatch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .tp_doc = "Tells pytracekit when this thread state goes away.",
};

void
ptk__thread_watch(ptk__thread *th)
{
    static int ready;
    th->tstate = PyThreadState_Get();
    if (!ready) {
        if (PyType_Ready(&tswatch_type) < 0) {
            PyErr_Clear();
            return;
        }
        ready = 1;
    }
    PyObject *d = PyThreadState_GetDict(); /* borrowed */
    tswatch *w = d != NULL ? PyObject_New(tswatch, &tswatch_type) : NULL;
    if (w == NULL) {
        PyErr_Clear(); /* unwatched: tried again at the next event */
        return;
    }
    w->th = th;
    if (PyDict_SetItemString(d, "pytracekit.tstate_watch", (PyObject *)w) == 0) {
        th->tstate_watch = (PyObject *)w;
    }
    PyErr_Clear();
    Py_DECREF(w); /* the dict keeps it */
}

void
ptk__thread_end(ptk__thread *th)
{
    ptk__hub_thread_ended(&th->pub);
    free(th->stack);
    th->stack = NULL;
    th->stack_cap = 0;
    th->pub.stack = NULL;
    th->pub.depth = 0;
    ptk__cstack_truncate(th, 0);
    free(th->cstack);
    th->cstack = NULL;
    th->cdepth = th->ccap = 0;
    th->skip_frame = NULL;
    /* what only a running thread needs: made again by ptk__thread_get if
     * this OS thread calls Python again */
    free(th->hot);
    th->hot = NULL;
    th->ended++;
    ptk__thread_mark_slow(th); /* a new watch at the next event, if one comes */
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

/* ptk__cstack_push when the stack is full: grows it first. */
int
ptk__cstack_push_slow(ptk__thread *th, const void *fn, const void *self)
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
    th->cstack[th->cdepth].fn = fn;
    th->cstack[th->cdepth].self = self;
    th->cstack[th->cdepth].depth = th->pub.depth;
    th->cstack[th->cdepth].made = NULL;
    th->cdepth++;
    return 0;
}

int
ptk__cstack_match(ptk__thread *th, PyObject *callable)
{
    const void *fn, *self;
    ptk__c_identity(callable, &fn, &self);
    return ptk__cstack_find(th, fn, self);
}

int
ptk__cstack_find_slow(ptk__thread *th, const void *fn, const void *self)
{
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
    int ok = 1;
    for (int i = n - 1; i >= 0; i--) {
        PyCodeObject *code = PyFrame_GetCode(chain[i]);
        if (ok && ptk__stack_push(th, code, with_frames ? chain[i] : NULL) < 0) {
            /* all the running frames or none: a missing one would pair
             * the returns of the others wrongly */
            th->pub.depth = 0;
            ptk__hub_out_of_memory("the shadow stack");
            ok = 0;
        }
        Py_DECREF(code);   /* the running frame keeps both alive */
        Py_DECREF(chain[i]);
    }
}

void
ptk__stack_prune(ptk__thread *th)
{
    if (th == NULL || th->pub.depth <= 0) {
        return;
    }
    size_t n = 0, cap = 64;
    PyFrameObject **chain = malloc(cap * sizeof *chain);
    if (chain == NULL) {
        return; /* keep the stack as it is: only slower to be wrong */
    }
    int whole = 1; /* the chain reaches the outermost frame */
    PyFrameObject *f = PyEval_GetFrame(); /* borrowed */
    Py_XINCREF(f);
    while (f != NULL) {
        if (n == cap) {
            PyFrameObject **more = realloc(chain, 2 * cap * sizeof *chain);
            if (more == NULL) {
                /* without the outer frames every entry would look stale:
                 * keep the stack as it is */
                Py_DECREF(f);
                whole = 0;
                break;
            }
            chain = more;
            cap *= 2;
        }
        chain[n++] = f;
        f = PyFrame_GetBack(f);
    }
    /* The entries that stay are found, in order, on the running frames
     * from the outermost: same frame object, same code object (a frame
     * made later at a freed frame's address runs other code, or the same
     * code, where taking one for the other is harmless). */
    int32_t keep = 0;
    size_t j = n;
    for (int32_t i = 0; whole && i < th->pub.depth; i++) {
        int found = 0;
        while (j > 0 && !found) {
            PyFrameObject *live = chain[--j];
            PyCodeObject *code = PyFrame_GetCode(live);
            found = th->stack[i].code == code &&
                    (th->stack[i].frame == NULL || th->stack[i].frame == live);
            Py_DECREF(code);
        }
        if (!found) {
            break;
        }
        keep = i + 1;
    }
    if (whole && keep < th->pub.depth) {
        th->pub.depth = keep;
        ptk__cstack_pop_stale(th, keep + 1);
    }
    for (size_t k = 0; k < n; k++) {
        Py_DECREF(chain[k]);
    }
    free(chain);
}

void
ptk__thread_reset(void)
{
    for (size_t i = 0; i < nthreads; i++) {
        ptk__thread *t = threads[i];
        t->tstate = NULL;
        t->tstate_watch = NULL;
        t->pub.depth = 0;
        t->cdepth = 0;
        t->skip_frame = NULL; /* the backend's parts: set up again by the
                                 one chosen next (ptk__threads_hot_init) */
        ptk__thread_mark_slow(t);
        free(t->name_storage);
        t->name_storage = NULL;
        t->pub.name = NULL;
        t->name_tried = t->name_retry = t->name_tries = 0;
    }
}

void
ptk__threads_hot_init(void)
{
    if (ptk__hub_ops == NULL || ptk__hub_ops->thread_hot_init == NULL) {
        return;
    }
    for (size_t i = 0; i < nthreads; i++) {
        if (threads[i]->hot != NULL) {
            ptk__hub_ops->thread_hot_init(threads[i]);
        }
    }
}
