/* Per-code-object records, kept in the code object's extra slot: which
 * subscribers disabled which locations (PTK_DISABLE), and whether LINE is
 * off for the whole code object. Nothing here costs anything until some
 * subscriber returns PTK_DISABLE. */
#include "core/core.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct slotlines {
    uint32_t slot;
    uint32_t ndisabled; /* counted lines this slot disabled */
    uint8_t *bits;      /* one bit per line in [first, first+span) */
} slotlines;

typedef struct loc {
    uint32_t slot;
    int32_t kind;
    int32_t lasti;
} loc;

typedef struct coderec {
    ptk__coderec_head h; /* first, span, lines_off, all_off: see there */
    int nlines;          /* lines that can produce LINE events */
    uint8_t *counted;    /* bit per line: can produce LINE */
    uint64_t whole[PTK_EV_COUNT]; /* slots that disabled a kind code-wide */
    uint64_t line_slots; /* slots with per-line records */
    uint64_t loc_slots;  /* slots with per-instruction records */
    slotlines *sl;
    int nsl;
    loc *locs;
    int nlocs, caplocs;
    uint64_t judged;     /* slots whose filter has judged this code object */
    uint64_t rejected;   /* ... and rejected it */
    uint32_t backend_word; /* the running backend's (0: nothing set) */
    struct cslot {
        uint32_t slot;
        void *p;
    } *cs;               /* host->code_slot: one pointer per instance */
    int ncs;
    PyCodeObject *code;  /* the code object (not a reference) */
    struct coderec *prev, *next;
    /* on the list of records a per-context slot disabled something in
     * since the last context change (ptk__code_rearm's work) */
    struct coderec *dprev, *dnext;
    int dirty;
} coderec;

ptk__verdict ptk__verdicts[PTK__VERDICTS];
uint64_t ptk__table_gen = 1;

/* The code-extra API was renamed PyUnstable_* in 3.12 (the old names are
 * deprecated there); the configure check picks the spelling. */
#if PTK_HAVE_UNSTABLE_CODE_EXTRA
#define code_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#define code_get_extra PyUnstable_Code_GetExtra
#define code_set_extra PyUnstable_Code_SetExtra
#else
#define code_extra_index _PyEval_RequestCodeExtraIndex
#define code_get_extra _PyCode_GetExtra
#define code_set_extra _PyCode_SetExtra
#endif

int ptk__disable_records;
uint64_t ptk__disable_marks;
static Py_ssize_t extra_index = -1;
static coderec *all_records;
static coderec *dirty_records;
uint64_t ptk__context_slots;

static void
dirty_unlink(coderec *r)
{
    if (!r->dirty) {
        return;
    }
    if (r->dprev) {
        r->dprev->dnext = r->dnext;
    }
    else {
        dirty_records = r->dnext;
    }
    if (r->dnext) {
        r->dnext->dprev = r->dprev;
    }
    r->dprev = r->dnext = NULL;
    r->dirty = 0;
}
/* rec_get's one-entry cache: consecutive events mostly come from one code
 * object (its LINE events). Cleared when its record is freed; a record made
 * for the cached code object replaces the entry. */
PyCodeObject *ptk__last_code;
ptk__coderec_head *ptk__last_rec;
static int skip_ops[256]; /* prologue opcodes that produce no LINE event */
static int resume_op = -1, cache_op = -1, extended_op = -1;
/* The inline cache entries after a RESUME (0 to 3.14, 1 on 3.15): the same
 * for every RESUME of the interpreter, counted once in compiled code; -1
 * when that could not be done. */
static int resume_caches = -1;

