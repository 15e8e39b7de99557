/* counter: counts the events it is subscribed to, calls per Python function
 * (code object) and per C function, and events per thread.
 *
 * Options: events=call;return;… (any event names, or profile, trace, all;
 * default profile), top=N (rows of the stderr table, default 10),
 * per_context=true (the same counts per context, ptk_context_set()).
 * Output: counter.json, and a table on stderr. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <pytracekit/plugin.h>

#include "../common/c_label.h"
#include "../common/context_index.h"
#include "../common/fs_name.h"
#include "../common/grow.h"
#include "../common/pair_map.h"
#include "../common/py_import.h"

typedef struct fn_entry {
    const void *key; /* code object, or the C function's PyMethodDef */
    PyObject *obj;   /* strong: for a Python function (name, qualname,
                        file, line) of its code object, not the code
                        object (a program that makes and drops code
                        keeps none of it alive); for a C function its
                        (name, qualname, module, label), taken at first
                        sight, or a callable keyed by identity */
    PyObject *code;  /* strong: the code object, only when the hub has
                        no code slot (then it is the map's key) */
    int is_c;        /* 0: Python; 1: C, obj the callable; 2: C, obj its names */
    uint64_t calls;
} fn_entry;

/* per_context=true: the counts of one context (all contexts of one name). */
typedef struct ctx_counts {
    PyObject *name;    /* str; "" for the time outside any context */
    uint64_t events[PTK_EV_COUNT];
    uint64_t *calls;   /* by index in counter::fns */
    size_t ncalls;     /* its capacity (zeroed beyond what was counted) */
} ctx_counts;

typedef struct counter {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    uint64_t events[PTK_EV_COUNT];
    unsigned int mask; /* what this instance subscribed to */
    fn_entry *fns;     /* in the order first seen */
    size_t nfns, capfns;
    ptk_kit_map index;    /* key -> 1 + its index in fns */
    const void *last_key; /* the function counted last (recursion, loops) */
    fn_entry *last;
    PyObject *last_pin; /* strong: last_key's code object, so that its
                           address is not reused while it is last_key */
    PyObject *by_names; /* (name, qualname, file, line) -> 1 + index in fns:
                           a code slot is forgotten when the session stops,
                           so a restarted one finds the entry again here */
    uint64_t *per_thread;
    size_t nthreads;
    int64_t top;
    int per_context;
    ctx_counts *ctxs;   /* per_context: in the order first seen */
    size_t nctxs, capctxs;
    PyObject *ctx_index; /* name -> index in ctxs */
    size_t cur_at;       /* the current context's index in ctxs */
    uint64_t ctx_id;     /* the id it was read at */
    int ctx_seen;
} counter;

static const ptk_option_spec options[] = {
    {"events", PTK_OPT_LIST, "profile",
     "events to count, ',' separated: call, return, line, exception, "
     "c_call, c_return, c_exception, opcode, branch, jump, or the groups "
     "profile, trace, all, branches",
     NULL},
    {"top", PTK_OPT_INT, "10", "rows in the summary table", NULL},
    {"per_context", PTK_OPT_BOOL, "false",
     "also count per context (ptk_context_set(): per test phase under "
     "pytest -p pytracekit): a 'contexts' section in counter.json",
     NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static int
counter_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    counter *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return PTK_ENOMEM;
    }
    c->host = args->host;
    c->ctx = args->ctx;
    c->top = args->host->option(args, "top")->i;
    const char *ev = args->host->option(args, "events")->s;
    if (args->host->event_parse_mask(ev, events) < 0 ||
        (*events & ~(PTK_MASK_ALL | PTK_MASK_BRANCHES)) ||
        (*events & PTK_MASK_REF)) {
        snprintf(args->errbuf, args->errbuf_size,
                 "option 'events': cannot parse '%s' (names: call, return, "
                 "line, exception, c_call, c_return, c_exception, opcode, "
                 "branch, jump, or the groups profile, trace, all, "
                 "branches)",
                 ev);
        free(c);
        return PTK_EOPTTYPE;
    }
    if (c->top < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "option 'top' must be >= 0, found %lld", (long long)c->top);
        free(c);
        return PTK_EOPTTYPE;
    }
    c->mask = *events;
    c->per_context = args->host->option(args, "per_context")->i != 0;
    if (c->per_context && args->host->struct_size <= offsetof(ptk_host, context)) {
        snprintf(args->errbuf, args->errbuf_size,
                 "option 'per_context' needs a host of ABI 1.4 or later");
        free(c);
        return PTK_EOPTTYPE;
    }
    *state = c;
    return PTK_OK;
}

