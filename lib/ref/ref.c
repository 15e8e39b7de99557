/*
 * The hub's reference tracer: one PyRefTracer (CPython 3.13+) shared by
 * every subscriber of REF_CREATE / REF_DESTROY.
 *
 * CPython has one process-global slot for a reference tracer. The hub puts
 * its tracer there while some subscriber wants reference events and takes
 * it out when none does. A tracer found in the slot at install time
 * (tracemalloc, started first) is forwarded every event and put back at
 * removal if the slot still holds the hub's tracer.
 *
 * Nobody tells the hub when its tracer is replaced (tracemalloc.start()
 * overwrites the slot, whoever is in it; on 3.13.0 tracemalloc.stop() leaves
 * its own, now idle, tracer there). The hub notices
 * eviction:
 *   - at each ptk__ref_sync (every dispatch-table swap, and at stop),
 *   - at each ptk__ref_status (plugins ask for it in their reports),
 *   - at once where CPython sends PyRefTracer_TRACKER_REMOVED,
 *   - when its tracer is called with the token of an earlier install
 *     (another tool handed back a stale copy of the slot).
 * The time recorded is the time the eviction was noticed, not the time it
 * happened; the event counter says how many events arrived before it.
 * Once evicted, the hub stays out of the slot until no subscriber wants
 * reference events any more: it never fights over the slot, never forwards
 * to a tracer it did not see in the slot (the one it chained to may be gone)
 * and never puts a tracer back into a slot that is no longer its own.
 *
 * The rules of on_ref (no Python object created, no exception set or
 * cleared, no call into Python) are enforced where they can be seen:
 *   - the thread's pending exception is compared before and after each
 *     on_ref; a change is undone (the original exception is put back, a new
 *     one is taken away) and the subscriber is detached;
 *   - an object created while a subscriber's on_ref runs reaches the hub's
 *     tracer as a nested CREATE: the subscriber is detached. Nested events
 *     are still forwarded to the chained tracer and delivered to the other
 *     subscribers, never to the one whose on_ref is running.
 * Neither check creates an object or calls into Python; the exception taken
 * away is released later, outside the tracer (at the next sync or status).
 */

#include "ref/ref.h"

#include <string.h>

#if PTK_HAVE_REFTRACER

/* One on_ref call in progress on the (GIL-holding) thread; a chain when
 * on_ref calls nest. */
typedef struct ptk__refcall {
    struct ptk_plugin_ctx *ctx;
    const char *created_type; /* first object created inside on_ref */
    uint64_t created;         /* how many */
    struct ptk__refcall *outer;
} ptk__refcall;

#define PTK__REF_GRAVE 16

static struct {
    int want;          /* some subscriber wants reference events */
    int in_slot;       /* the hub's tracer is in the slot (as far as known) */
    int evicted;       /* replaced while wanted; sticky until a fresh install */
    int removing;      /* the hub itself is changing the slot */
    uint64_t evicted_at_ns;
    uint64_t events;
    uintptr_t gen;     /* install generation; (void *)gen is the slot's data */
    PyRefTracer chain_fn;
    void *chain_data;
    ptk__refcall *calls;  /* innermost on_ref in progress */
    PyObject *grave[PTK__REF_GRAVE]; /* exceptions taken from a subscriber */
    int ngrave;
} ptk__ref;

static int ptk__ref_tracer(PyObject *obj, PyRefTracerEvent event, void *data);

static void *
ptk__ref_token(void)
{
    return (void *)ptk__ref.gen;
}

static void
ptk__ref_note_evicted(void)
{
    if (!ptk__ref.evicted) {
        ptk__ref.evicted = 1;
        ptk__ref.evicted_at_ns = ptk__clock_ns();
    }
    ptk__ref.in_slot = 0;
    /* Whatever we chained to may be gone with us: never call it again. */
    ptk__ref.chain_fn = NULL;
    ptk__ref.chain_data = NULL;
}

/* Is the slot still ours? Notes an eviction. Needs the GIL. */
static void
ptk__ref_check_slot(void)
{
    if (!ptk__ref.in_slot) {
        return;
    }
    void *data = NULL;
    PyRefTracer fn = PyRefTracer_GetTracer(&data);
    if (fn != ptk__ref_tracer || data != ptk__ref_token()) {
        ptk__ref_note_evicted();
    }
}

/* Releases the exceptions taken away from subscribers. Outside the tracer
 * only: releasing may destroy objects and run arbitrary code. */
