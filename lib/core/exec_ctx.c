/* Execution contexts within a thread: greenlets (ptk_thread::exec_id), and
 * the asyncio Task running (ptk_host::running_task).
 *
 * A greenlet switch replaces the running stack of frames under the
 * interpreter: the next RETURN is of a frame of the other greenlet. While
 * some attached instance keeps stacks per context (PTK_FLAG_EXEC_CONTEXT)
 * or reads the hub's own (no PTK_FLAG_OWN_STACK), the hub hears every
 * switch through greenlet's own trace hook (greenlet.settrace, chained
 * with the tracer that was there) and keeps, per greenlet, the shadow
 * stack, the stack of C calls in progress and the filters' depths: at a
 * switch the thread record's are saved into the record of the greenlet
 * left and the entered one's are put in their place, and exec_id says
 * which greenlet runs. Nothing is done per event: without greenlet, and
 * without a switch, this costs nothing.
 *
 * greenlet is hooked when it is imported: at a table rebuild if it is
 * there already, else from an audit hook at its import (the `import`
 * audit event comes before the module is loaded: the hook imports it
 * itself, then installs the tracer, and the program's import finds the
 * module loaded).
 */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

/* What a context keeps while another runs on its thread. */
typedef struct exec_rec {
    uint64_t id;     /* 0: a thread's main greenlet */
    ptk__thread *th; /* the thread it last ran on, or NULL */
    ptk_stack_entry *stack;
    int32_t stack_cap, depth;
    ptk__cframe *cstack;
    int32_t cdepth, ccap;
    int32_t fdepth[PTK__MAX_SLOTS];
    int saved; /* the fields above hold its stacks */
} exec_rec;

static int wanted;     /* the table needs contexts tracked */
static int installed;  /* our tracer is greenlet's */
static int installing; /* (re-entry guard of the audit hook) */
static int audit_added;
static PyObject *tracer;       /* our tracer (strong) */
static PyObject *prev_tracer;  /* the one it replaced (strong), or NULL */
static PyObject *greenlet_mod; /* the module we installed into (strong) */
static PyObject *recs;         /* {address of a greenlet: capsule of its exec_rec} */
static uint64_t serial;
uint64_t ptk__exec_switches;

static void
rec_release(exec_rec *r)
{
    if (r->saved) {
        free(r->stack);
        if (r->cstack != NULL) {
            for (int32_t i = 0; i < r->cdepth; i++) {
                Py_XDECREF(r->cstack[i].made);
            }
            free(r->cstack);
        }
    }
    free(r);
}

static void
capsule_free(PyObject *cap)
{
    PyObject *wr = PyCapsule_GetContext(cap);
    exec_rec *r = PyCapsule_GetPointer(cap, "pytracekit.exec_rec");
    Py_XDECREF(wr);
    if (r != NULL) {
        rec_release(r);
    }
    else {
        PyErr_Clear();
    }
}

