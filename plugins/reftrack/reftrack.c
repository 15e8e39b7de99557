/* reftrack: per type, objects created, destroyed, alive at stop and peak
 * alive; the objects created while tracing and still alive at stop (leaks),
 * grouped by type and by the innermost Python function and line that
 * created them. Needs CPython's reference tracer (3.13+).
 *
 * Options: top=N (leak groups listed, 0 = all; default 10),
 * max_tracked=N (cap of the live-object table; default 1000000),
 * sites=BOOL (record creation sites; default true; false counts only and
 * does not need the shadow stack).
 * Output: reftrack.json and a summary on stderr (see report.c). */
#include "reftrack.h"
#include "../common/py_import.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static size_t rt_live_types(void *state, ptk_live_type *out, size_t max);

/* ---- hash map ----------------------------------------------------------- */

int
rt_map_init(rt_map *m, unsigned bits)
{
    m->slots = calloc((size_t)1 << bits, sizeof(rt_slot));
    if (m->slots == NULL) {
        return -1;
    }
    m->mask = ((uint64_t)1 << bits) - 1;
    m->shift = 64 - bits;
    m->n = 0;
    m->limit = (m->mask + 1) * 7 / 10;
    return 0;
}

void
rt_map_free(rt_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->n = 0;
}

static int
rt_map_grow(rt_map *m)
{
    rt_map n;
    if (rt_map_init(&n, 64 - m->shift + 1) < 0) {
        return -1;
    }
    for (uint64_t i = 0; i <= m->mask; i++) {
        if (m->slots[i].key != 0) {
            *rt_map_find(&n, m->slots[i].key) = m->slots[i];
        }
    }
    n.n = m->n;
    free(m->slots);
    *m = n;
    return 0;
}

/* Grows the map when it is 70% full. Returns -1 only if the map is too full
 * to take one more key. */
static int
rt_map_reserve_slow(rt_map *m, uint64_t cap_max)
{
    uint64_t cap = m->mask + 1;
    if ((m->n + 1) * 10 > cap * 7 && (cap_max == 0 || cap < cap_max)) {
        (void)rt_map_grow(m);
        cap = m->mask + 1;
    }
    return (m->n + 1) * 10 > cap * 9 ? -1 : 0;
}

static inline int
rt_map_reserve(rt_map *m, uint64_t cap_max)
{
    return m->n < m->limit ? 0 : rt_map_reserve_slow(m, cap_max);
}

static int
rt_map_put(rt_map *m, uint64_t key, uint64_t val)
{
    if (rt_map_reserve(m, 0) < 0) {
        return -1;
    }
    rt_slot *s = rt_map_find(m, key);
    if (s->key == 0) {
        s->key = key;
        m->n++;
    }
    s->val = val;
    return 0;
}

/* ---- names, copied without creating anything ----------------------------- */

/* UTF-8 of a str, straight from its code points: no UTF-8 cache is made,
 * no exception can be raised. Returns a malloc'd string or NULL. */