static void
ptk__ref_bury(void)
{
    if (ptk__ref.calls != NULL) { /* inside an on_ref */
        return;
    }
    while (ptk__ref.ngrave > 0) {
        PyObject *exc = ptk__ref.grave[--ptk__ref.ngrave];
        ptk__ref.grave[ptk__ref.ngrave] = NULL;
        Py_DECREF(exc);
    }
}

/* Copies the str @p s into buf as UTF-8 without creating anything (no
 * UTF-8 cache, no exception): safe inside the tracer. */
static void
ptk__ref_strcpy(char *buf, size_t cap, PyObject *s)
{
    size_t o = 0;
    if (s != NULL && PyUnicode_Check(s)) {
        int kind = PyUnicode_KIND(s);
        const void *d = PyUnicode_DATA(s);
        Py_ssize_t n = PyUnicode_GET_LENGTH(s);
        for (Py_ssize_t i = 0; i < n && o + 5 < cap; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, d, i);
            if (c < 0x80) {
                buf[o++] = (char)c;
            }
            else if (c < 0x800) {
                buf[o++] = (char)(0xC0 | (c >> 6));
                buf[o++] = (char)(0x80 | (c & 0x3F));
            }
            else if (c >= 0xD800 && c <= 0xDFFF) {
                buf[o++] = '?';
            }
            else if (c < 0x10000) {
                buf[o++] = (char)(0xE0 | (c >> 12));
                buf[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
                buf[o++] = (char)(0x80 | (c & 0x3F));
            }
            else {
                buf[o++] = (char)(0xF0 | (c >> 18));
                buf[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
                buf[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
                buf[o++] = (char)(0x80 | (c & 0x3F));
            }
        }
    }
    buf[o < cap ? o : cap - 1] = '\0';
}

/* "RuntimeError: boom" for an exception, without creating anything. */
static void
ptk__ref_describe(char *buf, size_t cap, PyObject *exc)
{
    snprintf(buf, cap, "%s", Py_TYPE(exc)->tp_name);
    if (!PyExceptionInstance_Check(exc)) {
        return;
    }
    PyObject *args = ((PyBaseExceptionObject *)exc)->args;
    if (args != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) >= 1
        && PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
        char msg[160];
        ptk__ref_strcpy(msg, sizeof msg, PyTuple_GET_ITEM(args, 0));
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, ": %s", msg);
    }
}

/* Detaches @p ctx for breaking the on_ref rules. Only C and malloc: this
 * runs inside the tracer. */
static void
ptk__ref_detach(struct ptk_plugin_ctx *ctx, const char *what)
{
    if (ctx->failed) {
        return;
    }
    ptk__fail_note(ctx, PTK_EPLUGIN,
                   "on_ref %s inside CPython's reference tracer, where it "
                   "must not create Python objects, set or clear an "
                   "exception, or call into Python",
                   what);
    ptk__plugin_fail(ctx, PTK_EPLUGIN, 0);
}

/* After an on_ref: undo a change to the pending exception and describe it
 * into @p what. @p exc0 is the exception pending before (the caller holds a
 * reference to it). */
static void
ptk__ref_fix_exception(PyObject *exc0, char *what, size_t cap)
{
    PyObject *now = PyErr_GetRaisedException();
    if (now != NULL) {
        char desc[200];
        ptk__ref_describe(desc, sizeof desc, now);
        if (exc0 != NULL) {
            snprintf(what, cap, "replaced the pending exception (%s) with %s",
                     Py_TYPE(exc0)->tp_name, desc);
        }
        else {
            snprintf(what, cap, "set an exception (%s)", desc);
        }
        if (ptk__ref.ngrave < PTK__REF_GRAVE) {
            ptk__ref.grave[ptk__ref.ngrave++] = now;
        }
        else {
            Py_DECREF(now); /* rare: more failures than one sync can see */
        }
    }
    else {
        snprintf(what, cap, "cleared the pending exception (%s)",
                 Py_TYPE(exc0)->tp_name);
    }
    if (exc0 != NULL) {
        PyErr_SetRaisedException(Py_NewRef(exc0));
    }
}

static int
ptk__ref_running(const ptk__refcall *c, const struct ptk_plugin_ctx *ctx)
{
    for (; c != NULL; c = c->outer) {
        if (c->ctx == ctx) {
            return 1;
        }
    }
    return 0;
}

/* An on_ref broke the rules: undo what can be undone, detach it. Out of
 * line: the hot path only tests two words. */
