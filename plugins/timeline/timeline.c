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
#include "tl_private.h"
#include "tl_ring.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- writing, and the drop policy ---------------------------------------- */


void
tl__drop(tl_state *st)
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
int
tl__resume(tl_state *st, uint64_t now)
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
    if (tl_track_pay(st, &st->process_track) != 0 ||
        tl_track_pay(st, &st->ctx_track) != 0) {
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
    if (!tl__can_write(st, now) || st->fmt->begin(st, f->track, f->name, f->t0) != 0) {
        tl__drop(st);
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
void
tl__frame_end(tl_state *st, tl_thread *th, tl_frame *f, uint64_t now)
{
    if (f->skip) {
        return;
    }
    if (f->emitted) {
        if (!tl__can_write(st, now) || st->fmt->end(st, f->track, now) != 0) {
            tl__drop(st);
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
        tl__drop(st);
        tl_owe(st, f->track, now);
    }
}

/* ---- threads, tasks ------------------------------------------------------ */

tl_thread *
tl__thread_get(tl_state *st, const ptk_thread *t)
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
        if (st->ring != NULL) {
            tl__ring_thread_seen(st); /* threading.excepthook */
        }
    }
    return st->threads[idx];
}

/* The asyncio Task running now (the hub's ptk_host::running_task), its
 * track made at first sight; NULL if none. */
static tl_task *
tl_current_task(tl_state *st, uint64_t now)
{
    PyObject *task;
    uint64_t hub_id = st->host->running_task(&task);
    if (hub_id == 0) {
        return NULL;
    }
    const void *key = (const void *)(uintptr_t)hub_id; /* never reused */
    tl_task *tk = ptk_kit_map_get(&st->task_map, key, NULL);
    if (tk != NULL) {
        return tk;
    }
    if (PTK_KIT_RESERVE(st->task_list, st->tasks_cap, st->ntasks + 1, 32) != 0) {
        return NULL;
    }
    tk = calloc(1, sizeof(*tk));
    PyObject *name = PyObject_CallMethod(task, "get_name", NULL);
    const char *u = name != NULL && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    char label[160];
    if (tk == NULL || u == NULL) {
        PyErr_Clear();
        Py_XDECREF(name);
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
    if (tk->track.name == NULL || tl__name_label(&tk->label, label) != 0 ||
        ptk_kit_map_put(&st->task_map, key, NULL, tk) != 0) {
        PyErr_Clear();
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

/* ---- greenlets ----------------------------------------------------------- */

/* The track of the greenlet the hub numbers @p id (made at first sight:
 * named after its type and number, "greenlet 2", "Greenlet 5"). */
static tl_task *
tl_greenlet(tl_state *st, uint64_t id, PyObject *obj, uint64_t now)
{
    const void *k = (const void *)(uintptr_t)(id + 1);
    tl_task *g = ptk_kit_map_get(&st->task_map, k, (const void *)1);
    if (g != NULL) {
        return g;
    }
    if (PTK_KIT_RESERVE(st->task_list, st->tasks_cap, st->ntasks + 1, 32) != 0 ||
        (g = calloc(1, sizeof(*g))) == NULL) {
        return NULL;
    }
    const char *type = obj != NULL ? Py_TYPE(obj)->tp_name : "greenlet";
    const char *dot = strrchr(type, '.');
    char buf[160];
    snprintf(buf, sizeof(buf), "%s %llu", dot ? dot + 1 : type, (unsigned long long)id);
    g->id = st->ntasks + 1;
    g->greenlet = 1;
    g->track.kind = TL_TRACK_TASK;
    g->track.uuid = (UINT64_C(1) << 32) + g->id;
    g->track.tid = 1000000000 + (int64_t)g->id;
    g->track.name = strdup(buf);
    g->track.named = 1;
    g->first_ns = now;
    if (g->track.name == NULL || ptk_kit_map_put(&st->task_map, k, (const void *)1, g) != 0) {
        free(g->track.name);
        free(g);
        return NULL;
    }
    st->task_list[st->ntasks++] = g;
    return g;
}

/* The execution context on @p th became @p pt's (a greenlet switch): the
 * frames of the one left are kept, open, on their track, and the entered
 * one's come back; a frame with nothing below it goes to the greenlet's
 * own track. */
static __attribute__((noinline)) int
tl_switch(tl_state *st, tl_thread *th, const ptk_thread *pt, uint64_t now)
{
    size_t i;
    for (i = 0; i < th->nsaved && th->saved[i].id != th->exec_id; i++) {
    }
    if (i == th->nsaved) {
        if (PTK_KIT_RESERVE(th->saved, th->capsaved, th->nsaved + 1, 8) != 0) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory saving a greenlet");
        }
        th->nsaved++;
    }
    if (th->g != NULL) {
        th->g->running_ns += now > th->g->in_ns ? now - th->g->in_ns : 0;
        th->g->last_ns = now;
    }
    th->saved[i] = (tl_gsaved){th->exec_id, th->stack, th->sp, th->cap, th->gap, th->g};
    th->stack = NULL;
    th->sp = th->cap = 0;
    th->gap = 0;
    uint64_t id = pt->exec_id;
    for (i = 0; i < th->nsaved && th->saved[i].id != id; i++) {
    }
    if (i < th->nsaved) {
        tl_gsaved *in = &th->saved[i];
        th->stack = in->stack;
        th->sp = in->sp;
        th->cap = in->cap;
        th->gap = in->gap;
        th->g = in->g;
        th->saved[i] = th->saved[--th->nsaved];
    }
    else if (id != 0) {
        th->g = tl_greenlet(st, id, pt->exec_object, now);
        if (th->g == NULL) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory making a greenlet's track");
        }
    }
    else {
        th->g = NULL;
    }
    if (th->g != NULL) {
        th->g->in_ns = now;
        th->g->steps++;
    }
    th->exec_id = id;
    return PTK_OK;
}

void
tl__close_all(tl_state *st, tl_thread *th, uint64_t now)
{
    while (th->sp > 0) {
        tl__pop(st, th, now, 0);
    }
    if (th->g != NULL && th->g->in_ns != 0) {
        th->g->running_ns += now > th->g->in_ns ? now - th->g->in_ns : 0;
        th->g->last_ns = now;
        th->g->in_ns = 0;
    }
    for (size_t i = 0; i < th->nsaved; i++) {
        tl_gsaved *sv = &th->saved[i];
        tl_frame *keep = th->stack;
        size_t ksp = th->sp, kcap = th->cap;
        th->stack = sv->stack;
        th->sp = sv->sp;
        while (th->sp > 0) {
            tl__pop(st, th, now, 0);
        }
        free(sv->stack);
        th->stack = keep;
        th->sp = ksp;
        th->cap = kcap;
    }
    free(th->saved);
    th->saved = NULL;
    th->nsaved = th->capsaved = 0;
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
    tl_track *track = top ? top->track : tl__base(th);
    if (n->coro && st->tasks && (top == NULL || !top->coro)) {
        /* a coroutine resumed by something that is not a coroutine: the
         * step of a Task, if a Task runs it */
        tl_task *tk = tl_current_task(st, now);
        if (tk != NULL) {
            tl_frame *m = tl_push(st, th, NULL, &tk->label, tl__base(th), now);
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
            th->step_at1 = th->sp;
            th->worst_ns = 0;
            th->nworst = 0;
            return PTK_OK;
        }
    }
    return tl_push(st, th, key, n, track, now) ? PTK_OK : PTK_ENOMEM;
}

/* Pops the top frame, and after a Task's root coroutine its step span. */
/* blocking=: a call inside a Task step ended (th->stack[th->sp] is its
 * frame): the slowest so far is remembered with its frames from the step's
 * coroutine down. A call around the one remembered (its callers end after
 * it, and always took longer) does not replace it while the one
 * remembered took at least half its time: the stack then goes down to
 * where the time went (blocker -> helper -> time.sleep, not blocker). */
static void
tl_block_call(tl_thread *th, const tl_frame *f, uint64_t now)
{
    uint64_t ns = now > f->t0 ? now - f->t0 : 0;
    if (ns <= th->worst_ns) {
        return;
    }
    size_t depth = th->sp - (th->step_at1 - 1) + 1; /* frames from the step's down */
    if ((size_t)th->nworst > depth && th->worst_ns * 2 >= ns) {
        size_t i = 0;
        while (i < depth && th->worst[i] == th->stack[th->step_at1 - 1 + i].name) {
            i++;
        }
        if (i == depth) {
            return; /* a caller of the call remembered */
        }
    }
    th->worst_ns = ns;
    th->nworst = 0;
    for (size_t i = th->step_at1 - 1; i <= th->sp && th->nworst < TL_BLOCK_STACK; i++) {
        th->worst[th->nworst++] = th->stack[i].name;
    }
}

/* blocking=: a Task step ended after @p ns: recorded if it held the loop
 * that long, on the counter track (its length, for its duration) and in
 * the summary's list. */
static void
tl_block_step(tl_state *st, tl_thread *th, const tl_frame *f, uint64_t now)
{
    uint64_t ns = now > f->t0 ? now - f->t0 : 0;
    th->step_at1 = 0;
    if ((int64_t)ns < st->blocking_ns ||
        PTK_KIT_RESERVE(st->blocks, st->capblocks, st->nblocks + 1, 16) != 0) {
        return;
    }
    tl_block *b = &st->blocks[st->nblocks];
    b->task = strdup(f->task->track.name);
    if (b->task == NULL) {
        return;
    }
    st->nblocks++;
    b->t0 = f->t0;
    b->ns = ns;
    b->worst_ns = th->worst_ns;
    b->nworst = th->nworst;
    memcpy(b->worst, th->worst, sizeof b->worst);
    if (tl__can_write(st, now) &&
        (st->fmt->counter(st, &st->block_track, (double)ns / 1e6, f->t0) != 0 ||
         st->fmt->counter(st, &st->block_track, 0.0, now) != 0)) {
        tl__drop(st);
    }
}

void
tl__pop(tl_state *st, tl_thread *th, uint64_t now, int finished)
{
    tl_frame f = th->stack[--th->sp];
    tl__frame_end(st, th, &f, now);
    if (th->step_at1 != 0 && st->blocking_ns > 0) {
        if (f.task != NULL) {
            tl_block_step(st, th, &f, now);
        }
        else if (th->sp >= th->step_at1) {
            tl_block_call(th, &f, now);
        }
    }
    if (f.task != NULL) {
        tl_task *tk = f.task;
        tk->running_ns += now - f.t0;
        tk->last_ns = now;
        tk->done = finished;
        if (th->sp > 0 && th->stack[th->sp - 1].step) {
            tl_frame m = th->stack[--th->sp];
            tl__frame_end(st, th, &m, now);
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
        tl__pop(st, th, now, finished);
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
        tl__pop(st, th, now, th->sp == i ? finished : 0);
    }
}

static inline const void *
tl_c_key(const ptk_event *ev)
{
    const void *def = ptk_event_c_def(ev);
    return def != NULL ? def : (const void *)ev->arg;
}


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
        tl__can_write(st, now) &&
        st->fmt->instant(st, top ? top->track : tl__base(th), n, now, 0) == 0) {
        st->instants++;
    }
    else {
        tl__drop(st);
    }
    return PTK_OK;
}


static int tl_event(tl_state *st, const ptk_event *ev);

/* A collection that ran inside our own handling of an event (an object we
 * made triggered it) is written after the event: its span begins after the
 * event's clock reading, so it goes after the event's record. */
int
tl__on_event(void *state, const ptk_event *ev)
{
    tl_state *st = state;
    st->in_event = 1;
    int rc = tl_event(st, ev);
    st->in_event = 0;
    for (int i = 0; i < st->gc_npending; i++) {
        tl__gc_span(st, st->gc_pending[i][0], st->gc_pending[i][1]);
    }
    st->gc_npending = 0;
    if (st->ring != NULL) {
        tl__ring_after_event(st); /* a trigger= dump */
    }
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
        int rc = tl__start(st, ev->time_ns);
        if (rc != PTK_OK) {
            return rc;
        }
    }
    tl_thread *th = tl__thread_of(st, ev->thread);
    if (th == NULL) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory recording a thread");
    }
    uint64_t now = ev->time_ns;
    if (ev->thread->exec_id != th->exec_id) {
        int rc = tl_switch(st, th, ev->thread, now);
        if (rc != PTK_OK) {
            return rc;
        }
    }
    st->events++;
    st->tick_events++;
    th->last_ns = now;
    if (now >= st->next_tick) {
        tl__tick(st, now);
    }
    if (tl__ctx_check(st, now) != PTK_OK) {
        return PTK_ENOMEM;
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
                                              : tl__base(th), now)
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
