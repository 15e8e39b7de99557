/* clockprobe: a test plugin for the hub's clock (ev->time_ns and
 * host->clock_ns) against clock_gettime(CLOCK_MONOTONIC), read here.
 *
 * For each CALL and RETURN, on its thread:
 *   - ev->time_ns was read after the previous event's callback returned
 *     and before this one was entered: it must lie in [prev_exit, entry],
 *     both read from CLOCK_MONOTONIC here (being preempted in between only
 *     widens the interval);
 *   - host->clock_ns(), read between two CLOCK_MONOTONIC readings, must
 *     lie between them;
 *   - ev->time_ns never goes back.
 * What is recorded is by how much each bound was missed, at most (ns).
 * clockprobe.json: {"events", "threads", "early_ns", "late_ns",
 * "host_early_ns", "host_late_ns", "backwards", "first_ns", "last_ns"}. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <time.h>

#include <pytracekit/plugin.h>

#define MAX_THREADS 64

typedef struct {
    uint64_t prev_exit; /* CLOCK_MONOTONIC when the last callback returned */
    uint64_t last_ev;   /* the last ev->time_ns */
} per_thread;

typedef struct {
    const ptk_host *host;
    per_thread th[MAX_THREADS];
    uint64_t events, threads, backwards, first_ns, last_ns;
    uint64_t early, late, host_early, host_late; /* worst misses, ns */
} probe;

static uint64_t
mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void
worst(uint64_t *w, uint64_t lo, uint64_t hi)
{
    if (hi > lo && hi - lo > *w) {
        *w = hi - lo;
    }
}

static int
cp_init(const ptk_init_args *a, void **state, unsigned int *events)
{
    (void)events;
    probe *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return PTK_ENOMEM;
    }
    p->host = a->host;
    *state = p;
    return PTK_OK;
}

static int
cp_event(void *state, const ptk_event *ev)
{
    uint64_t entry = mono();
    probe *p = state;
    size_t i = ev->thread->index;
    if (i >= MAX_THREADS) {
        return PTK_OK;
    }
    per_thread *t = &p->th[i];
    uint64_t now = ev->time_ns;
    if (t->prev_exit == 0) {
        p->threads++;
    }
    else {
        worst(&p->early, now, t->prev_exit); /* read before prev_exit */
        if (now < t->last_ev) {
            p->backwards++;
        }
    }
    worst(&p->late, entry, now); /* read after the callback was entered */
    if (p->first_ns == 0) {
        p->first_ns = now;
    }
    p->last_ns = now;
    p->events++;
    t->last_ev = now;
    uint64_t lo = mono();
    uint64_t h = p->host->clock_ns();
    uint64_t hi = mono();
    worst(&p->host_early, h, lo);
    worst(&p->host_late, hi, h);
    t->prev_exit = mono();
    return PTK_OK;
}

static int
cp_report(void *state, const ptk_report_args *a)
{
    probe *p = state;
    PyObject *root = Py_BuildValue(
        "{sKsKsKsKsKsKsKsKsK}", "events", (unsigned long long)p->events,
        "threads", (unsigned long long)p->threads,
        "early_ns", (unsigned long long)p->early, "late_ns", (unsigned long long)p->late,
        "host_early_ns", (unsigned long long)p->host_early,
        "host_late_ns", (unsigned long long)p->host_late,
        "backwards", (unsigned long long)p->backwards,
        "first_ns", (unsigned long long)p->first_ns, "last_ns", (unsigned long long)p->last_ns);
    if (root == NULL) {
        return PTK_EPYTHON;
    }
    int rc = p->host->report_write_object(a->ctx, "clockprobe.json", root, PTK_FMT_JSON);
    Py_DECREF(root);
    return rc;
}

static void
cp_fini(void *state)
{
    free(state);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "clockprobe",
    .version = "1",
    .description = "test plugin: the hub's clock against CLOCK_MONOTONIC",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN),
    .flags = PTK_FLAG_CLOCK,
    .init = cp_init,
    .on_event = cp_event,
    .report = cp_report,
    .fini = cp_fini,
};

PTK_PLUGIN_DEFINE(desc)