/* The entry of @p key, added (zeroed, key NULL) if new; NULL when out of
 * memory. Adding may move the entries. */
static fn_entry *
lookup(counter *c, const void *key)
{
    uintptr_t at = (uintptr_t)ptk_kit_map_get(&c->index, key, NULL);
    if (at != 0) {
        return &c->fns[at - 1];
    }
    if (PTK_KIT_RESERVE(c->fns, c->capfns, c->nfns + 1, 256) != 0 ||
        ptk_kit_map_put(&c->index, key, NULL, (void *)(uintptr_t)(c->nfns + 1)) != 0) {
        return NULL;
    }
    fn_entry *e = &c->fns[c->nfns++];
    memset(e, 0, sizeof(*e));
    return e;
}

/* (name, qualname, module, label) of a C callable: its names after the
 * class that defines it, and cProfile's label. */
static PyObject *
c_names(PyObject *obj, PyObject *cself)
{
    PyObject *names = ptk_kit_c_names(obj, cself);
    PyObject *label = ptk_kit_c_label(obj, cself);
    PyObject *res = NULL;
    if (names != NULL && label != NULL) {
        res = Py_BuildValue("(OOOO)", PyTuple_GET_ITEM(names, 0),
                            PyTuple_GET_ITEM(names, 1),
                            PyTuple_GET_ITEM(names, 2), label);
    }
    Py_XDECREF(names);
    Py_XDECREF(label);
    return res;
}

/* The entry of @p code seen for the first time by this attachment (its
 * slot @p slot empty): the one of its names if a code object of the same
 * names was seen before (this one, before a stop and start), else new. */
