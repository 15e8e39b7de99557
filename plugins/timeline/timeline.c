/*
 * timeline: every call as a span on a per-thread track, a coroutine's spans
 * on its asyncio Task's track, streamed while the program runs.
 *
 * Per thread, a stack of running frames. A frame's BEGIN is written when it
 * starts (min_duration=0), or — with min_duration — when the first span
 * inside it, or itself, turns out long enough: its ancestors are then
 * written first, so the output always nests. A frame whose BEGIN is in the
 * output gets its END when it returns. Writes that find both buffers full
 * are dropped and counted (tl_out.c); the ENDs owed by spans already begun
 * are kept per track and written first as soon as there is room again, with
 * their own timestamps, and a "dropped events" counter sample marks the gap.
 */
#include "timeline.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------ */

enum { OPT_FORMAT, OPT_BUFFER_KB, OPT_FLUSH_MS, OPT_MIN_DURATION,
       OPT_BUILTINS, OPT_EXCEPTIONS, OPT_TASKS, OPT_GC, OPT_COUNTERS,
       OPT_OBJECTS, OPT_COUNT };

static const ptk_option_spec tl_options[] = {
    [OPT_FORMAT] = {"format", PTK_OPT_CHOICE, "perfetto",
                    "perfetto (timeline.perfetto-trace, protobuf) or json "
                    "(timeline.json, Chrome trace events)", "perfetto|json"},
    [OPT_BUFFER_KB] = {"buffer_kb", PTK_OPT_INT, "4096",
                       "size of each of the two output buffers, KiB (the "
                       "memory bound); events that find both full are "
                       "dropped and counted", NULL},
    [OPT_FLUSH_MS] = {"flush_ms", PTK_OPT_INT, "500",
                      "hand a non-empty buffer to the writer at least this "
                      "often (0: only when full)", NULL},
    [OPT_MIN_DURATION] = {"min_duration", PTK_OPT_STRING, "0",
                          "leave out spans shorter than this (e.g. 50us, "
                          "1.5ms; a bare number is microseconds)", NULL},
    [OPT_BUILTINS] = {"builtins", PTK_OPT_BOOL, "true",
                      "C functions and methods as spans too", NULL},
    [OPT_EXCEPTIONS] = {"exceptions", PTK_OPT_BOOL, "true",
                        "exceptions as instant events", NULL},
    [OPT_TASKS] = {"tasks", PTK_OPT_BOOL, "true",
                   "asyncio: a Task's coroutine spans on the Task's track", NULL},
    [OPT_GC] = {"gc", PTK_OPT_BOOL, "true",
                "garbage collections as spans, and pause time per second as a track (gc.callbacks)", NULL},
    [OPT_COUNTERS] = {"counters", PTK_OPT_BOOL, "true",
                      "an events-per-second track", NULL},
    [OPT_OBJECTS] = {"objects", PTK_OPT_INT, "5",
                     "live objects of the N types with the most, one counter "
                     "track each, when reftrack runs in the same session "
                     "(CPython 3.13+); 0: none", NULL},
    [OPT_COUNT] = {NULL, 0, NULL, NULL, NULL},
};

/* "50us", "1.5ms", "2s", "300ns", "7" (µs) -> ns; -1 if malformed. */
static int64_t
tl_parse_duration(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || v < 0) {
        return -1;
    }
    while (isspace((unsigned char)*end)) {
        end++;
    }
    double mul = 1e3;
    if (*end == '\0' || strcmp(end, "us") == 0) {
        mul = 1e3;
    }
    else if (strcmp(end, "ns") == 0) {
        mul = 1;
    }
    else if (strcmp(end, "ms") == 0) {
        mul = 1e6;
    }
    else if (strcmp(end, "s") == 0) {
        mul = 1e9;
    }
    else {
        return -1;
    }
    double ns = v * mul;
    if (ns > 9e18) {
        return -1;
    }
    return (int64_t)(ns + 0.5);
}

/* ---- writing, and the drop policy ---------------------------------------- */

static int tl_resume(tl_state *st, uint64_t now);

/* May anything be written now? While dropping, only after the owed ENDs. */
static inline int
tl_can_write(tl_state *st, uint64_t now)
{
    return !st->dropping || tl_resume(st, now) == 0;
}

static void
tl_drop(tl_state *st)
{
    if (!st->dropping) {
        st->dropping = 1;
        st->drop_episodes++;
    }
    st->dropped++;
    st->dropped_total++;
}

static int
tl_owe(tl_state *st, tl_track *t, uint64_t ts)
{
    if (PTK_KIT_RESERVE(t->owed, t->owed_cap, t->nowed + 1, 16) != 0) {
        return -1;
    }
    t->owed[t->nowed++] = ts;
    (void)st;
    return 0;
}

static int
tl_track_pay(tl_state *st, tl_track *t)
{
    if (t->nowed == 0) {
        return 0;
    }
    size_t i = 0;
    for (; i < t->nowed; i++) {
        if (st->fmt->end(st, t, t->owed[i]) != 0) {
            break;
        }
    }
    memmove(t->owed, t->owed + i, (t->nowed - i) * sizeof(*t->owed));
    t->nowed -= i;
    return t->nowed == 0 ? 0 : -1;
}

