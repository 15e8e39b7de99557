/*
 * timer: a deterministic profiler with the data model of pstats.
 *
 * Per thread, a stack of running frames and a calling-context tree. A CALL
 * or C_CALL finds the tree node of (current node, callee) — a one-entry cache
 * on the parent answers almost always — and pushes a frame; a RETURN,
 * C_RETURN or C_EXCEPTION pops it and charges the figures the way
 * Modules/_lsprof.c does: the inclusive time of a function (or edge) is only
 * added by its outermost running activation, so recursion is not counted
 * twice, and the other activations count as recursive calls.
 */
#include "timer.h"
#include "../common/c_label.h"
#include "../common/context_index.h"
#include "../common/gone_box.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <opcode.h> /* YIELD_VALUE, RESUME */

/* ---- options ------------------------------------------------------------ */

enum {
    OPT_CLOCK,
    OPT_BUILTINS,
    OPT_PER_THREAD,
    OPT_TOP,
    OPT_SORT,
    OPT_FOLDED_DEPTH,
    OPT_CONTEXTS,
    OPT_MAX_CONTEXTS,
    OPT_SPEEDSCOPE,
    OPT_FOLDED,
    OPT_AWAIT,
    OPT_PER_CONTEXT,
    OPT_COUNT
};

static const ptk_option_spec tm_options[] = {
    [OPT_CLOCK] = {"clock", PTK_OPT_CHOICE, "wall",
                   "wall (monotonic) or cpu (thread CPU time)", "wall|cpu"},
    [OPT_BUILTINS] = {"builtins", PTK_OPT_BOOL, "true",
                      "profile C functions and methods too", NULL},
    [OPT_PER_THREAD] = {"per_thread", PTK_OPT_BOOL, "false",
                        "also write one set of figures per thread", NULL},
    [OPT_TOP] = {"top", PTK_OPT_INT, "10",
                 "functions listed in the summary (0: none)", NULL},
    [OPT_SORT] = {"sort", PTK_OPT_CHOICE, "tottime",
                  "summary order", "tottime|cumtime|calls"},
    [OPT_FOLDED_DEPTH] = {"folded_depth", PTK_OPT_INT, "128",
                          "timer.speedscope.json and timer.folded: frames "
                          "below this depth are merged into one '[deeper]' "
                          "frame (0: no limit)",
                          NULL},
    [OPT_CONTEXTS] = {"contexts", PTK_OPT_BOOL, "true",
                      "keep calling contexts (false: none is kept, and no "
                      "speedscope or folded file is written)",
                      NULL},
    [OPT_MAX_CONTEXTS] = {"max_contexts", PTK_OPT_INT, "50000",
                          "calling contexts in the flame graph files: the "
                          "heaviest by time, the lighter ones merged by "
                          "function under their kept caller (0: no limit)",
                          NULL},
    [OPT_SPEEDSCOPE] = {"speedscope", PTK_OPT_BOOL, "true",
                        "write timer.speedscope.json (calling contexts)", NULL},
    [OPT_FOLDED] = {"folded", PTK_OPT_BOOL, "false",
                    "write timer.folded (collapsed stacks for flamegraph.pl "
                    "and inferno)",
                    NULL},
    [OPT_AWAIT] = {"await", PTK_OPT_BOOL, "false",
                   "a coroutine's inclusive time runs from its start to its end, "
                   "the time it was suspended in await included; per-Task totals "
                   "in timer.json",
                   NULL},
    [OPT_PER_CONTEXT] = {"per_context", PTK_OPT_BOOL, "false",
                         "also keep the figures per context (ptk_context_set(): "
                         "per test phase under pytest -p pytracekit): one "
                         "timer.context-N.pstats each, listed in timer.json",
                         NULL},
    [OPT_COUNT] = {NULL, 0, NULL, NULL, NULL},
};

/* ---- clocks ------------------------------------------------------------- */

uint64_t
tm__cpu_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* ---- functions ---------------------------------------------------------- */

/* The direct-mapped entry of @p code in tm_state::fcache. */
static inline tm_fcache *
tm_fcache_slot(tm_state *st, const void *code)
{
    return &st->fcache[((uintptr_t)code >> 4) & (TM_FCACHE - 1)];
}

/* The callback of the weak reference to a code object: it died. Its record
 * stays (the figures name it) but no code object finds it any more: a new
 * one at its address gets a record of its own. Calls nothing. */
