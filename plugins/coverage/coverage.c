/*
 * coverage: line, function and branch (arc) coverage.
 *
 * Executed lines come from LINE events; the lines that could run come from
 * the code objects themselves (co_lines(), walking nested code objects
 * through co_consts from the module's code object), so a function that never
 * ran still counts as missed. See docs/coverage.md.
 *
 * The per-line path: one pointer-hash lookup of the code object (with a
 * one-entry cache in front), one store into the file's hit table, and
 * PTK_DISABLE, so that the hub never delivers that line again. Everything
 * that needs Python (deciding whether a file is measured, analysing it)
 * happens once, on the first event of a code object.
 */
#include "cov_private.h"

#include "../common/context_index.h"
#include "../common/gone_box.h"

/* ---- small tables ------------------------------------------------------ */

char cov__gone_marker;

void
cov__code_free(cov_code *c)
{
    free(c->bridx);
    free(c->brs);
    free(c->succ);
    c->bridx = NULL;
    c->brs = NULL;
    c->succ = NULL;
    c->nsucc = 0;
    c->nbrs = c->capbrs = 0;
}

/* The callback of the weak reference to a code object: it died. Its entry
 * is emptied (COV_GONE), so that a code object made at its address later is
 * new to the plugin; what it counted is in its file, and its analysis in
 * st->recs. The weak reference is released later, not under its callback. */