/* Writes the owed ENDs of every track and the dropped-events sample. */
static int
tl_resume(tl_state *st, uint64_t now)
{
    if (atomic_load_explicit(&st->out.busy, memory_order_acquire) &&
        st->out.len + 4096 > st->out.cap) {
        return -1; /* still no room: stay quiet until the writer is done */
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        if (st->threads[i] != NULL && tl_track_pay(st, &st->threads[i]->track) != 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < st->ntasks; i++) {
        if (tl_track_pay(st, &st->task_list[i]->track) != 0) {
            return -1;
        }
    }
    if (tl_track_pay(st, &st->process_track) != 0) {
        return -1;
    }
    if (st->fmt->counter(st, &st->drop_track, (double)st->dropped_total, now) != 0) {
        return -1;
    }
    st->dropping = 0;
    st->dropped = 0;
    return 0;
}

static int
tl_write_begin(tl_state *st, tl_frame *f, uint64_t now)
{
    if (!tl_can_write(st, now) || st->fmt->begin(st, f->track, f->name, f->t0) != 0) {
        tl_drop(st);
        return -1;
    }
    f->emitted = 1;
    st->spans++;
    return 0;
}

/* BEGINs of the frames below the top @p sp that are not written yet. */
static int
tl_write_ancestors(tl_state *st, tl_thread *th, size_t sp, uint64_t now)
{
    for (size_t i = 0; i < sp; i++) {
        tl_frame *a = &th->stack[i];
        if (!a->emitted && !a->skip && tl_write_begin(st, a, now) != 0) {
            return -1;
        }
    }
    return 0;
}

/* A frame that is over (popped, or never pushed: a GC pause); the frames
 * still running on the thread are th->stack[0..th->sp). */
static void
tl_frame_end(tl_state *st, tl_thread *th, tl_frame *f, uint64_t now)
{
    if (f->skip) {
        return;
    }
    if (f->emitted) {
        if (!tl_can_write(st, now) || st->fmt->end(st, f->track, now) != 0) {
            tl_drop(st);
            if (tl_owe(st, f->track, now) != 0) {
                st->host->log(st->ctx, "out of memory: a span is left open");
            }
        }
        return;
    }
    if ((int64_t)(now - f->t0) < st->min_duration_ns) {
        return;
    }
    if (tl_write_ancestors(st, th, th->sp, now) != 0 ||
        tl_write_begin(st, f, now) != 0) {
        return;
    }
    if (st->fmt->end(st, f->track, now) != 0) {
        tl_drop(st);
        tl_owe(st, f->track, now);
    }
}

/* ---- threads, tasks ------------------------------------------------------ */

static tl_thread *
tl_thread_get(tl_state *st, const ptk_thread *t)
{
    size_t idx = t->index;
    if (PTK_KIT_RESERVE_ZERO(st->threads, st->nthreads, idx + 1, 8) != 0) {
        return NULL;
    }
    if (st->threads[idx] == NULL) {
        tl_thread *th = calloc(1, sizeof(*th));
        char buf[96];
        if (th == NULL) {
            return NULL;
        }
        th->index = t->index;
        th->track.kind = TL_TRACK_THREAD;
        th->track.uuid = 0x100 + (uint64_t)t->index;
        /* on_event runs on the event's thread: this is its native id */
        th->track.tid = (int64_t)PyThread_get_thread_native_id();
        th->pt = t;
        th->track.named = t->name != NULL;
        if (t->name != NULL) {
            snprintf(buf, sizeof(buf), "%s", t->name);
        }
        else if (th->track.tid == (int64_t)getpid()) {
            /* threading is not imported (yet): the hub has no name; the
             * process's first thread is the one threading calls so */
            snprintf(buf, sizeof(buf), "MainThread");
        }
        else {
            snprintf(buf, sizeof(buf), "thread %lld", (long long)th->track.tid);
        }
        th->track.name = strdup(buf);
        if (th->track.name == NULL) {
            free(th);
            return NULL;
        }
        st->threads[idx] = th;
    }
    return st->threads[idx];
}

static inline tl_thread *
tl_thread_of(tl_state *st, const ptk_thread *t)
{
    size_t idx = t->index;
    tl_thread *th = idx < st->nthreads ? st->threads[idx] : NULL;
    return th != NULL ? th : tl_thread_get(st, t);
}

/* Does @p wref still refer to @p obj? */
static int
tl_weak_is(PyObject *wref, PyObject *obj)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(wref, &o) < 0) {
        PyErr_Clear();
        return 0;
    }
    Py_XDECREF(o);
    return o == obj;
#else
    return PyWeakref_GetObject(wref) == obj;
#endif
}

