/*
 * lines: hits and time per line of the code the filter selects, without
 * decorators (docs/lines.md).
 *
 * A line's time is line_profiler's: from its LINE event to the next LINE or
 * RETURN (return, yield, unwind) of the same frame, so the calls the line
 * makes are in it; with calls=false the time of the calls the plugin sees
 * (C functions the line calls, selected Python code) is taken out. Frames
 * are told apart by the hub's depth, so recursion and generators time each
 * activation on its own.
 *
 * Which code is measured is the hub's filter (modules=, functions=,
 * include=, ...): on sys.monitoring the LINE events are then set on the
 * selected code objects only, and code the filter leaves out fires nothing
 * after its first start.
 */
#include "lines.h"

#include "../common/context_index.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_CALLS,
       OPT_HTML,
       OPT_TOP,
       OPT_PER_THREAD,
       OPT_PER_CONTEXT,
       OPT_COUNT };

static const ptk_option_spec ln_options[] = {
    [OPT_CALLS] = {"calls", PTK_OPT_BOOL, "true",
                   "count the time of the calls a line makes in the line "
                   "(line_profiler's definition); false: leave out the time "
                   "of C functions it calls and of selected Python code",
                   NULL},
    [OPT_HTML] = {"html", PTK_OPT_BOOL, "true",
                  "write lines.html, a heatmap of the measured functions",
                  NULL},
    [OPT_TOP] = {"top", PTK_OPT_INT, "10",
                 "lines listed in the summary, by time (0: none)", NULL},
    [OPT_PER_THREAD] = {"per_thread", PTK_OPT_BOOL, "false",
                        "also give each thread's hits and time per line "
                        "(lines.json's threads; each function's threads in "
                        "lines.txt and lines.html)",
                        NULL},
    [OPT_PER_CONTEXT] = {"per_context", PTK_OPT_BOOL, "false",
                         "also give each context's hits and time per line "
                         "(ptk_context_set(): per test phase under pytest -p "
                         "pytracekit; lines.json's contexts; each function's "
                         "contexts in lines.txt and lines.html)",
                         NULL},
    [OPT_COUNT] = {NULL, 0, NULL, NULL, NULL},
};

/* ---- functions ---------------------------------------------------------- */

/* The record of @p code (on the thread of @p ev with per_thread=true, in
 * the current context with per_context=true), made on its first event;
 * NULL with the instance failed. The code's slot holds its records, one
 * per thread and context, chained by `next`; the one found goes to the
 * front, so that the lookups of one context (a test) find it first. In a
 * context new to the run, the search ends at the first record of another
 * context: without that, each test's first call of a function walked the
 * records of every earlier test (networkx's classes/tests: 2.4 s). */
static __attribute__((noinline)) ln_func *
ln_func_get(ln_state *st, PyCodeObject *code, const ptk_event *ev)
{
    uint32_t thread = st->per_thread && ev->thread != NULL ? ev->thread->index : 0;
    uint32_t context = st->cur_ctx;
    void **slot = st->host->code_slot(st->ctx, code);
    ln_func *prev = NULL;
    for (ln_func *f = slot != NULL ? *slot : NULL; f != NULL; prev = f, f = f->next) {
        if (f->context != context && st->ctx_fresh) {
            break;
        }
        if (f->thread == thread && f->context == context) {
            if (prev != NULL) {
                prev->next = f->next;
                f->next = *slot;
                *slot = f;
            }
            return f;
        }
    }
    if (PTK_KIT_RESERVE(st->funcs, st->capfuncs, st->nfuncs + 1, 64) != 0) {
        st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
        return NULL;
    }
    ln_func *fn = calloc(1, sizeof(*fn));
    if (fn == NULL) {
        st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
        return NULL;
    }
    fn->file = Py_NewRef(code->co_filename);
    fn->qualname = Py_NewRef(code->co_qualname);
    fn->first = code->co_firstlineno;
    fn->base = fn->first;
    fn->thread = thread;
    fn->context = context;
    st->funcs[st->nfuncs++] = fn;
    if (slot != NULL) {
        fn->next = *slot;
        *slot = fn;
    }
    return fn;
}

/* per_context: the context changed since the last event (or this is the
 * first): the index of its name, made if new. */