static PyObject *
code_gone(PyObject *self, PyObject *wr)
{
    cov_state *st = ptk_kit_gone_state(self);
    PyCodeObject *code = st ? ptk_kit_map_get(&st->wrs, wr, NULL) : NULL;
    cov_code *c = code ? cov__code_find(st, code) : NULL;
    if (c && c->wr == wr && PTK_KIT_RESERVE(st->dead, st->capdead, st->ndead + 1, 64) == 0) {
        st->dead[st->ndead++] = c->wr;
        c->wr = NULL;
        if (st->last == c) {
            st->last = NULL;
        }
        Py_CLEAR(c->bytecode);
        cov__code_free(c);
        c->code = COV_GONE;
        c->file = NULL;
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef code_gone_def = {"_coverage_code_gone", code_gone, METH_O, NULL};

/* Inserts @p code, with a weak reference to it (or, failing that, a strong
 * one); returns the entry or NULL. */
cov_code *
cov__code_add(cov_state *st, PyCodeObject *code)
{
    if (st->ndead) {
        /* dead weak references: their callbacks ran (this is not one) */
        PyObject **dead = st->dead;
        size_t n = st->ndead;
        st->dead = NULL;
        st->ndead = st->capdead = 0;
        for (size_t i = 0; i < n; i++) {
            Py_DECREF(dead[i]);
        }
        free(dead);
    }
    if ((st->ncodes + 1) * 2 > st->capcodes) {
        size_t live = 0;
        for (size_t j = 0; j < st->capcodes; j++) {
            live += st->codes[j].code && st->codes[j].code != COV_GONE;
        }
        size_t cap = st->capcodes ? st->capcodes : 256;
        while ((live + 1) * 2 > cap / 2) { /* at most a quarter full after */
            cap *= 2;
        }
        cov_code *t = calloc(cap, sizeof(*t));
        if (!t) {
            PyErr_NoMemory();
            return NULL;
        }
        for (size_t j = 0; j < st->capcodes; j++) {
            cov_code *o = &st->codes[j];
            if (o->code && o->code != COV_GONE) {
                size_t i = ptr_hash(o->code, cap - 1);
                while (t[i].code) {
                    i = (i + 1) & (cap - 1);
                }
                t[i] = *o;
            }
        }
        free(st->codes);
        st->codes = t;
        st->capcodes = cap;
        st->ncodes = live;
        st->last = NULL;
    }
    if (!st->gone_cb) {
        st->gone_cb = ptk_kit_gone_callback(&code_gone_def, st, &st->gone_box);
        if (!st->gone_cb) {
            return NULL;
        }
    }
    PyObject *wr = PyWeakref_NewRef((PyObject *)code, st->gone_cb);
    if (!wr) {
        PyErr_Clear();
    }
    else if (ptk_kit_map_put(&st->wrs, wr, NULL, code) != 0) {
        Py_DECREF(wr);
        PyErr_NoMemory();
        return NULL;
    }
    size_t mask = st->capcodes - 1;
    size_t i = ptr_hash(code, mask);
    while (st->codes[i].code) {
        i = (i + 1) & mask;
    }
    cov_code *c = &st->codes[i];
    memset(c, 0, sizeof(*c));
    c->code = code;
    c->wr = wr;
    if (!wr) {
        c->pin = Py_NewRef((PyObject *)code); /* its address stays its own */
    }
    c->func = -1;
    c->firstline = code->co_firstlineno;
    c->start = -1;
    st->ncodes++;
    return c;
}

static inline uint64_t
arc_key(int32_t from, int32_t to)
{
    return ((uint64_t)(uint32_t)from << 32) | (uint64_t)(uint32_t)to;
}

/* Makes room for one more arc (the index at most half full). */
static int
arc_reserve(cov_file *f)
{
    if (PTK_KIT_RESERVE(f->arcs, f->caparcs, f->narcs + 1, 32) != 0) {
        return -1;
    }
    if ((f->narcs + 1) * 2 > f->capidx) {
        size_t cap = f->capidx ? f->capidx * 2 : 64;
        uint32_t *t = calloc(cap, sizeof(*t));
        if (!t) {
            return -1;
        }
        for (size_t j = 0; j < f->narcs; j++) {
            size_t i = ptr_hash((void *)(uintptr_t)f->arcs[j].key, cap - 1);
            while (t[i]) {
                i = (i + 1) & (cap - 1);
            }
            t[i] = (uint32_t)j + 1;
        }
        free(f->arcidx);
        f->arcidx = t;
        f->capidx = cap;
    }
    return 0;
}

/* Counts the arc @p from -> @p to of @p f; returns its index in f->arcs,
 * or -1 when out of memory. */
static int64_t
arc_add(cov_file *f, int32_t from, int32_t to)
{
    uint64_t key = arc_key(from, to);
    if (f->narcs >= UINT32_MAX - 1 || arc_reserve(f) < 0) {
        return -1;
    }
    size_t mask = f->capidx - 1;
    for (size_t i = ptr_hash((void *)(uintptr_t)key, mask);; i = (i + 1) & mask) {
        uint32_t k = f->arcidx[i];
        if (k == 0) {
            f->arcidx[i] = (uint32_t)f->narcs + 1;
            f->arcs[f->narcs] = (cov_arc){key, 1};
            return (int64_t)f->narcs++;
        }
        if (f->arcs[k - 1].key == key) {
            f->arcs[k - 1].count++;
            return (int64_t)k - 1;
        }
    }
}

/* Lines of one code object the successor cache (cov_code::succ) covers. */
#define SUCC_MAX 65536

/* arc_add for an arc of @p c's frame, through and into its successor cache
 * (the second entry of the line, when the first is another arc's). */
static __attribute__((noinline)) int
arc_step_slow(cov_file *f, cov_code *c, int32_t from, int32_t to, int64_t x)
{
    int64_t i = arc_add(f, from, to);
    if (i < 0) {
        return -1;
    }
    if (x < 0 || x >= SUCC_MAX) {
        return 0; /* outside the code's lines: not cached */
    }
    if (x >= c->nsucc) {
        size_t n = (size_t)c->nsucc; /* entries of two slots */
        if (ptk_kit_grow(&c->succ, &n, (size_t)x + 1, 2 * sizeof(*c->succ), 16, 1) != 0) {
            return 0; /* counted; only not cached */
        }
        c->nsucc = (int32_t)n; /* x < SUCC_MAX: at most 2 * SUCC_MAX */
    }
    uint32_t *e = &c->succ[2 * x];
    e[e[0] != 0] = (uint32_t)i + 1;
    return 0;
}

/* The index in @p c's successor cache of an arc leaving line @p from of
 * its frame (the entry, from = -firstline, has index 0); out of
 * [0, c->nsucc) when the cache does not cover it. */
static inline int64_t
succ_index(const cov_code *c, int32_t from)
{
    return from < 0 ? 0 : (int64_t)from - c->firstline + 1;
}

/* The arc @p from -> @p to if @p c's successor cache holds it at index
 * @p x (in range), else NULL. */
static inline cov_arc *
succ_arc(const cov_file *f, const cov_code *c, int64_t x, int32_t from, int32_t to)
{
    uint64_t key = arc_key(from, to);
    const uint32_t *e = &c->succ[2 * x];
    if (e[0] != 0 && f->arcs[e[0] - 1].key == key) {
        return &f->arcs[e[0] - 1];
    }
    if (e[1] != 0 && f->arcs[e[1] - 1].key == key) {
        return &f->arcs[e[1] - 1];
    }
    return NULL;
}

/* Counts the arc @p from -> @p to of a frame of @p c (file @p f); 0, or
 * -1 when out of memory. */
static inline int
arc_step(cov_file *f, cov_code *c, int32_t from, int32_t to)
{
    int64_t x = succ_index(c, from);
    if (x >= 0 && x < c->nsucc) {
        cov_arc *a = succ_arc(f, c, x, from, to);
        if (a != NULL) {
            a->count++;
            return 0;
        }
    }
    return arc_step_slow(f, c, from, to, x);
}

__attribute__((noinline)) int
cov__file_reserve(cov_file *f, int32_t line)
{
    if (line <= f->maxline) {
        return 0;
    }
    /* two arrays of one length: the second grows to the first's */
    size_t n = (size_t)f->maxline + 1, nhits = n;
    if (PTK_KIT_RESERVE_ZERO(f->possible, n, (size_t)line + 1, 1) != 0 ||
        PTK_KIT_RESERVE_ZERO(f->hits, nhits, n, 1) != 0) {
        return -1;
    }
    f->maxline = (int32_t)n - 1;
    return 0;
}

void
cov__file_free(cov_file *f)
{
    if (!f) {
        return;
    }
    free(f->path);
    free(f->possible);
    free(f->hits);
    for (size_t i = 0; i < f->nfctx; i++) {
        free(f->fctx[i].bits);
    }
    free(f->fctx);
    free(f->carcs);
    for (size_t i = 0; i < f->nfuncs; i++) {
        free(f->funcs[i].qualname);
        free(f->funcs[i].own);
    }
    free(f->funcs);
    free(f->arcs);
    free(f->arcidx);
    for (size_t i = 0; i < f->nbranches; i++) {
        free(f->branches[i].dest);
    }
    free(f->branches);
    free(f);
}

/* Index of the function (qualname, line) in @p f, added if new; -1 on error. */
int32_t
cov__file_func(cov_file *f, const char *qualname, int32_t line)
{
    for (size_t i = 0; i < f->nfuncs; i++) {
        if (f->funcs[i].line == line && strcmp(f->funcs[i].qualname, qualname) == 0) {
            return (int32_t)i;
        }
    }
    if (PTK_KIT_RESERVE(f->funcs, f->capfuncs, f->nfuncs + 1, 16) != 0) {
        return -1;
    }
    char *name = strdup(qualname);
    if (!name) {
        return -1;
    }
    f->funcs[f->nfuncs].qualname = name;
    f->funcs[f->nfuncs].line = line;
    f->funcs[f->nfuncs].calls = 0;
    f->funcs[f->nfuncs].own = NULL;
    f->funcs[f->nfuncs].nown = 0;
    return (int32_t)f->nfuncs++;
}

/* ---- events ------------------------------------------------------------ */

int
cov__fail_python(cov_state *st, const char *what)
{
    return st->host->fail(st->ctx, PTK_EPYTHON, "%s failed", what);
}

/* thread_slot for a new thread, or a stack deeper than its slots. */
static __attribute__((noinline)) cov_slot *
thread_slot_grow(cov_state *st, size_t t, int32_t d)
{
    if (PTK_KIT_RESERVE_ZERO(st->threads, st->nthreads, t + 1, 8) != 0) {
        return NULL;
    }
    cov_tstack *ts = &st->threads[t];
    if (d >= ts->cap) {
        size_t cap = (size_t)ts->cap;
        if (d == INT32_MAX || PTK_KIT_RESERVE_ZERO(ts->slots, cap, (size_t)d + 1, 64) != 0 ||
            cap > INT32_MAX) {
            return NULL;
        }
        ts->cap = (int32_t)cap;
    }
    return &ts->slots[d];
}

/* The execution context on thread @p t became @p id (a greenlet switch):
 * the slots of the frames of the context left are kept for when it runs
 * again, and @p id's put in their place, so that a line pairs with the
 * previous line of its own frame, not of another greenlet's frame at the
 * same depth. 0, or -1 when out of memory. */
static __attribute__((noinline)) int
thread_switch(cov_state *st, size_t t, uint64_t id)
{
    if (PTK_KIT_RESERVE_ZERO(st->threads, st->nthreads, t + 1, 8) != 0) {
        return -1;
    }
    cov_tstack *ts = &st->threads[t];
    cov_saved out = {ts->exec_id, ts->slots, ts->cap};
    size_t i;
    for (i = 0; i < ts->nsaved && ts->saved[i].id != id; i++) {
    }
    if (i < ts->nsaved) {
        /* the entry of the one entered takes the one left */
        ts->slots = ts->saved[i].slots;
        ts->cap = ts->saved[i].cap;
        ts->saved[i] = out;
    }
    else {
        if (PTK_KIT_RESERVE(ts->saved, ts->capsaved, ts->nsaved + 1, 8) != 0) {
            return -1;
        }
        ts->saved[ts->nsaved++] = out;
        ts->slots = NULL;
        ts->cap = 0;
    }
    ts->exec_id = id;
    return 0;
}

/* What the frame of @p ev last ran (branch mode); NULL when out of memory. */
static inline cov_slot *
thread_slot(cov_state *st, const ptk_event *ev)
{
    size_t t = ev->thread ? ev->thread->index : 0;
    int32_t d = ev->depth < 0 ? 0 : ev->depth;
    if (ev->thread != NULL &&
        (t < st->nthreads ? st->threads[t].exec_id : 0) != ev->thread->exec_id &&
        thread_switch(st, t, ev->thread->exec_id) != 0) {
        return NULL;
    }
    if (t < st->nthreads && d < st->threads[t].cap) {
        return &st->threads[t].slots[d];
    }
    return thread_slot_grow(st, t, d);
}

/* 1 if the frame of a CALL event starts the code (rather than resuming a
 * generator or coroutine), 0 if it resumes, -1 on error. */
static int
call_is_start(const cov_state *st, const cov_code *c, const ptk_event *ev)
{
    if (ev->origin == PTK_ORIGIN_START) {
        return 1;
    }
    if (ev->origin == PTK_ORIGIN_RESUME || ev->origin == PTK_ORIGIN_THROW) {
        return 0;
    }
    if (!c->generator) {
        return 1;
    }
    PyFrameObject *frame = st->host->event_frame(ev);
    if (!frame) {
        return 1;
    }
    return PyFrame_GetLasti(frame) <= c->start;
}

/* 1 if a RETURN event leaves the frame suspended at a yield (or an await),
 * else 0. A generator closed (or thrown into) at a yield also counts as
 * suspended there, as coverage.py counts it: its frame is left from the yield
 * line, and that is not an exit arc of the code. */
static int
return_is_yield(const cov_state *st, const cov_code *c, const ptk_event *ev)
{
    if (!c->generator) {
        return 0;
    }
    if (ev->origin == PTK_ORIGIN_YIELD) {
        return 1;
    }
    if (!c->bytecode) {
        return 0;
    }
    PyFrameObject *frame = st->host->event_frame(ev);
    if (!frame) {
        return 0;
    }
    int lasti = PyFrame_GetLasti(frame);
    const unsigned char *raw = (const unsigned char *)PyBytes_AS_STRING(c->bytecode);
    Py_ssize_t n = PyBytes_GET_SIZE(c->bytecode);
    if (lasti < 0 || lasti >= n) {
        return 0;
    }
    if (raw[lasti] == st->op_yield) {
        return 1;
    }
    /* Some versions leave f_lasti on the RESUME after the YIELD_VALUE. */
    return raw[lasti] == st->op_resume && raw[lasti + 1] != 0 && lasti >= 2 && raw[lasti - 2] == st->op_yield;
}

#define TRAIL_NONE INT32_MIN

/*
 * Where a branch direction leads, as the line transition the LINE events
 * would have shown: follow the instructions from @p dest (straight on, and
 * through unconditional jumps) to the first one on another line than
 * @p from_line. A return on the way is an exit (-firstline, coverage.py's
 * convention); a raise, or another conditional jump first (it has its own
 * events), gives TRAIL_NONE: no arc.
 */
static int32_t
branch_trail(const cov_state *st, cov_code *c, int32_t from_line, int32_t dest)
{
    const unsigned char *raw = (const unsigned char *)PyBytes_AS_STRING(c->bytecode);
    Py_ssize_t n = PyBytes_GET_SIZE(c->bytecode);
    Py_ssize_t off = dest, steps = n / 2 + 1;
    unsigned int ext = 0;
    while (off >= 0 && off + 1 < n && steps-- > 0) {
        int op = raw[off];
        unsigned int arg = raw[off + 1] | ext;
        int cls = st->opclass[op];
        Py_ssize_t next = off + 2 + 2 * (Py_ssize_t)st->an_ops.caches[op];
        if (cls == OPC_EXTENDED) {
            ext = arg << 8;
            off = next;
            continue;
        }
        ext = 0;
        int line = PyCode_Addr2Line(c->code, (int)off);
        if (line > 0 && line != from_line) {
            return line;
        }
        switch (cls) {
        case OPC_EXIT:
            return -c->firstline;
        case OPC_STOP:
        case OPC_COND:
            return TRAIL_NONE;
        case OPC_FWD:
            off = next + 2 * (Py_ssize_t)arg;
            break;
        case OPC_BACK:
            off = next - 2 * (Py_ssize_t)arg;
            break;
        default:
            off = next;
        }
    }
    return TRAIL_NONE;
}

/* The record of the conditional jump at @p src of @p c, made on first use;
 * NULL (with a Python error set) on failure. */
static cov_br *
branch_get(cov_code *c, int32_t src)
{
    if (!c->bytecode) {
        c->bytecode = PyObject_GetAttrString((PyObject *)c->code, "co_code");
        if (!c->bytecode) {
            return NULL;
        }
        if (!PyBytes_Check(c->bytecode)) {
            Py_CLEAR(c->bytecode);
            PyErr_SetString(PyExc_TypeError, "co_code is not bytes");
            return NULL;
        }
    }
    Py_ssize_t units = PyBytes_GET_SIZE(c->bytecode) / 2;
    if (src < 0 || src / 2 >= units) {
        PyErr_SetString(PyExc_ValueError, "branch offset outside the code");
        return NULL;
    }
    if (!c->bridx) {
        c->bridx = calloc((size_t)units, sizeof(int32_t));
        if (!c->bridx) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    int32_t i = c->bridx[src / 2];
    if (i > 0) {
        return &c->brs[i - 1];
    }
    if (c->nbrs == c->capbrs) {
        size_t cap = (size_t)c->capbrs;
        if (PTK_KIT_RESERVE(c->brs, cap, (size_t)c->nbrs + 1, 8) != 0 || cap > INT32_MAX) {
            PyErr_NoMemory();
            return NULL;
        }
        c->capbrs = (int32_t)cap;
    }
    cov_br *b = &c->brs[c->nbrs++];
    b->src = src;
    b->n = 0;
    c->bridx[src / 2] = c->nbrs;
    return b;
}

/* A BRANCH event: the first time each direction is taken, the arc it
 * makes; both seen, the location is switched off. */
static int
on_branch(cov_state *st, cov_code *c, const ptk_event *ev)
{
    st->branch_events++;
    int32_t src = st->host->event_offset(ev);
    int32_t dest = ev->target;
    cov_br *b = branch_get(c, src);
    if (!b) {
        return cov__fail_python(st, "recording a branch");
    }
    if (b->n > 0 && b->dest[0] == dest) {
        return PTK_OK;
    }
    if (b->n < 2) {
        int32_t from = PyCode_Addr2Line(c->code, src);
        int32_t to = from > 0 ? branch_trail(st, c, from, dest) : TRAIL_NONE;
        if (to != TRAIL_NONE) {
            cov_file *f = c->file;
            if ((from > f->maxline && cov__file_reserve(f, from) < 0) || arc_add(f, from, to) < 0) {
                return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
            }
        }
        b->dest[b->n++] = dest;
    }
    return b->n == 2 ? PTK_DISABLE : PTK_OK;
}

/* A BRANCH_LEFT or BRANCH_RIGHT event (3.14+): the arc of that direction,
 * and the direction is switched off; the other one stays on until taken.
 * After the first pass no branch event fires. */
static int
on_branch_dir(cov_state *st, cov_code *c, const ptk_event *ev)
{
    st->branch_events++;
    int32_t src = st->host->event_offset(ev);
    if (!branch_get(c, src)) { /* (also loads the bytecode) */
        return cov__fail_python(st, "recording a branch");
    }
    int32_t from = PyCode_Addr2Line(c->code, src);
    int32_t to = from > 0 ? branch_trail(st, c, from, ev->target) : TRAIL_NONE;
    if (to != TRAIL_NONE) {
        cov_file *f = c->file;
        int64_t i = from > f->maxline && cov__file_reserve(f, from) < 0 ? -1
                                                                        : arc_add(f, from, to);
        if (i < 0) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
        }
        /* without counts an arc is taken or not: a direction seen again
         * after a restart of the session (its DISABLE undone) is not a
         * second pass */
        if (!st->counts) {
            f->arcs[i].count = 1;
        }
        /* the direction's line ran, even where 3.14+ gives it no LINE
         * event (the line after a loop with a break that ended normally,
         * docs/events.md): as coverage.py counts a line an arc reaches */
        if (to > 0) {
            if (to > f->maxline && cov__file_reserve(f, to) < 0) {
                return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
            }
            f->possible[to] = 1;
            if (f->hits[to] == 0) {
                f->hits[to] = 1;
            }
        }
    }
    return PTK_DISABLE;
}

/* A LINE event of measured code (the commonest one of branch coverage is
 * counted by cov__on_event's short way before it gets here). */
static inline __attribute__((always_inline)) int
on_line(cov_state *st, cov_code *c, cov_file *f, const ptk_event *ev)
{
    int32_t line = ev->line;
    st->line_events++;
    int lines_only = !st->branch || !cov__arcs_from_lines(st);
    if (line <= 0) {
        return lines_only && !st->counts ? PTK_DISABLE : PTK_OK;
    }
    if (line > f->maxline && cov__file_reserve(f, line) < 0) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
    }
    f->possible[line] = 1;
    if (st->contexts && cov__ctx_line(st, f, line) < 0) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
    }
    if (lines_only) {
        if (st->counts) {
            f->hits[line]++;
            return PTK_OK;
        }
        f->hits[line] = 1;
        return PTK_DISABLE;
    }
    f->hits[line]++;
    cov_slot *s = thread_slot(st, ev);
    if (!s) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
    }
    if (s->code != ev->code) {
        /* A frame that was running before measuring started. */
        s->code = ev->code;
        s->last = -c->firstline;
    }
    int32_t last = s->last;
    s->last = line;
    if (arc_step(f, c, last, line) < 0 || (st->contexts && cov__ctx_arc(st, f, last, line) < 0)) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
    }
    return PTK_OK;
}

