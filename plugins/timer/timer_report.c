/*
 * timer: the reports. timer.pstats (marshal, what pstats.Stats loads),
 * timer.json, timer.folded (collapsed stacks) and the stderr summary; with
 * per_thread=true, the same files once per thread as timer.thread-N.*.
 *
 * Functions are merged by their pstats label (file, line, name): two code
 * objects with the same label are one pstats entry.
 */
#include "timer.h"

#include <stdlib.h>
#include <string.h>

/* Summed figures of one label or one edge. */
typedef struct tm_acc {
    uint64_t calls, reccalls, tt, it;
} tm_acc;

typedef struct tm_vedge {
    uint32_t caller, callee; /* label ids */
    tm_acc acc;
} tm_vedge;

/* The figures of some threads, by label. */
typedef struct tm_view {
    tm_acc *fn;        /* [nlabels] */
    tm_vedge *edges;
    size_t nedges, edges_cap;
    tm_map edge_map;   /* (caller+1, callee+1) -> index+1 into edges */
    uint64_t total_ns; /* sum of own times */
    uint64_t calls, primitive;
} tm_view;

/* What every view shares: labels and names, by label id. */
typedef struct tm_labels {
    size_t n;
    uint32_t *canon;     /* [nfuncs]: label id of each function */
    PyObject *keys;      /* list of pstats keys (file, line, name) */
    PyObject *names;     /* list of display names (str) */
    const char **cnames; /* UTF-8 of names, folded-safe */
    PyObject *cname_objs; /* list keeping the bytes of cnames alive */
} tm_labels;

static void
tm_acc_add(tm_acc *a, const tm_fig *f)
{
    a->calls += f->calls;
    a->reccalls += f->reccalls;
    a->tt += f->tt;
    a->it += f->it;
}

static PyObject *
tm_func_key(const tm_func *fn)
{
    if (fn->is_c) {
        return Py_BuildValue("(siO)", "~", 0, fn->label);
    }
    PyCodeObject *co = (PyCodeObject *)fn->code;
    return Py_BuildValue("(OiO)", co->co_filename, co->co_firstlineno,
                         co->co_name);
}

/* "qualname (file:line)" for Python code, the cProfile name without its
 * angle brackets for C functions. */
static PyObject *
tm_func_name(const tm_func *fn)
{
    if (fn->is_c) {
        Py_ssize_t n = PyUnicode_GetLength(fn->label);
        if (n >= 2 && PyUnicode_READ_CHAR(fn->label, 0) == '<' &&
            PyUnicode_READ_CHAR(fn->label, n - 1) == '>') {
            return PyUnicode_Substring(fn->label, 1, n - 1);
        }
        return Py_NewRef(fn->label);
    }
    PyCodeObject *co = (PyCodeObject *)fn->code;
    return PyUnicode_FromFormat("%U (%U:%d)", co->co_qualname, co->co_filename,
                                co->co_firstlineno);
}

static void
tm_labels_clear(tm_labels *L)
{
    free(L->canon);
    free(L->cnames);
    Py_CLEAR(L->keys);
    Py_CLEAR(L->names);
    Py_CLEAR(L->cname_objs);
    memset(L, 0, sizeof(*L));
}