static void
rec_free(void *p)
{
    coderec *r = p;
    if (r == NULL) {
        return;
    }
    if (ptk__last_rec == &r->h || ptk__last_code == r->code) {
        ptk__last_code = NULL;
        ptk__last_rec = NULL;
    }
    ptk__verdict *v = ptk__verdict_slot(r->code);
    if (v->code == r->code) {
        v->code = NULL; /* the address may be a new code object's next */
    }
    dirty_unlink(r);
    if (r->prev) {
        r->prev->next = r->next;
    }
    else if (all_records == r) {
        all_records = r->next;
    }
    if (r->next) {
        r->next->prev = r->prev;
    }
    for (int i = 0; i < r->nsl; i++) {
        free(r->sl[i].bits);
    }
    free(r->sl);
    free(r->cs);
    free(r->locs);
    free(r->counted);
    free(r->h.all_off);
    free(r);
}

static int
init_extra(void)
{
    if (extra_index >= 0) {
        return 0;
    }
    extra_index = code_extra_index(rec_free);
    return extra_index < 0 ? -1 : 0;
}

/* The prologue opcodes (ptk__ops: opcode.h's numbers), and how many
 * inline caches follow a RESUME, from the bytecode of `pass`: found when the
 * first line record is made, not with the first code record (a filter or a
 * host->code_slot alone need none of it). */
static void
init_ops(void)
{
    static int ready;
    if (ready) {
        return;
    }
    ready = 1;
    const int skip[] = {ptk__ops.cache,     ptk__ops.resume,         ptk__ops.return_generator,
                        ptk__ops.pop_top,   ptk__ops.make_cell,      ptk__ops.copy_free_vars,
                        ptk__ops.extended_arg};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++) {
        if (skip[i] >= 0 && skip[i] < 256) {
            skip_ops[skip[i]] = 1;
        }
    }
    resume_op = ptk__ops.resume;
    cache_op = ptk__ops.cache;
    extended_op = ptk__ops.extended_arg;
    PyObject *probe = Py_CompileString("pass\n", "<pytracekit>", Py_file_input);
    PyObject *bytes = probe ? PyCode_GetCode((PyCodeObject *)probe) : NULL;
    if (bytes != NULL && resume_op >= 0 && cache_op >= 0) {
        const unsigned char *ops = (const unsigned char *)PyBytes_AS_STRING(bytes);
        Py_ssize_t n = PyBytes_GET_SIZE(bytes), at = 0;
        while (at < n && ops[at] != resume_op) {
            at += 2;
        }
        int caches = 0;
        for (at += 2; at < n && ops[at] == cache_op; at += 2) {
            caches++;
        }
        resume_caches = at < n ? caches : -1;
    }
    Py_XDECREF(bytes);
    Py_XDECREF(probe);
    PyErr_Clear();
}

static coderec *
rec_get(PyCodeObject *code)
{
    if (code == ptk__last_code && code != NULL) {
        return (coderec *)ptk__last_rec;
    }
    void *p = NULL;
    if (extra_index < 0 ||
        code_get_extra((PyObject *)code, extra_index, &p) < 0) {
        PyErr_Clear();
        return NULL;
    }
    if (p != NULL) {
        ptk__last_code = code;
        ptk__last_rec = &((coderec *)p)->h;
    }
    return p;
}

/* The next entry of a code object's location table (co_linetable, the
 * format of CPython's Objects/locations.md, 3.11 to 3.15): its code units
 * [*start, *stop) and its line in *at (-1: none); *line and *addr carry
 * the walk (start them at co_firstlineno and 0). 0 at the end. What
 * co_lines() gives, without a tuple per entry: on test_enum's 960 code
 * objects, 20 M instructions of co_lines() lists against about 1 M. */