static fn_entry *
code_entry_named(counter *c, PyCodeObject *code, void **slot)
{
    PyObject *names = Py_BuildValue("(OOOi)", code->co_name, code->co_qualname,
                                    code->co_filename, code->co_firstlineno);
    if (names == NULL || (c->by_names == NULL && (c->by_names = PyDict_New()) == NULL)) {
        Py_XDECREF(names);
        PyErr_Clear();
        return NULL;
    }
    PyObject *at = PyDict_GetItemWithError(c->by_names, names);
    if (at != NULL) {
        Py_DECREF(names);
        *slot = (void *)(uintptr_t)PyLong_AsSize_t(at);
        return &c->fns[(uintptr_t)*slot - 1];
    }
    PyObject *index = PyErr_Occurred() ? NULL : PyLong_FromSize_t(c->nfns + 1);
    if (index == NULL || PTK_KIT_RESERVE(c->fns, c->capfns, c->nfns + 1, 256) != 0 ||
        PyDict_SetItem(c->by_names, names, index) < 0) {
        Py_XDECREF(index);
        Py_DECREF(names);
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(index);
    fn_entry *e = &c->fns[c->nfns++];
    memset(e, 0, sizeof(*e));
    e->obj = names;
    e->key = code;
    *slot = (void *)(uintptr_t)c->nfns;
    return e;
}

/* The entry of the Python code object @p code: through the hub's per-code
 * slot (1 + the index; it goes with the code object, so a new code object at
 * a freed one's address starts afresh), else the map, which then keeps the
 * code object. NULL when out of memory. */
static fn_entry *
code_entry(counter *c, PyCodeObject *code)
{
    void **slot = c->host->struct_size > offsetof(ptk_host, code_slot) &&
                          c->host->code_slot != NULL
                      ? c->host->code_slot(c->ctx, code)
                      : NULL;
    fn_entry *e;
    if (slot == NULL) {
        e = lookup(c, code);
        if (e != NULL && e->key == NULL) {
            e->code = Py_NewRef((PyObject *)code);
        }
    }
    else if (*slot != NULL) {
        return &c->fns[(uintptr_t)*slot - 1];
    }
    else {
        return code_entry_named(c, code, slot);
    }
    if (e == NULL || e->key != NULL) {
        return e;
    }
    e->obj = Py_BuildValue("(OOOi)", code->co_name, code->co_qualname, code->co_filename,
                           code->co_firstlineno);
    if (e->obj == NULL) {
        PyErr_Clear();
        return NULL; /* e stays, without a key: never reported */
    }
    e->key = code;
    return e;
}

/* per_context: one more call of the function at @p at (index in fns) in
 * the current context. */
static int
ctx_count_call(counter *c, size_t at)
{
    ctx_counts *x = &c->ctxs[c->cur_at];
    if (PTK_KIT_RESERVE_ZERO(x->calls, x->ncalls, at + 1, 256) != 0) {
        return PTK_ENOMEM;
    }
    x->calls[at]++;
    return PTK_OK;
}

/* per_context: the context is another than at the last event: find (or
 * make) the counts of its name. */
static int
ctx_switch(counter *c, uint64_t id, const char *name)
{
    if (PTK_KIT_RESERVE(c->ctxs, c->capctxs, c->nctxs + 1, 64) != 0) {
        return PTK_ENOMEM;
    }
    PyObject *key;
    Py_ssize_t at = ptk_kit_context_index(&c->ctx_index, NULL, name, (Py_ssize_t)c->nctxs, &key);
    if (at < 0) {
        return PTK_ENOMEM;
    }
    if (key != NULL) {
        ctx_counts *x = &c->ctxs[c->nctxs++];
        memset(x, 0, sizeof(*x));
        x->name = key;
    }
    c->cur_at = (size_t)at;
    c->ctx_id = id;
    c->ctx_seen = 1;
    return PTK_OK;
}

static int
count_py_call(counter *c, PyCodeObject *code)
{
    if ((const void *)code == c->last_key) {
        c->last->calls++;
        return c->per_context ? ctx_count_call(c, (size_t)(c->last - c->fns)) : PTK_OK;
    }
    fn_entry *e = code_entry(c, code);
    if (e == NULL) {
        return PTK_ENOMEM;
    }
    e->calls++;
    PyObject *old = c->last_pin;
    c->last_pin = Py_NewRef((PyObject *)code);
    c->last_key = code;
    c->last = e;
    Py_XDECREF(old);
    return c->per_context ? ctx_count_call(c, (size_t)(e - c->fns)) : PTK_OK;
}

static int
count_call(counter *c, const void *key, PyObject *obj, PyObject *cself,
           int is_c)
{
    if (key == c->last_key) {
        c->last->calls++;
        return c->per_context ? ctx_count_call(c, (size_t)(c->last - c->fns)) : PTK_OK;
    }
    fn_entry *e = lookup(c, key);
    if (e == NULL) {
        return PTK_ENOMEM;
    }
    if (e->key == NULL) {
        /* A built-in method holds its receiver: keeping it would keep that
         * object alive, and a method of a pytracekit.Session (its
         * __exit__) the session itself, through a cycle no collector sees.
         * Its names are all the report needs. */
        if (is_c && (Py_IS_TYPE(obj, &PyMethodDescr_Type) ||
                     PyCFunction_Check(obj))) {
            is_c = 2;
        }
        e->obj = is_c != 2 ? Py_NewRef(obj) : c_names(obj, cself);
        if (e->obj == NULL) {
            return PTK_ENOMEM; /* e stays, without a key: never reported */
        }
        e->key = key;
        e->is_c = is_c;
    }
    e->calls++;
    c->last_key = key;
    c->last = e;
    return c->per_context ? ctx_count_call(c, (size_t)(e - c->fns)) : PTK_OK;
}

static int
counter_event(void *state, const ptk_event *ev)
{
    counter *c = state;
    c->events[ev->kind]++;
    if (c->per_context) {
        uint64_t id;
        const char *name = c->host->context(&id);
        if ((!c->ctx_seen || id != c->ctx_id) && ctx_switch(c, id, name) != PTK_OK) {
            return c->host->fail(c->ctx, PTK_ENOMEM, "out of memory recording a context");
        }
        c->ctxs[c->cur_at].events[ev->kind]++;
    }
    uint32_t ti = ev->thread->index;
    if (PTK_KIT_RESERVE_ZERO(c->per_thread, c->nthreads, (size_t)ti + 1, 8) != 0) {
        return PTK_ENOMEM;
    }
    c->per_thread[ti]++;
    if (ev->kind == PTK_EV_CALL) {
        return count_py_call(c, ev->code);
    }
    if (ev->kind == PTK_EV_C_CALL) {
        /* Bound methods made for the event are new objects each time: the
         * C function's identity is its method definition (the same for a
         * method descriptor, PTK_FLAG_UNBOUND_C, and its bound methods). */
        const void *key = ptk_event_c_def(ev);
        return count_call(c, key != NULL ? key : (const void *)ev->arg,
                          ev->arg, ev->c_self, 1);
    }
    return PTK_OK;
}

static PyObject *
abspath(PyObject *file)
{
    PyObject *os_mod = ptk_kit_import("os");
    PyObject *os = os_mod ? PyObject_GetAttrString(os_mod, "path") : NULL;
    Py_XDECREF(os_mod);
    PyObject *r = NULL;
    if (os && PyUnicode_Check(file) && PyUnicode_GET_LENGTH(file) > 0 &&
        PyUnicode_READ_CHAR(file, 0) != '<') {
        r = PyObject_CallMethod(os, "abspath", "O", file);
    }
    Py_XDECREF(os);
    if (r == NULL) {
        PyErr_Clear();
        r = Py_NewRef(file);
    }
    return r;
}

static PyObject *
function_record(const fn_entry *e)
{
    if (!e->is_c) {
        PyObject *t = e->obj; /* (name, qualname, file, line) */
        PyObject *file = abspath(PyTuple_GET_ITEM(t, 2));
        PyObject *d = Py_BuildValue("{s:s,s:O,s:O,s:N,s:O,s:K}", "kind",
                                    "python", "name", PyTuple_GET_ITEM(t, 0), "qualname",
                                    PyTuple_GET_ITEM(t, 1), "file", file, "line",
                                    PyTuple_GET_ITEM(t, 3), "calls",
                                    (unsigned long long)e->calls);
        return d;
    }
    PyObject *names = e->is_c == 2 ? Py_NewRef(e->obj) : c_names(e->obj, NULL);
    if (names == NULL) {
        return NULL;
    }
    PyObject *d = Py_BuildValue("{s:s,s:O,s:O,s:O,s:O,s:O,s:i,s:K}", "kind",
                                "c", "name", PyTuple_GET_ITEM(names, 0),
                                "qualname", PyTuple_GET_ITEM(names, 1),
                                "module", PyTuple_GET_ITEM(names, 2), "label",
                                PyTuple_GET_ITEM(names, 3),
                                "file", Py_None, "line", 0, "calls",
                                (unsigned long long)e->calls);
    Py_DECREF(names);
    return d;
}

static PyObject *
c_display(PyObject *obj)
{
    PyObject *label = ptk_kit_c_label(obj, NULL);
    if (label == NULL) {
        return NULL;
    }
    PyObject *res = ptk_kit_c_display(label);
    Py_DECREF(label);
    return res;
}

static int
by_calls(const void *a, const void *b)
{
    const fn_entry *x = *(const fn_entry *const *)a;
    const fn_entry *y = *(const fn_entry *const *)b;
    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1
                                                         : 0;
}

/* {event name: count}: the kinds of 0.1 always; branch and jump when
 * counted. A new reference, or NULL with an exception set. */
static PyObject *
events_record(const counter *c, const uint64_t *counts)
{
    PyObject *events = PyDict_New();
    for (int k = 0; events != NULL && k < PTK_EV_COUNT; k++) {
        if ((PTK_MASK(k) & PTK_MASK_REF) ||
            (k > PTK_EV_OPCODE && !(c->mask & PTK_MASK(k)))) {
            continue;
        }
        PyObject *v = PyLong_FromUnsignedLongLong(counts[k]);
        if (v == NULL || PyDict_SetItemString(events, ptk_event_name(k), v) < 0) {
            Py_CLEAR(events);
        }
        Py_XDECREF(v);
    }
    return events;
}

/* Appends @p d (a new reference, or NULL) to @p list; -1 on error. */
static int
append_new(PyObject *list, PyObject *d)
{
    int rc = d != NULL && PyList_Append(list, d) == 0 ? 0 : -1;
    Py_XDECREF(d);
    return rc;
}

/* The functions counted, most calls first, into @p sorted (room for all);
 * returns how many. */
static size_t
sort_functions(counter *c, fn_entry **sorted)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nfns; i++) {
        if (c->fns[i].key != NULL) {
            sorted[n++] = &c->fns[i];
        }
    }
    qsort(sorted, n, sizeof *sorted, by_calls);
    return n;
}

