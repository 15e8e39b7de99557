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