/* The asyncio Task running now, if asyncio is imported and a loop runs. */
static tl_task *
tl_current_task(tl_state *st, uint64_t now)
{
    if (st->current_task == NULL) {
        PyObject *mod = PyImport_GetModule(st->asyncio_name);
        if (mod == NULL) {
            PyErr_Clear();
            return NULL; /* not imported (yet): we never import it */
        }
        st->current_task = PyObject_GetAttrString(mod, "current_task");
        Py_DECREF(mod);
        if (st->current_task == NULL) {
            PyErr_Clear();
            return NULL;
        }
    }
    PyObject *task = PyObject_CallNoArgs(st->current_task);
    if (task == NULL) {
        PyErr_Clear(); /* no running loop */
        return NULL;
    }
    if (task == Py_None) {
        Py_DECREF(task);
        return NULL;
    }
    tl_task *tk = ptk_kit_map_get(&st->task_map, task, NULL);
    if (tk != NULL && tl_weak_is(tk->wref, task)) {
        Py_DECREF(task);
        return tk;
    }
    /* new, or a new task at the address of a finished one */
    if (PTK_KIT_RESERVE(st->task_list, st->tasks_cap, st->ntasks + 1, 32) != 0) {
        Py_DECREF(task);
        return NULL;
    }
    tk = calloc(1, sizeof(*tk));
    PyObject *name = PyObject_CallMethod(task, "get_name", NULL);
    const char *u = name != NULL && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    char label[160];
    if (tk == NULL || u == NULL) {
        PyErr_Clear();
        Py_XDECREF(name);
        Py_DECREF(task);
        free(tk);
        return NULL;
    }
    tk->id = st->ntasks + 1;
    tk->track.kind = TL_TRACK_TASK;
    tk->track.uuid = (UINT64_C(1) << 32) + tk->id;
    tk->track.tid = 1000000000 + (int64_t)tk->id;
    tk->track.name = strdup(u);
    snprintf(label, sizeof(label), "task %s", u);
    Py_DECREF(name);
    tk->wref = PyWeakref_NewRef(task, NULL);
    Py_DECREF(task);
    if (tk->wref == NULL || tk->track.name == NULL ||
        tl__name_label(&tk->label, label) != 0 ||
        ptk_kit_map_put(&st->task_map, task, NULL, tk) != 0) {
        PyErr_Clear();
        Py_XDECREF(tk->wref);
        free(tk->track.name);
        free(tk->label.text);
        free(tk->label.json);
        free(tk);
        return NULL;
    }
    tk->first_ns = now;
    st->task_list[st->ntasks++] = tk;
    return tk;
}

/* ---- the hot path -------------------------------------------------------- */

static int
tl_grow(tl_state *st, tl_thread *th)
{
    if (ptk_kit_grow(&th->stack, &th->cap, th->cap + 1, sizeof(*th->stack), 128, 0) != 0) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory growing a stack");
    }
    return PTK_OK;
}

static tl_frame *
tl_push(tl_state *st, tl_thread *th, const void *key, tl_name *n,
        tl_track *track, uint64_t now)
{
    if (th->sp == th->cap && tl_grow(st, th) != PTK_OK) {
        return NULL;
    }
    tl_frame *f = &th->stack[th->sp++];
    f->key = key;
    f->name = n;
    f->track = track;
    f->t0 = now;
    f->emitted = 0;
    f->skip = 0;
    f->coro = (uint8_t)n->coro;
    f->step = 0;
    f->task = NULL;
    if (st->min_duration_ns == 0 && !f->skip) {
        /* after a drop, the frames below whose BEGIN was lost come first,
         * so that the track stays in time order */
        if (th->gap) {
            if (tl_write_ancestors(st, th, th->sp - 1, now) != 0) {
                return f;
            }
            th->gap = 0;
        }
        if (tl_write_begin(st, f, now) != 0) {
            th->gap = 1;
        }
    }
    return f;
}

static int
tl_call(tl_state *st, tl_thread *th, const void *key, tl_name *n, uint64_t now)
{
    tl_frame *top = th->sp ? &th->stack[th->sp - 1] : NULL;
    tl_track *track = top ? top->track : &th->track;
    if (n->coro && st->tasks && (top == NULL || !top->coro)) {
        /* a coroutine resumed by something that is not a coroutine: the
         * step of a Task, if a Task runs it */
        tl_task *tk = tl_current_task(st, now);
        if (tk != NULL) {
            tl_frame *m = tl_push(st, th, NULL, &tk->label, &th->track, now);
            if (m == NULL) {
                return PTK_ENOMEM;
            }
            m->step = 1;
            tl_frame *f = tl_push(st, th, key, n, &tk->track, now);
            if (f == NULL) {
                return PTK_ENOMEM;
            }
            f->task = tk;
            tk->steps++;
            return PTK_OK;
        }
    }
    return tl_push(st, th, key, n, track, now) ? PTK_OK : PTK_ENOMEM;
}

/* Pops the top frame, and after a Task's root coroutine its step span. */
static void
tl_pop(tl_state *st, tl_thread *th, uint64_t now, int finished)
{
    tl_frame f = th->stack[--th->sp];
    tl_frame_end(st, th, &f, now);
    if (f.task != NULL) {
        tl_task *tk = f.task;
        tk->running_ns += now - f.t0;
        tk->last_ns = now;
        tk->done = finished;
        if (th->sp > 0 && th->stack[th->sp - 1].step) {
            tl_frame m = th->stack[--th->sp];
            tl_frame_end(st, th, &m, now);
        }
    }
}

/* RETURN of @p key: the top frame, or the nearest one below (the frames
 * above it lost their return, e.g. a session started mid-stack). */
static void
tl_return(tl_state *st, tl_thread *th, const void *key, int c, uint64_t now,
          int finished)
{
    if (th->sp > 0 && th->stack[th->sp - 1].key == key) {
        tl_pop(st, th, now, finished);
        return;
    }
    size_t i = th->sp;
    while (i > 0 && th->stack[i - 1].key != key) {
        if (c && !th->stack[i - 1].step && th->stack[i - 1].name->kind == TL_NAME_PY) {
            i = 0; /* a C return does not close Python frames */
            break;
        }
        i--;
    }
    if (i == 0) {
        th->unmatched++;
        return;
    }
    while (th->sp >= i) {
        tl_pop(st, th, now, th->sp == i ? finished : 0);
    }
}