/* [{id, name, events}] of the threads that had events, or NULL. */
static PyObject *
threads_record(const counter *c)
{
    PyObject *threads = PyList_New(0);
    for (size_t i = 0; threads != NULL && i < c->nthreads; i++) {
        const ptk_thread *t = c->host->thread_at(i);
        if (c->per_thread[i] == 0 || t == NULL) {
            continue;
        }
        if (append_new(threads, Py_BuildValue("{s:K,s:s,s:K}", "id",
                                              (unsigned long long)t->ident, "name",
                                              t->name, "events",
                                              (unsigned long long)c->per_thread[i])) < 0) {
            Py_CLEAR(threads);
        }
    }
    return threads;
}

/* qsort's comparison of indexes in fns by their calls in one context
 * (by_ctx_calls_of; the report runs under the GIL, one at a time). */
static const uint64_t *by_ctx_calls_of;

static int
by_ctx_calls(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t cx = by_ctx_calls_of[x], cy = by_ctx_calls_of[y];
    return cx != cy ? (cx < cy ? 1 : -1) : (x < y ? -1 : 1);
}

/* per_context: {name: {events, functions (most calls first)}}, each
 * function record that of the whole run with the context's calls. */
static PyObject *
contexts_record(const counter *c)
{
    PyObject *all = PyDict_New();
    size_t *order = calloc(c->nfns + 1, sizeof *order);
    if (all == NULL || order == NULL) {
        free(order);
        Py_XDECREF(all);
        return all == NULL ? NULL : PyErr_NoMemory();
    }
    for (size_t i = 0; all != NULL && i < c->nctxs; i++) {
        const ctx_counts *x = &c->ctxs[i];
        size_t n = 0;
        for (size_t j = 0; j < x->ncalls && j < c->nfns; j++) {
            if (x->calls[j] != 0 && c->fns[j].key != NULL) {
                order[n++] = j;
            }
        }
        /* most calls first, then in the order first seen */
        by_ctx_calls_of = x->calls;
        qsort(order, n, sizeof *order, by_ctx_calls);
        PyObject *funcs = PyList_New(0);
        for (size_t j = 0; funcs != NULL && j < n; j++) {
            PyObject *d = function_record(&c->fns[order[j]]);
            PyObject *k = d ? PyLong_FromUnsignedLongLong(x->calls[order[j]]) : NULL;
            if (k == NULL || PyDict_SetItemString(d, "calls", k) < 0 ||
                PyList_Append(funcs, d) < 0) {
                Py_CLEAR(funcs);
            }
            Py_XDECREF(k);
            Py_XDECREF(d);
        }
        PyObject *events = funcs ? events_record(c, x->events) : NULL;
        PyObject *rec = events ? Py_BuildValue("{s:O,s:O}", "events", events,
                                               "functions", funcs)
                               : NULL;
        if (rec == NULL || PyDict_SetItem(all, x->name, rec) < 0) {
            Py_CLEAR(all);
        }
        Py_XDECREF(rec);
        Py_XDECREF(events);
        Py_XDECREF(funcs);
    }
    free(order);
    return all;
}

