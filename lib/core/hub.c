/* The hub: one per process. Builds the immutable dispatch table from the
 * active sessions, swaps it in, and delivers events to subscribers. The
 * backends (lib/backends, lib/ref) only read ptk__current; the hub reaches
 * them through their tables (ptk__hub_ops, ptk__ref_sync_hook). */
#include "core/core.h"
#include "core/deliver.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ptk__table empty_table;
ptk__table *ptk__current = &empty_table;
struct ptk_session *ptk__active_sessions;

static ptk__table *retired;     /* tables that a dispatch may still read */
int ptk__dispatch_depth;
int ptk__dispatch_slow;
int ptk__dispatch_cleanup;
static int rebuild_pending;     /* a subscriber failed during a dispatch */
static uint64_t slots_used;     /* subscriber slots (for DISABLE records) */
static uint64_t slot_serial;    /* slots given out so far */

static void
table_free(ptk__table *t)
{
    if (t == NULL || t == &empty_table) {
        return;
    }
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        free(t->subs[k]);
    }
    free(t->refs);
    free(t);
}

static void
free_retired(void)
{
    while (retired != NULL) {
        ptk__table *n = retired->retired_next;
        table_free(retired);
        retired = n;
    }
}

static int
alloc_slot(void)
{
    for (int i = 0; i < PTK__MAX_SLOTS; i++) {
        if (!(slots_used & ((uint64_t)1 << i))) {
            slots_used |= (uint64_t)1 << i;
            return i;
        }
    }
    return -1;
}

static void
release_slot(struct ptk_plugin_ctx *c)
{
    if (c->slot >= 0) {
        ptk__code_forget_slot((uint32_t)c->slot);
        uint64_t bit = (uint64_t)1 << c->slot;
        for (size_t i = 0; i < ptk__thread_count(); i++) {
            ptk__thread *th = ptk__thread_at(i);
            if (th != NULL) {
                th->thr_judged &= ~bit;
                th->thr_rejected &= ~bit;
                if (th->hot != NULL) { /* (none: the thread has ended) */
                    th->hot->fdepth[c->slot] = 0;
                }
            }
        }
        slots_used &= ~((uint64_t)1 << c->slot);
        c->slot = -1;
    }
}

/* Which plugin instances are subscribers now: those of running sessions
 * that have not failed. */
static int
wanted(const struct ptk_session *s, const struct ptk_plugin_ctx *c)
{
    return s->running && c->initialised && !c->failed && !c->removed;
}

/* Does c's subscription include kind k? A max_depth filter needs every
 * CALL and RETURN of the code it selects, to count depth, even where the
 * instance does not subscribe to them (the entry then only counts). */
static int
takes(const struct ptk_plugin_ctx *c, int k)
{
    return (c->events & PTK_MASK(k)) ||
           ((k == PTK_EV_CALL || k == PTK_EV_RETURN) && c->filter != NULL &&
            c->filter->max_depth > 0);
}

/* A table with room for the subscribers of every kind (NULL: out of
 * memory). */
static ptk__table *
table_alloc(void)
{
    ptk__table *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    int counts[PTK_EV_COUNT] = {0};
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            if (!wanted(s, c)) {
                continue;
            }
            for (int k = 0; k < PTK_EV_COUNT; k++) {
                counts[k] += takes(c, k);
            }
            t->nref += (c->events & PTK_MASK_REF) != 0;
        }
    }
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        if (counts[k] && (PTK_MASK(k) & ~PTK_MASK_REF)) {
            t->subs[k] = calloc((size_t)counts[k], sizeof(ptk__sub));
            if (t->subs[k] == NULL) {
                table_free(t);
                return NULL;
            }
        }
    }
    if (t->nref) {
        t->refs = calloc((size_t)t->nref, sizeof(ptk__refsub));
        if (t->refs == NULL) {
            table_free(t);
            return NULL;
        }
    }
    return t;
}

/* What instance c (holding a slot) adds to the table's
 * summary fields: stack, slots, filters. */
static void
add_instance(ptk__table *t, const struct ptk_plugin_ctx *c)
{
    if (c->flags & PTK_FLAG_STACK) {
        t->need_stack = 1;
    }
    uint64_t bit = (uint64_t)1 << c->slot;
    if (c->events & ~PTK_MASK_REF) {
        t->slots |= bit;
    }
    if (c->filter != NULL) {
        t->filtered = 1;
        if (c->filter->max_depth > 0) {
            t->depth_filtered = 1;
        }
        t->filters[c->slot] = c->filter;
        if (c->filter->code_level) {
            t->code_filtered |= bit;
        }
    }
}