static PyObject *
tm_code_gone(PyObject *self, PyObject *wr)
{
    tm_state *st = ptk_kit_gone_state(self);
    tm_func *fn = st != NULL ? ptk_kit_map_get(&st->wrs, wr, NULL) : NULL;
    if (fn != NULL && fn->wr == wr && fn->code != NULL &&
        PTK_KIT_RESERVE(st->dead, st->capdead, st->ndead + 1, 64) == 0) {
        tm_fcache *e = tm_fcache_slot(st, fn->code);
        if (e->fn == fn) {
            e->code = NULL;
            e->fn = NULL;
        }
        fn->code = NULL;
        st->dead[st->ndead++] = fn->wr;
        fn->wr = NULL;
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef tm_code_gone_def = {"_timer_code_gone", tm_code_gone, METH_O, NULL};

/* The record of the Python function of @p code (first sight: its names,
 * and a weak reference that says when it dies), through the cache; NULL
 * when out of memory. */
static __attribute__((noinline)) tm_func *
tm_code_func(tm_state *st, PyCodeObject *code)
{
    tm_fcache *e = tm_fcache_slot(st, code);
    if (e->code == (const void *)code) {
        return e->fn;
    }
    tm_func *fn = ptk_kit_map_get(&st->codes, code, NULL);
    if (fn == NULL || fn->code != (const void *)code) {
        if (st->ndead > 0) {
            /* dead weak references: their callbacks ran (this is not one) */
            PyObject **dead = st->dead;
            size_t n = st->ndead;
            st->dead = NULL;
            st->ndead = st->capdead = 0;
            for (size_t i = 0; i < n; i++) {
                Py_DECREF(dead[i]);
            }
            free(dead);
        }
        if (PTK_KIT_RESERVE(st->func_list, st->funcs_cap, st->nfuncs + 1, 256) != 0 ||
            (fn = tm__arena_alloc(&st->arena, sizeof(*fn))) == NULL) {
            return NULL;
        }
        if (st->gone_cb == NULL) {
            st->gone_cb = ptk_kit_gone_callback(&tm_code_gone_def, st, &st->gone_box);
            PyErr_Clear();
        }
        fn->wr = st->gone_cb != NULL ? PyWeakref_NewRef((PyObject *)code, st->gone_cb)
                                     : NULL;
        if (fn->wr == NULL) {
            PyErr_Clear();
            fn->pin = Py_NewRef((PyObject *)code); /* the address stays its own */
        }
        fn->key = fn;
        fn->code = code;
        fn->filename = Py_NewRef(code->co_filename);
        fn->name = Py_NewRef(code->co_name);
        fn->qualname = Py_NewRef(code->co_qualname);
        fn->line = code->co_firstlineno;
        fn->coro = st->await_mode &&
                   (code->co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE)) != 0;
        fn->id = (uint32_t)st->nfuncs;
        st->func_list[st->nfuncs++] = fn; /* released at fini, even if the
                                             maps below fail */
        if (ptk_kit_map_put(&st->codes, code, NULL, fn) != 0 ||
            (fn->wr != NULL && ptk_kit_map_put(&st->wrs, fn->wr, NULL, fn) != 0)) {
            Py_CLEAR(fn->wr); /* no callback without its map entry */
            fn->code = NULL;
            return NULL;
        }
    }
    if (fn->coro) {
        return fn; /* its calls take the slow path (tm_await_enter) */
    }
    e->code = code;
    e->fn = fn;
    return fn;
}

/* The shared record of a function, made on first sight (a Python
 * function's was made by tm_code_func: @p key is it). */
static tm_func *
tm_func_get(tm_state *st, const void *key, PyObject *obj, PyObject *cself,
            int is_c)
{
    if (!is_c) {
        return (tm_func *)key;
    }
    tm_func *fn = ptk_kit_map_get(&st->funcs, key, NULL);
    if (fn != NULL) {
        return fn;
    }
    if (PTK_KIT_RESERVE(st->func_list, st->funcs_cap, st->nfuncs + 1, 256) != 0) {
        return NULL;
    }
    fn = tm__arena_alloc(&st->arena, sizeof(*fn));
    if (fn == NULL) {
        return NULL;
    }
    fn->key = key;
    fn->is_c = is_c;
    fn->label = ptk_kit_c_label(obj, cself);
    if (fn->label == NULL) {
        return NULL;
    }
    if (!PyCFunction_Check(obj)) {
        fn->ref = Py_NewRef(obj); /* keyed by identity: keep it alive */
    }
    if (ptk_kit_map_put(&st->funcs, key, NULL, fn) != 0) {
        Py_CLEAR(fn->label);
        Py_CLEAR(fn->ref);
        return NULL;
    }
    fn->id = (uint32_t)st->nfuncs;
    st->func_list[st->nfuncs++] = fn;
    return fn;
}

/* ---- threads ------------------------------------------------------------ */

static __attribute__((noinline)) tm_thread *
tm_thread_get(tm_state *st, const ptk_thread *t)
{
    size_t idx = t->index;
    if (idx >= st->nthreads) {
        /* two arrays of one length: the second grows to the first's */
        size_t n = st->nthreads, ndone = st->nthreads;
        if (PTK_KIT_RESERVE_ZERO(st->threads, n, idx + 1, 8) != 0 ||
            PTK_KIT_RESERVE_ZERO(st->done, ndone, n, 8) != 0) {
            return NULL;
        }
        st->nthreads = n;
    }
    if (st->threads[idx] == NULL) {
        tm_thread *th = calloc(1, sizeof(*th));
        if (th == NULL) {
            return NULL;
        }
        th->index = t->index;
        th->ident = t->ident;
        th->root.scope = &th->root;
        th->top = &th->root;
        if (t->name != NULL) {
            th->name = strdup(t->name);
        }
        else if (st->done[idx].name != NULL) {
            th->name = strdup(st->done[idx].name);
        }
        st->threads[idx] = th;
    }
    return st->threads[idx];
}

/* The tree node under @p parent for @p key (cache miss path). A context
 * node is keyed by (parent node, key); a merged node, one per edge, by
 * (caller's stat, key), or (&root_edge, key) under the root: stats, nodes
 * and root_edge are distinct objects, so the keys never collide. */
static tm_node *
tm_node_find(tm_state *st, tm_thread *th, tm_node *parent, const void *key,
             const void *match, PyObject *obj, PyObject *cself, int is_c)
{
    int merged = parent->merged || !st->contexts ||
                 (st->max_contexts > 0 &&
                  st->ncontexts >= tm_record_limit(st->max_contexts));
    const void *anchor = parent;
    if (merged) {
        anchor = parent->stat != NULL ? (const void *)parent->stat
                                      : (const void *)&th->root_edge;
    }
    tm_node *n = ptk_kit_map_get(&th->nodes, anchor, key);
    if (n == NULL && merged && anchor != (const void *)parent) {
        /* over the recording limit now, but this context was kept before */
        n = ptk_kit_map_get(&th->nodes, parent, key);
    }
    if (n != NULL) {
        return n;
    }
    tm_stat *s = ptk_kit_map_get(&th->stats, key, NULL);
    if (s == NULL) {
        tm_func *fn = tm_func_get(st, key, obj, cself, is_c);
        if (fn == NULL) {
            return NULL;
        }
        s = tm__arena_alloc(&th->arena, sizeof(*s));
        if (s == NULL || ptk_kit_map_put(&th->stats, key, NULL, s) != 0) {
            return NULL;
        }
        s->fn = fn;
        th->nstats++;
    }
    tm_edge *e = &th->root_edge; /* a sink: never reported */
    if (parent->stat != NULL) {
        e = ptk_kit_map_get(&th->edges, parent->stat, s);
        if (e == NULL) {
            e = tm__arena_alloc(&th->arena, sizeof(*e));
            if (e == NULL || ptk_kit_map_put(&th->edges, parent->stat, s, e) != 0) {
                return NULL;
            }
            e->caller = parent->stat;
            e->callee = s;
        }
    }
    n = tm__arena_alloc(&th->arena, sizeof(*n));
    if (n == NULL || ptk_kit_map_put(&th->nodes, anchor, key, n) != 0) {
        return NULL;
    }
    n->parent = parent;
    n->key = key;
    /* a coroutine's return (await=true) takes the slow path: no match */
    n->match = s->fn->coro ? NULL : match;
    n->stat = s;
    n->edge = e;
    n->merged = merged;
    n->scope = merged ? (const void *)s : (const void *)n;
    n->pscope = parent->scope;
    if (!merged) {
        n->next_sibling = parent->first_child;
        parent->first_child = n;
        th->ncontexts++;
        st->ncontexts++;
    }
    return n;
}

/* ---- the hot path ------------------------------------------------------- */

#if defined(__GNUC__)
#define TM_INLINE static inline __attribute__((always_inline))
#define TM_COLD static __attribute__((noinline, cold))
#else
#define TM_INLINE static inline
#define TM_COLD static
#endif

TM_INLINE void
tm_fig_leave(tm_fig *f, uint64_t tt, uint64_t it)
{
    f->calls++;
    if (--f->level <= 0) {
        f->level = 0;
        f->tt += tt;
    }
    else {
        f->reccalls++;
    }
    f->it += it;
}

/* The tree node of a call, found unless guessed (@p n, NULL when both
 * guesses missed), after making room for its frame on the stack. NULL
 * after recording the failure. */
TM_COLD tm_node *
tm_enter_slow(tm_state *st, tm_thread *th, tm_node *parent, tm_node *n,
              const void *key, const void *match, PyObject *obj, PyObject *cself,
              int is_c)
{
    if (n == NULL || n->key != key) {
        n = tm_node_find(st, th, parent, key, match, obj, cself, is_c);
        if (n == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            st->host->fail(st->ctx, PTK_ENOMEM, "out of memory recording a call");
            return NULL;
        }
    }
    if (PTK_KIT_RESERVE(th->stack, th->cap, th->sp + 1, 128) != 0) {
        st->host->fail(st->ctx, PTK_ENOMEM, "out of memory growing the call stack");
        return NULL;
    }
    return n;
}

/* The frame running now, or the root when none is. */
TM_INLINE tm_node *
tm_top_node(tm_thread *th)
{
    return th->top;
}

/* Where the guess for the next call from @p parent is kept: the call that
 * followed the sibling that just returned, last time, else the first call
 * made from the parent. The sibling may have been reached from another
 * parent of the same scope (a merged caller): the guess holds there too. */
TM_INLINE tm_node **
tm_guess(tm_thread *th, tm_node *parent)
{
    tm_node *prev = th->last_left;
    return prev != NULL && prev->pscope == parent->scope
               ? &prev->after
               : &parent->last_child;
}

/* Where the second guess for a call of @p key from a parent of @p scope is
 * kept: a direct-mapped cache of the nodes found before. */
TM_INLINE tm_node **
tm_seen_slot(tm_thread *th, const void *scope, const void *key)
{
    uint64_t h = (uint64_t)((uintptr_t)key ^ ((uintptr_t)scope >> 3)) *
                 UINT64_C(0x9E3779B97F4A7C15); /* Fibonacci hashing */
    return &th->seen[h >> (64 - TM_SEEN_BITS)];
}

/* The node of a call of @p key from @p parent by the guess in @p slot, else
 * by the second guess (then remembered in @p slot); NULL if both missed. */
TM_INLINE tm_node *
tm_guess_node(tm_thread *th, tm_node *parent, tm_node **slot, const void *key)
{
    tm_node *n = *slot;
    if (n != NULL && n->key == key) {
        return n;
    }
    n = *tm_seen_slot(th, parent->scope, key);
    if (n == NULL || n->key != key || n->pscope != parent->scope) {
        return NULL;
    }
    *slot = n;
    return n;
}

/* Pushes a frame of @p n (the stack has room) started at @p now. */
TM_INLINE void
tm_push(tm_thread *th, tm_node *n, uint64_t now)
{
    tm_frame *f = &th->stack[th->sp++];
    th->last_left = NULL;
    th->top = n;
    f->node = n;
    f->t0 = now;
    f->subt = 0;
    f->cstat = NULL;
    n->stat->fig.level++;
    n->edge->fig.level++;
}

/* Is the top frame one that returns with @p match (a code object, or a C
 * key)? */
TM_INLINE int
tm_is_top(const tm_thread *th, const void *match)
{
    return th->top->match == match; /* (the root's is NULL: no function's) */
}

/* A call of @p key at @p now: its node (guessed, else found) pushed. */
TM_INLINE int
tm_enter(tm_state *st, tm_thread *th, const void *key, const void *match, PyObject *obj,
         PyObject *cself, int is_c, uint64_t now)
{
    tm_node *parent = tm_top_node(th);
    tm_node **slot = tm_guess(th, parent);
    tm_node *n = tm_guess_node(th, parent, slot, key);
    if (n == NULL || th->sp == th->cap) {
        n = tm_enter_slow(st, th, parent, n, key, match, obj, cself, is_c);
        if (n == NULL) {
            return PTK_ENOMEM;
        }
        *slot = n;
        *tm_seen_slot(th, parent->scope, key) = n;
    }
    tm_push(th, n, now);
    return PTK_OK;
}

/* Pops the top frame at time @p now. */
TM_INLINE void
tm_leave(tm_thread *th, uint64_t now)
{
    tm_frame *f = &th->stack[--th->sp];
    uint64_t tt = now > f->t0 ? now - f->t0 : 0;
    uint64_t it = tt > f->subt ? tt - f->subt : 0;
    if (th->sp > 0) {
        th->stack[th->sp - 1].subt += tt;
        th->top = th->stack[th->sp - 1].node;
    }
    else {
        th->top = &th->root;
    }
    tm_node *n = f->node;
    th->last_left = n;
    n->self_ns += it;
    tm_fig_leave(&n->stat->fig, tt, it);
    tm_fig_leave(&n->edge->fig, tt, it);
    if (f->cstat != NULL) {
        tm_fig_leave(f->cstat, tt, it);
        tm_fig_leave(f->cedge, tt, it);
    }
}

/* Closes the frame that returns with @p match nearest the top, and any frame
 * above it (those lost their return). With @p c_only, does not look past a
 * Python frame. */
TM_COLD void
tm_leave_key(tm_thread *th, const void *match, int c_only, uint64_t now)
{
    size_t i = th->sp;
    while (i > 0) {
        tm_node *n = th->stack[i - 1].node;
        if (n->match == match ||
            (n->match == NULL && n->stat != NULL && n->stat->fn->code == match)) {
            break;
        }
        if (c_only && !n->stat->fn->is_c) {
            i = 0;
            break;
        }
        i--;
    }
    if (i == 0) {
        th->unmatched++;
        return;
    }
    while (th->sp > i) {
        th->resynced++;
        tm_leave(th, now);
    }
    tm_leave(th, now);
}

/* The clock of the latest event on @p th: its latest return, or the start
 * of its top frame if that came later. */
static uint64_t
tm_last_ns(const tm_thread *th)
{
    uint64_t t = th->last_ns;
    if (th->sp > 0 && th->stack[th->sp - 1].t0 > t) {
        t = th->stack[th->sp - 1].t0;
    }
    return t;
}

/* Suspends the frames of the context running on @p th at @p now: their
 * functions' and edges' levels are given back (a recursion is counted
 * within its own context) and their clocks stop until it runs again. */
static void
tm_suspend(tm_thread *th)
{
    for (size_t i = 0; i < th->sp; i++) {
        tm_node *n = th->stack[i].node;
        n->stat->fig.level--;
        n->edge->fig.level--;
    }
}

/* Resumes the frames now in th->stack, suspended since @p at. */
static void
tm_resume(tm_thread *th, uint64_t at, uint64_t now)
{
    uint64_t shift = now > at ? now - at : 0;
    for (size_t i = 0; i < th->sp; i++) {
        tm_node *n = th->stack[i].node;
        th->stack[i].t0 += shift;
        n->stat->fig.level++;
        n->edge->fig.level++;
    }
    th->top = th->sp > 0 ? th->stack[th->sp - 1].node : &th->root;
}

/* The execution context on @p th became @p id (a greenlet switch): the
 * running context's frames are suspended and saved, @p id's (if it ran
 * here before) resumed, so that a return pairs with a frame of its own
 * context and no context is charged for the time another ran. */
static __attribute__((noinline)) int
tm_switch(tm_state *st, tm_thread *th, uint64_t id, uint64_t now)
{
    tm_saved *out = ptk_kit_map_get(&th->saved, (const void *)(uintptr_t)(th->exec_id + 1), NULL);
    if (out == NULL && th->sp > 0) {
        out = calloc(1, sizeof *out);
        if (out == NULL ||
            ptk_kit_map_put(&th->saved, (const void *)(uintptr_t)(th->exec_id + 1), NULL,
                            out) != 0) {
            free(out);
            return st->host->fail(st->ctx, PTK_ENOMEM,
                                  "out of memory saving an execution context");
        }
    }
    tm_suspend(th);
    if (out != NULL) {
        free(out->stack); /* (empty: its frames came back when it last ran) */
        out->stack = th->stack;
        out->sp = th->sp;
        out->cap = th->cap;
        out->at = now;
        th->stack = NULL;
        th->sp = th->cap = 0;
    }
    else {
        th->sp = 0; /* keep the (empty) array for the next context */
    }
    tm_saved *in = ptk_kit_map_get(&th->saved, (const void *)(uintptr_t)(id + 1), NULL);
    if (in != NULL && in->sp > 0) {
        free(th->stack);
        th->stack = in->stack;
        th->sp = in->sp;
        th->cap = in->cap;
        in->stack = NULL;
        in->sp = in->cap = 0;
        tm_resume(th, in->at, now);
    }
    else {
        th->top = &th->root;
    }
    th->last_left = NULL;
    th->exec_id = id;
    th->switches++;
    return PTK_OK;
}

/* Closes every frame of @p th, the suspended contexts' included (each at
 * the time it was switched away from), and frees their stacks. */
static void
tm_close_all(tm_thread *th, uint64_t now)
{
    while (th->sp > 0) {
        tm_leave(th, now);
    }
    for (size_t i = 0; th->saved.slots && i <= th->saved.mask; i++) {
        tm_saved *sv = th->saved.slots[i].value;
        if (sv == NULL || sv->sp == 0) {
            continue;
        }
        tm_frame *keep = th->stack;
        size_t kcap = th->cap;
        th->stack = sv->stack;
        th->sp = sv->sp;
        tm_resume(th, sv->at, sv->at);
        while (th->sp > 0) {
            tm_leave(th, sv->at);
        }
        th->stack = keep;
        th->cap = kcap;
        th->top = &th->root;
        sv->sp = 0;
    }
}

static void
tm_saved_free(tm_thread *th)
{
    for (size_t i = 0; th->saved.slots && i <= th->saved.mask; i++) {
        tm_saved *sv = th->saved.slots[i].value;
        if (sv != NULL) {
            free(sv->stack);
            free(sv);
        }
    }
    ptk_kit_map_free(&th->saved);
}

/* ---- await=true ---------------------------------------------------------- */

/* The asyncio Task running now (the hub's ptk_host::running_task), made a
 * record at first sight; NULL if none. */
static tm_task *
tm_current_task(tm_state *st, uint64_t now)
{
    PyObject *task;
    uint64_t id = st->host->running_task(&task);
    if (id == 0) {
        return NULL;
    }
    const void *key = (const void *)(uintptr_t)id; /* never reused */
    tm_task *tk = ptk_kit_map_get(&st->tasks, key, NULL);
    if (tk != NULL) {
        return tk;
    }
    if (PTK_KIT_RESERVE(st->task_list, st->tasks_cap, st->ntasks + 1, 32) != 0 ||
        (tk = calloc(1, sizeof(*tk))) == NULL) {
        return NULL;
    }
    PyObject *name = PyObject_CallMethod(task, "get_name", NULL);
    const char *u = name != NULL && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    tk->name = strdup(u != NULL ? u : "?");
    Py_XDECREF(name);
    PyErr_Clear();
    if (tk->name == NULL || ptk_kit_map_put(&st->tasks, key, NULL, tk) != 0) {
        free(tk->name);
        free(tk);
        return NULL;
    }
    tk->first_ns = now;
    st->task_list[st->ntasks++] = tk;
    return tk;
}

/* The record of the coroutine whose frame the event is of (made at first
 * sight), or NULL. */
static tm_await *
tm_await_of(tm_state *st, tm_thread *th, const ptk_event *ev, PyFrameObject **framep)
{
    PyFrameObject *frame = st->host->event_frame(ev);
    PyObject *gen = frame != NULL ? PyFrame_GetGenerator(frame) : NULL;
    *framep = frame;
    if (gen == NULL) {
        PyErr_Clear();
        return NULL;
    }
    tm_await *a = ptk_kit_map_get(&th->awaits, gen, NULL);
    if (a == NULL) {
        a = tm__arena_alloc(&th->arena, sizeof(*a));
        if (a == NULL || ptk_kit_map_put(&th->awaits, gen, NULL, a) != 0) {
            a = NULL;
        }
    }
    Py_DECREF(gen); /* the key is compared only, never used */
    return a;
}

/* A coroutine's frame was pushed (its node on top): its start, or a resume. */
static void
tm_await_enter(tm_state *st, tm_thread *th, const ptk_event *ev, uint64_t now)
{
    PyFrameObject *frame;
    tm_await *a = tm_await_of(st, th, ev, &frame);
    if (a == NULL) {
        return;
    }
    tm_node *n = th->top;
    if (!a->live) {
        a->live = 1;
        a->t_first = now;
        a->stat = n->stat;
        a->edge = n->edge;
        a->counted_stat = n->stat->fig.level == 1;
        a->counted_edge = n->edge->fig.level == 1;
        a->task = NULL;
    }
    a->t_last = now;
    a->slice_t0 = now;
    /* resumed by something that is not a coroutine: a Task's step */
    tm_node *below = th->sp >= 2 ? th->stack[th->sp - 2].node : NULL;
    if (below == NULL || below->stat == NULL || !below->stat->fn->coro) {
        tm_task *tk = tm_current_task(st, now);
        if (tk != NULL) {
            a->task = tk;
            tk->steps++;
            if (tk->coro == NULL) {
                tk->coro = n->stat->fn;
            }
        }
    }
}

/* Is the RETURN of a coroutine's frame a suspension (a yield in await)?
 * The backend says so where it can (PY_YIELD); the legacy hooks say RETURN
 * for both: the instruction the frame stopped at tells. */
static int
tm_is_yield(tm_state *st, const ptk_event *ev, PyFrameObject *frame)
{
    if (ev->origin == PTK_ORIGIN_YIELD) {
        return 1;
    }
    if (ev->origin == PTK_ORIGIN_UNWIND || frame == NULL) {
        return 0;
    }
    PyObject *bytes = PyCode_GetCode(ev->code);
    if (bytes == NULL) {
        PyErr_Clear();
        return 0;
    }
    int lasti = PyFrame_GetLasti(frame);
    const unsigned char *raw = (const unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t size = PyBytes_GET_SIZE(bytes);
    int y = 0;
    if (lasti >= 0 && lasti + 1 < size) {
        y = raw[lasti] == st->op_yield ||
            /* some versions leave f_lasti on the RESUME after the yield */
            (raw[lasti] == st->op_resume && raw[lasti + 1] != 0 && lasti >= 2 &&
             raw[lasti - 2] == st->op_yield);
    }
    Py_DECREF(bytes);
    return y;
}

/* The coroutine's figures for its whole life, at its end. */
static void
tm_await_end(tm_await *a, uint64_t end)
{
    uint64_t wall = end > a->t_first ? end - a->t_first : 0;
    if (a->counted_stat) {
        a->stat->fig.await_tt += wall;
    }
    if (a->counted_edge) {
        a->edge->fig.await_tt += wall;
    }
    a->live = 0;
}

/* A coroutine's frame returns or suspends (before its frame is popped). */
static void
tm_await_leave(tm_state *st, tm_thread *th, const ptk_event *ev, uint64_t now)
{
    PyFrameObject *frame;
    tm_await *a = tm_await_of(st, th, ev, &frame);
    if (a == NULL || !a->live) {
        return;
    }
    a->t_last = now;
    if (a->task != NULL) {
        a->task->running_ns += now > a->slice_t0 ? now - a->slice_t0 : 0;
        a->task->last_ns = now;
        a->task = NULL;
    }
    if (!tm_is_yield(st, ev, frame)) {
        tm_await_end(a, now);
    }
}

/* Ends the coroutines of @p th still running (at their latest slice's end)
 * so that their time is counted. */
static void
tm_await_close(tm_thread *th)
{
    for (size_t i = 0; th->awaits.slots && i <= th->awaits.mask; i++) {
        tm_await *a = th->awaits.slots[i].value;
        if (a != NULL && a->live) {
            tm_await_end(a, a->t_last);
        }
    }
}

/* await=true, at the end: a coroutine's inclusive time is its whole life's. */
static void
tm_await_apply(tm_thread *th)
{
    for (size_t i = 0; th->stats.slots && i <= th->stats.mask; i++) {
        tm_stat *s = th->stats.slots[i].value;
        if (s != NULL && s->fn->coro) {
            s->fig.tt = s->fig.await_tt;
        }
    }
    for (size_t i = 0; th->edges.slots && i <= th->edges.mask; i++) {
        tm_edge *e = th->edges.slots[i].value;
        if (e != NULL && e->callee->fn->coro) {
            e->fig.tt = e->fig.await_tt;
        }
    }
}

/* A C function's key: its PyMethodDef (a bound method is made anew for
 * each call, a descriptor's is the same def), else the callable itself. */
static inline const void *
tm_c_key(const ptk_event *ev)
{
    const void *def = ptk_event_c_def(ev);
    return def != NULL ? def : (const void *)ev->arg;
}

/* Every event, in full: a new thread, the CPU clock, a node not in the
 * one-entry caches, a full stack, a return that is not the top frame's. */
static __attribute__((noinline)) int
tm_on_event_slow(tm_state *st, const ptk_event *ev)
{
    size_t idx = ev->thread->index;
    tm_thread *th = idx < st->nthreads ? st->threads[idx] : NULL;
    if (th == NULL) {
        th = tm_thread_get(st, ev->thread);
        if (th == NULL) {
            return st->host->fail(st->ctx, PTK_ENOMEM,
                                  "out of memory recording a thread");
        }
    }
    if (!st->cpu_clock && !st->per_context) { /* per_context: tm_on_event_ctx */
        st->hot_thread = ev->thread;
        st->hot = th;
    }
    uint64_t now = st->cpu_clock ? tm__cpu_now() : ev->time_ns;
    if (ev->thread->exec_id != th->exec_id) {
        int rc = tm_switch(st, th, ev->thread->exec_id, now);
        if (rc != PTK_OK) {
            return rc;
        }
    }
    th->last_ns = now;
    switch (ev->kind) {
    case PTK_EV_CALL: {
        tm_func *fn = tm_code_func(st, ev->code);
        if (fn == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_NoMemory();
            }
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory recording a function");
        }
        int rc = tm_enter(st, th, fn, ev->code, (PyObject *)ev->code, NULL, 0, now);
        if (rc == PTK_OK && fn->coro) {
            tm_await_enter(st, th, ev, now);
        }
        return rc;
    }
    case PTK_EV_RETURN:
        if (st->await_mode && (ev->code->co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE))) {
            tm_await_leave(st, th, ev, now);
        }
        if (tm_is_top(th, ev->code)) {
            tm_leave(th, now);
        }
        else {
            tm_leave_key(th, ev->code, 0, now);
        }
        return PTK_OK;
    case PTK_EV_C_CALL: {
        const void *key = tm_c_key(ev);
        return tm_enter(st, th, key, key, ev->arg, ev->c_self, 1, now);
    }
    case PTK_EV_C_RETURN:
    case PTK_EV_C_EXCEPTION: {
        const void *key = tm_c_key(ev);
        if (tm_is_top(th, key)) {
            tm_leave(th, now);
        }
        else {
            tm_leave_key(th, key, 1, now);
        }
        return PTK_OK;
    }
    default:
        return PTK_OK;
    }
}

