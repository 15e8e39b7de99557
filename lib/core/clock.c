/* The hub's clock (ptk__clock_ns, ptk_event::time_ns, ptk_host::clock_ns):
 * CLOCK_MONOTONIC in nanoseconds, read through the processor's time-stamp
 * counter where that is cheaper and safe.
 *
 * Why: an event that asks for time costs one clock reading, and a profile
 * of a real program has millions of them (7.2 M on test_email). Through
 * the vDSO, clock_gettime(CLOCK_MONOTONIC) costs 25 ns on the machines
 * this is measured on (kvm-clock); RDTSC costs 11 ns. The difference was
 * a third of the timer's whole overhead on test_email (bench/README.md).
 *
 * How: with an invariant TSC (CPUID 8000_0007h EDX bit 8: constant rate,
 * not stopped in idle states), the clock is a line through an anchor,
 *
 *     ns = base_ns + ((tsc - base_tsc) * mult >> 32)      (tsc in [base_tsc, base_tsc + span))
 *
 * and any reading outside [base_tsc, base_tsc + span) takes the slow path:
 *   - uncalibrated (the first CAL_NS after the first reading): the reading
 *     is clock_gettime's; once CAL_NS has passed, the rate is measured
 *     against CLOCK_MONOTONIC and the line starts;
 *   - past the window (WINDOW_NS, about a second): the rate is measured
 *     again over the whole run, and the next line starts where the last
 *     one ends (continuous, never backwards) and is aimed at
 *     CLOCK_MONOTONIC at the end of its window, so an error is slewed out
 *     within one window; an error over STEP_NS forward is stepped.
 * Each (tsc, CLOCK_MONOTONIC) pair is taken between two TSC readings, the
 * narrowest of a few tries; a pair wider than PAIR_MAX_TICKS is not used.
 *
 * PYTRACEKIT_CLOCK=monotonic always reads clock_gettime; =tsc skips the
 * cost check below (not the CPUID check). The TSC is also not used when a
 * reading of it is not cheaper than clock_gettime (a hypervisor that traps
 * RDTSC), nor where the build has no RDTSC (PTK_HAVE_RDTSC).
 *
 * Threads: the line is read under a sequence lock (the readers never
 * write); one thread at a time recalibrates (the others read
 * clock_gettime meanwhile). */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

#if PTK_HAVE_RDTSC
#include <cpuid.h>
#endif

ptk__tsc_line ptk__tsc = {0};

/* clock_gettime(CLOCK_MONOTONIC) in ns. */
uint64_t
ptk__clock_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

#if PTK_HAVE_RDTSC

#define CAL_NS UINT64_C(10000000)     /* first calibration after 10 ms */
#define WINDOW_NS UINT64_C(1000000000) /* one line per second */
#define STEP_NS UINT64_C(1000000)      /* an error over 1 ms forward: step */
#define PAIR_TRIES 4

enum { ST_UNDECIDED, ST_OFF, ST_CALIBRATING, ST_ON };

static _Atomic int state = ST_UNDECIDED;
static atomic_flag writer = ATOMIC_FLAG_INIT;
static uint64_t anchor_tsc, anchor_ns; /* the first pair: the long baseline */
static uint64_t pair_max_ticks;        /* widest usable pair */

/* A (tsc, CLOCK_MONOTONIC) pair: the narrowest of PAIR_TRIES; 0 if every
 * try was wider than max_ticks (preempted, say). */
static int
take_pair(uint64_t max_ticks, uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < PAIR_TRIES; i++) {
        uint64_t t1 = ptk__rdtsc();
        uint64_t m = ptk__clock_mono();
        uint64_t t2 = ptk__rdtsc();
        if (t2 >= t1 && t2 - t1 < best) {
            best = t2 - t1;
            *tsc = t1 + (t2 - t1) / 2;
            *ns = m;
        }
    }
    return best <= max_ticks;
}

static int
invariant_tsc(void)
{
    unsigned int a, b, c, d;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) {
        return 0;
    }
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1u;
}

/* Is a TSC reading cheaper than a clock_gettime? (Over 64 of each.) */
static int
tsc_cheaper(void)
{
    uint64_t best_tsc = UINT64_MAX, best_mono = UINT64_MAX;
    volatile uint64_t sink = 0;
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = ptk__clock_mono();
        for (int i = 0; i < 64; i++) {
            sink += ptk__rdtsc();
        }
        uint64_t t1 = ptk__clock_mono();
        for (int i = 0; i < 64; i++) {
            sink += ptk__clock_mono();
        }
        uint64_t t2 = ptk__clock_mono();
        if (t1 - t0 < best_tsc) {
            best_tsc = t1 - t0;
        }
        if (t2 - t1 < best_mono) {
            best_mono = t2 - t1;
        }
    }
    (void)sink;
    return best_tsc < best_mono;
}

/* Publishes a line (the writer holds `writer`). */
static void
publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint64_t span)
{
    unsigned int seq = atomic_load_explicit(&ptk__tsc.seq, memory_order_relaxed);
    atomic_store_explicit(&ptk__tsc.seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&ptk__tsc.base_tsc, base_tsc, memory_order_relaxed);
    atomic_store_explicit(&ptk__tsc.base_ns, base_ns, memory_order_relaxed);
    atomic_store_explicit(&ptk__tsc.mult, mult, memory_order_relaxed);
    atomic_store_explicit(&ptk__tsc.span, span, memory_order_relaxed);
    atomic_store_explicit(&ptk__tsc.seq, seq + 2, memory_order_release);
}