static __attribute__((noinline)) int
ln_ctx_switch(ln_state *st, uint64_t id, const char *name)
{
    Py_ssize_t n = PyList_GET_SIZE(st->ctx_names);
    Py_ssize_t at = ptk_kit_context_index(&st->ctx_index, st->ctx_names, name, 0, NULL);
    if (at < 0) {
        return PTK_ENOMEM;
    }
    st->cur_ctx = (uint32_t)at;
    st->ctx_fresh = at >= n;
    st->ctx_id = id;
    st->ctx_seen = 1;
    return PTK_OK;
}

/* The entry of @p line in @p fn, made if new; NULL when out of memory. */
static __attribute__((noinline)) ln_line *
ln_line_grow(ln_func *fn, int32_t line)
{
    if (line < fn->base) {
        /* a line above co_firstlineno: the table starts there from now */
        size_t shift = (size_t)(fn->base - line);
        size_t n = fn->nlines + shift;
        ln_line *t = calloc(n, sizeof(*t));
        if (t == NULL) {
            return NULL;
        }
        if (fn->nlines != 0) {
            memcpy(t + shift, fn->lines, fn->nlines * sizeof(*t));
        }
        free(fn->lines);
        fn->lines = t;
        fn->nlines = n;
        fn->base = line;
        return &fn->lines[0];
    }
    size_t i = (size_t)(line - fn->base);
    size_t cap = fn->nlines;
    if (PTK_KIT_RESERVE_ZERO(fn->lines, cap, i + 1, 16) != 0) {
        return NULL;
    }
    fn->nlines = cap;
    return &fn->lines[i];
}

static inline ln_line *
ln_line_at(ln_func *fn, int32_t line)
{
    size_t i = (size_t)((int64_t)line - fn->base);
    if (line >= fn->base && i < fn->nlines) {
        return &fn->lines[i];
    }
    return ln_line_grow(fn, line);
}

/* ---- frames --------------------------------------------------------------- */

/* The slot of depth @p d on the thread of @p ev, made if new; NULL when out
 * of memory. */
static __attribute__((noinline)) ln_frame *
ln_frame_grow(ln_state *st, size_t t, size_t d)
{
    if (PTK_KIT_RESERVE_ZERO(st->threads, st->nthreads, t + 1, 8) != 0) {
        return NULL;
    }
    ln_thread *th = &st->threads[t];
    if (PTK_KIT_RESERVE_ZERO(th->frames, th->cap, d + 1, 64) != 0) {
        return NULL;
    }
    return &th->frames[d];
}

static inline ln_frame *
ln_frame_at(ln_state *st, const ptk_event *ev, int32_t depth)
{
    size_t t = ev->thread != NULL ? ev->thread->index : 0;
    size_t d = depth > 0 ? (size_t)depth : 0;
    if (t < st->nthreads && d < st->threads[t].cap) {
        return &st->threads[t].frames[d];
    }
    return ln_frame_grow(st, t, d);
}

/* Ends the timing of the line @p fr runs at @p now. */
static inline int
ln_close(ln_frame *fr, uint64_t now)
{
    if (fr->line == 0) {
        return 0;
    }
    ln_line *l = ln_line_at(fr->fn, fr->line);
    if (l == NULL) {
        return -1;
    }
    uint64_t since = fr->since;
    if (fr->paused != 0) {
        since += now - fr->pause_at; /* ends inside a call: not counted */
    }
    l->time_ns += now > since ? now - since : 0;
    fr->line = 0;
    fr->paused = 0;
    return 0;
}

/* calls=false: a call out of @p fr starts, or one ends. */
static inline void
ln_pause(ln_frame *fr, uint64_t now)
{
    if (fr->paused++ == 0) {
        fr->pause_at = now;
    }
}

static inline void
ln_resume(ln_frame *fr, uint64_t now)
{
    if (fr->paused != 0 && --fr->paused == 0) {
        fr->since += now - fr->pause_at;
    }
}

/* The slot of the frame below depth @p depth on @p ev's thread if one of
 * selected code runs there, else NULL. */
static inline ln_frame *
ln_caller(ln_state *st, const ptk_event *ev, int32_t depth)
{
    size_t t = ev->thread != NULL ? ev->thread->index : 0;
    if (depth < 2 || t >= st->nthreads || (size_t)(depth - 1) >= st->threads[t].cap) {
        return NULL;
    }
    ln_frame *fr = &st->threads[t].frames[depth - 1];
    return fr->code != NULL ? fr : NULL;
}