static int
tm_labels_build(tm_state *st, tm_labels *L)
{
    int rc = -1;
    PyObject *index = PyDict_New();
    L->canon = calloc(st->nfuncs + 1, sizeof(*L->canon));
    L->keys = PyList_New(0);
    L->names = PyList_New(0);
    L->cname_objs = PyList_New(0);
    if (index == NULL || L->canon == NULL || L->keys == NULL ||
        L->names == NULL || L->cname_objs == NULL) {
        goto done;
    }
    for (size_t i = 0; i < st->nfuncs; i++) {
        const tm_func *fn = st->func_list[i];
        PyObject *key = tm_func_key(fn);
        if (key == NULL) {
            goto done;
        }
        PyObject *id = PyDict_GetItemWithError(index, key);
        if (id != NULL) {
            L->canon[i] = (uint32_t)PyLong_AsUnsignedLong(id);
            Py_DECREF(key);
            continue;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            goto done;
        }
        PyObject *name = tm_func_name(fn);
        PyObject *num = PyLong_FromSize_t(L->n);
        int bad = name == NULL || num == NULL ||
                  PyDict_SetItem(index, key, num) < 0 ||
                  PyList_Append(L->keys, key) < 0 ||
                  PyList_Append(L->names, name) < 0;
        Py_DECREF(key);
        Py_XDECREF(num);
        Py_XDECREF(name);
        if (bad) {
            goto done;
        }
        L->canon[i] = (uint32_t)L->n++;
    }
    L->cnames = calloc(L->n + 1, sizeof(*L->cnames));
    if (L->cnames == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < L->n; i++) {
        /* ';' separates frames and a newline ends the line: replace both. */
        PyObject *name = PyList_GET_ITEM(L->names, i);
        PyObject *b = PyUnicode_AsEncodedString(name, "utf-8", "replace");
        if (b == NULL || PyList_Append(L->cname_objs, b) < 0) {
            Py_XDECREF(b);
            goto done;
        }
        Py_DECREF(b);
        char *s = PyBytes_AS_STRING(b);
        for (char *c = s; *c; c++) {
            if (*c == ';') {
                *c = ':';
            }
            else if (*c == '\n' || *c == '\r') {
                *c = ' ';
            }
        }
        L->cnames[i] = s;
    }
    rc = 0;
done:
    Py_XDECREF(index);
    return rc;
}

/* ---- views -------------------------------------------------------------- */

static void
tm_view_clear(tm_view *v)
{
    free(v->fn);
    free(v->edges);
    tm__map_free(&v->edge_map);
    memset(v, 0, sizeof(*v));
}

static int
tm_view_add_thread(tm_view *v, const tm_labels *L, const tm_thread *th)
{
    for (size_t i = 0; i <= th->stats.mask && th->stats.slots; i++) {
        const tm_stat *s = th->stats.slots[i].value;
        if (s != NULL) {
            tm_acc_add(&v->fn[L->canon[s->fn->id]], &s->fig);
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
        uintptr_t at = (uintptr_t)tm__map_get(&v->edge_map, ka, kb);
        if (at == 0) {
            if (v->nedges == v->edges_cap) {
                size_t cap = v->edges_cap ? v->edges_cap * 2 : 256;
                tm_vedge *list = realloc(v->edges, cap * sizeof(*list));
                if (list == NULL) {
                    return -1;
                }
                v->edges = list;
                v->edges_cap = cap;
            }
            memset(&v->edges[v->nedges], 0, sizeof(tm_vedge));
            v->edges[v->nedges].caller = a;
            v->edges[v->nedges].callee = b;
            v->nedges++;
            at = v->nedges;
            if (tm__map_put(&v->edge_map, ka, kb, (void *)at) != 0) {
                return -1;
            }
        }
        tm_acc_add(&v->edges[at - 1].acc, &e->fig);
    }
    return 0;
}

/* The view of one thread (@p only >= 0) or of all of them. */
static int
tm_view_build(tm_state *st, const tm_labels *L, long only, tm_view *v)
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
            tm_view_clear(v);
            return -1;
        }
    }
    return 0;
}

/* ---- timer.pstats ------------------------------------------------------- */

static PyObject *
tm_pstats_dict(const tm_labels *L, const tm_view *v)
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

/* ---- timer.json --------------------------------------------------------- */

static PyObject *
tm_acc_dict(const tm_acc *a)
{
    return Py_BuildValue("{sKsKsKsK}", "calls", (unsigned long long)a->calls,
                         "primitive_calls",
                         (unsigned long long)(a->calls - a->reccalls),
                         "own_ns", (unsigned long long)a->it, "inclusive_ns",
                         (unsigned long long)a->tt);
}