static inline const void *
tl_c_key(const ptk_event *ev)
{
    const void *def = ptk_event_c_def(ev);
    return def != NULL ? def : (const void *)ev->arg;
}

static void tl_tick(tl_state *st, uint64_t now);
static int tl_start(tl_state *st, uint64_t now);

static int
tl_exception(tl_state *st, tl_thread *th, const ptk_event *ev, uint64_t now)
{
    PyObject *type = ev->arg != NULL && PyTuple_Check(ev->arg) &&
                     PyTuple_GET_SIZE(ev->arg) > 0
                         ? PyTuple_GET_ITEM(ev->arg, 0)
                         : (ev->arg ? (PyObject *)Py_TYPE(ev->arg) : NULL);
    if (type == NULL) {
        return PTK_OK;
    }
    tl_name *n = tl__name_exc(st, type);
    if (n == NULL) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory naming an exception");
    }
    tl_frame *top = th->sp ? &th->stack[th->sp - 1] : NULL;
    if (top != NULL && (top->skip || (st->min_duration_ns > 0 && !top->emitted))) {
        /* left out with its frame: too deep, or (with min_duration) in a
         * frame not known yet to be long enough */
        return PTK_OK;
    }
    if (tl_write_ancestors(st, th, th->sp, now) == 0 &&
        tl_can_write(st, now) &&
        st->fmt->instant(st, top ? top->track : &th->track, n, now, 0) == 0) {
        st->instants++;
    }
    else {
        tl_drop(st);
    }
    return PTK_OK;
}

static void tl_gc_span(tl_state *st, uint64_t t0, uint64_t t1);

static int tl_event(tl_state *st, const ptk_event *ev);

/* A collection that ran inside our own handling of an event (an object we
 * made triggered it) is written after the event: its span begins after the
 * event's clock reading, so it goes after the event's record. */
static int
tl_on_event(void *state, const ptk_event *ev)
{
    tl_state *st = state;
    st->in_event = 1;
    int rc = tl_event(st, ev);
    st->in_event = 0;
    for (int i = 0; i < st->gc_npending; i++) {
        tl_gc_span(st, st->gc_pending[i][0], st->gc_pending[i][1]);
    }
    st->gc_npending = 0;
    return rc;
}

static int
tl_event(tl_state *st, const ptk_event *ev)
{
    if (st->finished) {
        /* a session started again after its report: the trace is closed */
        st->after_finish++;
        return PTK_OK;
    }
    if (!st->started) {
        int rc = tl_start(st, ev->time_ns);
        if (rc != PTK_OK) {
            return rc;
        }
    }
    tl_thread *th = tl_thread_of(st, ev->thread);
    if (th == NULL) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory recording a thread");
    }
    uint64_t now = ev->time_ns;
    st->events++;
    st->tick_events++;
    th->last_ns = now;
    if (now >= st->next_tick) {
        tl_tick(st, now);
    }
    tl_name *n;
    switch (ev->kind) {
    case PTK_EV_CALL:
        n = st->last_key == (const void *)ev->code ? st->last_name
                                                   : tl__name_code(st, ev->code);
        if (n == NULL) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "cannot name a function");
        }
        st->last_key = ev->code;
        st->last_name = n;
        return tl_call(st, th, ev->code, n, now);
    case PTK_EV_RETURN:
        tl_return(st, th, ev->code, 0, now, ev->origin != PTK_ORIGIN_YIELD);
        return PTK_OK;
    case PTK_EV_C_CALL: {
        const void *key = tl_c_key(ev);
        n = tl__name_c(st, ev->arg, ev->c_self, key);
        if (n == NULL) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "cannot name a C function");
        }
        return tl_push(st, th, key, n, th->sp ? th->stack[th->sp - 1].track
                                              : &th->track, now)
                   ? PTK_OK : PTK_ENOMEM;
    }
    case PTK_EV_C_RETURN:
    case PTK_EV_C_EXCEPTION:
        tl_return(st, th, tl_c_key(ev), 1, now, 1);
        return PTK_OK;
    case PTK_EV_EXCEPTION:
        return tl_exception(st, th, ev, now);
    default:
        return PTK_OK;
    }
}

/* ---- counters, GC, time-based flushing ----------------------------------- */

#define TL_TICK_NS UINT64_C(1000000000)

/* Threads the hub has named since their track was described (the
 * monitoring backend may learn a thread's name after its first event). */
static void
tl_rename_threads(tl_state *st, uint64_t now)
{
    for (size_t i = 0; i < st->nthreads; i++) {
        tl_thread *th = st->threads[i];
        if (th == NULL || th->track.named || th->pt->name == NULL) {
            continue;
        }
        char *name = strdup(th->pt->name);
        if (name == NULL) {
            continue;
        }
        free(th->track.name);
        th->track.name = name;
        th->track.named = 1;
        if (st->fmt->rename(st, &th->track, now) != 0) {
            tl_drop(st);
        }
    }
}

static int tl_track_init(tl_track *t, int kind, uint64_t uuid, const char *name);

/* Live objects per type from reftrack's service (services.h): the types
 * with the most objects get a counter track each, the first time they are
 * among the top `objects`; every such track gets a sample at each tick
 * (0 once the type is below the TL_OBJ_SCAN types with the most). */