/* c's entries for kind k: a subscriber (or a depth-only entry for its
 * max_depth filter), or its on_ref. */
static void
add_entry(ptk__table *t, const struct ptk_session *s,
          struct ptk_plugin_ctx *c, int k)
{
    t->mask |= PTK_MASK(k);
    if (c->flags & PTK_FLAG_CLOCK) {
        t->clock_mask |= PTK_MASK(k);
    }
    if (PTK_MASK(k) & PTK_MASK_REF) {
        return;
    }
    ptk__sub *sub = &t->subs[k][t->nsub[k]++];
    sub->on_event = (c->events & PTK_MASK(k)) ? c->desc->on_event : NULL;
    sub->filter = c->filter;
    sub->filter_call = c->filter != NULL &&
                       (c->filter->max_depth > 0 ||
                        c->filter->list[PTK__F_THREADS].n > 0);
    sub->state = c->state;
    sub->ctx = c;
    sub->only_thread = s->threads == PTK_THREADS_ALL ? NULL : s->owner;
    sub->slot = (uint32_t)c->slot;
    sub->flags = c->flags;
}

static int
build(ptk__table **out, char **errmsg)
{
    ptk__table *t = table_alloc();
    if (t == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    int nref = 0;
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        if (s->threads == PTK_THREADS_ALL && s->running) {
            t->all_threads = 1;
        }
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            if (!wanted(s, c)) {
                continue;
            }
            if (c->slot < 0) {
                if ((c->slot = alloc_slot()) < 0) {
                    table_free(t);
                    return ptk__err(errmsg, PTK_ELIMIT,
                                    "more than %d plugin instances attached "
                                    "at once",
                                    PTK__MAX_SLOTS);
                }
                c->serial = ++slot_serial;
            }
            add_instance(t, c);
            if (c->flags & PTK_FLAG_PER_CONTEXT) {
                t->per_context = 1;
            }
            for (int k = 0; k < PTK_EV_COUNT; k++) {
                if (takes(c, k)) {
                    add_entry(t, s, c, k);
                }
            }
            if (c->events & PTK_MASK_REF) {
                t->refs[nref].on_ref = c->desc->on_ref;
                t->refs[nref].state = c->state;
                t->refs[nref].ctx = c;
                nref++;
            }
        }
    }
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        ptk__sub *only = t->nsub[k] == 1 ? &t->subs[k][0] : NULL;
        if (only != NULL && only->filter == NULL && only->only_thread == NULL &&
            only->on_event != NULL) {
            t->solo[k] = only;
        }
    }
    t->dead_possible = t->slots != 0 && (t->code_filtered & t->slots) == t->slots;
    /* what only the backend reads: its own plan of the table */
    if (ptk__hub_ops != NULL && ptk__hub_ops->plan != NULL) {
        ptk__hub_ops->plan(t);
    }
    *out = t;
    return PTK_OK;
}

ptk_backend ptk__hub_backend = PTK_BACKEND_AUTO;
const ptk__backend_ops *ptk__hub_ops;
int (*ptk__ref_sync_hook)(const ptk__table *t, char **errmsg);

int
ptk__any_running(void)
{
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        if (s->running) {
            return 1;
        }
    }
    return 0;
}

static int
sync_backend(const ptk__table *t, int install_here, char **errmsg)
{
    const ptk__backend_ops *ops = ptk__hub_ops;
    if (ops == NULL) {
        return PTK_OK; /* no session has chosen one yet */
    }
    int rc = ops->sync(t, install_here, errmsg);
    if (!ptk__any_running()) {
        /* the last session stopped: let go; the next one chooses again.
         * C calls still in progress (the stop() call itself, a join) will
         * never see their C_RETURN: drop them, with the bound methods the
         * monitoring backend keeps for them (they may hold the session). */
        for (size_t i = 0; i < ptk__thread_count(); i++) {
            ptk__thread *th = ptk__thread_at(i);
            if (th != NULL && th->cstack != NULL) {
                ptk__cstack_truncate(th, 0);
            }
            if (th != NULL) {
                /* its frames are borrowed: with no session they may go
                 * before the next one starts (and seeds the stack anew) */
                th->pub.depth = 0;
            }
        }
        ops->release();
        if (!ptk__any_running()) {
            /* (a session that started while the release ran Python code
             * keeps the backend it claimed) */
            ptk__hub_backend = PTK_BACKEND_AUTO;
            ptk__hub_ops = NULL;
        }
    }
    return rc;
}