/* ---- per_context ------------------------------------------------------ */

/* The figures of the current context, made at first sight of its name;
 * NULL when out of memory. The traced program's exception is kept. */
static tm_cset *
tm_cset_current(tm_state *st)
{
    uint64_t id;
    const char *name = st->host->context(&id);
    if (st->cs_seen && id == st->cs_id) {
        return st->cur_cs;
    }
    if (PTK_KIT_RESERVE(st->csets, st->capcsets, st->ncsets + 1, 64) != 0) {
        return NULL;
    }
    tm_cset *fresh = calloc(1, sizeof(*fresh));
    if (fresh == NULL) {
        return NULL;
    }
    PyObject *key;
    Py_ssize_t at = ptk_kit_context_index(&st->cset_index, NULL, name, (Py_ssize_t)st->ncsets,
                                          &key);
    tm_cset *cs = NULL;
    if (key != NULL) {
        fresh->name = key;
        cs = st->csets[st->ncsets++] = fresh;
        fresh = NULL;
    }
    else if (at >= 0) {
        cs = st->csets[at];
    }
    free(fresh);
    if (cs != NULL) {
        st->cur_cs = cs;
        st->cs_id = id;
        st->cs_seen = 1;
    }
    return cs;
}

/* The figures of (@p a, @p b) in @p cs, made at first sight; NULL when out
 * of memory. */