/* contexts=: the current context's index in ctx_names, made at first
 * sight of its name. -1 when out of memory (Python's, or ours). The
 * traced program's exception, if any, is kept. */
static int
ctx_switch(cov_state *st)
{
    uint64_t id;
    const char *name = st->host->context(&id);
    Py_ssize_t at = ptk_kit_context_index(&st->ctx_index, st->ctx_names, name, 0, NULL);
    if (at < 0) {
        return -1;
    }
    st->ctx_cur = (int32_t)at;
    st->ctx_id = id;
    st->ctx_seen = 1;
    return 0;
}

int
cov__ctx_line(cov_state *st, cov_file *f, int32_t line)
{
    uint64_t id;
    st->host->context(&id);
    if ((!st->ctx_seen || id != st->ctx_id) && ctx_switch(st) < 0) {
        return -1;
    }
    cov_fctx *x = f->nfctx ? &f->fctx[f->nfctx - 1] : NULL;
    if (x == NULL || x->ctx != st->ctx_cur) {
        if (PTK_KIT_RESERVE(f->fctx, f->capfctx, f->nfctx + 1, 8) != 0) {
            return -1;
        }
        x = &f->fctx[f->nfctx++];
        *x = (cov_fctx){.ctx = st->ctx_cur};
    }
    int32_t byte = line >> 3;
    if (byte >= x->nbytes) {
        int32_t n = (f->maxline >> 3) + 1 > byte + 1 ? (f->maxline >> 3) + 1 : byte + 1;
        uint8_t *b = realloc(x->bits, (size_t)n);
        if (b == NULL) {
            return -1;
        }
        memset(b + x->nbytes, 0, (size_t)(n - x->nbytes));
        x->bits = b;
        x->nbytes = n;
    }
    x->bits[byte] |= (uint8_t)(1u << (line & 7));
    return 0;
}