static void __attribute__((noinline, cold))
ptk__ref_broken(struct ptk_plugin_ctx *ctx, const ptk__refcall *call,
                int changed, PyObject *exc0)
{
    char made[160] = "", exc[256] = "", what[440];
    if (call->created > 0) {
        snprintf(made, sizeof made, "created %llu Python object%s "
                 "(the first a '%s')", (unsigned long long)call->created,
                 call->created == 1 ? "" : "s", call->created_type);
    }
    if (changed) {
        ptk__ref_fix_exception(exc0, exc, sizeof exc);
    }
    snprintf(what, sizeof what, "%s%s%s", made,
             made[0] && exc[0] ? " and " : "", exc);
    ptk__ref_detach(ctx, what);
}

static void
ptk__ref_deliver(const ptk__table *t, PyObject *obj, ptk_event_kind kind)
{
    PyThreadState *ts = PyThreadState_GetUnchecked();
    if (ts == NULL) {
        return; /* the tracer runs with a thread state; never seen */
    }
    /* Held so that an on_ref that clears it cannot free it. */
    PyObject *exc0 = ts->current_exception;
    if (exc0 != NULL) {
        Py_INCREF(exc0);
    }
    unsigned int bit = PTK_MASK(kind);
    ptk__refcall *outer = ptk__ref.calls;
    const ptk__refsub *s = t->refs, *end = t->refs + t->nref;
    for (; s < end; s++) {
        struct ptk_plugin_ctx *ctx = s->ctx;
        if (ctx->failed || !(ctx->events & bit)
            || (outer != NULL && ptk__ref_running(outer, ctx))) {
            continue;
        }
        ptk__refcall call = {ctx, NULL, 0, outer};
        ptk__ref.calls = &call;
        s->on_ref(s->state, obj, kind);
        ptk__ref.calls = outer;
        int changed = ts->current_exception != exc0;
        if (__builtin_expect(call.created > 0 || changed, 0)) {
            ptk__ref_broken(ctx, &call, changed, exc0);
        }
        if (__builtin_expect(ptk__current != t, 0)) {
            /* The table was swapped under us (an on_ref that called into
             * Python stopped a session): t may be freed, stop reading it. */
            break;
        }
    }
    if (exc0 != NULL) {
        Py_DECREF(exc0);
    }
}

static int
ptk__ref_tracer(PyObject *obj, PyRefTracerEvent event, void *data)
{
    if (data != ptk__ref_token() || !ptk__ref.in_slot) {
        /* A copy of the slot from an earlier install, handed back by some
         * other tool: our current install is not in the slot. */
        if (ptk__ref.in_slot) {
            ptk__ref_note_evicted();
        }
        return 0;
    }
#if PTK_HAVE_REFTRACER_TRACKER_REMOVED
    if (event == PyRefTracer_TRACKER_REMOVED) {
        if (!ptk__ref.removing) {
            ptk__ref_note_evicted();
        }
        return 0;
    }
#endif
    if (ptk__ref.chain_fn != NULL) {
        (void)ptk__ref.chain_fn(obj, event, ptk__ref.chain_data);
    }
    if (event != PyRefTracer_CREATE && event != PyRefTracer_DESTROY) {
        return 0; /* a kind of event newer than this code: forwarded only */
    }
    ptk__ref.events++;
    ptk_event_kind kind =
        event == PyRefTracer_CREATE ? PTK_EV_REF_CREATE : PTK_EV_REF_DESTROY;
    if (kind == PTK_EV_REF_CREATE && ptk__ref.calls != NULL) {
        /* Created while an on_ref runs: that subscriber broke the rules. */
        ptk__refcall *c = ptk__ref.calls;
        if (c->created++ == 0) {
            c->created_type = Py_TYPE(obj)->tp_name;
        }
    }
    const ptk__table *t = ptk__current;
    if (t != NULL && t->nref > 0) {
        ptk__ref_deliver(t, obj, kind);
    }
    return 0;
}

/* Puts the hub's tracer in the slot, chaining to what is there. */
static int
ptk__ref_install(char **errmsg)
{
    void *data = NULL;
    PyRefTracer fn = PyRefTracer_GetTracer(&data);
    ptk__ref.gen++; /* the token; never NULL */
    if (ptk__ref.gen == 0) {
        ptk__ref.gen = 1;
    }
    ptk__ref.evicted = 0;
    ptk__ref.evicted_at_ns = 0;
    ptk__ref.events = 0;
    /* A stale copy of our own tracer is not a tracer to chain to. */
    if (fn == ptk__ref_tracer) {
        fn = NULL;
        data = NULL;
    }
    ptk__ref.chain_fn = fn;
    ptk__ref.chain_data = data;
    ptk__ref.removing = 1;
    int rc = PyRefTracer_SetTracer(ptk__ref_tracer, ptk__ref_token());
    ptk__ref.removing = 0;
    if (rc < 0) {
        ptk__ref.chain_fn = NULL;
        ptk__ref.chain_data = NULL;
        PyErr_Clear();
        return ptk__err(errmsg, PTK_EPYTHON,
                        "PyRefTracer_SetTracer failed: the reference tracer "
                        "could not be installed");
    }
    ptk__ref.in_slot = 1;
    ptk__ref.want = 1;
    return PTK_OK;
}