/* A new context: every attached instance with PTK_FLAG_PER_CONTEXT gets
 * back the locations it disabled (its DISABLE records are forgotten, and
 * the running backend switches on in CPython what it had switched off
 * there), and nothing else: what other subscribers disabled, and code no
 * filter selects, stay off. */
static uint64_t
per_context_slots(void)
{
    uint64_t slots = 0;
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            if (c->attached && c->slot >= 0 && (c->flags & PTK_FLAG_PER_CONTEXT)) {
                slots |= (uint64_t)1 << c->slot;
            }
        }
    }
    return slots;
}

void
ptk__hub_context_changed(void)
{
    uint64_t slots = per_context_slots();
    if (slots != 0 && ptk__disable_records != 0) {
        ptk__code_rearm(slots, ptk__hub_ops ? ptk__hub_ops->rearm : NULL);
    }
}

int
ptk__hub_rebuild(int install_here, char **errmsg)
{
    ptk__table *t = NULL;
    int rc_build = build(&t, errmsg);
    if (rc_build == PTK_ENOMEM) {
        /* Keeping the old table would go on delivering to instances that
         * were meant to leave: nobody gets events from here on, and every
         * subscriber is detached with the reason. */
        ptk__hub_out_of_memory("building the dispatch table");
        t = &empty_table;
    }
    else if (rc_build < 0) {
        return rc_build;
    }
    ptk__table *old = ptk__current;
    /* Mark which instances are attached; free the slots of the others. */
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            c->attached = wanted(s, c);
        }
    }
    ptk__current = t;
    ptk__table_gen++; /* verdicts cached for the old table no longer hold */
    rebuild_pending = 0;
    ptk__dispatch_slow = ptk__disable_records != 0;
    ptk__code_reset_lines_off(); /* the set of LINE subscribers changed */
    int rc_hooks = sync_backend(t, install_here, errmsg);
    int rc_ref = ptk__ref_sync_hook == NULL
                     ? PTK_OK
                     : ptk__ref_sync_hook(t, rc_hooks < 0 ? NULL : errmsg);
    if (old != &empty_table) {
        old->retired_next = retired;
        retired = old;
    }
    ptk__context_slots = per_context_slots();
    ptk__exec_sync();
    if (ptk__dispatch_depth == 0) {
        free_retired();
    }
    ptk__dispatch_cleanup = retired != NULL || rebuild_pending;
    if (rc_build < 0) {
        return rc_build;
    }
    return rc_hooks < 0 ? rc_hooks : rc_ref;
}

void
ptk__hub_out_of_memory(const char *what)
{
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            if (!wanted(s, c)) {
                continue;
            }
            if (c->fail_msg == NULL) {
                c->fail_msg = ptk__asprintf(
                    "pytracekit ran out of memory (%s): its events from "
                    "here on would be incomplete",
                    what);
            }
            ptk__plugin_fail(c, PTK_ENOMEM, 0);
        }
    }
}

void
ptk__hub_forget(struct ptk_plugin_ctx *c)
{
    c->attached = 0;
    release_slot(c);
}

void
ptk__plugin_fail(struct ptk_plugin_ctx *c, int code, int py_error)
{
    if (c->failed) {
        return;
    }
    c->failed = 1;
    c->fail_code = code < 0 ? code : PTK_EPLUGIN;
    if (py_error && PyErr_Occurred()) {
        char *tb = ptk__format_exception();
        char *msg = ptk__asprintf("%s%s%s", c->fail_msg ? c->fail_msg : "",
                                  c->fail_msg ? "\n" : "", tb ? tb : "");
        free(tb);
        free(c->fail_msg);
        c->fail_msg = msg;
    }
    rebuild_pending = 1;
    ptk__dispatch_slow = 1;
    ptk__dispatch_cleanup = 1;
}

int
ptk__fail_notev(struct ptk_plugin_ctx *ctx, int code, const char *fmt,
                va_list ap)
{
    if (ctx == NULL) {
        return code;
    }
    /* a callback with no status to return (on_thread_end) fails this way */
    ctx->fail_asked = code < 0 ? code : PTK_EPLUGIN;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (msg != NULL) {
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        free(ctx->fail_msg);
        ctx->fail_msg = msg;
    }
    return code;
}