static inline size_t
carc_hash(uint64_t key, int32_t ctx, size_t mask)
{
    return ptr_hash((void *)(uintptr_t)(key ^ ((uint64_t)(uint32_t)ctx * UINT64_C(0xC2B2AE3D27D4EB4F))), mask);
}

/* Makes room in @p f's set of arcs per context for one more (half full at
 * most); -1 when out of memory. */
static int
carc_reserve(cov_file *f)
{
    if ((f->ncarcs + 1) * 2 <= f->capcarcs) {
        return 0;
    }
    size_t cap = f->capcarcs ? f->capcarcs * 2 : 64;
    cov_carc *t = malloc(cap * sizeof(*t));
    if (!t) {
        return -1;
    }
    for (size_t i = 0; i < cap; i++) {
        t[i].ctx = -1;
    }
    for (size_t j = 0; j < f->capcarcs; j++) {
        const cov_carc *o = &f->carcs[j];
        if (o->ctx < 0) {
            continue;
        }
        size_t i = carc_hash(o->key, o->ctx, cap - 1);
        while (t[i].ctx >= 0) {
            i = (i + 1) & (cap - 1);
        }
        t[i] = *o;
    }
    free(f->carcs);
    f->carcs = t;
    f->capcarcs = cap;
    return 0;
}