/* ---- events -------------------------------------------------------------- */

static int
ln_oom(ln_state *st)
{
    return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
}

/* A frame of @p ev's code at @p fr that the plugin has not seen start (it
 * was running when the session started). */
static __attribute__((noinline)) int
ln_adopt(ln_state *st, ln_frame *fr, const ptk_event *ev)
{
    ln_func *fn = ln_func_get(st, ev->code, ev);
    if (fn == NULL) {
        return -1;
    }
    fr->code = ev->code;
    fr->fn = fn;
    fr->line = 0;
    fr->paused = 0;
    return 0;
}

static int
ln_on_line(ln_state *st, const ptk_event *ev)
{
    ln_frame *fr = ln_frame_at(st, ev, ev->depth);
    if (fr == NULL) {
        return ln_oom(st);
    }
    if (fr->code != ev->code && ln_adopt(st, fr, ev) < 0) {
        return PTK_EPYTHON;
    }
    st->line_events++;
    if (ln_close(fr, ev->time_ns) < 0) {
        return ln_oom(st);
    }
    if (ev->line <= 0) {
        return PTK_OK; /* no line (an artificial instruction): not timed */
    }
    if (fr->fn->context != st->cur_ctx) {
        /* per_context: the frame runs on in another context (a fixture's
         * generator resumed at teardown): its lines count there now */
        ln_func *fn = ln_func_get(st, ev->code, ev);
        if (fn == NULL) {
            return PTK_EPYTHON;
        }
        fr->fn = fn;
    }
    ln_line *l = ln_line_at(fr->fn, ev->line);
    if (l == NULL) {
        return ln_oom(st);
    }
    l->hits++;
    fr->line = ev->line;
    /* read again: the time spent here is no line's (as line_profiler) */
    fr->since = st->host->clock_ns();
    return PTK_OK;
}

static int
ln_on_call(ln_state *st, const ptk_event *ev)
{
    ln_frame *fr = ln_frame_at(st, ev, ev->depth);
    if (fr == NULL) {
        return ln_oom(st);
    }
    if (fr->code != ev->code || fr->fn == NULL || fr->fn->context != st->cur_ctx) {
        ln_func *fn = ln_func_get(st, ev->code, ev);
        if (fn == NULL) {
            return PTK_EPYTHON;
        }
        fr->fn = fn;
    }
    fr->code = ev->code;
    fr->line = 0;
    fr->paused = 0;
    if (ev->origin != PTK_ORIGIN_RESUME && ev->origin != PTK_ORIGIN_THROW) {
        fr->fn->calls++;
    }
    if (!st->calls) {
        ln_frame *caller = ln_caller(st, ev, ev->depth);
        if (caller != NULL) {
            ln_pause(caller, ev->time_ns);
        }
    }
    return PTK_OK;
}

static int
ln_on_return(ln_state *st, const ptk_event *ev)
{
    ln_frame *fr = ln_frame_at(st, ev, ev->depth);
    if (fr == NULL) {
        return ln_oom(st);
    }
    if (fr->code == ev->code) {
        if (ln_close(fr, ev->time_ns) < 0) {
            return ln_oom(st);
        }
        fr->code = NULL;
    }
    if (!st->calls) {
        ln_frame *caller = ln_caller(st, ev, ev->depth);
        if (caller != NULL) {
            ln_resume(caller, ev->time_ns);
        }
    }
    return PTK_OK;
}

/* calls=false: a C function called by a frame of selected code. The frame
 * is the thread's innermost one of that code. */
static int
ln_on_c(ln_state *st, const ptk_event *ev)
{
    size_t t = ev->thread != NULL ? ev->thread->index : 0;
    int32_t d = ev->thread != NULL ? ev->thread->depth : -1;
    if (t >= st->nthreads || d < 0 || (size_t)d >= st->threads[t].cap) {
        return PTK_OK;
    }
    ln_frame *fr = &st->threads[t].frames[d];
    if (fr->code != ev->code) {
        return PTK_OK;
    }
    if (ev->kind == PTK_EV_C_CALL) {
        ln_pause(fr, ev->time_ns);
    }
    else {
        ln_resume(fr, ev->time_ns);
    }
    return PTK_OK;
}

