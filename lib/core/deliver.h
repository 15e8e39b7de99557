/*
 * lib/core: the delivery ladder. How an event a backend made reaches the
 * subscribers of its kind in the published table (ptk__current).
 *
 * Three entry points, from the narrowest to the widest:
 *
 *   ptk__deliver_solo    the solo fast path: the caller hands the kind's
 *                        only subscriber (t->solo[kind], t->lean[kind] or
 *                        t->line_one), who takes every event of the kind.
 *                        No loop, no filter test, no code verdict.
 *   ptk__deliver_judged  the filtered path: the caller has looked up the
 *                        code object's filter verdicts already (the legacy
 *                        hooks do, to skip code nobody selects); a pending
 *                        exception is allowed.
 *   ptk__deliver         the general entry: picks the solo fast path, the
 *                        loop (which judges the code object if some filter
 *                        asks) or the general dispatch. The caller is never
 *                        entered with an exception pending (sys.monitoring
 *                        saves it around its events).
 *
 * Each steps down to ptk__dispatch (hub.c), the general dispatch, when
 * ptk__dispatch_slow says so (DISABLE records exist, or a failure waits)
 * or an exception is pending: it also skips failed instances and disabled
 * locations, and saves the exception around each subscriber.
 *
 * Words of the hot path:
 *   deliver     hand an event to subscribers on the hot path (inline);
 *   dispatch    the general path, out of line (ptk__dispatch);
 *   solo        a kind's only subscriber, unfiltered, on every thread
 *               (ptk__table::solo);
 *   lean        solo[kind] for CALL, RETURN and the C kinds when the
 *               monitoring callbacks keep no stacks (its plan);
 *   line_one    LINE's only subscriber with no filter beyond the code
 *               object's verdict (the legacy backend's LINE lane);
 *   judged      the code object's filter verdicts (ptk__code_rejected), a
 *               bit per subscriber slot that rejects it;
 *   lines_off   what every entry returns: 1 if LINE is now off for every
 *               subscriber in this code object (each disabled every line).
 *
 * Only lib/core and lib/backends include this header.
 */
#ifndef PTK_DELIVER_H
#define PTK_DELIVER_H

#include "core/core.h"

#pragma GCC visibility push(hidden)

/* ---- the general dispatch (hub.c) ---------------------------------------- */

/* Delivers ev to the subscribers of ev->kind; handles DISABLE and failures.
 * th->tstate must be the calling thread's. */
int ptk__dispatch(ptk__table *t, ptk__thread *th, ptk_event *ev);
/* A subscriber returned rc (or left an exception): records DISABLE, or
 * detaches it. Returns lines_off. */
int ptk__dispatch_result(ptk__sub *s, ptk__thread *th, ptk_event *ev, int rc);
/* The rebuild or the freeing of retired tables that waited for depth 0. */
void ptk__after_dispatch(void);
extern int ptk__dispatch_depth;   /* deliveries in progress (all threads; GIL) */
extern int ptk__dispatch_slow;    /* DISABLE records exist, or a failure is
                                     pending: every event takes ptk__dispatch */
extern int ptk__dispatch_cleanup; /* a rebuild or retired tables wait for
                                     depth 0 */

/* ---- the rung below the entry points ------------------------------------- */

/* The loop over a kind's subscribers. `general` is a constant at each
 * use: 0 for the hot path, 1 (ptk__dispatch) to also skip failed instances
 * and locations a subscriber disabled. Filters are applied on both: a
 * subscriber whose filter rejects the code object is skipped on the
 * verdict cache alone. rejected: ptk__code_rejected(t, ev->code) if
 * t->code_filtered, else 0. */