static int
linetable_next(const uint8_t **pp, const uint8_t *end, int *line, int *addr, int *start,
               int *stop, int *at)
{
    const uint8_t *p = *pp;
    if (p >= end) {
        return 0;
    }
    int kind = (*p >> 3) & 15, len = (*p & 7) + 1;
    p++;
    if (kind == 13 || kind == 14) {
        /* the line's delta first: a signed varint, 6-bit chunks, least
         * significant first, bit 6 set on all but the last */
        uint32_t u = 0;
        for (unsigned shift = 0; p < end && shift < 30; shift += 6) {
            uint32_t c = *p++;
            u |= (c & 63) << shift;
            if (!(c & 64)) {
                break;
            }
        }
        *line += (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
    }
    else if (kind >= 10 && kind <= 12) {
        *line += kind - 10; /* the one-line forms */
    }
    *at = kind == 15 ? -1 : *line; /* 15: no location */
    *start = *addr;
    *stop = *addr + len;
    *addr = *stop;
    while (p < end && !(*p & 128)) { /* the next entry starts with bit 7 set */
        p++;
    }
    *pp = p;
    return 1;
}

/* Whether the bytes [@p from, @p to) of bytecode @p ops hold an instruction
 * that can start a line: after the prologue (up to byte @p prologue, the
 * first RESUME) anything but a cache entry or EXTENDED_ARG; in it, none of
 * the prologue instructions (skip_ops). */
static int
runs_a_line(const unsigned char *ops, Py_ssize_t nops, Py_ssize_t prologue, long from, long to)
{
    for (long off = from; off < to && off < nops; off += 2) {
        if (off > prologue ? ops[off] != cache_op && ops[off] != extended_op
                           : !skip_ops[ops[off]]) {
            return 1;
        }
    }
    return 0;
}

#ifndef NDEBUG
/* The same lines from co_lines() itself: builds that keep assert() check
 * every record's walk of the table against it (the same range, the same
 * lines). 1 if they agree, or if co_lines() cannot be had. */
static int
rec_lines_agree(const coderec *r, PyCodeObject *code, const unsigned char *ops,
                Py_ssize_t nops, Py_ssize_t prologue)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *it = PyObject_CallMethod((PyObject *)code, "co_lines", NULL);
    PyObject *list = it ? PySequence_List(it) : NULL;
    Py_XDECREF(it);
    uint8_t *bits = calloc((size_t)r->h.span / 8 + 1, 1);
    int ok = 1, lo = 0, hi = -1;
    for (Py_ssize_t i = 0; list != NULL && bits != NULL && i < PyList_GET_SIZE(list); i++) {
        PyObject *tup = PyList_GET_ITEM(list, i);
        long start = PyLong_AsLong(PyTuple_GET_ITEM(tup, 0));
        long end = PyLong_AsLong(PyTuple_GET_ITEM(tup, 1));
        PyObject *lineo = PyTuple_GET_ITEM(tup, 2);
        int line = lineo == Py_None ? -1 : (int)PyLong_AsLong(lineo);
        if (line < 0 || !runs_a_line(ops, nops, prologue, start, end)) {
            continue;
        }
        lo = hi < lo ? line : (line < lo ? line : lo);
        hi = line > hi ? line : hi;
        int b = line - r->h.first;
        if (b < 0 || b >= r->h.span) {
            ok = 0;
        }
        else {
            bits[b >> 3] |= (uint8_t)(1u << (b & 7));
        }
    }
    if (list != NULL && bits != NULL) {
        ok = ok && (hi < lo ? r->h.span == 0 : r->h.first == lo && r->h.span == hi - lo + 1) &&
             memcmp(bits, r->counted, (size_t)r->h.span / 8 + 1) == 0;
    }
    free(bits);
    Py_XDECREF(list);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return ok;
}
#endif

/* Lines of a code object that can produce LINE events, from its location
 * table: a line counts if some instruction on it can start one
 * (runs_a_line). */
