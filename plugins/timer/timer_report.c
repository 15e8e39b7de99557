/* timer reports: the summary, and all of it (tm__report). See tm_report.h. */
#include "tm_report.h"

/* ---- summary ------------------------------------------------------------ */

static const tm_view *tm_sort_view;
static int tm_sort_key;

static int
tm_sort_cmp(const void *pa, const void *pb)
{
    const tm_acc *a = &tm_sort_view->fn[*(const uint32_t *)pa];
    const tm_acc *b = &tm_sort_view->fn[*(const uint32_t *)pb];
    uint64_t x, y;
    switch (tm_sort_key) {
    case TM_SORT_CUMTIME:
        x = a->tt;
        y = b->tt;
        break;
    case TM_SORT_CALLS:
        x = a->calls;
        y = b->calls;
        break;
    default:
        x = a->it;
        y = b->it;
        break;
    }
    if (x != y) {
        return x > y ? -1 : 1;
    }
    return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

static void
tm_summary(tm_state *st, const tm_labels *L, const tm_view *v,
           const ptk_report_args *args, size_t nthreads)
{
    FILE *out = args->summary;
    if (out == NULL) {
        return;
    }
    static const char *const sorts[] = {"tottime", "cumtime", "calls"};
    fprintf(out,
            "timer: %s clock, %llu calls (%llu primitive) to %zu functions, "
            "%.6f s in profiled code, %zu thread%s\n",
            st->cpu_clock ? "cpu" : "wall", (unsigned long long)v->calls,
            (unsigned long long)v->primitive, L->n, (double)v->total_ns * 1e-9,
            nthreads, nthreads == 1 ? "" : "s");
    uint64_t medges, mns;
    tm__merged_counts(st, &medges, &mns);
    if (st->contexts && medges > 0) {
        fprintf(out,
                "timer: %zu calling contexts recorded (the most kept at run "
                "time); %.6f s in newer contexts is shown merged by caller\n",
                st->ncontexts, (double)mns * 1e-9);
    }
    if (st->contexts && st->flame_merged > 0) {
        fprintf(out,
                "timer: the flame graph keeps the %zu heaviest calling "
                "contexts (max_contexts=%lld); %.6f s (%.1f%%) in %zu lighter "
                "ones is shown under [merged contexts]\n",
                st->flame_kept, (long long)st->max_contexts,
                (double)st->flame_merged_ns * 1e-9,
                v->total_ns ? 100.0 * (double)st->flame_merged_ns /
                                  (double)v->total_ns
                            : 0.0,
                st->flame_merged);
    }
    if (st->top == 0 || L->n == 0) {
        return;
    }
    uint32_t *order = malloc(L->n * sizeof(*order));
    if (order == NULL) {
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < L->n; i++) {
        if (v->fn[i].calls > 0) {
            order[n++] = (uint32_t)i;
        }
    }
    tm_sort_view = v;
    tm_sort_key = st->sort;
    qsort(order, n, sizeof(*order), tm_sort_cmp);
    fprintf(out, "timer: top %lld by %s\n", (long long)st->top, sorts[st->sort]);
    fprintf(out, "%15s %10s %10s  %s\n", "ncalls", "tottime", "cumtime",
            "function");
    for (size_t i = 0; i < n && (int64_t)i < st->top; i++) {
        const tm_acc *a = &v->fn[order[i]];
        char calls[48];
        if (a->reccalls) {
            snprintf(calls, sizeof(calls), "%llu/%llu",
                     (unsigned long long)a->calls,
                     (unsigned long long)(a->calls - a->reccalls));
        }
        else {
            snprintf(calls, sizeof(calls), "%llu", (unsigned long long)a->calls);
        }
        fprintf(out, "%15s %10.6f %10.6f  %s\n", calls, (double)a->it * 1e-9,
                (double)a->tt * 1e-9, L->cnames[order[i]]);
    }
    free(order);
}

/* ---- all of it ---------------------------------------------------------- */

/* The depth of the deepest stack: that of the calling-context tree. */
size_t
tm__tree_depth(const tm_thread *th)
{
    size_t best = 0, d = 1;
    const tm_node *n = th->root.first_child;
    while (n != NULL) {
        if (d > best) {
            best = d;
        }
        if (n->first_child != NULL) {
            n = n->first_child;
            d++;
            continue;
        }
        while (n != &th->root && n->next_sibling == NULL) {
            n = n->parent;
            d--;
        }
        n = n == &th->root ? NULL : n->next_sibling;
    }
    return best;
}

static int
tm_write_view(tm_state *st, const tm_labels *L, const tm_view *v,
              const char *prefix)
{
    char name[96];
    PyObject *stats = tm__pstats_dict(L, v);
    if (stats == NULL) {
        return PTK_EPYTHON;
    }
    snprintf(name, sizeof(name), "%s.pstats", prefix);
    int rc = st->host->report_write_object(st->ctx, name, stats, PTK_FMT_MARSHAL);
    Py_DECREF(stats);
    return rc;
}

/* What the threads' records add up to in timer.json and the summary. */
typedef struct {
    size_t nthreads;
    uint64_t unmatched, resynced, max_depth;
} tm_totals;

/* Adds up the threads' figures into @p t and, with per_thread, writes each
 * live thread's pstats and flame graph. */
static int
tm_report_threads(tm_state *st, const tm_labels *L, tm_totals *t)
{
    for (size_t i = 0; i < st->nthreads; i++) {
        tm_thread *th = st->threads[i];
        const tm_done *dn = &st->done[i];
        if (dn->ended) {
            t->nthreads += th == NULL;
            t->unmatched += dn->unmatched;
            t->resynced += dn->resynced;
            t->max_depth = dn->max_depth > t->max_depth ? dn->max_depth : t->max_depth;
        }
        if (th == NULL) {
            continue;
        }
        th->max_depth = tm__tree_depth(th);
        t->nthreads++;
        t->unmatched += th->unmatched;
        t->resynced += th->resynced;
        if (th->max_depth > t->max_depth) {
            t->max_depth = th->max_depth;
        }
        if (st->per_thread) {
            tm_view v;
            char prefix[64];
            if (tm__view_build(st, L, (long)i, &v) != 0) {
                return PTK_EPYTHON;
            }
            tm__thread_prefix(st, prefix, sizeof(prefix), th);
            int rc = tm_write_view(st, L, &v, prefix);
            if (rc == PTK_OK) {
                rc = tm__write_flame(st, L, (long)i, prefix, NULL);
            }
            tm__view_clear(&v);
            if (rc != PTK_OK) {
                return rc;
            }
        }
    }
    return PTK_OK;
}

/* per_context: timer.context-N.pstats, N the context's index in the order
 * first seen, and into @p *cinfo (st->ncsets of them) what timer.json says
 * of each. */
static int
tm_report_contexts(tm_state *st, const tm_labels *L, tm_cinfo **cinfo)
{
    if (st->ncsets == 0) {
        return PTK_OK;
    }
    if ((*cinfo = calloc(st->ncsets, sizeof(**cinfo))) == NULL) {
        PyErr_NoMemory();
        return PTK_EPYTHON;
    }
    for (size_t i = 0; i < st->ncsets; i++) {
        tm_cinfo *c = &(*cinfo)[i];
        PyObject *stats = tm__cset_pstats(L, st->csets[i], (size_t)st->top, c);
        if (stats == NULL) {
            return PTK_EPYTHON;
        }
        snprintf(c->file, sizeof(c->file), "timer.context-%zu.pstats", i);
        int rc = st->host->report_write_object(st->ctx, c->file, stats, PTK_FMT_MARSHAL);
        Py_DECREF(stats);
        if (rc != PTK_OK) {
            return rc;
        }
    }
    return PTK_OK;
}

int
tm__report(tm_state *st, const ptk_report_args *args)
{
    int rc = PTK_EPYTHON;
    tm_labels L = {0};
    tm_view all = {0};
    tm_rtree rt = {0};
    tm_cinfo *cinfo = NULL;
    tm_totals t = {0};

    if (tm__labels_build(st, &L) != 0 || tm__view_build(st, &L, -1, &all) != 0) {
        goto done;
    }
    rc = tm_report_threads(st, &L, &t);
    if (rc == PTK_OK) {
        rc = tm_write_view(st, &L, &all, "timer");
    }
    if (rc == PTK_OK) {
        rc = tm__write_flame(st, &L, -1, "timer", &rt);
    }
    if (rc == PTK_OK) {
        rc = tm_report_contexts(st, &L, &cinfo);
    }
    if (rc == PTK_OK) {
        rc = tm__write_json(st, &L, &all, args, t.max_depth, t.unmatched, t.resynced,
                           rt.n > 0 ? rt.n - 1 : 0, cinfo, st->ncsets);
    }
    if (rc == PTK_OK) {
        tm_summary(st, &L, &all, args, t.nthreads);
    }
done:
    if (rc == PTK_EPYTHON && PyErr_Occurred()) {
        rc = st->host->fail(st->ctx, PTK_EPYTHON, "cannot build the report");
    }
    for (size_t i = 0; cinfo != NULL && i < st->ncsets; i++) {
        free(cinfo[i].top);
        free(cinfo[i].top_acc);
    }
    free(cinfo);
    tm__view_clear(&all);
    tm__rtree_clear(&rt);
    tm__labels_clear(&L);
    return rc;
}