#define TL_OBJ_SCAN 256

static void
tl_sample_objects(tl_state *st, uint64_t now)
{
    const ptk_host *h = st->host;
    if (h->struct_size < offsetof(ptk_host, lookup) + sizeof h->lookup) {
        return;
    }
    const ptk_live_objects *svc = h->lookup(st->ctx, PTK_SERVICE_LIVE_OBJECTS);
    if (svc == NULL || svc->struct_size < sizeof *svc) {
        return;
    }
    ptk_live_type top[TL_OBJ_SCAN];
    size_t n = svc->types(svc->state, top, TL_OBJ_SCAN);
    for (size_t i = 0; i < n && i < (size_t)st->objects; i++) {
        char label[300];
        snprintf(label, sizeof label, "live objects: %s", top[i].type);
        size_t k = 0;
        while (k < st->nobj && strcmp(st->obj_track[k].name, label) != 0) {
            k++;
        }
        if (k == st->nobj && st->nobj < TL_OBJ_TRACKS) {
            if (tl_track_init(&st->obj_track[k], TL_TRACK_COUNTER,
                              (UINT64_C(2) << 32) + k, label) != 0) {
                tl_drop(st); /* out of memory: the track's samples are lost */
                continue;
            }
            st->obj_track[k].tid = st->pid;
            st->nobj++;
        }
    }
    for (size_t k = 0; k < st->nobj; k++) {
        const char *type = st->obj_track[k].name + strlen("live objects: ");
        uint64_t alive = 0; /* a type made twice (at two addresses): summed */
        for (size_t i = 0; i < n; i++) {
            alive += strcmp(top[i].type, type) == 0 ? top[i].alive : 0;
        }
        if (st->fmt->counter(st, &st->obj_track[k], (double)alive, now) != 0) {
            tl_drop(st);
        }
    }
}

static void
tl_tick(tl_state *st, uint64_t now)
{
    if (st->flush_ns > 0 && now - st->out.last_handoff_ns >= (uint64_t)st->flush_ns &&
        !st->dropping) {
        tl__out_kick(&st->out, now);
    }
    if (now >= st->next_counter) {
        if (!st->dropping) {
            tl_rename_threads(st, now);
        }
        uint64_t span = now - st->last_counter;
        if (st->counters && span > 0 && tl_can_write(st, now)) {
            double rate = (double)st->tick_events * 1e9 / (double)span;
            if (st->fmt->counter(st, &st->events_track, rate, now) != 0) {
                tl_drop(st);
            }
        }
        if (st->objects > 0 && tl_can_write(st, now)) {
            tl_sample_objects(st, now);
        }
        if (st->gc_cb != NULL && tl_can_write(st, now)) {
            double ms = (double)st->tick_gc_ns / 1e6;
            if (st->fmt->counter(st, &st->gc_track, ms, now) != 0) {
                tl_drop(st);
            }
        }
        st->tick_events = 0;
        st->tick_gc_ns = 0;
        st->last_counter = now;
        st->next_counter = now + TL_TICK_NS;
    }
    uint64_t next = st->next_counter;
    if (st->flush_ns > 0 && st->out.last_handoff_ns + (uint64_t)st->flush_ns < next) {
        next = st->out.last_handoff_ns + (uint64_t)st->flush_ns;
        if (next <= now) {
            next = now + (uint64_t)st->flush_ns / 4 + 1;
        }
    }
    st->next_tick = next;
}

/* gc.callbacks entry: a GC pause as a span on the collecting thread. */
static PyObject *
tl_gc_callback(PyObject *self, PyObject *args)
{
    tl_state *st = PyCapsule_GetPointer(self, "pytracekit.timeline");
    PyObject *phase, *info;
    if (st == NULL || !PyArg_ParseTuple(args, "OO", &phase, &info)) {
        return NULL;
    }
    uint64_t now = st->host->clock_ns();
    if (st->finished) {
        Py_RETURN_NONE;
    }
    if (PyUnicode_CompareWithASCIIString(phase, "start") == 0) {
        st->gc_t0 = now;
        Py_RETURN_NONE;
    }
    if (st->gc_t0 == 0) {
        Py_RETURN_NONE;
    }
    st->gc_count++;
    st->gc_total_ns += now - st->gc_t0;
    st->tick_gc_ns += now - st->gc_t0;
    if (st->in_event && st->gc_npending < 8) {
        st->gc_pending[st->gc_npending][0] = st->gc_t0;
        st->gc_pending[st->gc_npending][1] = now;
        st->gc_npending++;
    }
    else {
        tl_gc_span(st, st->gc_t0, now);
    }
    st->gc_t0 = 0;
    Py_RETURN_NONE;
}

/* A GC pause as a span on the collecting thread's current track. */
static void
tl_gc_span(tl_state *st, uint64_t t0, uint64_t t1)
{
    const ptk_thread *pt = st->host->current_thread();
    tl_thread *th = pt ? tl_thread_of(st, pt) : NULL;
    if (th != NULL) {
        tl_frame f = {0};
        f.name = &st->gc_name;
        f.track = th->sp ? th->stack[th->sp - 1].track : &th->track;
        f.t0 = t0 > th->last_ns ? t0 : th->last_ns;
        f.skip = th->sp && th->stack[th->sp - 1].skip;
        tl_frame_end(st, th, &f, t1 > f.t0 ? t1 : f.t0);
    }
}