static int
rec_lines(coderec *r, PyCodeObject *code)
{
    init_ops();
    PyObject *bytes = PyCode_GetCode(code);
    PyObject *table = code->co_linetable;
    if (bytes == NULL || table == NULL || !PyBytes_Check(table)) {
        Py_XDECREF(bytes);
        return -1;
    }
    const unsigned char *ops = (const unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t nops = PyBytes_GET_SIZE(bytes);
    /* The prologue ends at the first RESUME: after it every instruction
     * (a `break` that is a lone POP_TOP, say) can start a line. */
    Py_ssize_t prologue = 0;
    while (prologue < nops && ops[prologue] != resume_op) {
        prologue += 2;
    }
    const uint8_t *tbeg = (const uint8_t *)PyBytes_AS_STRING(table);
    const uint8_t *tend = tbeg + PyBytes_GET_SIZE(table);
    int lo = 0, hi = -1;
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *p = tbeg;
        int line = code->co_firstlineno, addr = 0, start, stop, at;
        while (linetable_next(&p, tend, &line, &addr, &start, &stop, &at)) {
            if (at < 0 || !runs_a_line(ops, nops, prologue, 2L * start, 2L * stop)) {
                continue;
            }
            if (pass == 0) {
                if (hi < lo) {
                    lo = hi = at;
                }
                lo = at < lo ? at : lo;
                hi = at > hi ? at : hi;
            }
            else {
                int b = at - r->h.first;
                if (!(r->counted[b >> 3] & (1u << (b & 7)))) {
                    r->counted[b >> 3] |= (uint8_t)(1u << (b & 7));
                    r->nlines++;
                }
            }
        }
        if (pass == 0) {
            r->h.first = hi < lo ? 0 : lo;
            r->h.span = hi < lo ? 0 : hi - lo + 1;
            r->counted = calloc((size_t)r->h.span / 8 + 1, 1);
            if (r->counted == NULL) {
                break;
            }
        }
    }
    assert(r->counted == NULL || rec_lines_agree(r, code, ops, nops, prologue));
    Py_DECREF(bytes);
    return r->counted ? 0 : -1;
}

static coderec *
rec_make(PyCodeObject *code)
{
    coderec *r = rec_get(code);
    if (r != NULL) {
        return r;
    }
    if (init_extra() < 0) {
        return NULL;
    }
    r = calloc(1, sizeof *r);
    if (r != NULL) {
        r->code = code;
    }
    /* the lines (rec_lines) wait for the first LINE disabled: most code
     * objects are only judged by a filter */
    if (r == NULL || code_set_extra((PyObject *)code, extra_index, r) < 0) {
        PyErr_Clear();
        if (r) {
            free(r->counted);
            free(r);
        }
        return NULL;
    }
    r->next = all_records;
    if (all_records) {
        all_records->prev = r;
    }
    all_records = r;
    ptk__last_code = code;
    ptk__last_rec = &r->h;
    return r;
}

static slotlines *
rec_slot(coderec *r, uint32_t slot, int create)
{
    for (int i = 0; i < r->nsl; i++) {
        if (r->sl[i].slot == slot) {
            return &r->sl[i];
        }
    }
    if (!create) {
        return NULL;
    }
    slotlines *n = realloc(r->sl, (size_t)(r->nsl + 1) * sizeof *n);
    if (n == NULL) {
        return NULL;
    }
    r->sl = n;
    slotlines *e = &r->sl[r->nsl];
    e->slot = slot;
    e->ndisabled = 0;
    e->bits = calloc((size_t)r->h.span / 8 + 1, 1);
    if (e->bits == NULL) {
        return NULL;
    }
    r->nsl++;
    return e;
}

/* Per-instruction records are kept sorted by (offset, kind, slot): a
 * code object whose every branch was switched off holds hundreds, and each
 * BRANCH event at a location still on asks about its own. */
static inline int
loc_cmp(const loc *a, uint32_t slot, int32_t kind, int32_t lasti)
{
    if (a->lasti != lasti) {
        return a->lasti < lasti ? -1 : 1;
    }
    if (a->kind != kind) {
        return a->kind < kind ? -1 : 1;
    }
    return a->slot == slot ? 0 : (a->slot < slot ? -1 : 1);
}