/* counter.json: {events, functions (most calls first), threads}, and
 * with per_context its contexts. */
static int
write_json(counter *c, const ptk_report_args *args, fn_entry **sorted, size_t n)
{
    PyObject *root = PyDict_New();
    PyObject *events = events_record(c, c->events);
    PyObject *funcs = PyList_New(0);
    PyObject *threads = threads_record(c);
    int rc = PTK_ENOMEM;
    if (!root || !events || !funcs || !threads) {
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (append_new(funcs, function_record(sorted[i])) < 0) {
            goto done;
        }
    }
    if (PyDict_SetItemString(root, "events", events) < 0 ||
        PyDict_SetItemString(root, "functions", funcs) < 0 ||
        PyDict_SetItemString(root, "threads", threads) < 0) {
        goto done;
    }
    if (c->per_context) {
        PyObject *ctxs = contexts_record(c);
        if (ctxs == NULL || PyDict_SetItemString(root, "contexts", ctxs) < 0) {
            Py_XDECREF(ctxs);
            goto done;
        }
        Py_DECREF(ctxs);
    }
    rc = c->host->report_write_object(args->ctx, "counter.json", root, PTK_FMT_JSON);
done:
    Py_XDECREF(root);
    Py_XDECREF(events);
    Py_XDECREF(funcs);
    Py_XDECREF(threads);
    return rc;
}