/* Takes the hub's tracer out of the slot if it is still there. */
static void
ptk__ref_remove(void)
{
    ptk__ref_check_slot();
    void *data = NULL;
    PyRefTracer fn = PyRefTracer_GetTracer(&data);
    if (ptk__ref.in_slot || fn == ptk__ref_tracer) {
        /* Ours: give back what we found. A stale copy of ours (handed back
         * by another tool after it evicted us) is emptied: what we chained
         * to then may be gone. */
        ptk__ref.removing = 1;
        int rc = ptk__ref.in_slot
                     ? PyRefTracer_SetTracer(ptk__ref.chain_fn,
                                             ptk__ref.chain_data)
                     : PyRefTracer_SetTracer(NULL, NULL);
        if (rc < 0) {
            PyErr_Clear();
        }
        ptk__ref.removing = 0;
    }
    ptk__ref.in_slot = 0;
    ptk__ref.want = 0;
    ptk__ref.chain_fn = NULL;
    ptk__ref.chain_data = NULL;
}

int
ptk__ref_sync(const ptk__table *t, char **errmsg)
{
    int rc = PTK_OK;
    if (t != NULL && t->nref > 0) {
        if (!ptk__ref.want) {
            rc = ptk__ref_install(errmsg);
        }
        else {
            ptk__ref_check_slot();
        }
    }
    else if (ptk__ref.want) {
        ptk__ref_remove();
    }
    ptk__ref_bury();
    return rc;
}

int
ptk__ref_status(ptk_ref_status *out)
{
    if (out == NULL || out->struct_size < sizeof(ptk_ref_status)) {
        return PTK_EINVAL;
    }
    if (ptk__ref.calls == NULL && PyGILState_Check()) {
        ptk__ref_check_slot();
        ptk__ref_bury();
    }
    out->available = 1;
    out->installed = ptk__ref.in_slot;
    out->chained = ptk__ref.in_slot && ptk__ref.chain_fn != NULL;
    out->evicted = ptk__ref.evicted;
    out->evicted_at_ns = ptk__ref.evicted_at_ns;
    out->events = ptk__ref.events;
    return PTK_OK;
}

int
ptk__ref_check_available(const char *plugin, char **errmsg)
{
#ifdef Py_GIL_DISABLED
    /* The reference path relies on the GIL (one tracer call at a time). */
    return ptk__err(errmsg, PTK_EUNSUPPORTED,
                    "plugin '%s' subscribes to reference events, which "
                    "pytracekit does not support on a free-threaded build "
                    "(this is Python %s)",
                    plugin != NULL ? plugin : "?", ptk__python_version());
#else
    (void)plugin;
    (void)errmsg;
    return PTK_OK;
#endif
}

#else /* !PTK_HAVE_REFTRACER */

int
ptk__ref_sync(const ptk__table *t, char **errmsg)
{
    if (t != NULL && t->nref > 0) {
        return ptk__err(errmsg, PTK_EUNSUPPORTED,
                        "reference events need CPython 3.13 or newer "
                        "(PyRefTracer); this is Python %s",
                        ptk__python_version());
    }
    return PTK_OK;
}

int
ptk__ref_status(ptk_ref_status *out)
{
    if (out == NULL || out->struct_size < sizeof(ptk_ref_status)) {
        return PTK_EINVAL;
    }
    out->available = 0;
    out->installed = 0;
    out->chained = 0;
    out->evicted = 0;
    out->evicted_at_ns = 0;
    out->events = 0;
    return PTK_OK;
}

int
ptk__ref_check_available(const char *plugin, char **errmsg)
{
    return ptk__err(errmsg, PTK_EUNSUPPORTED,
                    "plugin '%s' subscribes to reference events "
                    "(ref_create/ref_destroy), which need CPython 3.13 or "
                    "newer (PyRefTracer); this is Python %s",
                    plugin != NULL ? plugin : "?", ptk__python_version());
}

#endif /* PTK_HAVE_REFTRACER */