/* The index of the first record not below (slot, kind, lasti). */
static int
loc_find(const coderec *r, uint32_t slot, int32_t kind, int32_t lasti)
{
    int lo = 0, hi = r->nlocs;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (loc_cmp(&r->locs[mid], slot, kind, lasti) < 0) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

int
ptk__code_is_disabled(PyCodeObject *code, uint32_t slot, ptk_event_kind kind,
                      int line, int lasti)
{
    coderec *r = rec_get(code);
    if (r == NULL) {
        return 0;
    }
    uint64_t bit = (uint64_t)1 << slot;
    if (r->whole[kind] & bit) {
        return 1;
    }
    if (kind == PTK_EV_LINE) {
        if (!(r->line_slots & bit)) {
            return 0;
        }
        slotlines *e = rec_slot(r, slot, 0);
        int b = line - r->h.first;
        return e && b >= 0 && b < r->h.span && (e->bits[b >> 3] & (1u << (b & 7)));
    }
    if (!(r->loc_slots & bit)) {
        return 0;
    }
    int i = loc_find(r, slot, (int32_t)kind, lasti);
    return i < r->nlocs && loc_cmp(&r->locs[i], slot, (int32_t)kind, lasti) == 0;
}

int
ptk__code_all_disabled(const ptk__table *t, const ptk_event *ev)
{
    int n = t->nsub[ev->kind];
    if (n == 0 || rec_get(ev->code) == NULL) {
        return 0;
    }
    int lasti = ptk__event_lasti(ev);
    for (int i = 0; i < n; i++) {
        if (!ptk__sub_failed(&t->subs[ev->kind][i]) &&
            !ptk__code_is_disabled(ev->code, t->subs[ev->kind][i].slot,
                                   ev->kind, ev->line, lasti)) {
            return 0;
        }
    }
    return 1;
}

/* Every LINE subscriber of the current table has disabled every counted
 * line of this code object. */
static int
all_lines_off(coderec *r)
{
    const ptk__table *t = ptk__current;
    int n = t->nsub[PTK_EV_LINE];
    if (n == 0 || r->nlines == 0) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        slotlines *e = rec_slot(r, t->subs[PTK_EV_LINE][i].slot, 0);
        if (e == NULL || e->ndisabled < (uint32_t)r->nlines) {
            return 0;
        }
    }
    return 1;
}

/* Is line bit b disabled by every LINE subscriber of the current table? */
static int
line_off_for_all(coderec *r, int b)
{
    const ptk__table *t = ptk__current;
    int n = t->nsub[PTK_EV_LINE];
    if (n == 0) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        slotlines *e = rec_slot(r, t->subs[PTK_EV_LINE][i].slot, 0);
        if (e == NULL || !(e->bits[b >> 3] & (1u << (b & 7)))) {
            return 0;
        }
    }
    return 1;
}

static void
refresh_all_off(coderec *r)
{
    if (r->h.all_off == NULL) {
        return;
    }
    memset(r->h.all_off, 0, (size_t)r->h.span / 8 + 1);
    for (int b = 0; b < r->h.span; b++) {
        if (line_off_for_all(r, b)) {
            r->h.all_off[b >> 3] |= (uint8_t)(1u << (b & 7));
        }
    }
}

int
ptk__code_line_state_slow(PyCodeObject *code, int line)
{
    coderec *r = rec_get(code);
    return r == NULL ? PTK__LINE_DELIVER : ptk__rec_line_state(&r->h, line);
}

int
ptk__code_resume_line_goes_on(PyCodeObject *code, int offset, int line)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    init_ops();
    /* the instruction after the RESUME and its cache entries: no copy of
     * the bytecode, this runs at every PY_START kept on */
    int r = resume_caches < 0 ? -1
                              : PyCode_Addr2Line(code, offset + 2 + 2 * resume_caches) == line;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return r;
}

/* The record joins the list a context switch re-arms (a per-context
 * subscriber's slot switched something off in it). */
