/* reftrack's report: reftrack.json and the summary. Runs after stop, with
 * the GIL and no more events; it reads only what on_ref copied out (names
 * of types, files and functions), never an object that may have died. */
#include "reftrack.h"

#include <stdlib.h>
#include <string.h>

static const rt_state *sort_st;
static int sort_cat;

static int
cmp_types(const void *a, const void *b)
{
    const rt_type *x = &sort_st->types[*(const uint32_t *)a];
    const rt_type *y = &sort_st->types[*(const uint32_t *)b];
    uint64_t cx = x->s[sort_cat].created, cy = y->s[sort_cat].created;
    if (cx != cy) {
        return cx > cy ? -1 : 1;
    }
    if (x->destroyed_untracked != y->destroyed_untracked) {
        return x->destroyed_untracked > y->destroyed_untracked ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Sets d[key] = value (a new reference, stolen). */
static int
set_new(PyObject *d, const char *key, PyObject *value)
{
    if (value == NULL) {
        return -1;
    }
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc;
}

static int
set_u64(PyObject *d, const char *key, uint64_t v)
{
    return set_new(d, key, PyLong_FromUnsignedLongLong(v));
}

/* The per-type list of one category, largest `created` first. */
static PyObject *
types_list(const rt_state *st, int cat)
{
    uint32_t *idx = malloc(((size_t)st->ntypes + 1) * sizeof *idx);
    if (idx == NULL) {
        return PyErr_NoMemory();
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < st->ntypes; i++) {
        const rt_type *t = &st->types[i];
        if (t->s[cat].created > 0 ||
            (cat == RT_PROGRAM && t->destroyed_untracked > 0)) {
            idx[n++] = i;
        }
    }
    sort_st = st;
    sort_cat = cat;
    qsort(idx, n, sizeof *idx, cmp_types);
    PyObject *list = PyList_New(0);
    for (uint32_t k = 0; list != NULL && k < n; k++) {
        const rt_type *t = &st->types[idx[k]];
        const rt_stats *s = &t->s[cat];
        PyObject *e = PyDict_New();
        if (e == NULL || set_new(e, "type", ptk_kit_name_str(t->name)) < 0 ||
            set_u64(e, "created", s->created) < 0 ||
            set_u64(e, "destroyed", s->destroyed) < 0 ||
            set_u64(e, "alive", s->alive) < 0 ||
            set_u64(e, "peak", s->peak) < 0 ||
            set_u64(e, "untracked", s->untracked) < 0 ||
            (cat == RT_PROGRAM &&
             set_u64(e, "destroyed_untracked", t->destroyed_untracked) < 0) ||
            PyList_Append(list, e) < 0) {
            Py_XDECREF(e);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(e);
    }
    free(idx);
    return list;
}

static void
totals(const rt_state *st, int cat, rt_stats *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < st->ntypes; i++) {
        const rt_stats *s = &st->types[i].s[cat];
        out->created += s->created;
        out->destroyed += s->destroyed;
        out->alive += s->alive;
        out->untracked += s->untracked;
    }
}

static PyObject *
totals_dict(const rt_stats *t)
{
    PyObject *d = PyDict_New();
    if (d == NULL || set_u64(d, "created", t->created) < 0 ||
        set_u64(d, "destroyed", t->destroyed) < 0 ||
        set_u64(d, "alive", t->alive) < 0 ||
        set_u64(d, "untracked", t->untracked) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

/* The group key (type, file, line, function) of the sorted keys
 * type << 31 | site; None for what no code made. A new reference. */
static PyObject *
leak_key(const rt_state *st, uint64_t key)
{
    uint32_t ti = (uint32_t)(key >> 31);
    uint32_t si = (uint32_t)(key & 0x7FFFFFFF);
    const rt_site *site = &st->site_tab[si];
    if (site->code == UINT32_MAX) {
        PyObject *tn = ptk_kit_name_str(st->types[ti].name);
        return tn ? Py_BuildValue("(NOOO)", tn, Py_None, Py_None, Py_None) : NULL;
    }
    const rt_code *c = &st->codes[site->code];
    PyObject *file = c->file != NULL ? ptk_kit_name_str(c->file) : Py_NewRef(Py_None);
    PyObject *fn = c->function != NULL ? ptk_kit_name_str(c->function) : Py_NewRef(Py_None);
    PyObject *tn = ptk_kit_name_str(st->types[ti].name);
    if (file == NULL || fn == NULL || tn == NULL) {
        Py_XDECREF(file);
        Py_XDECREF(fn);
        Py_XDECREF(tn);
        return NULL;
    }
    return Py_BuildValue("(NNiN)", tn, file, (int)site->line, fn);
}

/* {group key: objects} of the program objects alive at stop. Same-looking
 * groups (two types or code objects with one name) merge. *leaked
 * receives the number of objects. A new reference, or NULL. */
static PyObject *
leak_counts(const rt_state *st, uint64_t *leaked)
{
    uint64_t *keys = malloc(((size_t)st->live.n + 1) * sizeof *keys);
    if (keys == NULL) {
        return PyErr_NoMemory();
    }
    size_t n = 0;
    for (uint64_t i = 0; i <= st->live.mask; i++) {
        const rt_slot *s = &st->live.slots[i];
        if (s->key != 0 && (s->val & 1) == RT_PROGRAM) {
            keys[n++] = s->val >> 1; /* type << 31 | site */
        }
    }
    *leaked = n;
    qsort(keys, n, sizeof *keys, cmp_u64);
    PyObject *merged = PyDict_New();
    for (size_t i = 0; merged != NULL && i < n;) {
        size_t j = i;
        while (j < n && keys[j] == keys[i]) {
            j++;
        }
        PyObject *k = leak_key(st, keys[i]);
        PyObject *old = k ? PyDict_GetItemWithError(merged, k) : NULL;
        uint64_t count = (uint64_t)(j - i);
        if (old != NULL) {
            count += PyLong_AsUnsignedLongLong(old);
        }
        PyObject *cnt = PyErr_Occurred() ? NULL : PyLong_FromUnsignedLongLong(count);
        if (k == NULL || cnt == NULL || PyDict_SetItem(merged, k, cnt) < 0) {
            Py_CLEAR(merged);
        }
        Py_XDECREF(cnt);
        Py_XDECREF(k);
        i = j;
    }
    free(keys);
    return merged;
}

/* The sort row (-count, type, file, line, function, pos, entry) of a
 * group; None sorts as empty. A new reference, or NULL. */
static PyObject *
leak_row(PyObject *k, PyObject *v, Py_ssize_t pos)
{
    PyObject *file = PyTuple_GET_ITEM(k, 1);
    PyObject *line = PyTuple_GET_ITEM(k, 2);
    PyObject *fn = PyTuple_GET_ITEM(k, 3);
    PyObject *neg = PyNumber_Negative(v);
    PyObject *entry = PyDict_New();
    PyObject *row = NULL;
    if (neg != NULL && entry != NULL &&
        PyDict_SetItemString(entry, "type", PyTuple_GET_ITEM(k, 0)) == 0 &&
        PyDict_SetItemString(entry, "count", v) == 0 &&
        PyDict_SetItemString(entry, "file", file) == 0 &&
        PyDict_SetItemString(entry, "line", line) == 0 &&
        PyDict_SetItemString(entry, "function", fn) == 0) {
        row = Py_BuildValue("(OONiNnO)", neg, PyTuple_GET_ITEM(k, 0),
                            file == Py_None ? PyUnicode_FromString("") : Py_NewRef(file),
                            line == Py_None ? 0 : (int)PyLong_AsLong(line),
                            fn == Py_None ? PyUnicode_FromString("") : Py_NewRef(fn), pos,
                            entry);
    }
    Py_XDECREF(entry);
    Py_XDECREF(neg);
    return row;
}

/* Leak groups: program objects alive at stop, by (type, file, line,
 * function). Returns a list of dicts sorted largest first (all groups);
 * *leaked receives the number of objects. */
static PyObject *
leak_groups(const rt_state *st, uint64_t *leaked)
{
    PyObject *merged = leak_counts(st, leaked);
    if (merged == NULL) {
        return NULL;
    }
    /* Sort by (-count, type, file, line, function); None sorts as empty.
     * The merged keys are distinct, but None and "" are not: the dict
     * order breaks that last tie (dicts themselves do not compare). */
    PyObject *rows = PyList_New(0);
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (rows != NULL && PyDict_Next(merged, &pos, &k, &v)) {
        PyObject *row = leak_row(k, v, pos);
        if (row == NULL || PyList_Append(rows, row) < 0) {
            Py_CLEAR(rows);
        }
        Py_XDECREF(row);
    }
    Py_DECREF(merged);
    if (rows == NULL || PyList_Sort(rows) < 0) {
        Py_XDECREF(rows);
        return NULL;
    }
    PyObject *out = PyList_New(PyList_GET_SIZE(rows));
    for (Py_ssize_t i = 0; out != NULL && i < PyList_GET_SIZE(rows); i++) {
        PyObject *e = PyTuple_GET_ITEM(PyList_GET_ITEM(rows, i), 6);
        PyList_SET_ITEM(out, i, Py_NewRef(e));
    }
    Py_DECREF(rows);
    return out;
}

/* The summary's table of the @p shown largest leak groups. */
static void
summary_leaks(FILE *out, PyObject *leaks, Py_ssize_t shown)
{
    fprintf(out, "reftrack: alive at stop, by creation site (%zd of %zd "
                 "groups):\n",
            shown, PyList_GET_SIZE(leaks));
    for (Py_ssize_t i = 0; i < shown; i++) {
        PyObject *e = PyList_GET_ITEM(leaks, i);
        PyObject *file = PyDict_GetItemString(e, "file");
        PyObject *line = PyDict_GetItemString(e, "line");
        PyObject *fn = PyDict_GetItemString(e, "function");
        PyObject *hold0;
        const char *tn = ptk_kit_name_bytes(PyDict_GetItemString(e, "type"), NULL, &hold0);
        unsigned long long c =
            PyLong_AsUnsignedLongLong(PyDict_GetItemString(e, "count"));
        if (file == NULL || file == Py_None) {
            fprintf(out, "  %10llu  ", c);
            ptk_kit_name_write(out, tn ? tn : "?");
            fputs("  (site not recorded)\n", out);
        }
        else {
            PyObject *hold, *hold2;
            const char *f = ptk_kit_name_bytes(file, NULL, &hold);
            const char *n = ptk_kit_name_bytes(fn, NULL, &hold2);
            fprintf(out, "  %10llu  ", c);
            ptk_kit_name_write(out, tn ? tn : "?");
            fputs("  ", out);
            ptk_kit_name_write(out, f ? f : "?");
            fprintf(out, ":%ld in ", PyLong_AsLong(line));
            ptk_kit_name_write(out, n ? n : "?");
            fputc('\n', out);
            Py_XDECREF(hold);
            Py_XDECREF(hold2);
        }
        Py_XDECREF(hold0);
    }
    PyErr_Clear();
}

/* The summary's warning that another tool replaced the reference tracer. */
static void
summary_evicted(const rt_state *st, FILE *out, const ptk_ref_status *rs)
{
    double at = st->first_event_ns && rs->evicted_at_ns > st->first_event_ns
                    ? (double)(rs->evicted_at_ns - st->first_event_ns) / 1e9
                    : 0.0;
    double last = st->events > 0 ? (double)(st->last_event_ns -
                                            st->first_event_ns) /
                                       1e9
                                 : 0.0;
    fprintf(out,
            "reftrack: WARNING: another tool replaced the reference "
            "tracer (tracemalloc.start() does): no events after the "
            "%llu-th, from about %.3f s after tracing started (within "
            "1024 events of that), noticed at %.3f s. Counts are "
            "incomplete and objects destroyed after that look alive\n",
            (unsigned long long)st->events, last, at);
}

static void
summary(const rt_state *st, FILE *out, PyObject *leaks, Py_ssize_t shown,
        uint64_t leaked, const rt_stats *prog, const rt_stats *trc,
        const ptk_ref_status *rs)
{
    if (out == NULL) {
        return;
    }
    fprintf(out,
            "reftrack: %llu objects created while tracing, %llu of them "
            "destroyed, %llu alive at stop\n",
            (unsigned long long)prog->created,
            (unsigned long long)prog->destroyed,
            (unsigned long long)prog->alive);
    fprintf(out,
            "reftrack: %llu more objects exist only because tracing is on "
            "(%llu alive at stop): kept apart\n",
            (unsigned long long)trc->created, (unsigned long long)trc->alive);
    if (leaked > 0) {
        summary_leaks(out, leaks, shown);
    }
    if (st->overflow > 0) {
        fprintf(out,
                "reftrack: %llu objects were not tracked: the live table was "
                "full (max_tracked=%llu); they are counted as 'untracked'\n",
                (unsigned long long)st->overflow,
                (unsigned long long)st->max_tracked);
    }
    if (st->missed_destroy + st->missed_at_stop > 0) {
        fprintf(out,
                "reftrack: this CPython freed %llu objects without telling "
                "the reference tracer (gh-130382), noticed when their "
                "address was reused or, for instances of classes, when the "
                "garbage collector no longer had them; they count as "
                "destroyed, but 'alive' and 'peak' of other types may still "
                "include freed objects\n",
                (unsigned long long)(st->missed_destroy + st->missed_at_stop));
    }
    if (st->dropped > 0) {
        fprintf(out, "reftrack: %llu events not counted: out of memory or "
                     "more than %lu types\n",
                (unsigned long long)st->dropped,
                (unsigned long)RT_MAX_TYPES);
    }
    if (st->sites_dropped > 0) {
        fprintf(out, "reftrack: %llu objects got no creation site: out of "
                     "memory or more than %lu code objects / %lu sites\n",
                (unsigned long long)st->sites_dropped,
                (unsigned long)RT_MAX_CODES, (unsigned long)RT_MAX_SITES);
    }
    if (st->chained) {
        fprintf(out, "reftrack: the reference tracer installed before "
                     "(e.g. tracemalloc) got every event forwarded\n");
    }
    if (rs->evicted) {
        summary_evicted(st, out, rs);
    }
}

#if RT_HAVE_REFTRACER /* PyUnstable_GC_VisitObjects: 3.12+ */
/* PyUnstable_GC_VisitObjects callbacks: count, then note each object's
 * address and type (a map half full at most; objects made between the two
 * visits are left out, and are not the ones verified). */
static int
count_object(PyObject *o, void *arg)
{
    (void)o;
    (*(size_t *)arg)++;
    return 1;
}

struct seen_visit {
    rt_map *map;
    size_t room;
    int full; /* more objects than counted: nothing can be concluded */
};

static int
see_object(PyObject *o, void *arg)
{
    struct seen_visit *v = arg;
    if (v->room == 0) {
        v->full = 1;
        return 0;
    }
    v->room--;
    rt_slot *s = rt_map_find(v->map, (uintptr_t)o);
    s->key = (uintptr_t)o;
    s->val = (uintptr_t)Py_TYPE(o);
    return 1;
}

/* Some CPython versions free objects without telling the reference tracer
 * (3.13.0's eval loop decrefs without it, gh-130382). An instance of a class
 * is tracked by the garbage collector for its whole life, so one that the
 * collector no longer lists is gone: count it destroyed. Other types cannot
 * be checked this way (the GC may untrack a live tuple or dict). */
static int
verify_alive(rt_state *st)
{
    int any = 0;
    if (st->destroy_missed != 1) {
        return 0;
    }
    for (uint32_t i = 0; i < st->ntypes && !any; i++) {
        any = st->types[i].verify &&
              (st->types[i].s[0].alive || st->types[i].s[1].alive);
    }
    if (!any) {
        return 0;
    }
    /* the collector's objects, visited in place: no import and no list (a
     * report may run while the interpreter finalizes, when builtins has no
     * __import__ any more) */
    size_t count = 0;
    PyUnstable_GC_VisitObjects(count_object, &count);
    rt_map seen;
    unsigned bits = 10;
    while (((uint64_t)1 << bits) < (uint64_t)count * 2 + 2) {
        bits++;
    }
    if (rt_map_init(&seen, bits) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    struct seen_visit v = {&seen, ((size_t)1 << bits) / 2, 0};
    PyUnstable_GC_VisitObjects(see_object, &v);
    if (v.full) {
        rt_map_free(&seen);
        return 0;
    }
    /* Collect first: erasing moves entries around. */
    size_t n = 0, cap = 256;
    uint64_t *dead = malloc(cap * sizeof *dead);
    for (uint64_t i = 0; dead != NULL && i <= st->live.mask; i++) {
        const rt_slot *s = &st->live.slots[i];
        if (s->key == 0) {
            continue;
        }
        const rt_type *t = &st->types[s->val >> 32];
        if (!t->verify) {
            continue;
        }
        const rt_slot *g = rt_map_find(&seen, s->key);
        if (g->key == s->key && g->val == t->tp) {
            continue;
        }
        if (PTK_KIT_RESERVE(dead, cap, n + 1, 256) != 0) {
            break;
        }
        dead[n++] = s->key;
    }
    rt_map_free(&seen);
    if (dead == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        rt_slot *s = rt_map_find(&st->live, dead[i]);
        rt_stats *x = &st->types[s->val >> 32].s[s->val & 1];
        x->destroyed++;
        x->alive--;
        rt_map_erase(&st->live, s);
    }
    st->missed_at_stop += n;
    free(dead);
    return 0;
}
#else
static int
verify_alive(rt_state *st)
{
    (void)st; /* no reference tracer: nothing recorded to verify */
    return 0;
}
#endif

int
rt_report(rt_state *st, const ptk_report_args *args)
{
    if (verify_alive(st) < 0) {
        return PTK_EPYTHON;
    }
    ptk_ref_status rs;
    memset(&rs, 0, sizeof rs);
    rs.struct_size = sizeof rs;
    st->host->ref_status(&rs);

    rt_stats prog, trc;
    totals(st, RT_PROGRAM, &prog);
    totals(st, RT_TRACING, &trc);
    uint64_t destroyed_untracked = 0;
    for (uint32_t i = 0; i < st->ntypes; i++) {
        destroyed_untracked += st->types[i].destroyed_untracked;
    }
    uint64_t leaked = 0;
    PyObject *root = PyDict_New();
    PyObject *leaks = root ? leak_groups(st, &leaked) : NULL;
    PyObject *tracing = totals_dict(&trc);
    if (leaks == NULL || tracing == NULL) {
        goto fail;
    }
    Py_ssize_t ngroups = PyList_GET_SIZE(leaks);
    Py_ssize_t shown = st->top == 0 || st->top > ngroups ? ngroups
                                                         : (Py_ssize_t)st->top;
    double evicted_after = -1.0;
    if (rs.evicted && st->first_event_ns &&
        rs.evicted_at_ns >= st->first_event_ns) {
        evicted_after = (double)(rs.evicted_at_ns - st->first_event_ns) / 1e9;
    }
    if (set_new(root, "types", types_list(st, RT_PROGRAM)) < 0 ||
        set_new(root, "leaks", PyList_GetSlice(leaks, 0, shown)) < 0 ||
        set_u64(root, "leak_groups", (uint64_t)ngroups) < 0 ||
        set_u64(root, "leaked", leaked) < 0 ||
        set_new(root, "program", totals_dict(&prog)) < 0 ||
        set_new(tracing, "types", types_list(st, RT_TRACING)) < 0 ||
        PyDict_SetItemString(root, "tracing", tracing) < 0 ||
        set_u64(root, "destroyed_untracked", destroyed_untracked) < 0 ||
        set_new(root, "evicted", PyBool_FromLong(rs.evicted)) < 0 ||
        set_new(root, "evicted_after_s",
                evicted_after >= 0 ? PyFloat_FromDouble(evicted_after)
                                   : Py_NewRef(Py_None)) < 0 ||
        set_u64(root, "events_before_eviction", rs.evicted ? st->events : 0) < 0 ||
        set_new(root, "last_event_s",
                rs.evicted && st->events > 0
                    ? PyFloat_FromDouble((double)(st->last_event_ns -
                                                  st->first_event_ns) /
                                         1e9)
                    : Py_NewRef(Py_None)) < 0 ||
        set_new(root, "chained", PyBool_FromLong(st->chained)) < 0 ||
        set_u64(root, "overflow", st->overflow) < 0 ||
        set_u64(root, "max_tracked", st->max_tracked) < 0 ||
        set_u64(root, "missed_destroy", st->missed_destroy + st->missed_at_stop) < 0 ||
        set_u64(root, "dropped", st->dropped) < 0 ||
        set_u64(root, "sites_dropped", st->sites_dropped) < 0 ||
        set_new(root, "sites", PyBool_FromLong(st->sites)) < 0 ||
        set_u64(root, "events", st->events) < 0 ||
        set_new(root, "destroy_events_reliable",
                st->destroy_missed < 0 ? Py_NewRef(Py_None)
                                       : PyBool_FromLong(!st->destroy_missed)) < 0) {
        goto fail;
    }
    int rc = st->host->report_write_object(args->ctx, "reftrack.json", root,
                                           PTK_FMT_JSON);
    summary(st, args->summary, leaks, shown, leaked, &prog, &trc, &rs);
    Py_DECREF(tracing);
    Py_DECREF(leaks);
    Py_DECREF(root);
    return rc;

fail:
    Py_XDECREF(tracing);
    Py_XDECREF(leaks);
    Py_XDECREF(root);
    return PTK_EPYTHON;
}