static PyMethodDef tl_gc_def = {"timeline_gc", tl_gc_callback, METH_VARARGS,
                                "pytracekit timeline: GC pauses"};

static int
tl_gc_install(tl_state *st)
{
    PyObject *gc = PyImport_ImportModule("gc"); /* built in: imports nothing */
    PyObject *cbs = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    PyObject *cap = cbs ? PyCapsule_New(st, "pytracekit.timeline", NULL) : NULL;
    PyObject *fn = cap ? PyCFunction_New(&tl_gc_def, cap) : NULL;
    int rc = -1;
    if (fn != NULL && PyList_Check(cbs) && PyList_Append(cbs, fn) == 0) {
        st->gc_cb = Py_NewRef(fn);
        rc = 0;
    }
    Py_XDECREF(fn);
    Py_XDECREF(cap);
    Py_XDECREF(cbs);
    Py_XDECREF(gc);
    PyErr_Clear();
    return rc;
}

static void
tl_gc_remove(tl_state *st)
{
    if (st->gc_cb == NULL) {
        return;
    }
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *cbs = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    if (cbs != NULL && PyList_Check(cbs)) {
        for (Py_ssize_t i = PyList_GET_SIZE(cbs) - 1; i >= 0; i--) {
            if (PyList_GET_ITEM(cbs, i) == st->gc_cb) {
                PySequence_DelItem(cbs, i);
                break;
            }
        }
    }
    Py_XDECREF(cbs);
    Py_XDECREF(gc);
    PyErr_Clear();
    Py_CLEAR(st->gc_cb);
}

/* ---- lifecycle ----------------------------------------------------------- */

static int
tl_track_init(tl_track *t, int kind, uint64_t uuid, const char *name)
{
    t->kind = kind;
    t->uuid = uuid;
    t->name = strdup(name);
    return t->name ? 0 : -1;
}

static void tl_fini(void *state);

/* At the first event (the session has started: the output directory
 * exists): open the file, start the writer, hook gc.callbacks. */
static int
tl_start(tl_state *st, uint64_t now)
{
    char err[512];
    st->started = 1;
    int fd = -1;
    const ptk_host *h = st->host;
    if (h->struct_size >= offsetof(ptk_host, report_create) + sizeof h->report_create) {
        /* the name claimed for this instance (another timeline in the same
         * directory gets timeline-2.json), the file made new, never through
         * a planted symlink */
        char path[4096];
        struct stat sb;
        if (h->report_claim(st->ctx, st->fmt->filename, path, sizeof path) == PTK_OK &&
            lstat(path, &sb) == 0 && S_ISFIFO(sb.st_mode) && sb.st_uid == geteuid()) {
            /* a FIFO of this user's there: a live reader of the trace */
            fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        }
        else {
            fd = h->report_create(st->ctx, st->fmt->filename, path, sizeof path);
        }
        if (fd < 0) {
            return h->fail(st->ctx, PTK_EIO, "cannot create %s in the output directory: %s",
                           st->fmt->filename, h->strerror(fd));
        }
        char *copy = strdup(path);
        if (copy == NULL) {
            close(fd);
            return h->fail(st->ctx, PTK_ENOMEM, "out of memory");
        }
        free(st->path);
        st->path = copy;
    }
    if (tl__out_open(&st->out, st->path, fd, st->buffer_size, err, sizeof(err)) != 0) {
        return st->host->fail(st->ctx, PTK_EIO, "%s", err);
    }
    st->t_origin = now; /* the first event's time: nothing is earlier */
    st->out.last_handoff_ns = now;
    st->last_counter = now;
    st->next_counter = now + TL_TICK_NS;
    st->next_tick = now + (st->flush_ns > 0 && (uint64_t)st->flush_ns < TL_TICK_NS
                               ? (uint64_t)st->flush_ns : TL_TICK_NS);
    if (st->fmt->start(st, now) != 0) {
        return st->host->fail(st->ctx, PTK_EINVAL, "buffer_kb is too small");
    }
    if (st->gc && tl_gc_install(st) != 0) {
        st->host->log(st->ctx, "gc.callbacks unavailable: no GC spans");
    }
    return PTK_OK;
}