static void
mark_dirty(coderec *r, uint64_t bit)
{
    if ((ptk__context_slots & bit) && !r->dirty) {
        r->dirty = 1;
        r->dprev = NULL;
        r->dnext = dirty_records;
        if (dirty_records) {
            dirty_records->dprev = r;
        }
        dirty_records = r;
    }
}

/* LINE at @p line switched off for @p slot; 1 when every line of the code
 * object is now off for every slot. */
static int
disable_line(coderec *r, PyCodeObject *code, uint32_t slot, int line)
{
    int failed = 0;
    if (r->counted == NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        failed = rec_lines(r, code) < 0;
        PyErr_Restore(et, ev, tb);
    }
    if (failed) {
        free(r->counted);
        r->counted = NULL;
        r->h.first = r->h.span = r->nlines = 0;
        return 0;
    }
    int b = line - r->h.first;
    if (b < 0 || b >= r->h.span) {
        /* A line co_lines() does not know: disable LINE code-wide for
         * this slot would be wrong; keep it per line in a wider map. */
        return 0;
    }
    slotlines *e = rec_slot(r, slot, 1);
    if (e == NULL) {
        return 0;
    }
    r->line_slots |= (uint64_t)1 << slot;
    if (!(e->bits[b >> 3] & (1u << (b & 7)))) {
        e->bits[b >> 3] |= (uint8_t)(1u << (b & 7));
        if (r->counted[b >> 3] & (1u << (b & 7))) {
            e->ndisabled++;
        }
    }
    if (r->h.all_off == NULL) {
        r->h.all_off = calloc((size_t)r->h.span / 8 + 1, 1);
    }
    if (r->h.all_off != NULL && line_off_for_all(r, b)) {
        r->h.all_off[b >> 3] |= (uint8_t)(1u << (b & 7));
    }
    if (!r->h.lines_off && all_lines_off(r)) {
        r->h.lines_off = 1;
    }
    return r->h.lines_off;
}

/* Any other event at instruction @p lasti switched off for @p slot: kept
 * in the record's sorted list of locations. */
static void
disable_loc(coderec *r, uint32_t slot, ptk_event_kind kind, int lasti)
{
    int at = loc_find(r, slot, (int32_t)kind, (int32_t)lasti);
    if (at < r->nlocs && loc_cmp(&r->locs[at], slot, (int32_t)kind, (int32_t)lasti) == 0) {
        return; /* already recorded */
    }
    if (r->nlocs == r->caplocs) {
        int ncap = r->caplocs ? r->caplocs * 2 : 8;
        loc *n = realloc(r->locs, (size_t)ncap * sizeof *n);
        if (n == NULL) {
            return;
        }
        r->locs = n;
        r->caplocs = ncap;
    }
    memmove(&r->locs[at + 1], &r->locs[at], (size_t)(r->nlocs - at) * sizeof *r->locs);
    r->locs[at] = (loc){slot, (int32_t)kind, (int32_t)lasti};
    r->nlocs++;
    r->loc_slots |= (uint64_t)1 << slot;
}

int
ptk__code_disable(PyCodeObject *code, uint32_t slot, ptk_event_kind kind,
                  int line, int lasti)
{
    coderec *r = rec_make(code);
    if (r == NULL) {
        return 0; /* cannot record: the subscriber keeps getting the event */
    }
    ptk__disable_records |= (int)PTK_MASK(kind);
    ptk__disable_marks++;
    uint64_t bit = (uint64_t)1 << slot;
    mark_dirty(r, bit);
    if (kind == PTK_EV_CALL || kind == PTK_EV_RETURN) {
        /* A CALL or RETURN's location is the code object itself. */
        r->whole[kind] |= bit;
        return 0;
    }
    if (kind == PTK_EV_LINE) {
        return disable_line(r, code, slot, line);
    }
    disable_loc(r, slot, kind, lasti);
    return 0;
}