/* The weak reference's callback: the greenlet is gone, and its record. */
static PyObject *
rec_gone(PyObject *key, PyObject *wr)
{
    (void)wr;
    if (recs != NULL && PyDict_DelItem(recs, key) < 0) {
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyMethodDef rec_gone_def = {"_pytracekit_exec_gone", (PyCFunction)rec_gone, METH_O,
                                   NULL};

/* The record of greenlet @p g (made, with a weak reference that drops it,
 * at first sight), or NULL with an exception set. Borrowed: the dict
 * keeps it. */
static exec_rec *
rec_of(PyObject *g, int is_main)
{
    PyObject *key = PyLong_FromVoidPtr(g);
    if (key == NULL) {
        return NULL;
    }
    PyObject *cap = PyDict_GetItemWithError(recs, key);
    if (cap != NULL) {
        Py_DECREF(key);
        return PyCapsule_GetPointer(cap, "pytracekit.exec_rec");
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    exec_rec *r = calloc(1, sizeof *r);
    if (r == NULL) {
        Py_DECREF(key);
        PyErr_NoMemory();
        return NULL;
    }
    r->id = is_main ? 0 : ++serial;
    cap = PyCapsule_New(r, "pytracekit.exec_rec", capsule_free);
    if (cap == NULL) {
        free(r);
        Py_DECREF(key);
        return NULL;
    }
    PyObject *cb = PyCFunction_New(&rec_gone_def, key);
    PyObject *wr = cb != NULL ? PyWeakref_NewRef(g, cb) : NULL;
    Py_XDECREF(cb);
    int rc = wr != NULL ? PyDict_SetItem(recs, key, cap) : -1;
    /* the weak reference must outlive the greenlet's life to call back:
     * the capsule's context keeps it */
    if (rc == 0 && PyCapsule_SetContext(cap, wr) == 0) {
        wr = NULL; /* owned through the capsule (released below, at its end) */
    }
    Py_XDECREF(wr);
    Py_DECREF(cap);
    Py_DECREF(key);
    return rc == 0 ? r : NULL;
}

/* Moves the thread's stacks into @p from and @p to's into the thread. */
static void
swap_in(ptk__thread *th, exec_rec *from, exec_rec *to)
{
    if (from != NULL && !from->saved) {
        from->th = th;
        from->stack = th->stack;
        from->stack_cap = th->stack_cap;
        from->depth = th->pub.depth;
        from->cstack = th->cstack;
        from->cdepth = th->cdepth;
        from->ccap = th->ccap;
        if (th->hot != NULL) {
            memcpy(from->fdepth, th->hot->fdepth, sizeof from->fdepth);
        }
        from->saved = 1;
        th->stack = NULL;
        th->stack_cap = 0;
        th->pub.depth = 0;
        th->cstack = NULL;
        th->cdepth = th->ccap = 0;
    }
    if (to->saved && to->th == th) {
        /* what the thread held is in `from` (or was empty) */
        free(th->stack);
        ptk__cstack_truncate(th, 0);
        free(th->cstack);
        th->stack = to->stack;
        th->stack_cap = to->stack_cap;
        th->pub.depth = to->depth;
        th->cstack = to->cstack;
        th->cdepth = to->cdepth;
        th->ccap = to->ccap;
        if (th->hot != NULL) {
            memcpy(th->hot->fdepth, to->fdepth, sizeof to->fdepth);
        }
        to->stack = NULL;
        to->cstack = NULL;
        to->saved = 0;
    }
    else {
        /* a context new to this thread: no frame of ours below it */
        if (to->saved) {
            free(to->stack);
            for (int32_t i = 0; i < to->cdepth; i++) {
                Py_XDECREF(to->cstack[i].made);
            }
            free(to->cstack);
            to->stack = NULL;
            to->cstack = NULL;
            to->saved = 0;
        }
        th->pub.depth = 0;
        ptk__cstack_truncate(th, 0);
        if (th->hot != NULL) {
            memset(th->hot->fdepth, 0, sizeof th->hot->fdepth);
        }
    }
    th->pub.stack = th->stack;
    to->th = th;
}

/* greenlet's trace hook: (event, (origin, target)). */
static PyObject *
on_greenlet(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "greenlet tracer: two arguments expected");
        return NULL;
    }
    PyObject *pair = args[1];
    if (installed && PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 &&
        PyUnicode_Check(args[0]) &&
        (PyUnicode_CompareWithASCIIString(args[0], "switch") == 0 ||
         PyUnicode_CompareWithASCIIString(args[0], "throw") == 0)) {
        PyObject *origin = PyTuple_GET_ITEM(pair, 0);
        PyObject *target = PyTuple_GET_ITEM(pair, 1);
        ptk__thread *th = ptk__thread_get();
        if (th != NULL && origin != target) {
            PyObject *tparent = PyObject_GetAttrString(target, "parent");
            PyObject *oparent = tparent != NULL ? PyObject_GetAttrString(origin, "parent")
                                                : NULL;
            exec_rec *from = oparent != NULL ? rec_of(origin, oparent == Py_None) : NULL;
            exec_rec *to = from != NULL ? rec_of(target, tparent == Py_None) : NULL;
            Py_XDECREF(tparent);
            Py_XDECREF(oparent);
            if (to == NULL) {
                /* not a greenlet as we know it: the stacks stay as they are */
                PyErr_Clear();
            }
            else {
                swap_in(th, from, to);
                if (ptk__hub_ops != NULL && ptk__hub_ops->exec_switched != NULL) {
                    ptk__hub_ops->exec_switched(th);
                }
                th->pub.exec_id = to->id;
                th->pub.exec_object = to->id != 0 ? target : NULL;
                ptk__exec_switches++;
            }
        }
    }
    if (prev_tracer != NULL) {
        return PyObject_Vectorcall(prev_tracer, args, (size_t)nargs, NULL);
    }
    Py_RETURN_NONE;
}

static PyMethodDef tracer_def = {"_pytracekit_greenlet_tracer", (PyCFunction)(void (*)(void))on_greenlet,
                                 METH_FASTCALL, NULL};

/* Installs the tracer into @p mod (greenlet, imported). */
static void
install(PyObject *mod)
{
    if (tracer == NULL) {
        tracer = PyCFunction_New(&tracer_def, NULL);
        if (tracer == NULL) {
            PyErr_Clear();
            return;
        }
    }
    if (recs == NULL && (recs = PyDict_New()) == NULL) {
        PyErr_Clear();
        return;
    }
    PyObject *prev = PyObject_CallMethod(mod, "settrace", "O", tracer);
    if (prev == NULL) {
        PyErr_Clear();
        return;
    }
    Py_XSETREF(prev_tracer, prev == Py_None ? NULL : prev);
    if (prev == Py_None) {
        Py_DECREF(prev);
    }
    Py_INCREF(mod);
    Py_XSETREF(greenlet_mod, mod);
    installed = 1;
}

/* Puts back the tracer ours replaced, if ours is still greenlet's. */
static void
uninstall(void)
{
    if (!installed) {
        return;
    }
    installed = 0;
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *cur = PyObject_CallMethod(greenlet_mod, "gettrace", NULL);
    if (cur == tracer) {
        PyObject *r = PyObject_CallMethod(greenlet_mod, "settrace", "O",
                                          prev_tracer != NULL ? prev_tracer : Py_None);
        Py_XDECREF(r);
    }
    Py_XDECREF(cur);
    PyErr_Clear();
    Py_CLEAR(prev_tracer);
    Py_CLEAR(greenlet_mod);
    /* the stacks the switched-out greenlets kept go; their threads' own
     * stay (what runs now is their context) */
    Py_CLEAR(recs);
    PyErr_Restore(et, ev, etb);
}

/* greenlet if it is imported (a new reference), else NULL. */
static PyObject *
greenlet_imported(void)
{
    PyObject *mods = PyImport_GetModuleDict();
    PyObject *m = mods != NULL ? PyDict_GetItemString(mods, "greenlet") : NULL;
    if (m == NULL || !PyObject_HasAttrString(m, "settrace")) {
        return NULL;
    }
    Py_INCREF(m);
    return m;
}

static int
audit(const char *event, PyObject *args, void *data)
{
    (void)data;
    if (!wanted || installed || installing || strcmp(event, "import") != 0 ||
        !PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
        return 0;
    }
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
    if (name == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (strcmp(name, "greenlet") != 0 && strncmp(name, "greenlet.", 9) != 0) {
        return 0;
    }
    installing = 1;
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *m = PyImport_ImportModule("greenlet");
    if (m != NULL && PyObject_HasAttrString(m, "settrace")) {
        install(m);
    }
    Py_XDECREF(m);
    PyErr_Clear(); /* the program's own import says why, if it fails */
    PyErr_Restore(et, ev, etb);
    installing = 0;
    return 0;
}

/* Is a context dimension wanted by what is attached now? */
static int
tracking_wanted(void)
{
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            if (c->attached &&
                ((c->flags & PTK_FLAG_EXEC_CONTEXT) || !(c->flags & PTK_FLAG_OWN_STACK))) {
                return 1;
            }
        }
    }
    return 0;
}