int
cov__ctx_arc(cov_state *st, cov_file *f, int32_t from, int32_t to)
{
    uint64_t id;
    st->host->context(&id);
    if ((!st->ctx_seen || id != st->ctx_id) && ctx_switch(st) < 0) {
        return -1;
    }
    if (carc_reserve(f) < 0) {
        return -1;
    }
    uint64_t key = arc_key(from, to);
    int32_t ctx = st->ctx_cur;
    size_t mask = f->capcarcs - 1;
    for (size_t i = carc_hash(key, ctx, mask);; i = (i + 1) & mask) {
        cov_carc *e = &f->carcs[i];
        if (e->ctx < 0) {
            *e = (cov_carc){.key = key, .ctx = ctx};
            f->ncarcs++;
            return 0;
        }
        if (e->key == key && e->ctx == ctx) {
            return 0;
        }
    }
}

static __attribute__((noinline)) int
cov_on_event_full(void *state, const ptk_event *ev)
{
    cov_state *st = state;
    /* (contexts=: each arc is also recorded under its context, below) */
    st->arcs_fast = st->branch && cov__arcs_from_lines(st) && !st->contexts;
    cov_code *c = cov__code_get(st, ev->code);
    if (!c) {
        return cov__fail_python(st, "analysing a code object");
    }
    cov_file *f = c->file;
    if (!f) {
        return PTK_DISABLE;
    }
    switch (ev->kind) {
    case PTK_EV_LINE:
        return on_line(st, c, f, ev);
    case PTK_EV_CALL: {
        int start = call_is_start(st, c, ev);
        st->call_events++;
        if (start && c->func >= 0) {
            f->funcs[c->func].calls++;
        }
        if (st->branch && cov__arcs_from_lines(st)) {
            cov_slot *s = thread_slot(st, ev);
            if (!s) {
                return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
            }
            s->code = ev->code;
            if (start) {
                s->last = -c->firstline;
            }
            else {
                PyFrameObject *frame = st->host->event_frame(ev);
                s->last = frame ? PyFrame_GetLineNumber(frame) : -c->firstline;
            }
        }
        return PTK_OK;
    }
    case PTK_EV_RETURN: {
        if (!st->branch) {
            return PTK_OK;
        }
        if (!cov__arcs_from_lines(st)) {
            return PTK_DISABLE; /* exits come from the branch trails */
        }
        cov_slot *s = thread_slot(st, ev);
        if (!s) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
        }
        if (s->code == ev->code && !return_is_yield(st, c, ev) && (arc_step(f, c, s->last, -c->firstline) < 0 || (st->contexts && cov__ctx_arc(st, f, s->last, -c->firstline) < 0))) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
        }
        s->code = NULL;
        return PTK_OK;
    }
    case PTK_EV_BRANCH:
        return on_branch(st, c, ev);
    case PTK_EV_BRANCH_LEFT:
    case PTK_EV_BRANCH_RIGHT:
        return on_branch_dir(st, c, ev);
    default:
        return PTK_OK;
    }
}