/* Drops the DISABLE records of the slots in bits from r; 1 if it had some. */
static int
drop_disables(coderec *r, uint64_t bits)
{
    int had = ((r->line_slots | r->loc_slots) & bits) != 0;
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        had |= (r->whole[k] & bits) != 0;
        r->whole[k] &= ~bits;
    }
    if (!had) {
        return 0;
    }
    r->line_slots &= ~bits;
    r->loc_slots &= ~bits;
    for (int i = 0; i < r->nsl;) {
        if (bits & ((uint64_t)1 << r->sl[i].slot)) {
            free(r->sl[i].bits);
            r->sl[i] = r->sl[--r->nsl];
        }
        else {
            i++;
        }
    }
    int w = 0;
    for (int i = 0; i < r->nlocs; i++) {
        if (!(bits & ((uint64_t)1 << r->locs[i].slot))) {
            r->locs[w++] = r->locs[i];
        }
    }
    r->nlocs = w;
    return 1;
}

uint64_t ptk__rearm_codes, ptk__rearm_switches;

size_t
ptk__code_rearm(uint64_t slots, void (*rearm)(PyCodeObject *code))
{
    size_t n = 0;
    /* only the records a per-context slot disabled something in since
     * the last change: a change costs what the last context ran */
    while (dirty_records != NULL) {
        coderec *r = dirty_records;
        dirty_unlink(r);
        if (drop_disables(r, slots)) {
            r->h.lines_off = all_lines_off(r);
            refresh_all_off(r);
            n++;
            if (rearm != NULL && r->code != NULL) {
                rearm(r->code);
            }
        }
    }
    if (n > 0) {
        ptk__disable_marks++;
        ptk__rearm_codes += n;
        ptk__rearm_switches++;
    }
    return n;
}

void
ptk__code_forget_slot(uint32_t slot)
{
    uint64_t bit = (uint64_t)1 << slot;
    for (coderec *r = all_records; r; r = r->next) {
        for (int k = 0; k < PTK_EV_COUNT; k++) {
            r->whole[k] &= ~bit;
        }
        r->line_slots &= ~bit;
        r->loc_slots &= ~bit;
        r->judged &= ~bit;
        r->rejected &= ~bit;
        for (int i = 0; i < r->ncs; i++) {
            if (r->cs[i].slot == slot) {
                r->cs[i] = r->cs[--r->ncs];
                break;
            }
        }
        for (int i = 0; i < r->nsl; i++) {
            if (r->sl[i].slot == slot) {
                free(r->sl[i].bits);
                r->sl[i] = r->sl[--r->nsl];
                break;
            }
        }
        int w = 0;
        for (int i = 0; i < r->nlocs; i++) {
            if (r->locs[i].slot != slot) {
                r->locs[w++] = r->locs[i];
            }
        }
        r->nlocs = w;
    }
}

void
ptk__code_reset_lines_off(void)
{
    for (coderec *r = all_records; r; r = r->next) {
        r->h.lines_off = all_lines_off(r);
        refresh_all_off(r);
    }
}

void
ptk__code_reset(void)
{
    /* Code objects that outlived the interpreter (static ones) had their
     * extra slots cleared without the free function: forget the records,
     * and ask the next interpreter for an index of its own. */
    extra_index = -1;
    all_records = NULL;
    dirty_records = NULL;
    ptk__last_code = NULL;
    ptk__last_rec = NULL;
    ptk__disable_records = 0;
}

/* ---- filter verdicts and plugin slots ------------------------------------- */

/* The `__name__` of globals (borrowed from it), by default of the frame
 * running code; NULL when there is none. */
static const char *
module_of(PyObject *globals)
{
    PyObject *g = globals != NULL ? globals : PyEval_GetGlobals();
    PyObject *name = g ? PyDict_GetItemString(g, "__name__") : NULL;
    if (name != NULL && PyUnicode_Check(name)) {
        return PyUnicode_AsUTF8(name);
    }
    return NULL;
}