void
ptk__exec_sync(void)
{
    if (!Py_IsInitialized() || !PyGILState_Check()) {
        return;
    }
    wanted = tracking_wanted();
    if (wanted && !installed) {
        PyObject *m = greenlet_imported();
        if (m != NULL) {
            install(m);
            Py_DECREF(m);
        }
        else if (!audit_added) {
            if (PySys_AddAuditHook(audit, NULL) == 0) {
                audit_added = 1;
            }
            PyErr_Clear();
        }
    }
    else if (!wanted && installed) {
        uninstall();
    }
}

/* ---- asyncio Tasks --------------------------------------------------------
 *
 * A Task does not replace the stack of frames: its steps are calls from the
 * loop, nested as any calls are, so the shadow stacks need nothing. What
 * plugins that follow Tasks need is which Task a step is of, under one
 * number for the whole process: asyncio's own current_task(), and a number
 * per Task kept in a dictionary by the Task's address, the entry dropped by
 * a weak reference's callback when the Task goes (before its memory can be
 * reused), as the greenlets' records are. */

static PyObject *asyncio_name; /* "asyncio" (interned) */
static PyObject *current_task; /* asyncio.current_task, once imported */
static PyObject *task_ids;     /* {address of a Task: (number, weak reference)} */
static uint64_t task_serial;   /* (never reset: numbers are never reused) */

