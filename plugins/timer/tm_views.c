/* timer reports: the figures of some threads by label; timer.pstats. */
#include "tm_report.h"

/* ---- views -------------------------------------------------------------- */

void
tm__view_clear(tm_view *v)
{
    free(v->fn);
    free(v->edges);
    ptk_kit_map_free(&v->edge_map);
    memset(v, 0, sizeof(*v));
}

static int
tm_view_add_thread(tm_view *v, const tm_labels *L, const tm_thread *th)
{
    for (size_t i = 0; i <= th->stats.mask && th->stats.slots; i++) {
        const tm_stat *s = th->stats.slots[i].value;
        if (s != NULL) {
            tm__acc_add(&v->fn[L->canon[s->fn->id]], &s->fig);
            v->total_ns += s->fig.it;
            v->calls += s->fig.calls;
            v->primitive += s->fig.calls - s->fig.reccalls;
        }
    }
    for (size_t i = 0; i <= th->edges.mask && th->edges.slots; i++) {
        const tm_edge *e = th->edges.slots[i].value;
        if (e == NULL) {
            continue;
        }
        uint32_t a = L->canon[e->caller->fn->id], b = L->canon[e->callee->fn->id];
        const void *ka = (const void *)(uintptr_t)(a + 1);
        const void *kb = (const void *)(uintptr_t)(b + 1);
        uintptr_t at = (uintptr_t)ptk_kit_map_get(&v->edge_map, ka, kb);
        if (at == 0) {
            if (PTK_KIT_RESERVE(v->edges, v->edges_cap, v->nedges + 1, 256) != 0) {
                return -1;
            }
            memset(&v->edges[v->nedges], 0, sizeof(tm_vedge));
            v->edges[v->nedges].caller = a;
            v->edges[v->nedges].callee = b;
            v->nedges++;
            at = v->nedges;
            if (ptk_kit_map_put(&v->edge_map, ka, kb, (void *)at) != 0) {
                return -1;
            }
        }
        tm__acc_add(&v->edges[at - 1].acc, &e->fig);
    }
    return 0;
}

/* The view of one thread (@p only >= 0) or of all of them. */
int
tm__view_build(tm_state *st, const tm_labels *L, long only, tm_view *v)
{
    memset(v, 0, sizeof(*v));
    v->fn = calloc(L->n + 1, sizeof(*v->fn));
    if (v->fn == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        const tm_thread *th = st->threads[i];
        if (th == NULL || (only >= 0 && (size_t)only != i)) {
            continue;
        }
        if (tm_view_add_thread(v, L, th) != 0) {
            PyErr_NoMemory();
            tm__view_clear(v);
            return -1;
        }
    }
    if (only < 0 && tm_view_add_thread(v, L, &st->gone) != 0) {
        PyErr_NoMemory();
        tm__view_clear(v);
        return -1;
    }
    return 0;
}

/* ---- timer.pstats ------------------------------------------------------- */