static tm_fig *
tm_cset_fig(tm_cset *cs, const tm_func *a, const tm_func *b)
{
    tm_fig *f = ptk_kit_map_get(&cs->figs, a, b);
    if (f == NULL) {
        f = tm__arena_alloc(&cs->arena, sizeof(*f));
        if (f == NULL || ptk_kit_map_put(&cs->figs, a, b, f) != 0) {
            return NULL;
        }
        cs->nfigs++;
    }
    return f;
}

/* per_context: every event, in full; a call's frame also gets the figures
 * of its function and of its edge in the current context (the edge only
 * when its caller started in the same context). */
static __attribute__((noinline)) int
tm_on_event_ctx(tm_state *st, const ptk_event *ev)
{
    int rc = tm_on_event_slow(st, ev);
    if (rc != PTK_OK || (ev->kind != PTK_EV_CALL && ev->kind != PTK_EV_C_CALL)) {
        return rc;
    }
    tm_thread *th = st->threads[ev->thread->index];
    tm_frame *f = &th->stack[th->sp - 1];
    tm_frame *pf = th->sp > 1 ? &th->stack[th->sp - 2] : NULL;
    tm_cset *cs = tm_cset_current(st);
    const tm_func *fn = f->node->stat->fn;
    tm_fig *stat = cs != NULL ? tm_cset_fig(cs, fn, NULL) : NULL;
    tm_fig *edge = stat == NULL           ? NULL
                   : pf != NULL && pf->cs == cs ? tm_cset_fig(cs, pf->node->stat->fn, fn)
                                                : &cs->sink;
    if (edge == NULL) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory recording a context");
    }
    f->cs = cs;
    f->cstat = stat;
    f->cedge = edge;
    stat->level++;
    edge->level++;
    return PTK_OK;
}