static PyObject *
task_gone(PyObject *key, PyObject *wr)
{
    (void)wr;
    if (task_ids != NULL && PyDict_DelItem(task_ids, key) < 0) {
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyMethodDef task_gone_def = {"_pytracekit_task_gone", (PyCFunction)task_gone, METH_O,
                                    NULL};

/* asyncio.current_task, or NULL (asyncio not imported: it is not imported
 * here). No exception is left set. */
static PyObject *
current_task_fn(void)
{
    if (current_task != NULL) {
        return current_task;
    }
    if (asyncio_name == NULL && (asyncio_name = PyUnicode_InternFromString("asyncio")) == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *mod = PyImport_GetModule(asyncio_name);
    if (mod == NULL) {
        PyErr_Clear();
        return NULL;
    }
    current_task = PyObject_GetAttrString(mod, "current_task");
    Py_DECREF(mod);
    if (current_task == NULL) {
        PyErr_Clear();
    }
    return current_task;
}

/* The number of Task @p t, given at first sight; 0 on failure (no
 * exception left set). */
static uint64_t
task_number(PyObject *t)
{
    if (task_ids == NULL && (task_ids = PyDict_New()) == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *key = PyLong_FromVoidPtr(t);
    if (key == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *v = PyDict_GetItemWithError(task_ids, key);
    if (v != NULL) {
        Py_DECREF(key);
        return PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(v, 0));
    }
    uint64_t n = 0;
    PyObject *cb = PyErr_Occurred() ? NULL : PyCFunction_New(&task_gone_def, key);
    PyObject *wr = cb != NULL ? PyWeakref_NewRef(t, cb) : NULL;
    v = wr != NULL ? Py_BuildValue("(KO)", (unsigned long long)(task_serial + 1), wr) : NULL;
    if (v != NULL && PyDict_SetItem(task_ids, key, v) == 0) {
        n = ++task_serial;
    }
    PyErr_Clear(); /* (a Task type without weak references: no number) */
    Py_XDECREF(v);
    Py_XDECREF(wr);
    Py_XDECREF(cb);
    Py_DECREF(key);
    return n;
}

uint64_t
ptk__running_task(PyObject **task)
{
    if (task != NULL) {
        *task = NULL;
    }
    PyObject *fn = current_task_fn();
    if (fn == NULL) {
        return 0;
    }
    PyObject *t = PyObject_CallNoArgs(fn);
    if (t == NULL || t == Py_None) {
        PyErr_Clear(); /* no running loop */
        Py_XDECREF(t);
        return 0;
    }
    uint64_t n = task_number(t);
    /* borrowed: the loop keeps the Task it runs */
    Py_DECREF(t);
    if (n != 0 && task != NULL) {
        *task = t;
    }
    return n;
}

void
ptk__exec_reset(void)
{
    /* after Py_FinalizeEx: the objects are gone with the interpreter */
    wanted = installed = installing = 0;
    audit_added = 0; /* the interpreter's audit hooks went with it */
    tracer = prev_tracer = greenlet_mod = recs = NULL;
    asyncio_name = current_task = task_ids = NULL;
}