/* One row of the summary table: calls, kind, and the function (C
 * functions as pstats prints them). */
static void
summary_row(FILE *out, const fn_entry *e)
{
    PyObject *q = !e->is_c       ? Py_NewRef(PyTuple_GET_ITEM(e->obj, 1))
                  : e->is_c == 2 ? ptk_kit_c_display(PyTuple_GET_ITEM(e->obj, 3))
                                 : c_display(e->obj);
    if (q == NULL) {
        PyErr_Clear();
        q = Py_NewRef(Py_None);
    }
    PyObject *hold = NULL, *fhold = NULL;
    const char *qs = PyUnicode_Check(q) ? ptk_kit_name_bytes(q, NULL, &hold) : "?";
    if (e->is_c) {
        fprintf(out, "%12llu  %-6s %s\n", (unsigned long long)e->calls, "c", qs ? qs : "?");
    }
    else {
        const char *f = ptk_kit_name_bytes(PyTuple_GET_ITEM(e->obj, 2), NULL, &fhold);
        fprintf(out, "%12llu  %-6s ", (unsigned long long)e->calls, "python");
        ptk_kit_name_write(out, qs ? qs : "?");
        fputs(" (", out);
        ptk_kit_name_write(out, f ? f : "?");
        fprintf(out, ":%ld)\n", PyLong_AsLong(PyTuple_GET_ITEM(e->obj, 3)));
    }
    Py_XDECREF(hold);
    Py_XDECREF(fhold);
    Py_DECREF(q);
    PyErr_Clear();
}

/* The summary: the events by kind, then the top functions. */
static void
write_summary(const counter *c, FILE *out, fn_entry **sorted, size_t n)
{
    uint64_t total = 0;
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        total += c->events[k];
    }
    fprintf(out, "pytracekit counter: %llu events", (unsigned long long)total);
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        if (c->events[k]) {
            fprintf(out, ", %s %llu", ptk_event_name(k), (unsigned long long)c->events[k]);
        }
    }
    fprintf(out, "\n");
    if (c->top > 0 && n > 0) {
        fprintf(out, "%12s  %-6s %s\n", "calls", "kind", "function");
    }
    for (size_t i = 0; i < n && (int64_t)i < c->top; i++) {
        summary_row(out, sorted[i]);
    }
}

static int
counter_report(void *state, const ptk_report_args *args)
{
    counter *c = state;
    fn_entry **sorted = calloc(c->nfns + 1, sizeof *sorted);
    if (sorted == NULL) {
        return PTK_ENOMEM;
    }
    size_t n = sort_functions(c, sorted);
    int rc = write_json(c, args, sorted, n);
    if (rc >= 0) {
        write_summary(c, args->summary, sorted, n);
        rc = PTK_OK;
    }
    free(sorted);
    return rc;
}

static void
counter_fini(void *state)
{
    counter *c = state;
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->nfns; i++) {
        Py_XDECREF(c->fns[i].obj);
        Py_XDECREF(c->fns[i].code);
    }
    Py_XDECREF(c->last_pin);
    Py_XDECREF(c->by_names);
    for (size_t i = 0; i < c->nctxs; i++) {
        Py_XDECREF(c->ctxs[i].name);
        free(c->ctxs[i].calls);
    }
    free(c->ctxs);
    Py_XDECREF(c->ctx_index);
    free(c->fns);
    ptk_kit_map_free(&c->index);
    free(c->per_thread);
    free(c);
}

static const ptk_plugin_desc counter_desc = {
    PTK_PLUGIN_HEADER,
    .name = "counter",
    .version = "1.0",
    .description = "counts events, calls per function and events per thread",
    .events = PTK_MASK_PROFILE,
    .flags = PTK_FLAG_UNBOUND_C,
    .options = options,
    .init = counter_init,
    .on_event = counter_event,
    .report = counter_report,
    .fini = counter_fini,
};

PTK_PLUGIN_DEFINE(counter_desc)