/* tm_c_key for the exact types that make nearly every C event (a method
 * descriptor, a builtin function or method), with no call; NULL for the
 * rest (subclasses, other callables: tm_c_key). */
static inline const void *
tm_c_key_exact(const ptk_event *ev)
{
    PyObject *fn = ev->arg;
    if (fn == NULL) {
        return NULL;
    }
    if (Py_IS_TYPE(fn, &PyMethodDescr_Type)) {
        return ((PyMethodDescrObject *)fn)->d_method;
    }
    if (Py_IS_TYPE(fn, &PyCFunction_Type) || Py_IS_TYPE(fn, &PyCMethod_Type)) {
        return ((PyCFunctionObject *)fn)->m_ml;
    }
    return NULL;
}

/* The common event: on the thread of the event before, with the hub's
 * clock, a call whose node was guessed into a stack with room, the return
 * of the top frame. It calls nothing (anything else goes to
 * tm_on_event_slow before any change but a guess learnt), so it saves no
 * registers. */
static int
tm_on_event(void *state, const ptk_event *ev)
{
    tm_state *st = state;
    tm_thread *th = st->hot;
    if (ev->thread != st->hot_thread || ev->thread->exec_id != th->exec_id) {
        return st->per_context ? tm_on_event_ctx(st, ev) : tm_on_event_slow(st, ev);
    }
    const void *key;
    switch (ev->kind) {
    case PTK_EV_CALL: {
        const tm_fcache *e = tm_fcache_slot(st, ev->code);
        if (e->code != (const void *)ev->code) {
            return tm_on_event_slow(st, ev);
        }
        key = e->fn;
        break;
    }
    case PTK_EV_C_CALL:
        if ((key = tm_c_key_exact(ev)) == NULL) {
            return tm_on_event_slow(st, ev);
        }
        break;
    case PTK_EV_RETURN:
        key = ev->code;
        goto leave;
    case PTK_EV_C_RETURN:
    case PTK_EV_C_EXCEPTION:
        if ((key = tm_c_key_exact(ev)) == NULL) {
            return tm_on_event_slow(st, ev);
        }
        goto leave;
    default:
        return PTK_OK;
    }
    /* a call: as tm_enter, when its guess is right */
    {
        tm_node *parent = tm_top_node(th);
        tm_node *n = tm_guess_node(th, parent, tm_guess(th, parent), key);
        if (n == NULL || th->sp == th->cap) {
            return tm_on_event_slow(st, ev);
        }
        tm_push(th, n, ev->time_ns);
        return PTK_OK;
    }
leave:
    if (!tm_is_top(th, key)) {
        return tm_on_event_slow(st, ev);
    }
    th->last_ns = ev->time_ns;
    tm_leave(th, ev->time_ns);
    return PTK_OK;
}