/*
 * The plugin's event handler. The most frequent event of branch coverage
 * from LINE events, a line of the last event's code object, in a frame
 * already on the thread's slots, leaving a line by one of the two arcs its
 * successor cache holds, is counted here, with no call: nothing to save.
 * Whatever else (a first sight, a miss, another kind) goes to
 * cov_on_event_full, which does it all from the start (nothing is changed
 * here before the answer is known).
 */
int
cov__on_event(void *state, const ptk_event *ev)
{
    cov_state *st = state;
    const cov_code *c = st->last;
    if (ev->kind != PTK_EV_LINE || !st->arcs_fast || c == NULL || c->code != ev->code || c->file == NULL || ev->thread == NULL) {
        return cov_on_event_full(state, ev);
    }
    cov_file *f = c->file;
    int32_t line = ev->line;
    size_t t = ev->thread->index;
    /* (negative line and depth: unsigned, too large) */
    if ((uint32_t)line - 1 >= (uint32_t)f->maxline || t >= st->nthreads || (uint32_t)ev->depth >= (uint32_t)st->threads[t].cap ||
        st->threads[t].exec_id != ev->thread->exec_id) {
        return cov_on_event_full(state, ev);
    }
    cov_slot *s = &st->threads[t].slots[ev->depth];
    int32_t last = s->last;
    int64_t x = succ_index(c, last);
    if (s->code != ev->code || x < 0 || x >= c->nsucc) {
        return cov_on_event_full(state, ev);
    }
    cov_arc *a = succ_arc(f, c, x, last, line);
    if (a == NULL) {
        return cov_on_event_full(state, ev);
    }
    a->count++;
    st->line_events++;
    f->possible[line] = 1;
    f->hits[line]++;
    s->last = line;
    return PTK_OK;
}