static int
ln_on_event(void *state, const ptk_event *ev)
{
    ln_state *st = state;
    if (st->per_context) {
        uint64_t id;
        const char *name = st->host->context(&id);
        if ((!st->ctx_seen || id != st->ctx_id) && ln_ctx_switch(st, id, name) != PTK_OK) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory recording a context");
        }
    }
    switch (ev->kind) {
    case PTK_EV_LINE:
        return ln_on_line(st, ev);
    case PTK_EV_CALL:
        return ln_on_call(st, ev);
    case PTK_EV_RETURN:
        return ln_on_return(st, ev);
    case PTK_EV_C_CALL:
    case PTK_EV_C_RETURN:
    case PTK_EV_C_EXCEPTION:
        return ln_on_c(st, ev);
    default:
        return PTK_OK;
    }
}

static void
ln_on_thread_end(void *state, const ptk_thread *t)
{
    ln_state *st = state;
    if (t->index < st->nthreads) {
        ln_thread *th = &st->threads[t->index];
        free(th->frames);
        th->frames = NULL;
        th->cap = 0;
    }
}

/* ---- life ---------------------------------------------------------------- */

static int
ln_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    if (args->noptions != OPT_COUNT) {
        snprintf(args->errbuf, args->errbuf_size,
                 "expected %d options, the host passed %zu", OPT_COUNT,
                 args->noptions);
        return PTK_EINVAL;
    }
    const ptk_option_value *o = args->options;
    if (o[OPT_TOP].i < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "top must be 0 or more, not %lld", (long long)o[OPT_TOP].i);
        return PTK_EOPTTYPE;
    }
    ln_state *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->host = args->host;
    st->ctx = args->ctx;
    st->calls = o[OPT_CALLS].i != 0;
    st->html = o[OPT_HTML].i != 0;
    st->top = o[OPT_TOP].i;
    st->per_thread = o[OPT_PER_THREAD].i != 0;
    st->per_context = o[OPT_PER_CONTEXT].i != 0;
    if (st->per_context) {
        if (args->host->struct_size <= offsetof(ptk_host, context)) {
            snprintf(args->errbuf, args->errbuf_size,
                     "option 'per_context' needs a host of ABI 1.4 or later");
            free(st);
            return PTK_EOPTTYPE;
        }
        st->ctx_names = PyList_New(0);
        if (st->ctx_names == NULL) {
            PyErr_Clear();
            free(st);
            snprintf(args->errbuf, args->errbuf_size, "out of memory");
            return PTK_ENOMEM;
        }
    }
    if (!st->calls) {
        *events |= PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
                   PTK_MASK(PTK_EV_C_EXCEPTION);
    }
    *state = st;
    return PTK_OK;
}

static int
ln_report_cb(void *state, const ptk_report_args *args)
{
    return ln__report(state, args);
}

static void
ln_fini(void *state)
{
    ln_state *st = state;
    if (st == NULL) {
        return;
    }
    if (Py_IsInitialized()) {
        PyGILState_STATE gil = PyGILState_Ensure();
        for (size_t i = 0; i < st->nfuncs; i++) {
            Py_CLEAR(st->funcs[i]->file);
            Py_CLEAR(st->funcs[i]->qualname);
        }
        Py_CLEAR(st->ctx_names);
        Py_CLEAR(st->ctx_index);
        PyGILState_Release(gil);
    }
    for (size_t i = 0; i < st->nfuncs; i++) {
        free(st->funcs[i]->lines);
        free(st->funcs[i]);
    }
    free(st->funcs);
    for (size_t i = 0; i < st->nthreads; i++) {
        free(st->threads[i].frames);
    }
    free(st->threads);
    free(st);
}

static const ptk_plugin_desc ln_desc = {
    PTK_PLUGIN_HEADER,
    .name = "lines",
    .version = "0.3.0",
    .description = "line-level timing of selected code: hits and time per line "
                   "(JSON, line_profiler's text layout, HTML heatmap)",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN) |
              PTK_MASK(PTK_EV_LINE),
    /* frames are told apart by the hub's depth (PTK_FLAG_STACK) */
    .flags = PTK_FLAG_CLOCK | PTK_FLAG_STACK,
    .options = ln_options,
    .init = ln_init,
    .on_event = ln_on_event,
    .on_ref = NULL,
    .report = ln_report_cb,
    .fini = ln_fini,
    .on_thread_end = ln_on_thread_end,
};

PTK_PLUGIN_DEFINE(ln_desc)