/* {"total_ns", "functions": [...], "edges": [...]} for one view. */
static PyObject *
tm_json_figures(const tm_labels *L, const tm_view *v)
{
    PyObject *out = NULL, *funcs = PyList_New(0), *edges = PyList_New(0);
    if (funcs == NULL || edges == NULL) {
        goto done;
    }
    for (size_t i = 0; i < L->n; i++) {
        if (v->fn[i].calls == 0) {
            continue;
        }
        PyObject *key = PyList_GET_ITEM(L->keys, i);
        PyObject *d = tm_acc_dict(&v->fn[i]);
        int bad = d == NULL;
        if (!bad) {
            int is_c = PyUnicode_CompareWithASCIIString(
                           PyTuple_GET_ITEM(key, 0), "~") == 0 &&
                       PyLong_AsLong(PyTuple_GET_ITEM(key, 1)) == 0;
            PyObject *id = PyLong_FromSize_t(i);
            PyObject *kind = PyUnicode_FromString(is_c ? "c" : "python");
            bad = id == NULL || kind == NULL ||
                  PyDict_SetItemString(d, "id", id) < 0 ||
                  PyDict_SetItemString(d, "file", PyTuple_GET_ITEM(key, 0)) < 0 ||
                  PyDict_SetItemString(d, "line", PyTuple_GET_ITEM(key, 1)) < 0 ||
                  PyDict_SetItemString(d, "name", PyTuple_GET_ITEM(key, 2)) < 0 ||
                  PyDict_SetItemString(d, "display",
                                       PyList_GET_ITEM(L->names, i)) < 0 ||
                  PyDict_SetItemString(d, "kind", kind) < 0 ||
                  PyList_Append(funcs, d) < 0;
            Py_XDECREF(id);
            Py_XDECREF(kind);
        }
        Py_XDECREF(d);
        if (bad) {
            goto done;
        }
    }
    for (size_t i = 0; i < v->nedges; i++) {
        const tm_vedge *e = &v->edges[i];
        PyObject *d = tm_acc_dict(&e->acc);
        PyObject *a = PyLong_FromUnsignedLong(e->caller);
        PyObject *b = PyLong_FromUnsignedLong(e->callee);
        int bad = d == NULL || a == NULL || b == NULL ||
                  PyDict_SetItemString(d, "caller", a) < 0 ||
                  PyDict_SetItemString(d, "callee", b) < 0 ||
                  PyList_Append(edges, d) < 0;
        Py_XDECREF(d);
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (bad) {
            goto done;
        }
    }
    out = Py_BuildValue("{sKsKsKsOsO}", "total_ns",
                        (unsigned long long)v->total_ns, "calls",
                        (unsigned long long)v->calls, "primitive_calls",
                        (unsigned long long)v->primitive, "functions", funcs,
                        "edges", edges);
done:
    Py_XDECREF(funcs);
    Py_XDECREF(edges);
    return out;
}

/* ---- timer.folded ------------------------------------------------------- */

typedef struct tm_buf {
    char *p;
    size_t len, cap;
} tm_buf;