/* Judges code for every filtered slot of t that has not judged it yet.
 * Runs once per (code object, subscriber); may call Python (co_lines, the
 * module name), so the traced program's exception is kept aside. The
 * module is the one of globals, or of the running frame when NULL. */
static uint64_t
judge(const ptk__table *t, PyCodeObject *code, PyObject *globals, int *kept)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    coderec scratch = {0};
    coderec *r = rec_make(code);
    uint64_t rejected = 0;
    *kept = r != NULL;
    if (r == NULL) {
        /* No record: judge every time (correct, only slower). */
        r = &scratch;
    }
    const char *module = NULL;
    int module_known = 0;
    uint64_t todo = t->code_filtered & ~r->judged;
    for (int slot = 0; todo; slot++, todo >>= 1) {
        if (!(todo & 1)) {
            continue;
        }
        uint64_t bit = (uint64_t)1 << slot;
        r->judged |= bit;
        const ptk__filter *f = t->filters[slot];
        if (!module_known && (f->list[PTK__F_MODULES].n || f->list[PTK__F_FUNCTIONS].n)) {
            /* only modules= and functions= read it (a dict look-up and
             * a string made for the key: not for every code object) */
            module_known = 1;
            module = module_of(globals);
        }
        if (!ptk__filter_code(f, code, module)) {
            r->rejected |= bit;
        }
    }
    rejected = r->rejected & t->code_filtered;
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return rejected;
}

uint64_t
ptk__code_rejects_in(const ptk__table *t, PyCodeObject *code,
                     PyObject *globals, int *kept)
{
    *kept = 0;
    if (code == NULL) {
        return 0;
    }
    coderec *r = rec_get(code);
    if (r != NULL && (r->judged & t->code_filtered) == t->code_filtered) {
        *kept = 1;
        return r->rejected & t->code_filtered;
    }
    return judge(t, code, globals, kept);
}

/* ---- the backend's word ------------------------------------------------ */

uint32_t
ptk__code_backend_word(PyCodeObject *code)
{
    coderec *r = rec_get(code);
    return r != NULL ? r->backend_word : 0;
}

int
ptk__code_set_backend_word(PyCodeObject *code, uint32_t word)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    coderec *r = rec_make(code);
    PyErr_Restore(et, ev, tb);
    if (r == NULL) {
        return -1;
    }
    r->backend_word = word;
    return 0;
}

void
ptk__code_each_backend_word(void (*fn)(PyCodeObject *code, void *arg), void *arg)
{
    /* fn runs Python, which may free code objects (and their records):
     * walk a list of references taken first */
    size_t n = 0, i = 0;
    for (coderec *r = all_records; r != NULL; r = r->next) {
        n += r->backend_word != 0;
    }
    PyCodeObject **v = n ? malloc(n * sizeof *v) : NULL;
    for (coderec *r = all_records; v != NULL && r != NULL; r = r->next) {
        if (r->backend_word != 0) {
            v[i++] = (PyCodeObject *)Py_NewRef((PyObject *)r->code);
        }
    }
    for (size_t j = 0; j < i; j++) {
        fn(v[j], arg);
        Py_DECREF(v[j]);
    }
    free(v);
}

void **
ptk__code_slot(PyCodeObject *code, uint32_t slot)
{
    coderec *r = rec_get(code);
    if (r == NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        r = rec_make(code);
        PyErr_Restore(et, ev, tb);
        if (r == NULL) {
            return NULL;
        }
    }
    for (int i = 0; i < r->ncs; i++) {
        if (r->cs[i].slot == slot) {
            return &r->cs[i].p;
        }
    }
    struct cslot *n = realloc(r->cs, (size_t)(r->ncs + 1) * sizeof *n);
    if (n == NULL) {
        return NULL;
    }
    r->cs = n;
    r->cs[r->ncs] = (struct cslot){slot, NULL};
    return &r->cs[r->ncs++].p;
}