PyObject *
tm__pstats_dict(const tm_labels *L, const tm_view *v)
{
    PyObject *stats = PyDict_New();
    PyObject *callers = PyList_New((Py_ssize_t)L->n);
    if (stats == NULL || callers == NULL) {
        goto fail;
    }
    for (size_t i = 0; i < L->n; i++) {
        PyObject *d = PyDict_New();
        if (d == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(callers, (Py_ssize_t)i, d);
    }
    for (size_t i = 0; i < v->nedges; i++) {
        const tm_vedge *e = &v->edges[i];
        PyObject *t = Py_BuildValue(
            "(KKdd)", (unsigned long long)e->acc.calls,
            (unsigned long long)(e->acc.calls - e->acc.reccalls),
            (double)e->acc.it * 1e-9, (double)e->acc.tt * 1e-9);
        if (t == NULL ||
            PyDict_SetItem(PyList_GET_ITEM(callers, e->callee),
                           PyList_GET_ITEM(L->keys, e->caller), t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    for (size_t i = 0; i < L->n; i++) {
        const tm_acc *a = &v->fn[i];
        if (a->calls == 0) {
            continue;
        }
        PyObject *t = Py_BuildValue(
            "(KKddO)", (unsigned long long)(a->calls - a->reccalls),
            (unsigned long long)a->calls, (double)a->it * 1e-9,
            (double)a->tt * 1e-9, PyList_GET_ITEM(callers, i));
        if (t == NULL ||
            PyDict_SetItem(stats, PyList_GET_ITEM(L->keys, i), t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    Py_DECREF(callers);
    return stats;
fail:
    Py_XDECREF(stats);
    Py_XDECREF(callers);
    return NULL;
}

/* ---- per_context: timer.context-N.pstats ------------------------------- */

typedef struct tm_centry {
    uint32_t label;
    tm_acc acc;
    PyObject *callers; /* {caller key: (cc, nc, tt, ct)} */
} tm_centry;

static const tm_centry *tm_ctop_of;

static int
tm_ctop_cmp(const void *pa, const void *pb)
{
    const tm_centry *a = &tm_ctop_of[*(const size_t *)pa];
    const tm_centry *b = &tm_ctop_of[*(const size_t *)pb];
    if (a->acc.it != b->acc.it) {
        return a->acc.it > b->acc.it ? -1 : 1;
    }
    return a->label < b->label ? -1 : 1;
}

/* A context's figures, merged by label: functions into @p v (@p *n of
 * them), caller-callee pairs into @p ed (@p *ne); @p at maps (label + 1,
 * NULL) to index + 1 in v and (caller label + 1, callee label + 1) to index
 * + 1 in ed. -1 when out of memory. */
static int
cset_collect(const tm_labels *L, const tm_cset *cs, tm_centry *v, tm_vedge *ed, size_t *n,
             size_t *ne, tm_map *at)
{
    for (size_t i = 0; cs->figs.slots && i <= cs->figs.mask; i++) {
        const tm_fig *f = cs->figs.slots[i].value;
        const tm_func *a = cs->figs.slots[i].a, *b = cs->figs.slots[i].b;
        if (f == NULL) {
            continue;
        }
        uint32_t la = L->canon[a->id], lb = b != NULL ? L->canon[b->id] : 0;
        const void *ka = (const void *)(uintptr_t)(la + 1);
        const void *kb = b != NULL ? (const void *)(uintptr_t)(lb + 1) : NULL;
        uintptr_t j = (uintptr_t)ptk_kit_map_get(at, ka, kb);
        if (j == 0) {
            j = b != NULL ? ++*ne : ++*n;
            if (b != NULL) {
                ed[j - 1].caller = la;
                ed[j - 1].callee = lb;
            }
            else {
                v[j - 1].label = la;
            }
            if (ptk_kit_map_put(at, ka, kb, (void *)j) != 0) {
                return -1;
            }
        }
        tm__acc_add(b != NULL ? &ed[j - 1].acc : &v[j - 1].acc, f);
    }
    return 0;
}

/* Each callee's callers dict, as pstats has it. -1 with an exception set. */
static int
cset_callers(const tm_labels *L, tm_centry *v, const tm_vedge *ed, size_t ne, tm_map *at)
{
    for (size_t i = 0; i < ne; i++) {
        uintptr_t j = (uintptr_t)ptk_kit_map_get(
            at, (const void *)(uintptr_t)(ed[i].callee + 1), NULL);
        tm_centry *e = j ? &v[j - 1] : NULL; /* an edge's callee has figures */
        const tm_acc *a = &ed[i].acc;
        if (e == NULL || (e->callers == NULL && (e->callers = PyDict_New()) == NULL)) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "timer: an edge's callee has no figures");
            }
            return -1;
        }
        PyObject *t = Py_BuildValue("(KKdd)", (unsigned long long)a->calls,
                                    (unsigned long long)(a->calls - a->reccalls),
                                    (double)a->it * 1e-9, (double)a->tt * 1e-9);
        if (t == NULL ||
            PyDict_SetItem(e->callers, PyList_GET_ITEM(L->keys, ed[i].caller), t) < 0) {
            Py_XDECREF(t);
            return -1;
        }
        Py_DECREF(t);
    }
    return 0;
}

/* The @p top functions of @p v by own time into @p info. -1 when out of
 * memory. */
static int
cset_top(tm_centry *v, size_t n, size_t top, tm_cinfo *info)
{
    top = top < n ? top : n;
    if (top == 0) {
        return 0;
    }
    size_t *order = malloc(n * sizeof(*order));
    info->top = malloc(top * sizeof(*info->top));
    info->top_acc = malloc(top * sizeof(*info->top_acc));
    if (order == NULL || info->top == NULL || info->top_acc == NULL) {
        free(order);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = i;
    }
    tm_ctop_of = v;
    qsort(order, n, sizeof(*order), tm_ctop_cmp);
    for (size_t i = 0; i < top; i++) {
        info->top[i] = v[order[i]].label;
        info->top_acc[i] = v[order[i]].acc;
    }
    info->ntop = top;
    free(order);
    return 0;
}

/* The pstats dict of one context's figures, by label, as tm__pstats_dict
 * makes the run's (sparse: a context has few of the run's functions); and
 * its totals and @p top functions by own time in @p info. NULL with an
 * exception set. */
PyObject *
tm__cset_pstats(const tm_labels *L, const tm_cset *cs, size_t top, tm_cinfo *info)
{
    memset(info, 0, sizeof(*info));
    info->name = cs->name;
    tm_centry *v = calloc(cs->nfigs + 1, sizeof(*v));
    tm_vedge *ed = calloc(cs->nfigs + 1, sizeof(*ed));
    size_t n = 0, ne = 0;
    tm_map at = {0};
    PyObject *stats = PyDict_New();
    if (v == NULL || ed == NULL || stats == NULL || cset_collect(L, cs, v, ed, &n, &ne, &at) != 0) {
        goto nomem;
    }
    if (cset_callers(L, v, ed, ne, &at) != 0) {
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        tm_centry *e = &v[i];
        info->total_ns += e->acc.it;
        info->calls += e->acc.calls;
        info->primitive += e->acc.calls - e->acc.reccalls;
        if (e->callers == NULL && (e->callers = PyDict_New()) == NULL) {
            goto fail;
        }
        PyObject *t = Py_BuildValue("(KKddO)",
                                    (unsigned long long)(e->acc.calls - e->acc.reccalls),
                                    (unsigned long long)e->acc.calls,
                                    (double)e->acc.it * 1e-9, (double)e->acc.tt * 1e-9,
                                    e->callers);
        if (t == NULL || PyDict_SetItem(stats, PyList_GET_ITEM(L->keys, e->label), t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    if (cset_top(v, n, top, info) != 0) {
        goto nomem;
    }
    goto done;
nomem:
    PyErr_NoMemory();
fail:
    Py_CLEAR(stats);
    free(info->top);
    free(info->top_acc);
    info->top = NULL;
    info->top_acc = NULL;
    info->ntop = 0;
done:
    for (size_t i = 0; v != NULL && i < n; i++) {
        Py_XDECREF(v[i].callers);
    }
    free(v);
    free(ed);
    ptk_kit_map_free(&at);
    return stats;
}
