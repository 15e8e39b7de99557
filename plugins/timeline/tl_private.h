/*
 * timeline: what timeline.c (the hot path: writing and the drop policy,
 * threads and tasks, the events), tl_tick.c (counters, GC spans,
 * time-based flushing) and tl_life.c (options, start, report, fini) share
 * beyond timeline.h. Private to plugins/timeline.
 */
#ifndef PTK_TIMELINE_PRIVATE_H
#define PTK_TIMELINE_PRIVATE_H

#include "timeline.h"

/* ---- timeline.c ---- */

void tl__drop(tl_state *st);
/* The thread's record, made on its first event; NULL when out of memory. */
tl_thread *tl__thread_get(tl_state *st, const ptk_thread *t);
int tl__resume(tl_state *st, uint64_t now);
void tl__frame_end(tl_state *st, tl_thread *th, tl_frame *f, uint64_t now);
void tl__pop(tl_state *st, tl_thread *th, uint64_t now, int finished);
int tl__on_event(void *state, const ptk_event *ev);

/* May anything be written now? While dropping, only after the owed ENDs. */
static inline int
tl__can_write(tl_state *st, uint64_t now)
{
    return !st->dropping || tl__resume(st, now) == 0;
}

/* The thread's record (the hot path: a look-up in an array). */
static inline tl_thread *
tl__thread_of(tl_state *st, const ptk_thread *t)
{
    size_t idx = t->index;
    tl_thread *th = idx < st->nthreads ? st->threads[idx] : NULL;
    return th != NULL ? th : tl__thread_get(st, t);
}

/* The track a frame with no frame below it goes to: the greenlet's, or
 * the thread's. */
static inline tl_track *
tl__base(tl_thread *th)
{
    return th->g != NULL ? &th->g->track : &th->track;
}

/* Ends the spans of every context of @p th at @p now (the one running and
 * the ones switched away from) and frees the saved stacks. */
void tl__close_all(tl_state *st, tl_thread *th, uint64_t now);

/* ---- tl_tick.c ---- */

/* The counters and the objects track get a sample once a second. */
#define TL_TICK_NS UINT64_C(1000000000)

void tl__rename_threads(tl_state *st, uint64_t now);
void tl__tick(tl_state *st, uint64_t now);
void tl__gc_span(tl_state *st, uint64_t t0, uint64_t t1);
int tl__gc_install(tl_state *st);
void tl__gc_remove(tl_state *st);

/* ---- tl_ctx.c ---- */

/* The context changed to @p id (ptk_host::context): the span of the one
 * before ends, the new one's begins, at @p now. */
int tl__ctx_switch(tl_state *st, uint64_t id, uint64_t now);
void tl__ctx_finish(tl_state *st, uint64_t now);
void tl__ctx_free(tl_state *st);

/* Every event: has the context changed? (hosts of ABI 1.4 on) */
static inline int
tl__ctx_check(tl_state *st, uint64_t now)
{
    uint64_t id;
    if (!st->ctx_host) {
        return PTK_OK;
    }
    st->host->context(&id);
    return id != st->ctx_id ? tl__ctx_switch(st, id, now) : PTK_OK;
}

/* ---- tl_life.c ---- */

int tl__track_init(tl_track *t, int kind, uint64_t uuid, const char *name);
int tl__start(tl_state *st, uint64_t now);
/* timeline.summary.json's object (new reference, or NULL). */
PyObject *tl__summary(tl_state *st, int werr);

#endif