static int
tl_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    if (args->noptions < OPT_COUNT) {
        snprintf(args->errbuf, args->errbuf_size,
                 "expected %d options, the host passed %zu", OPT_COUNT,
                 args->noptions);
        return PTK_EINVAL;
    }
    const ptk_option_value *o = args->options;
    int64_t min_ns = tl_parse_duration(o[OPT_MIN_DURATION].s ? o[OPT_MIN_DURATION].s : "0");
    if (min_ns < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "min_duration: '%s' is not a duration (e.g. 50us, 1.5ms, 2s)",
                 o[OPT_MIN_DURATION].s);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_BUFFER_KB].i < 4 || o[OPT_BUFFER_KB].i > 1024 * 1024) {
        snprintf(args->errbuf, args->errbuf_size,
                 "buffer_kb must be 4 to 1048576, not %lld",
                 (long long)o[OPT_BUFFER_KB].i);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_OBJECTS].i < 0 || o[OPT_OBJECTS].i > TL_OBJ_TRACKS) {
        snprintf(args->errbuf, args->errbuf_size,
                 "objects must be 0 to %d, not %lld", TL_OBJ_TRACKS,
                 (long long)o[OPT_OBJECTS].i);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_FLUSH_MS].i < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "flush_ms must be 0 or more");
        return PTK_EOPTTYPE;
    }
    tl_state *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->host = args->host;
    st->ctx = args->ctx;
    st->fmt = o[OPT_FORMAT].i == 1 ? &tl__json_format : &tl__pb_format;
    st->min_duration_ns = min_ns;
    st->flush_ns = o[OPT_FLUSH_MS].i * 1000000;
    st->builtins = o[OPT_BUILTINS].i != 0;
    st->exceptions = o[OPT_EXCEPTIONS].i != 0;
    st->tasks = o[OPT_TASKS].i != 0;
    st->gc = o[OPT_GC].i != 0;
    st->counters = o[OPT_COUNTERS].i != 0;
    st->objects = (int)o[OPT_OBJECTS].i;
    st->pid = (long)getpid();
    char pname[64];
    snprintf(pname, sizeof(pname), "python %ld", st->pid);
    if (tl_track_init(&st->process_track, TL_TRACK_PROCESS, 1, pname) != 0 ||
        tl_track_init(&st->events_track, TL_TRACK_COUNTER, 2, "events/s") != 0 ||
        tl_track_init(&st->gc_track, TL_TRACK_COUNTER, 3, "GC pause (ms per s)") != 0 ||
        tl_track_init(&st->drop_track, TL_TRACK_COUNTER, 4, "dropped events (total)") != 0 ||
        tl__name_label(&st->gc_name, "gc") != 0 ||
        (st->asyncio_name = PyUnicode_InternFromString("asyncio")) == NULL) {
        PyErr_Clear();
        tl_fini(st);
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->process_track.tid = st->pid;
    st->events_track.tid = st->gc_track.tid = st->drop_track.tid = st->pid;
    st->buffer_size = (size_t)o[OPT_BUFFER_KB].i * 1024;
    /* The directory is made (and the session's copy of its name replaced)
     * when the session starts: keep an absolute copy. */
    char cwd[4096] = "";
    int rel = args->output_dir[0] != '/';
    if (rel && getcwd(cwd, sizeof(cwd)) == NULL) {
        cwd[0] = '\0';
    }
    size_t len = strlen(cwd) + strlen(args->output_dir) + strlen(st->fmt->filename) + 3;
    st->path = malloc(len);
    if (st->path == NULL) {
        tl_fini(st);
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    snprintf(st->path, len, "%s%s%s/%s", rel ? cwd : "", rel ? "/" : "",
             args->output_dir, st->fmt->filename);
    unsigned int m = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN);
    if (st->builtins) {
        m |= PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
             PTK_MASK(PTK_EV_C_EXCEPTION);
    }
    if (st->exceptions) {
        m |= PTK_MASK(PTK_EV_EXCEPTION);
    }
    *events = m;
    *state = st;
    return PTK_OK;
}

/* Ends every running span (the file is then complete), closes the file and
 * writes timeline.summary.json. */
static int
tl_finish(tl_state *st)
{
    if (st->finished) {
        return 0;
    }
    if (!st->started && tl_start(st, st->host->clock_ns()) != PTK_OK) {
        return EIO;
    }
    if (!st->out.started) {
        return EIO;
    }
    if (getpid() != st->out.owner) {
        st->finished = 1; /* a forked child: the file is the parent's */
        return tl__out_close(&st->out);
    }
    uint64_t now = st->host->clock_ns();
    st->next_counter = now; /* a last sample of each counter */
    tl_tick(st, now);
    tl_gc_remove(st);
    for (size_t i = 0; i < st->nthreads; i++) {
        tl_thread *th = st->threads[i];
        if (th == NULL) {
            continue;
        }
        uint64_t t = th->last_ns > now ? th->last_ns : now;
        while (th->sp > 0) {
            tl_pop(st, th, t, 0);
        }
    }
    tl_rename_threads(st, now);
    /* At the end, wait for the disk rather than lose the tail. */
    for (int tries = 0; st->dropping && tries < 1000; tries++) {
        if (tl_resume(st, now) == 0) {
            break;
        }
        tl__out_kick(&st->out, now);
        usleep(1000);
    }
    if (st->fmt->finish(st) != 0) {
        tl__out_kick(&st->out, now);
        usleep(10000);
        st->fmt->finish(st);
    }
    st->finished = 1;
    return tl__out_close(&st->out);
}