/* The first decision: ST_OFF or ST_CALIBRATING (with the anchor). */
static int
decide(void)
{
    const char *env = getenv("PYTRACEKIT_CLOCK");
    if (env != NULL && strcmp(env, "monotonic") == 0) {
        return ST_OFF;
    }
    if (!invariant_tsc()) {
        return ST_OFF;
    }
    if (!(env != NULL && strcmp(env, "tsc") == 0) && !tsc_cheaper()) {
        return ST_OFF;
    }
    /* a pair may be as wide as 20 clock_gettime readings */
    uint64_t t0 = ptk__rdtsc();
    for (int i = 0; i < 4; i++) {
        (void)ptk__clock_mono();
    }
    uint64_t t1 = ptk__rdtsc();
    pair_max_ticks = t1 > t0 ? (t1 - t0) * 5 : 1;
    if (!take_pair(pair_max_ticks, &anchor_tsc, &anchor_ns)) {
        return ST_OFF;
    }
    return ST_CALIBRATING;
}

/* A new line from a pair (tsc, ns) taken now: the rate over the run since
 * the anchor; the start where the current line is at tsc (its start, if
 * tsc is before it), or ns if there is no line or it is over STEP_NS
 * behind; aimed at ns + WINDOW_NS. */
static void
recalibrate(uint64_t tsc, uint64_t ns, int first)
{
    if (tsc <= anchor_tsc || ns <= anchor_ns) {
        return;
    }
    uint64_t dt = tsc - anchor_tsc, dn = ns - anchor_ns;
    /* measured ns per tick << 32; dn < 2^32 ns for 4 s of run, else the
     * rate is taken over a shifted span (precision is plenty either way) */
    int sh = 0;
    while ((dn >> sh) >= (UINT64_C(1) << 31)) {
        sh++;
    }
    uint64_t rate = ((dn >> sh) << 32) / (dt >> sh ? dt >> sh : 1);
    if (rate == 0) {
        return;
    }
    uint64_t window_ticks = (WINDOW_NS << 32) / rate;
    uint64_t start = ns;
    if (!first) {
        uint64_t b_tsc = atomic_load_explicit(&ptk__tsc.base_tsc, memory_order_relaxed);
        uint64_t b_ns = atomic_load_explicit(&ptk__tsc.base_ns, memory_order_relaxed);
        uint64_t m = atomic_load_explicit(&ptk__tsc.mult, memory_order_relaxed);
        uint64_t est = tsc >= b_tsc
            ? b_ns + (uint64_t)(((unsigned __int128)(tsc - b_tsc) * m) >> 32)
            : b_ns;
        if (!(ns > est && ns - est > STEP_NS)) {
            start = est; /* continuous (never backwards); the error is slewed out */
        }
    }
    uint64_t target = ns + WINDOW_NS;
    uint64_t mult;
    if (target > start) {
        mult = (uint64_t)((((unsigned __int128)(target - start)) << 32) / window_ticks);
    }
    else {
        mult = 0;
    }
    /* no slower than half the measured rate, no faster than twice */
    if (mult < rate / 2) {
        mult = rate / 2;
    }
    if (mult > rate * 2) {
        mult = rate * 2;
    }
    publish(tsc, start, mult, window_ticks);
}

uint64_t
ptk__clock_slow(void)
{
    int st = atomic_load_explicit(&state, memory_order_acquire);
    if (st == ST_OFF || atomic_flag_test_and_set_explicit(&writer, memory_order_acquire)) {
        return ptk__clock_mono(); /* off, or another thread is at it */
    }
    st = atomic_load_explicit(&state, memory_order_relaxed);
    if (st == ST_UNDECIDED) {
        st = decide();
        atomic_store_explicit(&state, st, memory_order_release);
    }
    if (st == ST_CALIBRATING) {
        uint64_t tsc = 0, ns = ptk__clock_mono();
        if (ns - anchor_ns >= CAL_NS && take_pair(pair_max_ticks, &tsc, &ns)) {
            recalibrate(tsc, ns, 1);
            atomic_store_explicit(&state, ST_ON, memory_order_release);
        }
        atomic_flag_clear_explicit(&writer, memory_order_release);
        return ns;
    }
    uint64_t tsc = 0, ns = 0;
    if (st == ST_OFF || !take_pair(pair_max_ticks, &tsc, &ns)) {
        atomic_flag_clear_explicit(&writer, memory_order_release);
        return ptk__clock_mono();
    }
    uint64_t b_tsc = atomic_load_explicit(&ptk__tsc.base_tsc, memory_order_relaxed);
    uint64_t span = atomic_load_explicit(&ptk__tsc.span, memory_order_relaxed);
    if (tsc - b_tsc >= span) {
        recalibrate(tsc, ns, 0);
    }
    atomic_flag_clear_explicit(&writer, memory_order_release);
    uint64_t v;
    if (ptk__clock_line(ptk__rdtsc(), &v)) {
        return v;
    }
    return ptk__clock_mono();
}

void
ptk__clock_after_fork(void)
{
    /* a thread of the parent may have been recalibrating */
    atomic_flag_clear_explicit(&writer, memory_order_release);
}

const char *
ptk__clock_source(void)
{
    (void)ptk__clock_ns(); /* decides, if nothing has yet */
    return atomic_load_explicit(&state, memory_order_acquire) == ST_OFF ? "monotonic" : "tsc";
}

#else /* !PTK_HAVE_RDTSC */

void
ptk__clock_after_fork(void)
{
}

uint64_t
ptk__clock_slow(void)
{
    return ptk__clock_mono();
}

const char *
ptk__clock_source(void)
{
    return "monotonic";
}

#endif