static inline __attribute__((always_inline)) int
ptk__deliver_loop(ptk__table *t, ptk__thread *th, ptk_event *ev,
                  const int general, uint64_t rejected)
{
    int kind = ev->kind;
    /* (0 when not asked for: a reused event keeps its last reading) */
    ev->time_ns = t->clock_mask & PTK_MASK(kind) ? ptk__clock_ns() : 0;
    ptk__sub *s = t->subs[kind];
    int n = t->nsub[kind], lines_off = 0;
    ptk__dispatch_depth++;
    for (int i = 0; i < n; i++) {
        if (s[i].only_thread != NULL && s[i].only_thread != &th->pub) {
            continue;
        }
        if (s[i].filter != NULL) {
            if (rejected & ((uint64_t)1 << s[i].slot)) {
                continue; /* its filter does not select this code */
            }
            if (s[i].filter_call && ptk__filter_skip(&s[i], th, ev, rejected)) {
                continue;
            }
            if (s[i].on_event == NULL) {
                continue; /* counts depth only (max_depth) */
            }
        }
        if (general && ptk__sub_failed(&s[i])) {
            continue;
        }
        if (general && (ptk__disable_records & (int)PTK_MASK(ev->kind)) &&
            ptk__code_is_disabled(ev->code, s[i].slot, ev->kind, ev->line,
                                  ptk__event_lasti(ev))) {
            ptk__disable_marks++;
            continue;
        }
        int rc = s[i].on_event(s[i].state, ev);
        if (rc != PTK_OK || ptk__exc_pending(th->tstate)) {
            lines_off |= ptk__dispatch_result(&s[i], th, ev, rc);
        }
    }
    /* (cleanup first: it is nearly always 0) */
    ptk__dispatch_depth--;
    if (ptk__dispatch_cleanup && ptk__dispatch_depth == 0) {
        ptk__after_dispatch();
    }
    return lines_off;
}

/* ---- the entry points ----------------------------------------------------- */

/* The solo fast path: s is the kind's only subscriber and takes every event
 * of it; the caller has checked !ptk__dispatch_slow. What the loop does for
 * it, without the loop, the filter tests and the code verdict nobody asks
 * for. Most runs have one plugin: each event saves some twenty
 * instructions. */
static inline __attribute__((always_inline)) int
ptk__deliver_solo(ptk__table *t, ptk__thread *th, ptk_event *ev, ptk__sub *s,
                  int kind)
{
    int lines_off = 0;
    ev->time_ns = t->clock_mask & PTK_MASK(kind) ? ptk__clock_ns() : 0;
    ptk__dispatch_depth++;
    int rc = s->on_event(s->state, ev);
    if (rc != PTK_OK || ptk__exc_pending(th->tstate)) {
        lines_off = ptk__dispatch_result(s, th, ev, rc);
    }
    ptk__dispatch_depth--;
    if (ptk__dispatch_cleanup && ptk__dispatch_depth == 0) {
        ptk__after_dispatch();
    }
    return lines_off;
}

/* The filtered path: the code object's verdicts already looked up
 * (rejected as ptk__deliver_loop takes it). */
static inline int
ptk__deliver_judged(ptk__table *t, ptk__thread *th, ptk_event *ev,
                    uint64_t rejected)
{
    if (ptk__exc_pending(th->tstate) || ptk__dispatch_slow) {
        return ptk__dispatch(t, th, ev);
    }
    return ptk__deliver_loop(t, th, ev, 0, rejected);
}

/* The general entry, for a backend never entered with an exception pending.
 * kind is ev->kind; a constant there picks the subscriber and the clock bit
 * without reading the event. */
static inline __attribute__((always_inline)) int
ptk__deliver(ptk__table *t, ptk__thread *th, ptk_event *ev, int kind)
{
    if (ptk__dispatch_slow) {
        return ptk__dispatch(t, th, ev);
    }
    ptk__sub *solo = t->solo[kind];
    if (solo != NULL) {
        return ptk__deliver_solo(t, th, ev, solo, kind);
    }
    return ptk__deliver_loop(
        t, th, ev, 0, t->code_filtered ? ptk__code_rejected(t, ev->code) : 0);
}

#pragma GCC visibility pop

#endif /* PTK_DELIVER_H */