static PyObject *
tl_summary(tl_state *st, int werr)
{
    PyObject *tasks = PyList_New(0);
    if (tasks == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < st->ntasks; i++) {
        tl_task *tk = st->task_list[i];
        PyObject *d = Py_BuildValue(
            "{s:K,s:s,s:K,s:K,s:K,s:K,s:O}", "id", (unsigned long long)tk->id,
            "name", tk->track.name, "steps", (unsigned long long)tk->steps,
            "wall_ns", (unsigned long long)(tk->last_ns > tk->first_ns
                                                ? tk->last_ns - tk->first_ns : 0),
            "running_ns", (unsigned long long)tk->running_ns,
            "first_ns", (unsigned long long)(tk->first_ns - st->t_origin),
            "done", tk->done ? Py_True : Py_False);
        if (d == NULL || PyList_Append(tasks, d) != 0) {
            Py_XDECREF(d);
            Py_DECREF(tasks);
            return NULL;
        }
        Py_DECREF(d);
    }
    uint64_t unmatched = 0;
    for (size_t i = 0; i < st->nthreads; i++) {
        if (st->threads[i] != NULL) {
            unmatched += st->threads[i]->unmatched;
        }
    }
    PyObject *res = Py_BuildValue(
        "{s:s,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:L,s:N,s:s,s:K}",
        "file", st->fmt->filename,
        "format", st->fmt == &tl__json_format ? "json" : "perfetto",
        "events", (unsigned long long)st->events,
        "spans", (unsigned long long)st->spans,
        "instants", (unsigned long long)st->instants,
        "dropped", (unsigned long long)st->dropped_total,
        "drop_episodes", (unsigned long long)st->drop_episodes,
        "bytes", (unsigned long long)st->out.written,
        "buffers_written", (unsigned long long)st->out.handoffs,
        "gc_collections", (unsigned long long)st->gc_count,
        "gc_total_ns", (unsigned long long)st->gc_total_ns,
        "unmatched_returns", (unsigned long long)unmatched,
        "names", (unsigned long long)st->nnames,
        "min_duration_ns", (long long)st->min_duration_ns,
        "tasks", tasks,
        "write_error", werr ? strerror(werr) : "",
        "after_report", (unsigned long long)st->after_finish);
    return res;
}

static int
tl_report(void *state, const ptk_report_args *args)
{
    tl_state *st = state;
    int werr = tl_finish(st);
    PyObject *sum = tl_summary(st, werr);
    if (sum == NULL) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "cannot build the summary");
    }
    int rc = st->host->report_write_object(st->ctx, "timeline.summary.json", sum,
                                           PTK_FMT_JSON);
    Py_DECREF(sum);
    fprintf(args->summary,
            "timeline: %s: %llu events, %llu bytes, %llu dropped, %zu tasks\n",
            st->path, (unsigned long long)st->events,
            (unsigned long long)st->out.written,
            (unsigned long long)st->dropped_total, st->ntasks);
    if (strcmp(st->fmt->filename, "timeline.json") == 0) {
        fprintf(args->summary,
                "timeline: Perfetto's format (format=perfetto, the default) "
                "holds the same in about a quarter of the bytes\n");
    }
    if (st->dropped_total > 0) {
        fprintf(args->summary,
                "timeline: %llu events dropped in %llu gaps (marked in the "
                "file): the writer could not keep up with the buffer, or "
                "out of memory\n", (unsigned long long)st->dropped_total,
                (unsigned long long)st->drop_episodes);
    }
    if (st->after_finish > 0) {
        fprintf(args->summary,
                "timeline: %llu events after the first report are not in %s: "
                "a timeline is written once, by the session's first report\n",
                (unsigned long long)st->after_finish, st->path);
    }
    if (werr != 0) {
        return st->host->fail(st->ctx, PTK_EIO, "writing %s: %s", st->path,
                              strerror(werr));
    }
    return rc;
}

static void
tl_track_free(tl_track *t)
{
    free(t->name);
    free(t->owed);
}

static void
tl_fini(void *state)
{
    tl_state *st = state;
    if (st == NULL) {
        return;
    }
    int py = Py_IsInitialized();
    PyGILState_STATE gil = PyGILState_UNLOCKED;
    if (py) {
        gil = PyGILState_Ensure();
        if (!st->finished && st->out.started) {
            tl_finish(st);
        }
        tl_gc_remove(st);
        Py_CLEAR(st->current_task);
        Py_CLEAR(st->asyncio_name);
        for (size_t i = 0; i < st->ntasks; i++) {
            Py_CLEAR(st->task_list[i]->wref);
        }
    }
    tl__out_close(&st->out);
    tl__names_free(st);
    if (py) {
        PyGILState_Release(gil);
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        tl_thread *th = st->threads[i];
        if (th != NULL) {
            tl_track_free(&th->track);
            free(th->stack);
            free(th);
        }
    }
    for (size_t i = 0; i < st->ntasks; i++) {
        tl_task *tk = st->task_list[i];
        tl_track_free(&tk->track);
        free(tk->label.text);
        free(tk->label.json);
        free(tk);
    }
    free(st->threads);
    free(st->task_list);
    ptk_kit_map_free(&st->task_map);
    tl_track_free(&st->process_track);
    tl_track_free(&st->events_track);
    tl_track_free(&st->gc_track);
    tl_track_free(&st->drop_track);
    for (size_t k = 0; k < st->nobj; k++) {
        tl_track_free(&st->obj_track[k]);
    }
    free(st->gc_name.text);
    free(st->gc_name.json);
    free(st->path);
    free(st);
}

static const ptk_plugin_desc tl_desc = {
    PTK_PLUGIN_HEADER,
    .name = "timeline",
    .version = "0.1.0",
    .description = "every call as a span per thread and asyncio task, streamed "
                   "to Perfetto protobuf or Chrome JSON",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN) |
              PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
              PTK_MASK(PTK_EV_C_EXCEPTION) | PTK_MASK(PTK_EV_EXCEPTION),
    .flags = PTK_FLAG_CLOCK | PTK_FLAG_UNBOUND_C,
    .options = tl_options,
    .init = tl_init,
    .on_event = tl_on_event,
    .on_ref = NULL,
    .report = tl_report,
    .fini = tl_fini,
};

PTK_PLUGIN_DEFINE(tl_desc)