static char *
rt_strdup_str(PyObject *s, const char *fallback)
{
    if (s == NULL || !PyUnicode_Check(s)) {
        return fallback ? strdup(fallback) : NULL;
    }
    int kind = PyUnicode_KIND(s);
    const void *d = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    char *out = malloc((size_t)n * 4 + 1);
    if (out == NULL) {
        return NULL;
    }
    size_t o = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, d, i);
        if (c < 0x80) {
            out[o++] = (char)c;
        }
        else if (c < 0x800) {
            out[o++] = (char)(0xC0 | (c >> 6));
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
        else if (c >= 0xD800 && c <= 0xDFFF) {
            /* a lone surrogate has no UTF-8: os.fsdecode's U+DCNN (a
             * file name's byte that is not UTF-8) is that byte again
             * (fs_name.h), any other '?' */
            out[o++] = c >= 0xDC80 && c <= 0xDCFF ? (char)(c - 0xDC00) : '?';
        }
        else if (c < 0x10000) {
            out[o++] = (char)(0xE0 | (c >> 12));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
        else {
            out[o++] = (char)(0xF0 | (c >> 18));
            out[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[o] = '\0';
    return out;
}

/* "module.QualName" as repr() shows it ("int" for builtins). The type of an
 * object being created is complete (only the object is not), so reading it
 * is safe; a static type's tp_name already has the module. */
static char *
rt_type_name(rt_state *st, PyTypeObject *tp)
{
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        return strdup(tp->tp_name);
    }
    PyHeapTypeObject *ht = (PyHeapTypeObject *)tp;
    char *qual = rt_strdup_str(ht->ht_qualname, tp->tp_name);
    PyObject *mod = NULL;
    if (tp->tp_dict != NULL && PyDict_Check(tp->tp_dict)) {
        /* A str key with a cached hash: a C lookup, no exception. */
        mod = PyDict_GetItemWithError(tp->tp_dict, st->s_module);
    }
    char *m = rt_strdup_str(mod, NULL);
    if (m == NULL && mod != NULL && PyUnicode_Check(mod)) {
        free(qual); /* out of memory: no name rather than a wrong one */
        return NULL;
    }
    if (qual == NULL || m == NULL || m[0] == '\0' ||
        strcmp(m, "builtins") == 0) {
        free(m);
        return qual;
    }
    size_t lm = strlen(m), lq = strlen(qual);
    char *full = malloc(lm + lq + 2);
    if (full != NULL) {
        memcpy(full, m, lm);
        full[lm] = '.';
        memcpy(full + lm + 1, qual, lq + 1);
    }
    free(m);
    free(qual);
    return full;
}

/* ---- types, codes, sites ------------------------------------------------- */

#define RT_NONE UINT32_MAX

static inline unsigned
rt_tcache_slot(PyTypeObject *tp)
{
    return (unsigned)(((uintptr_t)tp >> 4) ^ ((uintptr_t)tp >> 10)) & 63;
}

static uint32_t __attribute__((noinline))
rt_type_index_slow(rt_state *st, PyTypeObject *tp)
{
    rt_slot *s = rt_map_find(&st->type_map, (uintptr_t)tp);
    uint32_t ti;
    if (s->key != 0) {
        ti = (uint32_t)s->val;
    }
    else {
        if (st->ntypes >= RT_MAX_TYPES) {
            return RT_NONE;
        }
        if (PTK_KIT_RESERVE(st->types, st->types_cap, (size_t)st->ntypes + 1, 256) != 0) {
            return RT_NONE;
        }
        char *name = rt_type_name(st, tp);
        if (name == NULL ||
            rt_map_put(&st->type_map, (uintptr_t)tp, st->ntypes) < 0) {
            free(name);
            return RT_NONE;
        }
        ti = st->ntypes++;
        memset(&st->types[ti], 0, sizeof st->types[ti]);
        st->types[ti].name = name;
        st->types[ti].tp = (uintptr_t)tp;
        /* Instances of classes are GC-tracked from birth to death, so at
         * report the collector can tell which ones still exist. */
        st->types[ti].verify = (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) &&
                               (tp->tp_flags & Py_TPFLAGS_HAVE_GC);
    }
    unsigned c = rt_tcache_slot(tp);
    st->tcache[c].tp = tp;
    st->tcache[c].ti = ti;
    return ti;
}

static inline uint32_t
rt_type_index(rt_state *st, PyTypeObject *tp)
{
    unsigned c = rt_tcache_slot(tp);
    return st->tcache[c].tp == tp ? st->tcache[c].ti
                                  : rt_type_index_slow(st, tp);
}

/* A type is being destroyed: a new type may come at its address. Its
 * counts stay, under the name copied at first sight. */
static void
rt_forget_type(rt_state *st, PyTypeObject *tp)
{
    rt_slot *s = rt_map_find(&st->type_map, (uintptr_t)tp);
    if (s->key != 0) {
        rt_map_erase(&st->type_map, s);
    }
    unsigned c = rt_tcache_slot(tp);
    if (st->tcache[c].tp == tp) {
        st->tcache[c].tp = NULL;
    }
}

static uint32_t
rt_code_index(rt_state *st, PyCodeObject *code)
{
    if (code == st->last_code) {
        return st->last_ci;
    }
    rt_slot *s = rt_map_find(&st->code_map, (uintptr_t)code);
    uint32_t ci;
    if (s->key != 0) {
        ci = (uint32_t)s->val;
    }
    else {
        if (st->ncodes >= RT_MAX_CODES) {
            return RT_NONE;
        }
        if (PTK_KIT_RESERVE(st->codes, st->codes_cap, (size_t)st->ncodes + 1, 256) != 0) {
            return RT_NONE;
        }
        char *file = rt_strdup_str(code->co_filename, "?");
        char *fn = rt_strdup_str(code->co_qualname, "?");
        if (file == NULL || fn == NULL ||
            rt_map_put(&st->code_map, (uintptr_t)code, st->ncodes) < 0) {
            free(file);
            free(fn);
            return RT_NONE;
        }
        ci = st->ncodes++;
        st->codes[ci].file = file;
        st->codes[ci].function = fn;
    }
    st->last_code = code;
    st->last_ci = ci;
    return ci;
}

static void
rt_forget_code(rt_state *st, PyCodeObject *code)
{
    rt_slot *s = rt_map_find(&st->code_map, (uintptr_t)code);
    if (s->key != 0) {
        rt_map_erase(&st->code_map, s);
    }
    if (st->last_code == code) {
        st->last_code = NULL;
    }
}

/* The creation site of an object being created on this thread: the
 * innermost Python frame of the hub's shadow stack, at its current
 * instruction. PyFrame_GetLasti and PyCode_Addr2Line read the frame and the
 * line table; neither creates an object. Site 0 = unknown. */
static uint32_t
rt_site_here(rt_state *st)
{
    const ptk_thread *th = st->host->current_thread();
    if (th == NULL || th->depth <= 0 || th->stack == NULL) {
        return 0;
    }
    const ptk_stack_entry *e = &th->stack[th->depth - 1];
    if (e->code == NULL) {
        return 0;
    }
    uint32_t ci = rt_code_index(st, e->code);
    if (ci == RT_NONE) {
        st->sites_dropped++;
        return 0;
    }
    int lasti = -1;
    if (e->frame != NULL) {
        lasti = PyFrame_GetLasti(e->frame);
    }
    else if (st->host->struct_size >= offsetof(ptk_host, current_lasti) +
                                          sizeof st->host->current_lasti &&
             st->host->current_lasti != NULL) {
        lasti = st->host->current_lasti(e->code); /* no frame objects */
    }
    uint64_t akey = ((uint64_t)(ci + 1) << 32) | (uint32_t)lasti;
    rt_slot *s = rt_map_find(&st->addr_map, akey);
    if (s->key != 0) {
        return (uint32_t)s->val;
    }
    int line = PyCode_Addr2Line(e->code, lasti);
    uint64_t lkey = ((uint64_t)(ci + 1) << 32) | (uint32_t)line;
    rt_slot *l = rt_map_find(&st->line_map, lkey);
    uint32_t site;
    if (l->key != 0) {
        site = (uint32_t)l->val;
    }
    else {
        if (st->nsites >= RT_MAX_SITES) {
            st->sites_dropped++;
            return 0;
        }
        if (PTK_KIT_RESERVE(st->site_tab, st->sites_cap, (size_t)st->nsites + 1, 256) != 0) {
            st->sites_dropped++;
            return 0;
        }
        if (rt_map_put(&st->line_map, lkey, st->nsites) < 0) {
            st->sites_dropped++;
            return 0;
        }
        site = st->nsites++;
        st->site_tab[site].code = ci;
        st->site_tab[site].line = line;
    }
    if (st->addr_map.n < (uint64_t)RT_MAX_SITES * 4) { /* a cache: bounded */
        (void)rt_map_put(&st->addr_map, akey, site);
    }
    return site;
}

/* ---- the reference events ------------------------------------------------ */

/* The calling thread's state, for `tracing` only. The thread state bound to
 * this OS thread for the PyGILState API is found through pthread TLS, which
 * avoids PyThreadState_GetUnchecked()'s dynamic-TLS call (__tls_get_addr);
 * interleaved runs of bench/reftrack here found it cheaper, by up to 0.25x
 * of a bare run, though the shared machine was too noisy to say how much.
 * It is the current one unless the thread switches between several thread
 * states (sub-interpreters); then the category of an object may be wrong,
 * nothing worse. */
static inline PyThreadState *
rt_tstate(void)
{
    PyThreadState *ts = PyGILState_GetThisThreadState();
    if (ts != NULL) {
        return ts;
    }
#if RT_HAVE_REFTRACER
    return PyThreadState_GetUnchecked();
#else
    return PyThreadState_Get();
#endif
}

static inline void
rt_release(rt_state *st, uint64_t val)
{
    rt_stats *s = &st->types[val >> 32].s[val & 1];
    s->destroyed++;
    s->alive--;
}

static inline void
rt_create(rt_state *st, PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    /* A new type or code object at an address we know: the old one died
     * without a DESTROY (see rt_destroy_is_missed); forget its entry. */
    if (__builtin_expect(tp == &PyCode_Type, 0)) {
        rt_forget_code(st, (PyCodeObject *)obj);
    }
    else if (__builtin_expect(PyType_FastSubclass(tp, Py_TPFLAGS_TYPE_SUBCLASS), 0)) {
        rt_forget_type(st, (PyTypeObject *)obj);
    }
    uint32_t ti = rt_type_index(st, tp);
    if (ti == RT_NONE) {
        st->dropped++;
        return;
    }
    /* tstate->tracing > 0: inside a trace or profile callback. */
    int cat = rt_tstate()->tracing > 0 ? RT_TRACING : RT_PROGRAM;
    uint32_t site = st->sites && cat == RT_PROGRAM ? rt_site_here(st) : 0;
    rt_stats *s = &st->types[ti].s[cat];
    s->created++;
    uint64_t key = (uintptr_t)obj;
    rt_map *live = &st->live;
    rt_slot *slot;
    if (live->n >= st->max_tracked || rt_map_reserve(live, st->live_cap_max) < 0) {
        slot = rt_map_find(live, key);
        if (slot->key != key) {
            s->untracked++;
            st->overflow++;
            return;
        }
    }
    else {
        slot = rt_map_find(live, key);
    }
    if (slot->key == key) {
        /* CPython reused the address of an object whose DESTROY never came
         * (some deallocations skip the tracer): it was destroyed. */
        rt_release(st, slot->val);
        st->missed_destroy++;
    }
    else {
        slot->key = key;
        live->n++;
    }
    slot->val = ((uint64_t)ti << 32) | ((uint64_t)site << 1) | (uint64_t)cat;
    if (++s->alive > s->peak) {
        s->peak = s->alive;
    }
}

static inline void
rt_destroy(rt_state *st, PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    if (tp == &PyCode_Type) {
        rt_forget_code(st, (PyCodeObject *)obj);
    }
    else if (PyType_FastSubclass(tp, Py_TPFLAGS_TYPE_SUBCLASS)) {
        rt_forget_type(st, (PyTypeObject *)obj);
    }
    uint64_t key = (uintptr_t)obj;
    rt_slot *slot = rt_map_find(&st->live, key);
    if (slot->key == key) {
        uint64_t val = slot->val;
        rt_map_erase(&st->live, slot);
        rt_release(st, val);
        return;
    }
    /* Created before tracing started (or while the table was full). */
    uint32_t ti = rt_type_index(st, tp);
    if (ti == RT_NONE) {
        st->dropped++;
        return;
    }
    st->types[ti].destroyed_untracked++;
}

static void
rt_on_ref(void *state, PyObject *obj, ptk_event_kind kind)
{
    rt_state *st = state;
    if (__builtin_expect((st->events++ & 1023) == 0, 0)) {
        /* A clock reading now and then bounds when events stopped coming,
         * should another tool evict the hub's tracer. */
        st->last_event_ns = st->host->clock_ns();
        if (st->events == 1) {
            st->first_event_ns = st->last_event_ns;
            ptk_ref_status rs = {.struct_size = sizeof rs};
            if (st->host->ref_status(&rs) == PTK_OK) {
                st->chained = rs.chained;
            }
        }
    }
    if (kind == PTK_EV_REF_CREATE) {
        rt_create(st, obj);
    }
    else {
        rt_destroy(st, obj);
    }
}

/* ---- does this CPython tell the tracer about every deallocation? --------- */

/* 3.13.0's eval loop frees objects without calling the reference tracer
 * (gh-130382; fixed in later 3.13 releases). Found out once per process by
 * running a two-line function under a probe tracer that forwards every event
 * to the tracer it displaces, then puts that one back: nothing is lost. */
#if RT_HAVE_REFTRACER
static PyRefTracer probe_prev_fn;
static void *probe_prev_data;
static long probe_created, probe_destroyed;

static int
rt_probe_tracer(PyObject *obj, PyRefTracerEvent event, void *data)
{
    (void)data;
#ifdef RT_HAVE_TRACKER_REMOVED
    /* 3.15: PyRefTracer_SetTracer tells the tracer it replaces, with no
     * object; the probe's own removal is no news for the tracer it
     * displaced, which gets the slot back. */
    if (event == PyRefTracer_TRACKER_REMOVED) {
        return 0;
    }
#endif
    if (probe_prev_fn != NULL) {
        (void)probe_prev_fn(obj, event, probe_prev_data);
    }
    if (obj != NULL && Py_TYPE(obj) == &PyBaseObject_Type) {
        if (event == PyRefTracer_CREATE) {
            probe_created++;
        }
        else if (event == PyRefTracer_DESTROY) {
            probe_destroyed++;
        }
    }
    return 0;
}

/* 1 if DESTROY can be missed, 0 if not, -1 if it could not be found out. */
static int
rt_destroy_is_missed(void)
{
    static int known = -2;
    if (known != -2) {
        return known;
    }
    PyObject *globals = PyDict_New();
    PyObject *code = Py_CompileString(
        "def f(n):\n"
        "    for i in range(n):\n"
        "        o = object()\n"
        "    o = None\n",
        "<reftrack probe>", Py_file_input);
    PyObject *builtins = ptk_kit_builtins();
    PyObject *mod = code && globals && builtins &&
                            PyDict_SetItemString(globals, "__builtins__", builtins) == 0
                        ? PyEval_EvalCode(code, globals, globals)
                        : NULL;
    Py_XDECREF(builtins);
    PyObject *f = mod ? PyDict_GetItemString(globals, "f") : NULL;
    PyObject *arg = f ? PyLong_FromLong(8) : NULL;
    int rc = -1;
    if (arg != NULL) {
        probe_prev_fn = PyRefTracer_GetTracer(&probe_prev_data);
        probe_created = probe_destroyed = 0;
        if (PyRefTracer_SetTracer(rt_probe_tracer, NULL) == 0) {
            PyObject *r = PyObject_CallOneArg(f, arg);
            PyRefTracer_SetTracer(probe_prev_fn, probe_prev_data);
            if (r != NULL) {
                rc = probe_created == 8 ? probe_destroyed < 8 : -1;
            }
            Py_XDECREF(r);
        }
    }
    Py_XDECREF(arg);
    Py_XDECREF(mod);
    Py_XDECREF(code);
    Py_XDECREF(globals);
    PyErr_Clear();
    known = rc;
    return rc;
}
#else
static int
rt_destroy_is_missed(void)
{
    return -1; /* no reference tracer: the plugin cannot load anyway */
}
#endif

/* ---- lifecycle ----------------------------------------------------------- */

static const ptk_option_spec rt_options[] = {
    {"top", PTK_OPT_INT, "10",
     "leak groups listed in reftrack.json and the summary (0 = all)", NULL},
    {"max_tracked", PTK_OPT_INT, "1000000",
     "most objects tracked at once; more are counted as overflow", NULL},
    {"sites", PTK_OPT_BOOL, "true",
     "record where leaked objects were created (keeps the shadow stack)",
     NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static void
rt_free(rt_state *st)
{
    for (uint32_t i = 0; i < st->ntypes; i++) {
        free(st->types[i].name);
    }
    for (uint32_t i = 0; i < st->ncodes; i++) {
        free(st->codes[i].file);
        free(st->codes[i].function);
    }
    free(st->types);
    free(st->codes);
    free(st->site_tab);
    rt_map_free(&st->live);
    rt_map_free(&st->type_map);
    rt_map_free(&st->code_map);
    rt_map_free(&st->addr_map);
    rt_map_free(&st->line_map);
    Py_XDECREF(st->s_module);
    free(st);
}

static int
rt_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    (void)events;
    const ptk_host *h = args->host;
    int64_t top = h->option(args, "top")->i;
    int64_t max_tracked = h->option(args, "max_tracked")->i;
    if (top < 0) {
        snprintf(args->errbuf, args->errbuf_size,
                 "option 'top' must be >= 0 (0 = all), found %lld",
                 (long long)top);
        return PTK_EOPTTYPE;
    }
    if (max_tracked < 1 || max_tracked > (INT64_C(1) << 40)) {
        snprintf(args->errbuf, args->errbuf_size,
                 "option 'max_tracked' must be between 1 and %lld, found %lld",
                 (long long)(INT64_C(1) << 40), (long long)max_tracked);
        return PTK_EOPTTYPE;
    }
    rt_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        return PTK_ENOMEM;
    }
    st->host = h;
    st->ctx = args->ctx;
    st->top = top;
    st->max_tracked = (uint64_t)max_tracked;
    st->sites = (int)h->option(args, "sites")->i;
    st->destroy_missed = rt_destroy_is_missed();
    /* Room for max_tracked keys at 70% load at most. */
    unsigned bits = 10;
    while (((uint64_t)1 << bits) * 7 < st->max_tracked * 10 + 10) {
        bits++;
    }
    st->live_cap_max = (uint64_t)1 << bits;
    st->site_tab = malloc(256 * sizeof *st->site_tab);
    st->sites_cap = 256;
    st->s_module = PyUnicode_InternFromString("__module__");
    if (st->site_tab == NULL || st->s_module == NULL ||
        rt_map_init(&st->live, 10) < 0 ||
        rt_map_init(&st->type_map, 10) < 0 ||
        rt_map_init(&st->code_map, 10) < 0 ||
        rt_map_init(&st->addr_map, 12) < 0 ||
        rt_map_init(&st->line_map, 12) < 0) {
        PyErr_Clear();
        rt_free(st);
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->site_tab[0].code = RT_NONE; /* site 0: unknown */
    st->site_tab[0].line = 0;
    st->nsites = 1;
    /* Live objects per type for the other plugins of the session (the
     * timeline's counter tracks). */
    st->live_service.struct_size = sizeof st->live_service;
    st->live_service.state = st;
    st->live_service.types = rt_live_types;
    if (h->struct_size >= offsetof(ptk_host, lookup) + sizeof h->lookup &&
        h->publish(args->ctx, PTK_SERVICE_LIVE_OBJECTS, &st->live_service) < 0) {
        rt_free(st);
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    /* The shadow stack costs the profile hook on every call: only an
     * instance that records sites asks for it, in its own subscription. */
    if (st->sites) {
        args->subscription->flags |= PTK_FLAG_STACK;
    }
    *state = st;
    return PTK_OK;
}

/* ptk_live_objects::types: the program's live objects per type, most
 * first (a partial insertion sort: max is small). */
static size_t
rt_live_types(void *state, ptk_live_type *out, size_t max)
{
    const rt_state *st = state;
    size_t n = 0;
    for (uint32_t i = 0; i < st->ntypes && max > 0; i++) {
        uint64_t a = st->types[i].s[RT_PROGRAM].alive;
        if (a == 0 || (n == max && a <= out[n - 1].alive)) {
            continue;
        }
        size_t j = n < max ? n++ : max - 1;
        while (j > 0 && out[j - 1].alive < a) {
            out[j] = out[j - 1];
            j--;
        }
        out[j].type = st->types[i].name;
        out[j].alive = a;
    }
    return n;
}

static int
rt_report_cb(void *state, const ptk_report_args *args)
{
    return rt_report(state, args);
}

static void
rt_fini(void *state)
{
    rt_free(state);
}

static const ptk_plugin_desc reftrack_desc = {
    PTK_PLUGIN_HEADER,
    .name = "reftrack",
    .version = "0.2.0",
    .description = "objects per type and leaks by creation site, from "
                   "CPython's reference tracer (3.13+)",
    .events = PTK_MASK_REF,
    .flags = 0, /* PTK_FLAG_STACK per instance, with sites=true */
    .options = rt_options,
    .init = rt_init,
    .on_ref = rt_on_ref,
    .report = rt_report_cb,
    .fini = rt_fini,
};

PTK_PLUGIN_DEFINE(reftrack_desc)