/* Closes every frame still running, at the thread's latest clock reading (or
 * now, for the calling thread), as cProfile does when it is disabled. */
int
tm__flush(tm_state *st)
{
    if (st->flushed) {
        return PTK_OK;
    }
    st->flushed = 1;
    const ptk_thread *me = st->host->current_thread();
    for (size_t i = 0; i < st->nthreads; i++) {
        tm_thread *th = st->threads[i];
        if (th == NULL) {
            continue;
        }
        uint64_t now = tm_last_ns(th);
        if (me != NULL && me->index == th->index) {
            uint64_t t = st->cpu_clock ? tm__cpu_now() : st->host->clock_ns();
            if (t > now) {
                now = t;
            }
        }
        tm_close_all(th, now);
        if (st->await_mode) {
            tm_await_close(th);
            tm_await_apply(th);
        }
    }
    if (st->await_mode) {
        tm_await_apply(&st->gone);
    }
    return PTK_OK;
}

/* ---- the end of a thread ------------------------------------------------ */

static void
tm_fig_add(tm_fig *to, const tm_fig *f)
{
    to->calls += f->calls;
    to->reccalls += f->reccalls;
    to->tt += f->tt;
    to->it += f->it;
    to->await_tt += f->await_tt;
}

/* The stat of @p fn in the merged figures, made on first sight. */
static tm_stat *
tm_gone_stat(tm_thread *g, tm_func *fn)
{
    tm_stat *s = ptk_kit_map_get(&g->stats, fn->key, NULL);
    if (s == NULL) {
        s = tm__arena_alloc(&g->arena, sizeof(*s));
        if (s == NULL || ptk_kit_map_put(&g->stats, fn->key, NULL, s) != 0) {
            return NULL;
        }
        s->fn = fn;
        g->nstats++;
    }
    return s;
}