static int
tm_buf_put(tm_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) {
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Adds every stack of @p th with own time to @p acc (str -> int ns),
 * depth-first, so that @p acc keeps a parent-before-child order. Frames
 * deeper than @p max_depth (0: no limit) are merged into one "[deeper]"
 * frame, so that deep recursion does not make the file quadratic in its
 * depth; every nanosecond is still counted once. */
static int
tm_folded_collect(const tm_labels *L, const tm_thread *th, PyObject *acc,
                  int64_t max_depth)
{
    typedef struct {
        const tm_node *node;
        size_t len;
        int64_t depth;
    } item;
    int rc = -1;
    size_t cap = 64, n = 0;
    item *todo = malloc(cap * sizeof(*todo));
    tm_buf path = {0};
    if (todo == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (const tm_node *c = th->root.first_child; c; c = c->next_sibling) {
        if (n == cap) {
            item *t = realloc(todo, (cap *= 2) * sizeof(*todo));
            if (t == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            todo = t;
        }
        todo[n++] = (item){c, 0, 1};
    }
    while (n > 0) {
        item it = todo[--n];
        const char *name = L->cnames[L->canon[it.node->stat->fn->id]];
        if (max_depth > 0 && it.depth > max_depth + 1) {
            name = NULL; /* already inside "[deeper]": the parent's path */
        }
        else if (max_depth > 0 && it.depth == max_depth + 1) {
            name = "[deeper]";
        }
        path.len = it.len;
        if (name != NULL &&
            ((it.len > 0 && tm_buf_put(&path, ";", 1) != 0) ||
             tm_buf_put(&path, name, strlen(name)) != 0)) {
            PyErr_NoMemory();
            goto done;
        }
        if (it.node->self_ns > 0) {
            PyObject *k = PyUnicode_FromStringAndSize(path.p, (Py_ssize_t)path.len);
            if (k == NULL) {
                goto done;
            }
            PyObject *old = PyDict_GetItemWithError(acc, k);
            unsigned long long prev = old ? PyLong_AsUnsignedLongLong(old) : 0;
            PyObject *val = PyErr_Occurred()
                                ? NULL
                                : PyLong_FromUnsignedLongLong(prev + it.node->self_ns);
            int bad = val == NULL || PyDict_SetItem(acc, k, val) < 0;
            Py_DECREF(k);
            Py_XDECREF(val);
            if (bad) {
                goto done;
            }
        }
        for (const tm_node *c = it.node->first_child; c; c = c->next_sibling) {
            if (n == cap) {
                item *t = realloc(todo, (cap *= 2) * sizeof(*todo));
                if (t == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                todo = t;
            }
            todo[n++] = (item){c, path.len, it.depth + 1};
        }
    }
    rc = 0;
done:
    free(todo);
    free(path.p);
    return rc;
}

/* Writes @p acc as "stack microseconds" lines. Values are rounded so that
 * they add up to floor(total ns / 1000) exactly: each line is within 1 us
 * of its own time, and a stack whose time rounds to 0 still gets its line. */
static int
tm_folded_write(tm_state *st, const char *filename, PyObject *acc)
{
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, filename, &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    PyObject *k, *val;
    Py_ssize_t pos = 0;
    unsigned long long cum_ns = 0, cum_us = 0;
    int ok = 1;
    while (PyDict_Next(acc, &pos, &k, &val)) {
        cum_ns += PyLong_AsUnsignedLongLong(val);
        unsigned long long us = cum_ns / 1000 - cum_us;
        cum_us += us;
        const char *s = PyUnicode_AsUTF8(k);
        if (s == NULL || fprintf(f, "%s %llu\n", s, us) < 0) {
            PyErr_Clear();
            ok = 0;
            break;
        }
    }
    if (st->host->report_commit(token, ok) != PTK_OK || !ok) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write %s", filename);
    }
    return PTK_OK;
}

static int
tm_write_folded(tm_state *st, const tm_labels *L, long only,
                const char *filename)
{
    PyObject *acc = PyDict_New();
    if (acc == NULL) {
        return PTK_EPYTHON;
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        if (st->threads[i] == NULL || (only >= 0 && (size_t)only != i)) {
            continue;
        }
        if (tm_folded_collect(L, st->threads[i], acc, st->folded_depth) != 0) {
            Py_DECREF(acc);
            return PTK_EPYTHON;
        }
    }
    int rc = tm_folded_write(st, filename, acc);
    Py_DECREF(acc);
    return rc;
}

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
        x = a->tt, y = b->tt;
        break;
    case TM_SORT_CALLS:
        x = a->calls, y = b->calls;
        break;
    default:
        x = a->it, y = b->it;
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
static size_t
tm_tree_depth(const tm_thread *th)
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
    PyObject *stats = tm_pstats_dict(L, v);
    if (stats == NULL) {
        return PTK_EPYTHON;
    }
    snprintf(name, sizeof(name), "%s.pstats", prefix);
    int rc = st->host->report_write_object(st->ctx, name, stats, PTK_FMT_MARSHAL);
    Py_DECREF(stats);
    return rc;
}

int
tm__report(tm_state *st, const ptk_report_args *args)
{
    int rc = PTK_EPYTHON;
    tm_labels L = {0};
    tm_view all = {0};
    PyObject *json = NULL, *threads = NULL;
    size_t nthreads = 0;
    uint64_t unmatched = 0, resynced = 0, max_depth = 0;

    if (tm_labels_build(st, &L) != 0 || tm_view_build(st, &L, -1, &all) != 0) {
        goto done;
    }
    threads = PyList_New(0);
    if (threads == NULL) {
        goto done;
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        tm_thread *th = st->threads[i];
        if (th == NULL) {
            continue;
        }
        th->max_depth = tm_tree_depth(th);
        nthreads++;
        unmatched += th->unmatched;
        resynced += th->resynced;
        if (th->max_depth > max_depth) {
            max_depth = th->max_depth;
        }
        PyObject *figs = NULL;
        if (st->per_thread) {
            tm_view v;
            char prefix[48], folded[64];
            if (tm_view_build(st, &L, (long)i, &v) != 0) {
                goto done;
            }
            figs = tm_json_figures(&L, &v);
            snprintf(prefix, sizeof(prefix), "timer.thread-%u", th->index);
            snprintf(folded, sizeof(folded), "%s.folded", prefix);
            int r = figs == NULL ? PTK_EPYTHON : tm_write_view(st, &L, &v, prefix);
            if (r == PTK_OK) {
                r = tm_write_folded(st, &L, (long)i, folded);
            }
            tm_view_clear(&v);
            if (r != PTK_OK) {
                Py_XDECREF(figs);
                rc = r;
                goto done;
            }
        }
        PyObject *d = Py_BuildValue(
            "{sIsKszsnsKsK}", "index", th->index, "ident",
            (unsigned long long)th->ident, "name", th->name, "max_depth",
            (Py_ssize_t)th->max_depth, "unmatched_returns",
            (unsigned long long)th->unmatched, "resynced_frames",
            (unsigned long long)th->resynced);
        if (d == NULL || (figs != NULL && PyDict_Update(d, figs) < 0) ||
            PyList_Append(threads, d) < 0) {
            Py_XDECREF(d);
            Py_XDECREF(figs);
            goto done;
        }
        Py_DECREF(d);
        Py_XDECREF(figs);
    }

    rc = tm_write_view(st, &L, &all, "timer");
    if (rc != PTK_OK) {
        goto done;
    }
    rc = tm_write_folded(st, &L, -1, "timer.folded");
    if (rc != PTK_OK) {
        goto done;
    }
    rc = PTK_EPYTHON;
    json = tm_json_figures(&L, &all);
    if (json == NULL) {
        goto done;
    }
    {
        PyObject *meta = Py_BuildValue(
            "{sssssssOsOsdsnsKsK}", "plugin", "timer", "clock",
            st->cpu_clock ? "cpu" : "wall", "unit", "ns", "builtins",
            st->builtins ? Py_True : Py_False, "per_thread", st->per_thread ? Py_True : Py_False,
            "elapsed_s", args->elapsed_s, "max_depth", (Py_ssize_t)max_depth,
            "unmatched_returns", (unsigned long long)unmatched,
            "resynced_frames", (unsigned long long)resynced);
        if (meta == NULL || PyDict_Update(meta, json) < 0 ||
            PyDict_SetItemString(meta, "threads", threads) < 0) {
            Py_XDECREF(meta);
            goto done;
        }
        Py_SETREF(json, meta);
    }
    rc = st->host->report_write_object(st->ctx, "timer.json", json, PTK_FMT_JSON);
    if (rc == PTK_OK) {
        tm_summary(st, &L, &all, args, nthreads);
    }
done:
    if (rc == PTK_EPYTHON && PyErr_Occurred()) {
        rc = st->host->fail(st->ctx, PTK_EPYTHON, "cannot build the report");
    }
    Py_XDECREF(json);
    Py_XDECREF(threads);
    tm_view_clear(&all);
    tm_labels_clear(&L);
    return rc;
}