int
ptk__fail_note(struct ptk_plugin_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = ptk__fail_notev(ctx, code, fmt, ap);
    va_end(ap);
    return rc;
}

void
ptk__after_dispatch(void)
{
    if (ptk__dispatch_depth == 0) {
        if (rebuild_pending) {
            /* Detach failed instances now that no dispatch reads the table. */
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            for (struct ptk_session *s = ptk__active_sessions; s;
                 s = s->next_active) {
                for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
                    if (c->failed && c->slot >= 0) {
                        ptk__hub_forget(c);
                    }
                }
            }
            char *err = NULL;
            if (ptk__hub_rebuild(0, &err) < 0) {
                fprintf(stderr, "pytracekit: %s\n", err ? err : "rebuild failed");
            }
            free(err);
            PyErr_Restore(et, ev, tb);
        }
        if (retired != NULL) {
            free_retired();
        }
        ptk__dispatch_cleanup = rebuild_pending || retired != NULL;
    }
}

/* The plugins hear that a thread ended; descriptors older than ABI 1.2
 * (smaller struct_size) have no on_thread_end member to read. Runs with the
 * GIL held, from CPython clearing a thread state: nothing here may call
 * Python. */
void
ptk__hub_thread_ended(const ptk_thread *thread)
{
    size_t need = offsetof(ptk_plugin_desc, on_thread_end) +
                  sizeof(((ptk_plugin_desc *)0)->on_thread_end);
    for (struct ptk_session *s = ptk__active_sessions; s; s = s->next_active) {
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            const ptk_plugin_desc *d = c->desc;
            if (c->attached && d->struct_size >= need &&
                d->on_thread_end != NULL) {
                c->fail_asked = 0;
                d->on_thread_end(c->state, thread);
                if (c->fail_asked != 0) { /* it called host->fail */
                    ptk__plugin_fail(c, c->fail_asked, 0);
                }
            }
        }
    }
}

/* A subscriber answered something other than PTK_OK, or left an exception
 * set: record a DISABLE, or detach it after a failure. */
int
ptk__dispatch_result(ptk__sub *s, ptk__thread *th, ptk_event *ev, int rc)
{
    int exc = ptk__exc_pending(th->tstate);
    if (rc == PTK_DISABLE && !exc) {
        int off = ptk__code_disable(ev->code, s->slot, ev->kind, ev->line,
                                    ptk__event_lasti(ev));
        ptk__dispatch_slow = 1; /* from now on, DISABLE records are checked */
        return off;
    }
    if (rc == PTK_OK || rc >= 0) {
        /* success with an exception set, or a status that is not one */
        rc = exc ? PTK_EPYTHON : PTK_EINVAL;
    }
    ptk__plugin_fail(s->ctx, rc, 1);
    PyErr_Clear();
    return 0;
}

int
ptk__sub_failed(const ptk__sub *s)
{
    return s->ctx->failed;
}

int
ptk__dispatch(ptk__table *t, ptk__thread *th, ptk_event *ev)
{
    PyObject *et = NULL, *evv = NULL, *etb = NULL;
    int saved = ptk__exc_pending(th->tstate);
    if (saved) {
        PyErr_Fetch(&et, &evv, &etb);
    }
    int lines_off = ptk__deliver_loop(
        t, th, ev, 1, t->code_filtered ? ptk__code_rejected(t, ev->code) : 0);
    if (saved) {
        PyErr_Restore(et, evv, etb);
    }
    return lines_off;
}

void
ptk__hub_reset(void)
{
    for (struct ptk_session *s = ptk__active_sessions; s != NULL;) {
        struct ptk_session *next = s->next_active;
        s->running = 0;
        s->next_active = NULL;
        for (struct ptk_plugin_ctx *c = s->plugins; c; c = c->next) {
            c->attached = 0;
            c->slot = -1;
        }
        s = next;
    }
    ptk__active_sessions = NULL;
    table_free(ptk__current);
    ptk__current = &empty_table;
    free_retired();
    ptk__dispatch_depth = 0;
    ptk__dispatch_slow = 0;
    ptk__dispatch_cleanup = 0;
    rebuild_pending = 0;
    slots_used = 0;
    ptk__hub_backend = PTK_BACKEND_AUTO;
    ptk__hub_ops = NULL;
    ptk__exec_reset();
}