static tm_edge *
tm_gone_edge(tm_thread *g, tm_stat *caller, tm_stat *callee)
{
    if (caller == NULL) {
        return &g->root_edge;
    }
    tm_edge *e = ptk_kit_map_get(&g->edges, caller, callee);
    if (e == NULL) {
        e = tm__arena_alloc(&g->arena, sizeof(*e));
        if (e == NULL || ptk_kit_map_put(&g->edges, caller, callee, e) != 0) {
            return NULL;
        }
        e->caller = caller;
        e->callee = callee;
    }
    return e;
}

/* The node of the merged figures matching @p n (a node of another thread)
 * under @p gparent (a context node, NULL for a merged node). */
static tm_node *
tm_gone_node(tm_state *st, tm_thread *g, tm_node *gparent, const tm_node *n)
{
    tm_stat *gs = tm_gone_stat(g, n->stat->fn);
    tm_stat *gcaller = NULL;
    if (gs == NULL) {
        return NULL;
    }
    if (n->merged) {
        if (n->edge->caller != NULL &&
            (gcaller = tm_gone_stat(g, n->edge->caller->fn)) == NULL) {
            return NULL;
        }
    }
    else {
        gcaller = gparent->stat;
    }
    const void *anchor = n->merged ? (gcaller != NULL ? (const void *)gcaller
                                                      : (const void *)&g->root_edge)
                                   : (const void *)gparent;
    tm_node *gn = ptk_kit_map_get(&g->nodes, anchor, n->key);
    if (gn != NULL) {
        return gn;
    }
    tm_edge *ge = tm_gone_edge(g, gcaller, gs);
    gn = ge != NULL ? tm__arena_alloc(&g->arena, sizeof(*gn)) : NULL;
    if (gn == NULL || ptk_kit_map_put(&g->nodes, anchor, n->key, gn) != 0) {
        return NULL;
    }
    gn->key = n->key;
    gn->match = n->match;
    gn->stat = gs;
    gn->edge = ge;
    gn->merged = n->merged;
    if (!n->merged) {
        gn->parent = gparent;
        gn->next_sibling = gparent->first_child;
        gparent->first_child = gn;
        g->ncontexts++;
        st->ncontexts++;
    }
    return gn;
}

/* Adds the figures of @p th to the merged figures. 0, or -1 when out of
 * memory (then some figures may have been added: the instance fails). */
static int
tm_merge(tm_state *st, tm_thread *th)
{
    tm_thread *g = &st->gone;
    for (size_t i = 0; th->stats.slots && i <= th->stats.mask; i++) {
        const tm_stat *s = th->stats.slots[i].value;
        tm_stat *gs = s != NULL ? tm_gone_stat(g, s->fn) : NULL;
        if (s != NULL && gs == NULL) {
            return -1;
        }
    }
    for (size_t i = 0; th->edges.slots && i <= th->edges.mask; i++) {
        const tm_edge *e = th->edges.slots[i].value;
        if (e != NULL && tm_gone_edge(g, tm_gone_stat(g, e->caller->fn),
                                      tm_gone_stat(g, e->callee->fn)) == NULL) {
            return -1;
        }
    }
    /* Every record exists now (except nodes): add the figures. */
    for (size_t i = 0; th->stats.slots && i <= th->stats.mask; i++) {
        const tm_stat *s = th->stats.slots[i].value;
        if (s != NULL) {
            tm_fig_add(&tm_gone_stat(g, s->fn)->fig, &s->fig);
        }
    }
    for (size_t i = 0; th->edges.slots && i <= th->edges.mask; i++) {
        const tm_edge *e = th->edges.slots[i].value;
        if (e != NULL) {
            tm_fig_add(&tm_gone_edge(g, tm_gone_stat(g, e->caller->fn),
                                     tm_gone_stat(g, e->callee->fn))
                            ->fig,
                       &e->fig);
        }
    }
    /* Nodes: the tree depth-first, then the merged ones. A node that cannot
     * be made loses its own time to its parent, so that sums still hold. */
    typedef struct {
        const tm_node *n;
        tm_node *gparent;
    } item;
    size_t cap = 64, top = 0;
    item *todo = malloc(cap * sizeof(*todo));
    int rc = todo != NULL ? 0 : -1;
    for (const tm_node *c = th->root.first_child; todo && c; c = c->next_sibling) {
        if (PTK_KIT_RESERVE(todo, cap, top + 1, 64) != 0) {
            rc = -1;
            break;
        }
        todo[top++] = (item){c, &g->root};
    }
    while (rc == 0 && top > 0) {
        item it = todo[--top];
        tm_node *gn = tm_gone_node(st, g, it.gparent, it.n);
        if (gn == NULL) {
            it.gparent->self_ns += it.n->self_ns;
            rc = -1;
            continue;
        }
        gn->self_ns += it.n->self_ns;
        for (const tm_node *c = it.n->first_child; c; c = c->next_sibling) {
            if (PTK_KIT_RESERVE(todo, cap, top + 1, 64) != 0) {
                rc = -1;
                break;
            }
            todo[top++] = (item){c, gn};
        }
    }
    free(todo);
    for (size_t i = 0; th->nodes.slots && i <= th->nodes.mask; i++) {
        const tm_node *n = th->nodes.slots[i].value;
        if (n != NULL && n->merged) {
            tm_node *gn = tm_gone_node(st, g, NULL, n);
            (gn != NULL ? gn : &g->root)->self_ns += n->self_ns;
            rc = gn != NULL ? rc : -1;
        }
    }
    return rc;
}

static void
tm_thread_free(tm_state *st, tm_thread *th)
{
    st->ncontexts -= th->ncontexts;
    ptk_kit_map_free(&th->stats);
    ptk_kit_map_free(&th->edges);
    ptk_kit_map_free(&th->nodes);
    tm__arena_free(&th->arena);
    tm_saved_free(th);
    ptk_kit_map_free(&th->awaits);
    free(th->stack);
    free(th->name);
    free(th);
}

/* A thread ended: close its frames and free its stack; unless the report
 * wants figures per thread, merge its figures into st->gone and free the
 * rest. No Python is called. */
