/*
 * timer: the reports. timer.pstats (marshal, what pstats.Stats loads),
 * timer.json, timer.folded (collapsed stacks) and the stderr summary; with
 * per_thread=true, the same files once per thread as timer.thread-N.*.
 *
 * Functions are merged by their pstats label (file, line, name): two code
 * objects with the same label are one pstats entry.
 */
#include "timer.h"

#include "../common/c_label.h"
#include "../common/json_quote.h"
#include "../common/put_decimal.h"

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
    const char **snames; /* UTF-8 of short names, folded-safe */
    PyObject *shorts;    /* list of short names (str): flame graph frames */
    PyObject *cname_objs; /* list keeping the bytes of cnames alive */
    uint32_t *first;     /* [n]: a function of each label */
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

/* "qualname (file:line)" for Python code, the cProfile name as pstats
 * prints it ("{method 'append' of 'list' objects}") for C functions. */
static PyObject *
tm_func_name(const tm_func *fn)
{
    if (fn->is_c) {
        return ptk_kit_c_display(fn->label);
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
    free(L->snames);
    free(L->first);
    Py_CLEAR(L->shorts);
    Py_CLEAR(L->keys);
    Py_CLEAR(L->names);
    Py_CLEAR(L->cname_objs);
    memset(L, 0, sizeof(*L));
}

/* The last @p k '/'-separated parts of @p path (all of it if it has fewer). */
static const char *
tm_path_suffix(const char *path, int k)
{
    const char *p = path + strlen(path);
    while (p > path) {
        if (p[-1] == '/' && --k == 0) {
            return p;
        }
        p--;
    }
    return path;
}

/* Short, unambiguous frame names for the flame graph files: "qualname
 * (file:line)" with the file cut to the fewest trailing path parts that no
 * other profiled file ends with ("email/__init__.py", "difflib.py"); C
 * functions keep their name. Returns a list (new reference) or NULL. */
static PyObject *
tm_short_names(tm_state *st, const tm_labels *L)
{
    PyObject *out = PyList_New((Py_ssize_t)L->n);
    PyObject *files = PyDict_New();  /* filename -> suffix (str) */
    PyObject *counts = PyDict_New(); /* suffix -> number of files */
    PyObject *flist = NULL;
    if (out == NULL || files == NULL || counts == NULL) {
        goto fail;
    }
    for (size_t i = 0; i < L->n; i++) {
        const tm_func *fn = st->func_list[L->first[i]];
        if (!fn->is_c &&
            PyDict_SetItem(files, ((PyCodeObject *)fn->code)->co_filename,
                           Py_None) < 0) {
            goto fail;
        }
    }
    flist = PyDict_Keys(files);
    if (flist == NULL) {
        goto fail;
    }
    Py_ssize_t nf = PyList_GET_SIZE(flist), left = nf;
    for (int k = 1; left > 0 && k < 256; k++) {
        PyDict_Clear(counts);
        for (Py_ssize_t j = 0; j < nf; j++) {
            const char *f = PyUnicode_AsUTF8(PyList_GET_ITEM(flist, j));
            PyObject *suf = f ? PyUnicode_FromString(tm_path_suffix(f, k)) : NULL;
            PyObject *c = suf ? PyDict_GetItemWithError(counts, suf) : NULL;
            PyObject *n = suf && !PyErr_Occurred()
                              ? PyLong_FromLong(c ? PyLong_AsLong(c) + 1 : 1)
                              : NULL;
            int bad = n == NULL || PyDict_SetItem(counts, suf, n) < 0;
            Py_XDECREF(suf);
            Py_XDECREF(n);
            if (bad) {
                goto fail;
            }
        }
        for (Py_ssize_t j = 0; j < nf; j++) {
            PyObject *file = PyList_GET_ITEM(flist, j);
            if (PyDict_GetItemWithError(files, file) != Py_None) {
                continue; /* settled */
            }
            const char *f = PyUnicode_AsUTF8(file);
            const char *sufs = f ? tm_path_suffix(f, k) : NULL;
            PyObject *suf = sufs ? PyUnicode_FromString(sufs) : NULL;
            PyObject *c = suf ? PyDict_GetItemWithError(counts, suf) : NULL;
            if (c == NULL) {
                Py_XDECREF(suf);
                goto fail;
            }
            if (PyLong_AsLong(c) == 1 || sufs == f) {
                if (PyDict_SetItem(files, file, suf) < 0) {
                    Py_DECREF(suf);
                    goto fail;
                }
                left--;
            }
            Py_DECREF(suf);
        }
    }
    for (size_t i = 0; i < L->n; i++) {
        const tm_func *fn = st->func_list[L->first[i]];
        PyObject *name;
        if (fn->is_c) {
            name = Py_NewRef(PyList_GET_ITEM(L->names, i));
        }
        else {
            PyCodeObject *co = (PyCodeObject *)fn->code;
            PyObject *suf = PyDict_GetItemWithError(files, co->co_filename);
            if (suf == NULL || suf == Py_None) {
                suf = co->co_filename;
            }
            name = PyErr_Occurred() ? NULL
                                    : PyUnicode_FromFormat("%U (%U:%d)", co->co_qualname,
                                                           suf, co->co_firstlineno);
        }
        if (name == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, name);
    }
    Py_DECREF(files);
    Py_DECREF(counts);
    Py_DECREF(flist);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(files);
    Py_XDECREF(counts);
    Py_XDECREF(flist);
    return NULL;
}

static int
tm_labels_build(tm_state *st, tm_labels *L)
{
    int rc = -1;
    PyObject *index = PyDict_New();
    L->canon = calloc(st->nfuncs + 1, sizeof(*L->canon));
    L->first = calloc(st->nfuncs + 1, sizeof(*L->first));
    L->keys = PyList_New(0);
    L->names = PyList_New(0);
    L->cname_objs = PyList_New(0);
    if (index == NULL || L->canon == NULL || L->first == NULL || L->keys == NULL ||
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
        L->first[L->n] = (uint32_t)i;
        L->canon[i] = (uint32_t)L->n++;
    }
    L->cnames = calloc(L->n + 1, sizeof(*L->cnames));
    L->snames = calloc(L->n + 1, sizeof(*L->snames));
    if (L->cnames == NULL || L->snames == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if ((L->shorts = tm_short_names(st, L)) == NULL) {
        goto done;
    }
    for (size_t i = 0; i < 2 * L->n; i++) {
        /* ';' separates frames and a newline ends the line: replace both. */
        PyObject *name = i < L->n ? PyList_GET_ITEM(L->names, i)
                                  : PyList_GET_ITEM(L->shorts, i - L->n);
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
        if (i < L->n) {
            L->cnames[i] = s;
        }
        else {
            L->snames[i - L->n] = s;
        }
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
    ptk_kit_map_free(&v->edge_map);
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
    if (only < 0 && tm_view_add_thread(v, L, &st->gone) != 0) {
        PyErr_NoMemory();
        tm_view_clear(v);
        return -1;
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

/* ---- calling contexts: timer.speedscope.json, timer.folded --------------- */

/* The calling contexts of some threads merged by label path: node 0 is the
 * root, every parent comes before its children. Frames deeper than
 * folded_depth become one "[deeper]" node; the calls merged by edge (over
 * max_contexts, or with contexts off) hang under one "[merged contexts]"
 * node by function. */
typedef struct tm_rnode {
    uint32_t parent, label;
    uint32_t first_child, next_sibling; /* 0: none */
    uint64_t self_ns, incl_ns;
} tm_rnode;

typedef struct tm_rtree {
    tm_rnode *v;
    size_t n, cap;
    tm_map map; /* (parent+1, label+1) -> index */
    uint32_t deeper, merged; /* the labels of the two pseudo frames */
    uint64_t merged_edges, merged_ns;
    size_t pruned;      /* contexts merged by tm_rtree_cap */
    uint64_t pruned_ns; /* their own time */
} tm_rtree;

static void
tm_rtree_clear(tm_rtree *r)
{
    free(r->v);
    ptk_kit_map_free(&r->map);
    memset(r, 0, sizeof(*r));
}

/* The child of @p parent for @p label; (uint32_t)-1 when out of memory. */
static uint32_t
tm_rtree_child(tm_rtree *r, uint32_t parent, uint32_t label)
{
    const void *ka = (const void *)(uintptr_t)(parent + 1);
    const void *kb = (const void *)(uintptr_t)(label + 1);
    uintptr_t at = (uintptr_t)ptk_kit_map_get(&r->map, ka, kb);
    if (at != 0) {
        return (uint32_t)at;
    }
    if (PTK_KIT_RESERVE(r->v, r->cap, r->n + 1, 1024) != 0) {
        return (uint32_t)-1;
    }
    uint32_t i = (uint32_t)r->n++;
    memset(&r->v[i], 0, sizeof(r->v[i]));
    r->v[i].parent = parent;
    r->v[i].label = label;
    r->v[i].next_sibling = r->v[parent].first_child;
    r->v[parent].first_child = i;
    if (ptk_kit_map_put(&r->map, ka, kb, (void *)(uintptr_t)i) != 0) {
        return (uint32_t)-1;
    }
    return i;
}

static int
tm_rtree_add_thread(tm_rtree *r, const tm_labels *L, const tm_thread *th,
                    int64_t max_depth)
{
    typedef struct {
        const tm_node *node;
        uint32_t rparent;
        int64_t depth;
    } item;
    size_t cap = 64, n = 0;
    item *todo = malloc(cap * sizeof(*todo));
    if (todo == NULL) {
        return -1;
    }
    for (const tm_node *c = th->root.first_child; c; c = c->next_sibling) {
        if (PTK_KIT_RESERVE(todo, cap, n + 1, 64) != 0) {
            free(todo);
            return -1;
        }
        todo[n++] = (item){c, 0, 1};
    }
    while (n > 0) {
        item it = todo[--n];
        uint32_t here = it.rparent; /* inside [deeper]: the parent's node */
        if (max_depth <= 0 || it.depth <= max_depth + 1) {
            uint32_t label = max_depth > 0 && it.depth == max_depth + 1
                                 ? r->deeper
                                 : L->canon[it.node->stat->fn->id];
            here = tm_rtree_child(r, it.rparent, label);
            if (here == (uint32_t)-1) {
                free(todo);
                return -1;
            }
        }
        r->v[here].self_ns += it.node->self_ns;
        for (const tm_node *c = it.node->first_child; c; c = c->next_sibling) {
            if (PTK_KIT_RESERVE(todo, cap, n + 1, 64) != 0) {
                free(todo);
                return -1;
            }
            todo[n++] = (item){c, here, it.depth + 1};
        }
    }
    free(todo);
    /* the calls merged by edge: their own time by function */
    for (size_t i = 0; th->nodes.slots && i <= th->nodes.mask; i++) {
        const tm_node *m = th->nodes.slots[i].value;
        if (m == NULL || !m->merged) {
            continue;
        }
        r->merged_edges++;
        r->merged_ns += m->self_ns;
        if (m->self_ns == 0) {
            continue;
        }
        uint32_t top = tm_rtree_child(r, 0, r->merged);
        uint32_t at = top == (uint32_t)-1
                          ? top
                          : tm_rtree_child(r, top, L->canon[m->stat->fn->id]);
        if (at == (uint32_t)-1) {
            return -1;
        }
        r->v[at].self_ns += m->self_ns;
    }
    return 0;
}

static void
tm_rtree_sum(tm_rtree *r)
{
    for (size_t i = 0; i < r->n; i++) {
        r->v[i].incl_ns = 0;
    }
    for (size_t i = r->n; i-- > 1;) {
        r->v[i].incl_ns += r->v[i].self_ns;
        r->v[r->v[i].parent].incl_ns += r->v[i].incl_ns;
    }
    r->v[0].incl_ns += r->v[0].self_ns;
}

/* The contexts of one thread (@p only >= 0) or of every thread, with the
 * inclusive time of each node. */
static int
tm_rtree_build(tm_state *st, const tm_labels *L, long only, tm_rtree *r)
{
    memset(r, 0, sizeof(*r));
    r->deeper = (uint32_t)L->n;
    r->merged = (uint32_t)L->n + 1;
    r->cap = 1024;
    r->v = calloc(r->cap, sizeof(*r->v));
    if (r->v == NULL) {
        return -1;
    }
    r->n = 1; /* the root */
    int bad = 0;
    for (size_t i = 0; !bad && i < st->nthreads; i++) {
        if (st->threads[i] != NULL && (only < 0 || (size_t)only == i)) {
            bad = tm_rtree_add_thread(r, L, st->threads[i], st->folded_depth);
        }
    }
    if (!bad && only < 0) {
        bad = tm_rtree_add_thread(r, L, &st->gone, st->folded_depth);
    }
    if (bad) {
        tm_rtree_clear(r);
        PyErr_NoMemory();
        return -1;
    }
    tm_rtree_sum(r);
    return 0;
}

typedef struct {
    uint64_t incl;
    uint32_t node;
} tm_rweight;

static int
tm_rweight_cmp(const void *a, const void *b)
{
    const tm_rweight *x = a, *y = b;
    if (x->incl != y->incl) {
        return x->incl < y->incl ? 1 : -1;
    }
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Which nodes to keep: the @p max heaviest by inclusive time (a parent
 * weighs at least what its child does and comes first among equals, so
 * the set holds every kept node's callers). NULL when out of memory. */
static char *
tm_rtree_heaviest(const tm_rtree *r, size_t max)
{
    size_t nw = r->n > 1 ? r->n - 1 : 1;
    tm_rweight *w = malloc(nw * sizeof(*w));
    char *keep = calloc(r->n, 1);
    if (w == NULL || keep == NULL) {
        free(w);
        free(keep);
        return NULL;
    }
    for (size_t i = 1; i < r->n; i++) {
        w[i - 1] = (tm_rweight){r->v[i].incl_ns, (uint32_t)i};
    }
    qsort(w, r->n - 1, sizeof(*w), tm_rweight_cmp);
    keep[0] = 1;
    for (size_t k = 0; k < max; k++) {
        keep[w[k].node] = 1;
    }
    free(w);
    for (size_t i = 1; i < r->n; i++) {
        keep[i] = keep[i] && keep[r->v[i].parent];
    }
    return keep;
}

/* Keeps the @p max heaviest contexts of @p r (by inclusive time); the
 * lighter ones become one "[merged contexts]" frame under their nearest kept
 * caller, so every kept frame keeps its width and the file at most about
 * twice @p max nodes. 0, or -1 when out of memory (@p r unchanged). */
static int
tm_rtree_cap(tm_rtree *r, int64_t max)
{
    if (max <= 0 || r->n < 2 || r->n - 1 <= (size_t)max) {
        return 0;
    }
    char *keep = tm_rtree_heaviest(r, (size_t)max);
    uint32_t *to = malloc(r->n * sizeof(*to));  /* node in the new tree */
    uint32_t *anc = malloc(r->n * sizeof(*anc)); /* its kept caller's */
    tm_rtree nr;
    memset(&nr, 0, sizeof(nr));
    nr.deeper = r->deeper;
    nr.merged = r->merged;
    nr.merged_edges = r->merged_edges;
    nr.merged_ns = r->merged_ns;
    nr.cap = (size_t)max + 1024;
    nr.v = calloc(nr.cap, sizeof(*nr.v));
    int bad = keep == NULL || to == NULL || anc == NULL || nr.v == NULL;
    nr.n = 1;
    to[0] = anc[0] = 0;
    for (size_t i = 1; !bad && i < r->n; i++) {
        uint32_t p = r->v[i].parent;
        if (keep[i]) {
            to[i] = anc[i] = tm_rtree_child(&nr, to[p], r->v[i].label);
        }
        else {
            anc[i] = keep[p] ? to[p] : anc[p];
            to[i] = tm_rtree_child(&nr, anc[i], nr.merged);
            nr.pruned++;
            nr.pruned_ns += r->v[i].self_ns;
        }
        bad = to[i] == (uint32_t)-1;
        if (!bad) {
            nr.v[to[i]].self_ns += r->v[i].self_ns;
        }
    }
    free(keep);
    free(to);
    free(anc);
    if (bad) {
        tm_rtree_clear(&nr);
        return -1;
    }
    tm_rtree_sum(&nr);
    tm_rtree_clear(r);
    *r = nr;
    return 0;
}

static const char *
tm_rname(const tm_labels *L, const tm_rtree *r, uint32_t label)
{
    if (label == r->deeper) {
        return "[deeper]";
    }
    if (label == r->merged) {
        return "[merged contexts]";
    }
    return L->snames[label];
}

/* Depth-first over the nodes with time (contexts whose inclusive time is 0
 * are left out), calling @p visit on the way in (@p in = 1) and out. */
typedef int (*tm_rvisit)(void *arg, const tm_rtree *r, uint32_t node,
                         int in, size_t depth);

static int
tm_rtree_walk(const tm_rtree *r, tm_rvisit visit, void *arg)
{
    size_t cap = 64, n = 0;
    uint32_t *stack = malloc(cap * sizeof(*stack)); /* nodes entered */
    uint32_t *next = malloc(cap * sizeof(*next));   /* their next child */
    int rc = 0;
    if (stack == NULL || next == NULL) {
        free(stack);
        free(next);
        return -1;
    }
    stack[0] = 0;
    next[0] = r->v[0].first_child;
    n = 1;
    while (n > 0 && rc == 0) {
        uint32_t c = next[n - 1];
        if (c == 0) {
            if (n > 1) {
                rc = visit(arg, r, stack[n - 1], 0, n - 1);
            }
            n--;
            continue;
        }
        next[n - 1] = r->v[c].next_sibling;
        if (r->v[c].incl_ns == 0) {
            continue;
        }
        if (n == cap) {
            /* two arrays of one length: the second grows to the first's */
            size_t ncap = cap;
            if (PTK_KIT_RESERVE(stack, ncap, n + 1, 64) != 0 ||
                PTK_KIT_RESERVE(next, cap, ncap, 64) != 0) {
                rc = -1;
                break;
            }
        }
        stack[n] = c;
        next[n] = r->v[c].first_child;
        n++;
        rc = visit(arg, r, c, 1, n - 1);
    }
    free(stack);
    free(next);
    return rc;
}

/* timer.folded: one "frame;frame;... microseconds" line per context with
 * own time. Values are rounded so that they add up to floor(total ns /
 * 1000) exactly: each line is within 1 us of its own time. */
typedef struct tm_folded_ctx {
    FILE *f;
    const tm_labels *L;
    uint32_t *path; /* labels of the nodes entered */
    size_t cap;
    unsigned long long cum_ns, cum_us;
} tm_folded_ctx;

static int
tm_folded_visit(void *arg, const tm_rtree *r, uint32_t node, int in,
                size_t depth)
{
    tm_folded_ctx *c = arg;
    if (!in) {
        return 0;
    }
    if (PTK_KIT_RESERVE(c->path, c->cap, depth, 64) != 0) {
        return -1;
    }
    c->path[depth - 1] = r->v[node].label;
    if (r->v[node].self_ns == 0) {
        return 0;
    }
    c->cum_ns += r->v[node].self_ns;
    unsigned long long us = c->cum_ns / 1000 - c->cum_us;
    c->cum_us += us;
    for (size_t i = 0; i < depth; i++) {
        if ((i > 0 && fputc(';', c->f) == EOF) ||
            fputs(tm_rname(c->L, r, c->path[i]), c->f) == EOF) {
            return -1;
        }
    }
    return fprintf(c->f, " %llu\n", us) < 0 ? -1 : 0;
}

static int
tm_write_folded(tm_state *st, const tm_labels *L, const tm_rtree *r,
                const char *filename)
{
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, filename, &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    tm_folded_ctx c = {f, L, NULL, 0, 0, 0};
    int ok = tm_rtree_walk(r, tm_folded_visit, &c) == 0;
    free(c.path);
    if (st->host->report_commit(token, ok) != PTK_OK || !ok) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write %s", filename);
    }
    return PTK_OK;
}

/* timer.speedscope.json: speedscope's own format
 * (https://www.speedscope.app/file-format-schema.json): one shared frame
 * table and one "evented" profile whose open/close events lay the contexts
 * out side by side, each as wide as its inclusive time: two events per
 * context, whatever its depth. */
typedef struct tm_ss_ctx {
    FILE *f;
    uint64_t *start; /* by depth: where the node entered at that depth began */
    size_t cap;
    uint64_t at;
    int first;
} tm_ss_ctx;

static int
tm_ss_visit(void *arg, const tm_rtree *r, uint32_t node, int in, size_t depth)
{
    tm_ss_ctx *c = arg;
    if (PTK_KIT_RESERVE(c->start, c->cap, depth + 1, 64) != 0) {
        return -1;
    }
    if (in) {
        c->start[depth] = c->at;
    }
    else {
        /* the node's own time comes after its callees */
        c->at = c->start[depth] + r->v[node].incl_ns;
    }
    int rc = fprintf(c->f, "%s\n{\"type\":\"%c\",\"frame\":%u,\"at\":%llu}",
                     c->first ? "" : ",", in ? 'O' : 'C', r->v[node].label,
                     (unsigned long long)c->at);
    c->first = 0;
    return rc < 0 ? -1 : 0;
}

static int
tm_write_speedscope(tm_state *st, const tm_labels *L, const tm_rtree *r,
                    const char *filename, const char *title)
{
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, filename, &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    int ok = fputs("{\"$schema\":\"https://www.speedscope.app/"
                   "file-format-schema.json\",\n\"exporter\":\"pytracekit timer\",\n"
                   "\"name\":",
                   f) != EOF &&
             ptk_kit_json_write(f, title) == 0 &&
             fputs(",\n\"shared\":{\"frames\":[", f) != EOF;
    for (size_t i = 0; ok && i < L->n + 2; i++) {
        ok = fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f) != EOF &&
             ptk_kit_json_write(f, tm_rname(L, r, (uint32_t)i)) == 0;
        if (ok && i < L->n) {
            PyObject *key = PyList_GET_ITEM(L->keys, i);
            const char *file = PyUnicode_AsUTF8(PyTuple_GET_ITEM(key, 0));
            long line = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
            if (file == NULL) {
                PyErr_Clear();
            }
            else if (strcmp(file, "~") != 0) {
                ok = fputs(",\"file\":", f) != EOF && ptk_kit_json_write(f, file) == 0 &&
                     fprintf(f, ",\"line\":%ld", line) >= 0;
            }
        }
        ok = ok && fputc('}', f) != EOF;
    }
    ok = ok && fprintf(f, "]},\n\"profiles\":[{\"type\":\"evented\",\"name\":") >= 0 &&
         ptk_kit_json_write(f, title) == 0 &&
         fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%llu,"
                    "\n\"events\":[",
                 (unsigned long long)r->v[0].incl_ns) >= 0;
    tm_ss_ctx c = {f, NULL, 0, 0, 1};
    ok = ok && tm_rtree_walk(r, tm_ss_visit, &c) == 0;
    free(c.start);
    ok = ok && fputs("]}]}\n", f) != EOF;
    if (st->host->report_commit(token, ok) != PTK_OK || !ok) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write %s", filename);
    }
    return PTK_OK;
}

/* The calling-context files of one thread (@p only >= 0) or of all. */
static int
tm_write_flame(tm_state *st, const tm_labels *L, long only, const char *prefix,
               tm_rtree *keep)
{
    if (!st->contexts || (!st->speedscope && !st->folded)) {
        return PTK_OK;
    }
    tm_rtree r;
    char name[96];
    if (tm_rtree_build(st, L, only, &r) != 0) {
        return PTK_EPYTHON;
    }
    size_t recorded = r.n - 1;
    if (tm_rtree_cap(&r, st->max_contexts) != 0) {
        tm_rtree_clear(&r);
        PyErr_NoMemory();
        return PTK_EPYTHON;
    }
    if (only < 0) {
        st->flame_kept = recorded - r.pruned;
        st->flame_merged = r.pruned;
        st->flame_merged_ns = r.pruned_ns;
    }
    int rc = PTK_OK;
    if (st->speedscope) {
        snprintf(name, sizeof(name), "%s.speedscope.json", prefix);
        rc = tm_write_speedscope(st, L, &r, name, prefix);
    }
    if (rc == PTK_OK && st->folded) {
        snprintf(name, sizeof(name), "%s.folded", prefix);
        rc = tm_write_folded(st, L, &r, name);
    }
    if (keep != NULL) {
        *keep = r;
    }
    else {
        tm_rtree_clear(&r);
    }
    return rc;
}

/* "timer.thread-N-NAME": the thread's index (unique) and its name, cut to
 * 32 bytes, with what a file name should not hold as '_'. */
static void
tm_thread_prefix(tm_state *st, char *buf, size_t size, const tm_thread *th)
{
    /* the name the thread has now: it may have had none when first seen */
    const ptk_thread *t = st->host->thread_at(th->index);
    const char *tname = t != NULL && t->name != NULL && t->name[0] ? t->name : th->name;
    char name[33];
    size_t n = 0;
    for (const char *p = tname ? tname : ""; *p && n < 32; p++) {
        unsigned char c = (unsigned char)*p;
        name[n++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
                        ? (char)c
                        : '_';
    }
    name[n] = '\0';
    snprintf(buf, size, n ? "timer.thread-%u-%s" : "timer.thread-%u%s", th->index, name);
}

/* ---- timer.json ---------------------------------------------------------- */

/* Written as it goes, one function or edge a line, not built as Python
 * objects first: on a large program those took more memory than the
 * profile itself. */

/* Appends @p text at @p p; returns the end. */
static char *
tm_put(char *p, const char *text)
{
    size_t n = strlen(text);
    memcpy(p, text, n);
    return p + n;
}

/* Room for tm_put_acc: its text and four 20-digit numbers. */
#define TM_ACC_MAX 160

/* "calls":…,"primitive_calls":…,"own_ns":…,"inclusive_ns":… at @p p. */
static char *
tm_put_acc(char *p, const tm_acc *a)
{
    p = tm_put(p, "\"calls\":");
    p = ptk_put_u64(p, a->calls);
    p = tm_put(p, ",\"primitive_calls\":");
    p = ptk_put_u64(p, a->calls - a->reccalls);
    p = tm_put(p, ",\"own_ns\":");
    p = ptk_put_u64(p, a->it);
    p = tm_put(p, ",\"inclusive_ns\":");
    return ptk_put_u64(p, a->tt);
}

static int
tm_write_buf(FILE *f, const char *buf, const char *end)
{
    size_t n = (size_t)(end - buf);
    return fwrite(buf, 1, n, f) == n ? 0 : -1;
}

static int
tm_json_pystr(FILE *f, PyObject *s)
{
    const char *u = PyUnicode_AsUTF8(s);
    if (u == NULL) {
        return -1;
    }
    return ptk_kit_json_write(f, u);
}

/* "total_ns":…,"calls":…,"primitive_calls":…,"functions":[…],"edges":[…] */
static int
tm_json_figures(FILE *f, const tm_labels *L, const tm_view *v)
{
    if (fprintf(f, "\"total_ns\":%llu,\"calls\":%llu,\"primitive_calls\":%llu,"
                   "\n\"functions\":[",
                (unsigned long long)v->total_ns, (unsigned long long)v->calls,
                (unsigned long long)v->primitive) < 0) {
        return -1;
    }
    int first = 1;
    for (size_t i = 0; i < L->n; i++) {
        if (v->fn[i].calls == 0) {
            continue;
        }
        PyObject *key = PyList_GET_ITEM(L->keys, i);
        const char *file = PyUnicode_AsUTF8(PyTuple_GET_ITEM(key, 0));
        long line = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
        if (file == NULL || PyErr_Occurred()) {
            return -1;
        }
        int is_c = strcmp(file, "~") == 0 && line == 0;
        char buf[TM_ACC_MAX + 64], *p = buf;
        p = tm_put(p, first ? "\n{" : ",\n{");
        p = tm_put_acc(p, &v->fn[i]);
        p = tm_put(p, ",\"id\":");
        p = ptk_put_u64(p, i);
        p = tm_put(p, ",\"file\":");
        if (tm_write_buf(f, buf, p) < 0 || ptk_kit_json_write(f, file) < 0 ||
            fprintf(f, ",\"line\":%ld,\"name\":", line) < 0 ||
            tm_json_pystr(f, PyTuple_GET_ITEM(key, 2)) < 0 ||
            fputs(",\"display\":", f) == EOF ||
            tm_json_pystr(f, PyList_GET_ITEM(L->names, i)) < 0 ||
            fputs(",\"short\":", f) == EOF ||
            tm_json_pystr(f, PyList_GET_ITEM(L->shorts, i)) < 0 ||
            fprintf(f, ",\"kind\":\"%s\"}", is_c ? "c" : "python") < 0) {
            return -1;
        }
        first = 0;
    }
    if (fputs("],\n\"edges\":[", f) == EOF) {
        return -1;
    }
    for (size_t i = 0; i < v->nedges; i++) {
        const tm_vedge *e = &v->edges[i];
        char buf[TM_ACC_MAX + 64], *p = buf;
        p = tm_put(p, i ? ",\n{" : "\n{");
        p = tm_put_acc(p, &e->acc);
        p = tm_put(p, ",\"caller\":");
        p = ptk_put_u64(p, e->caller);
        p = tm_put(p, ",\"callee\":");
        p = ptk_put_u64(p, e->callee);
        p = tm_put(p, "}");
        if (tm_write_buf(f, buf, p) < 0) {
            return -1;
        }
    }
    return fputs("]", f) == EOF ? -1 : 0;
}

/* The calls merged by edge (contexts off, or past max_contexts). */
static void
tm_merged_counts(const tm_state *st, uint64_t *edges, uint64_t *ns)
{
    *edges = *ns = 0;
    for (size_t t = 0; t <= st->nthreads; t++) {
        const tm_thread *th = t < st->nthreads ? st->threads[t] : &st->gone;
        for (size_t i = 0; th && th->nodes.slots && i <= th->nodes.mask; i++) {
            const tm_node *n = th->nodes.slots[i].value;
            if (n != NULL && n->merged) {
                (*edges)++;
                *ns += n->self_ns;
            }
        }
    }
}

static uint64_t
tm_thread_own(const tm_thread *th)
{
    uint64_t own = 0;
    for (size_t i = 0; th->stats.slots && i <= th->stats.mask; i++) {
        const tm_stat *s = th->stats.slots[i].value;
        own += s != NULL ? s->fig.it : 0;
    }
    return own;
}

static int
tm_write_json(tm_state *st, const tm_labels *L, const tm_view *all,
              const ptk_report_args *args, uint64_t max_depth,
              uint64_t unmatched, uint64_t resynced, size_t written)
{
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, "timer.json", &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    uint64_t medges, mns;
    tm_merged_counts(st, &medges, &mns);
    /* the run's identity, as report_write_object adds it (ABI 1.2) */
    const char *run = st->host->struct_size > offsetof(ptk_host, run_identity)
                          ? st->host->run_identity(st->ctx)
                          : NULL;
    if (run != NULL && fprintf(f, "{\"run\":%s,", run) < 0) {
        st->host->report_commit(token, 0);
        return PTK_EIO;
    }
    int ok = fprintf(f, "%s\"plugin\":\"timer\",\"clock\":\"%s\",\"unit\":\"ns\","
                        "\"builtins\":%s,\"per_thread\":%s,\"elapsed_s\":%.9f,"
                        "\"max_depth\":%llu,\"unmatched_returns\":%llu,"
                        "\"resynced_frames\":%llu,\n\"calling_contexts\":{"
                        "\"kept\":%s,\"max_contexts\":%lld,\"contexts\":%zu,"
                        "\"written\":%zu,\"merged_edges\":%llu,\"merged_ns\":%llu,"
                        "\"kept_contexts\":%zu,\"merged_contexts\":%zu,"
                        "\"merged_contexts_ns\":%llu},\n",
                     run != NULL ? "" : "{",
                     st->cpu_clock ? "cpu" : "wall", st->builtins ? "true" : "false",
                     st->per_thread ? "true" : "false", args->elapsed_s,
                     (unsigned long long)max_depth, (unsigned long long)unmatched,
                     (unsigned long long)resynced, st->contexts ? "true" : "false",
                     (long long)st->max_contexts, st->ncontexts, written,
                     (unsigned long long)medges, (unsigned long long)mns,
                     st->flame_kept, st->flame_merged,
                     (unsigned long long)st->flame_merged_ns) >= 0 &&
             tm_json_figures(f, L, all) == 0 && fputs(",\n\"threads\":[", f) != EOF;
    int first = 1;
    for (size_t i = 0; ok && i < st->nthreads; i++) {
        const tm_thread *th = st->threads[i];
        const tm_done *dn = &st->done[i];
        if (th == NULL && !dn->ended) {
            continue;
        }
        /* A record whose thread state ended and came back (a C thread's
         * next PyGILState_Ensure) has both: its figures so far are merged. */
        const char *name = th != NULL ? th->name : dn->name;
        size_t depth = th != NULL && th->max_depth > dn->max_depth ? th->max_depth
                                                                   : dn->max_depth;
        ok = fprintf(f, "%s\n{\"index\":%zu,\"ident\":%llu,\"name\":",
                     first ? "" : ",", i,
                     (unsigned long long)(th != NULL ? th->ident : dn->ident)) >= 0 &&
             (name != NULL ? ptk_kit_json_write(f, name) == 0 : fputs("null", f) != EOF) &&
             fprintf(f, ",\"max_depth\":%zu,\"unmatched_returns\":%llu,"
                        "\"resynced_frames\":%llu,\"ended\":%s,",
                     depth,
                     (unsigned long long)((th != NULL ? th->unmatched : 0) + dn->unmatched),
                     (unsigned long long)((th != NULL ? th->resynced : 0) + dn->resynced),
                     th != NULL ? "false" : "true") >= 0;
        first = 0;
        if (ok && th != NULL && st->per_thread) {
            tm_view v;
            if (tm_view_build(st, L, (long)i, &v) != 0) {
                ok = 0;
                break;
            }
            ok = tm_json_figures(f, L, &v) == 0;
            tm_view_clear(&v);
        }
        else if (ok) {
            ok = fprintf(f, "\"total_ns\":%llu",
                         (unsigned long long)((th != NULL ? tm_thread_own(th) : 0) +
                                              dn->own_ns)) >= 0;
        }
        ok = ok && fputc('}', f) != EOF;
    }
    ok = ok && fputs("]}\n", f) != EOF;
    if (!ok && PyErr_Occurred()) {
        PyErr_Clear();
    }
    if (st->host->report_commit(token, ok) != PTK_OK || !ok) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write timer.json");
    }
    return PTK_OK;
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
    tm_merged_counts(st, &medges, &mns);
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
    tm_rtree rt = {0};
    size_t nthreads = 0;
    uint64_t unmatched = 0, resynced = 0, max_depth = 0;

    if (tm_labels_build(st, &L) != 0 || tm_view_build(st, &L, -1, &all) != 0) {
        goto done;
    }
    for (size_t i = 0; i < st->nthreads; i++) {
        tm_thread *th = st->threads[i];
        const tm_done *dn = &st->done[i];
        if (dn->ended) {
            nthreads += th == NULL;
            unmatched += dn->unmatched;
            resynced += dn->resynced;
            max_depth = dn->max_depth > max_depth ? dn->max_depth : max_depth;
        }
        if (th == NULL) {
            continue;
        }
        th->max_depth = tm__tree_depth(th);
        nthreads++;
        unmatched += th->unmatched;
        resynced += th->resynced;
        if (th->max_depth > max_depth) {
            max_depth = th->max_depth;
        }
        if (st->per_thread) {
            tm_view v;
            char prefix[64];
            if (tm_view_build(st, &L, (long)i, &v) != 0) {
                goto done;
            }
            tm_thread_prefix(st, prefix, sizeof(prefix), th);
            rc = tm_write_view(st, &L, &v, prefix);
            if (rc == PTK_OK) {
                rc = tm_write_flame(st, &L, (long)i, prefix, NULL);
            }
            tm_view_clear(&v);
            if (rc != PTK_OK) {
                goto done;
            }
        }
    }
    rc = tm_write_view(st, &L, &all, "timer");
    if (rc == PTK_OK) {
        rc = tm_write_flame(st, &L, -1, "timer", &rt);
    }
    if (rc == PTK_OK) {
        rc = tm_write_json(st, &L, &all, args, max_depth, unmatched, resynced,
                           rt.n > 0 ? rt.n - 1 : 0);
    }
    if (rc == PTK_OK) {
        tm_summary(st, &L, &all, args, nthreads);
    }
done:
    if (rc == PTK_EPYTHON && PyErr_Occurred()) {
        rc = st->host->fail(st->ctx, PTK_EPYTHON, "cannot build the report");
    }
    tm_view_clear(&all);
    tm_rtree_clear(&rt);
    tm_labels_clear(&L);
    return rc;
}