static void
tm_on_thread_end(void *state, const ptk_thread *t)
{
    tm_state *st = state;
    size_t idx = t->index;
    tm_thread *th = idx < st->nthreads ? st->threads[idx] : NULL;
    if (th == NULL) {
        return;
    }
    if (st->hot == th) {
        st->hot_thread = NULL;
        st->hot = NULL;
    }
    uint64_t now = tm_last_ns(th);
    tm_close_all(th, now);
    tm_saved_free(th);
    tm_await_close(th);
    free(th->stack);
    th->stack = NULL;
    th->cap = 0;
    th->last_left = NULL;
    if (st->per_thread) {
        return;
    }
    size_t depth = tm__tree_depth(th);
    uint64_t own = 0;
    for (size_t i = 0; th->stats.slots && i <= th->stats.mask; i++) {
        const tm_stat *s = th->stats.slots[i].value;
        own += s != NULL ? s->fig.it : 0;
    }
    if (tm_merge(st, th) != 0) {
        /* figures partly added: the report would count them twice */
        st->host->fail(st->ctx, PTK_ENOMEM,
                       "out of memory merging the figures of a thread");
        return;
    }
    tm_done *d = &st->done[idx];
    if (d->name == NULL && (th->name != NULL || t->name != NULL)) {
        d->name = strdup(th->name != NULL ? th->name : t->name);
    }
    d->ident = th->ident;
    if (depth > d->max_depth) {
        d->max_depth = depth;
    }
    d->unmatched += th->unmatched;
    d->resynced += th->resynced;
    d->own_ns += own;
    d->ended = 1;
    st->ngone++;
    st->threads[idx] = NULL;
    tm_thread_free(st, th);
}

/* ---- lifecycle ---------------------------------------------------------- */

static int
tm_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    if (args->noptions < OPT_COUNT) {
        snprintf(args->errbuf, args->errbuf_size,
                 "expected %d options, the host passed %zu", OPT_COUNT,
                 args->noptions);
        return PTK_EINVAL;
    }
    const ptk_option_value *o = args->options;
    if (o[OPT_FOLDED_DEPTH].i < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "folded_depth must be 0 or more, not %lld",
                 (long long)o[OPT_FOLDED_DEPTH].i);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_MAX_CONTEXTS].i < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "max_contexts must be 0 or more, not %lld",
                 (long long)o[OPT_MAX_CONTEXTS].i);
        return PTK_EOPTTYPE;
    }
    if (o[OPT_TOP].i < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "top must be 0 or more, not %lld", (long long)o[OPT_TOP].i);
        return PTK_EOPTTYPE;
    }
    tm_state *st = calloc(1, sizeof(*st));
    if (st == NULL) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->host = args->host;
    st->ctx = args->ctx;
    st->cpu_clock = o[OPT_CLOCK].i == 1;
    st->builtins = o[OPT_BUILTINS].i != 0;
    st->per_thread = o[OPT_PER_THREAD].i != 0;
    st->top = o[OPT_TOP].i;
    st->folded_depth = o[OPT_FOLDED_DEPTH].i;
    st->sort = (int)o[OPT_SORT].i;
    st->contexts = o[OPT_CONTEXTS].i != 0;
    st->max_contexts = o[OPT_MAX_CONTEXTS].i;
    st->speedscope = o[OPT_SPEEDSCOPE].i != 0;
    st->folded = o[OPT_FOLDED].i != 0;
    st->await_mode = o[OPT_AWAIT].i != 0;
    /* the instructions a suspended coroutine's frame stops at, as this
     * CPython's public opcode.h numbers them (the plugin is built for its
     * minor version) */
    st->op_yield = YIELD_VALUE;
    st->op_resume = RESUME;
    st->per_context = o[OPT_PER_CONTEXT].i != 0;
    if (st->per_context && args->host->struct_size <= offsetof(ptk_host, context)) {
        snprintf(args->errbuf, args->errbuf_size,
                 "per_context needs a host of ABI 1.4 or later");
        free(st);
        return PTK_EOPTTYPE;
    }
    if (!st->builtins) {
        *events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN);
    }
    *state = st;
    return PTK_OK;
}

static int
tm_report_cb(void *state, const ptk_report_args *args)
{
    tm_state *st = state;
    tm__flush(st);
    return tm__report(st, args);
}

static void
tm_fini(void *state)
{
    tm_state *st = state;
    if (st == NULL) {
        return;
    }
    if (st->gone_box != NULL) {
        *st->gone_box = NULL; /* a callback from here on does nothing */
    }
    if (Py_IsInitialized()) {
        PyGILState_STATE gil = PyGILState_Ensure();
        for (size_t i = 0; i < st->nfuncs; i++) {
            tm_func *fn = st->func_list[i];
            Py_CLEAR(fn->wr); /* first: no callback from here on */
            Py_CLEAR(fn->pin);
            Py_CLEAR(fn->filename);
            Py_CLEAR(fn->name);
            Py_CLEAR(fn->qualname);
            Py_CLEAR(fn->label);
            Py_CLEAR(fn->ref);
        }
        for (size_t i = 0; i < st->ndead; i++) {
            Py_DECREF(st->dead[i]);
        }
        Py_CLEAR(st->gone_cb);
        for (size_t i = 0; i < st->ncsets; i++) {
            Py_CLEAR(st->csets[i]->name);
        }
        Py_CLEAR(st->cset_index);
        PyGILState_Release(gil);
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        if (st->threads[i] != NULL) {
            tm_thread_free(st, st->threads[i]);
        }
        free(st->done[i].name);
    }
    for (size_t i = 0; i < st->ncsets; i++) {
        ptk_kit_map_free(&st->csets[i]->figs);
        tm__arena_free(&st->csets[i]->arena);
        free(st->csets[i]);
    }
    free(st->csets);
    free(st->threads);
    free(st->done);
    ptk_kit_map_free(&st->gone.stats);
    ptk_kit_map_free(&st->gone.edges);
    ptk_kit_map_free(&st->gone.nodes);
    tm__arena_free(&st->gone.arena);
    free(st->dead);
    free(st->func_list);
    ptk_kit_map_free(&st->funcs);
    ptk_kit_map_free(&st->codes);
    ptk_kit_map_free(&st->wrs);
    tm__arena_free(&st->arena);
    for (size_t i = 0; i < st->ntasks; i++) {
        free(st->task_list[i]->name);
        free(st->task_list[i]);
    }
    free(st->task_list);
    ptk_kit_map_free(&st->tasks);
    free(st);
}

static const ptk_plugin_desc tm_desc = {
    PTK_PLUGIN_HEADER,
    .name = "timer",
    .version = "0.3.0",
    .description = "deterministic profiler: pstats, JSON, speedscope and folded stacks",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN) |
              PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
              PTK_MASK(PTK_EV_C_EXCEPTION),
    /* its own stack pairs every return (tm_leave_key): the hub's is not
     * needed (PTK_FLAG_OWN_STACK) */
    .flags = PTK_FLAG_CLOCK | PTK_FLAG_UNBOUND_C | PTK_FLAG_OWN_STACK |
             PTK_FLAG_EXEC_CONTEXT,
    .options = tm_options,
    .init = tm_init,
    .on_event = tm_on_event,
    .on_ref = NULL,
    .report = tm_report_cb,
    .fini = tm_fini,
    .on_thread_end = tm_on_thread_end,
};

PTK_PLUGIN_DEFINE(tm_desc)
