/*
 * The coverage plugin's static analysis, in C (analysis.py's analyze(), the
 * reference it is checked against, says the same in Python).
 *
 * For each code object of a tree (the root, then the code objects in its
 * co_consts, depth first, in source order):
 *
 *   - its lines: those of the location table (co_linetable, the format of
 *     CPython's Objects/locations.md, the same from 3.11 to 3.13) whose
 *     instructions reach past the first RESUME: what runs before it
 *     (RETURN_GENERATOR, MAKE_CELL, COPY_FREE_VARS, RESUME itself) never
 *     produces a LINE event;
 *   - with arcs, its branches: each line holding a conditional jump that
 *     runs without an exception or in an except clause, with where each
 *     direction of it leads: the first instruction on another line (or the
 *     exit), through straight-line code and unconditional jumps; a
 *     conditional jump on the way is a branch of its own. Handlers that need
 *     f_lasti (with-statement exits, re-raise cleanups) are compiler
 *     plumbing, not branches of the program.
 *
 * Report time only, and no Python code runs: the analysis of a large module
 * took tens of milliseconds in Python, in C it takes a fraction of one.
 */
#include "analyze.h"

#include "../common/grow.h"

#include <stdlib.h>
#include <string.h>

/* ---- scratch -------------------------------------------------------- */

typedef struct ivec {
    int32_t *v;
    size_t n, cap;
} ivec;

static int
ivec_push(ivec *a, int32_t x)
{
    if (PTK_KIT_RESERVE(a->v, a->cap, a->n + 1, 64) != 0) {
        PyErr_NoMemory();
        return -1;
    }
    a->v[a->n++] = x;
    return 0;
}

/* Makes the array at *@p p (the address of its pointer) hold at least @p n
 * elements of @p size bytes; a Python exception when out of memory. */
static int
reserve(void *p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap) {
        return 0;
    }
    if (ptk_kit_grow(p, cap, n, size, 256, 0) != 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

#define NO_SUCC 3
#define EXIT (-1)

/* Per code object: its instructions and what the walks need; reused from
 * one code object to the next. */
typedef struct an_work {
    int32_t *unit_line;  /* per code unit: its line, or -1 */
    size_t cap_units;
    int32_t *index;      /* per code unit: the instruction starting there, or -1 */
    size_t cap_index;
    int32_t *off;        /* per instruction: byte offset */
    size_t cap_off;
    uint8_t *op;
    size_t cap_op;
    int32_t *succ;       /* per instruction: NO_SUCC successors, EXIT or index; -2 unused */
    size_t cap_succ;
    uint32_t *mark;      /* per instruction: generation it was last visited in */
    size_t cap_mark;
    uint32_t gen;
    uint8_t *seen;       /* per instruction: runs without an exception or in a handler */
    size_t cap_seen;
    ivec own, todo, dests, conds;
} an_work;

static void
work_free(an_work *w)
{
    free(w->unit_line);
    free(w->index);
    free(w->off);
    free(w->op);
    free(w->succ);
    free(w->mark);
    free(w->seen);
    free(w->own.v);
    free(w->todo.v);
    free(w->dests.v);
    free(w->conds.v);
}

static int
cmp_int32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* ---- the location table ----------------------------------------------- */

/* An unsigned varint of the location table: 6-bit chunks, least significant
 * first, bit 6 set on all but the last. */
static uint32_t
loc_varint(const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp;
    if (p >= end) {
        return 0;
    }
    uint32_t b = *p++;
    uint32_t val = b & 63;
    unsigned int shift = 0;
    while ((b & 64) && p < end && shift < 24) {
        b = *p++;
        shift += 6;
        val |= (b & 63) << shift;
    }
    *pp = p;
    return val;
}

static int32_t
loc_svarint(const uint8_t **pp, const uint8_t *end)
{
    uint32_t u = loc_varint(pp, end);
    return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

/*
 * Fills w->unit_line for the @p units code units of @p code and w->own with
 * its lines (unsorted, repeated) that can produce a LINE event, given the
 * first byte @p after its first RESUME and that RESUME's inline caches (3.15
 * gives RESUME one).
 */
static int
decode_lines(an_work *w, PyCodeObject *code, int32_t after, int32_t units)
{
    PyObject *table = code->co_linetable;
    if (!table || !PyBytes_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "co_linetable is not bytes");
        return -1;
    }
    const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(table);
    const uint8_t *end = p + PyBytes_GET_SIZE(table);
    for (int32_t u = 0; u < units; u++) {
        w->unit_line[u] = -1;
    }
    w->own.n = 0;
    int32_t line = code->co_firstlineno;
    int32_t addr = 0;
    while (p < end) {
        int kind = (*p >> 3) & 15;
        int32_t len = (*p & 7) + 1;
        const uint8_t *q = p + 1;
        if (kind == 14 || kind == 13) { /* long form, no columns: signed delta */
            line += loc_svarint(&q, end);
        }
        else if (kind >= 10 && kind <= 12) { /* one-line forms */
            line += kind - 10;
        }
        int32_t at = kind == 15 ? -1 : line; /* 15: no location */
        int32_t stop = addr + len;
        for (int32_t u = addr; u < stop && u < units; u++) {
            w->unit_line[u] = at;
        }
        if (at > 0 && stop * 2 > after && ivec_push(&w->own, at) < 0) {
            return -1;
        }
        addr = stop;
        /* the next entry starts at the next byte with bit 7 set */
        for (p++; p < end && !(*p & 128); p++) {
        }
    }
    return 0;
}

/* ---- branches --------------------------------------------------------- */

/* A varint of the exception table: 6-bit chunks, most significant first,
 * bit 6 set on all but the last. 0 at the end of the table. */
static int
exc_varint(const uint8_t **pp, const uint8_t *end, uint32_t *out)
{
    const uint8_t *p = *pp;
    if (p >= end) {
        return 0;
    }
    uint32_t b = *p++;
    uint32_t val = b & 63;
    while (b & 64) {
        if (p >= end) {
            return 0;
        }
        b = *p++;
        val = (val << 6) | (b & 63);
    }
    *out = val;
    *pp = p;
    return 1;
}

/* Marks in w->seen what runs from the first instruction and from each
 * handler that does not need f_lasti. */
static int
reachable(an_work *w, PyCodeObject *code, int32_t ninstr, int32_t units)
{
    memset(w->seen, 0, (size_t)ninstr);
    w->todo.n = 0;
    if (ivec_push(&w->todo, 0) < 0) {
        return -1;
    }
    PyObject *table = code->co_exceptiontable;
    if (table && PyBytes_Check(table)) {
        const uint8_t *p = (const uint8_t *)PyBytes_AS_STRING(table);
        const uint8_t *end = p + PyBytes_GET_SIZE(table);
        uint32_t start, size, target, dl;
        while (exc_varint(&p, end, &start) && exc_varint(&p, end, &size)
               && exc_varint(&p, end, &target) && exc_varint(&p, end, &dl)) {
            if (!(dl & 1) && target < (uint32_t)units && w->index[target] >= 0
                && ivec_push(&w->todo, w->index[target]) < 0) {
                return -1;
            }
        }
    }
    while (w->todo.n > 0) {
        int32_t n = w->todo.v[--w->todo.n];
        if (w->seen[n]) {
            continue;
        }
        w->seen[n] = 1;
        for (int k = 0; k < NO_SUCC; k++) {
            int32_t s = w->succ[n * NO_SUCC + k];
            if (s >= 0 && ivec_push(&w->todo, s) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int
cmp_dest(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if ((x < 0) != (y < 0)) {
        return x < 0 ? 1 : -1; /* lines first, then the exit */
    }
    return (x > y) - (x < y);
}

static int
cmp_pair(const void *a, const void *b)
{
    const int32_t *x = a, *y = b;
    if (x[0] != y[0]) {
        return (x[0] > y[0]) - (x[0] < y[0]);
    }
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Where the directions of the conditional jumps w->conds.v[from..to) (pairs
 * of line, instruction), all on @p line, lead; w->dests gets them. */
static int
trail(an_work *w, int32_t line, size_t from, size_t to, int32_t exit_dest,
      const cov_optable *ops)
{
    w->dests.n = 0;
    w->todo.n = 0;
    if (++w->gen == 0) { /* wrapped: start the marks again */
        memset(w->mark, 0, w->cap_mark * sizeof(*w->mark));
        w->gen = 1;
    }
    for (size_t i = from; i < to; i++) {
        int32_t n = w->conds.v[2 * i + 1];
        for (int k = 0; k < NO_SUCC; k++) {
            int32_t s = w->succ[n * NO_SUCC + k];
            if (s != -2 && ivec_push(&w->todo, s) < 0) {
                return -1;
            }
        }
    }
    while (w->todo.n > 0) {
        int32_t s = w->todo.v[--w->todo.n];
        int32_t d;
        if (s == EXIT) {
            d = exit_dest;
        }
        else {
            if (w->mark[s] == w->gen) {
                continue;
            }
            w->mark[s] = w->gen;
            int32_t other = w->unit_line[w->off[s] / 2];
            if (other <= 0 || other == line) {
                if (!(ops->flags[w->op[s]] & AN_COND)) {
                    for (int k = 0; k < NO_SUCC; k++) {
                        int32_t t = w->succ[s * NO_SUCC + k];
                        if (t != -2 && ivec_push(&w->todo, t) < 0) {
                            return -1;
                        }
                    }
                }
                continue;
            }
            d = other;
        }
        size_t k;
        for (k = 0; k < w->dests.n && w->dests.v[k] != d; k++) {
        }
        if (k == w->dests.n && ivec_push(&w->dests, d) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Room in @p w for a code object of @p units code units. */
static int
work_reserve(an_work *w, int32_t units)
{
    if (reserve(&w->index, &w->cap_index, (size_t)units, sizeof(int32_t)) < 0
        || reserve(&w->off, &w->cap_off, (size_t)units, sizeof(int32_t)) < 0
        || reserve(&w->op, &w->cap_op, (size_t)units, 1) < 0
        || reserve(&w->succ, &w->cap_succ, (size_t)units * NO_SUCC,
                   sizeof(int32_t)) < 0
        || reserve(&w->seen, &w->cap_seen, (size_t)units, 1) < 0) {
        return -1;
    }
    if (w->cap_mark < (size_t)units) {
        free(w->mark);
        w->mark = calloc((size_t)units * 2, sizeof(*w->mark));
        if (!w->mark) {
            w->cap_mark = 0;
            PyErr_NoMemory();
            return -1;
        }
        w->cap_mark = (size_t)units * 2;
        w->gen = 0;
    }
    return 0;
}

/* The instructions (EXTENDED_ARG included, inline caches skipped) and
 * their jump targets, as dis.get_instructions gives them: w->index,
 * w->off, w->op, and the target in slot 0 of w->succ. Returns how many. */
static int32_t
decode(an_work *w, const cov_optable *ops, const uint8_t *raw, int32_t nbytes)
{
    int32_t *target = w->succ;
    int32_t ninstr = 0;
    uint32_t ext = 0;
    for (int32_t u = 0; u < nbytes / 2; u++) {
        w->index[u] = -1;
    }
    for (int32_t i = 0; i < nbytes;) {
        int op = raw[i];
        int fl = ops->flags[op];
        int caches = ops->caches[op];
        uint32_t arg = raw[i + 1] | ext;
        ext = (fl & AN_EXTENDED) ? arg << 8 : 0;
        int32_t t = -1;
        if (fl & AN_JREL) {
            int64_t signed_arg = (fl & AN_BACK) ? -(int64_t)arg : (int64_t)arg;
            int64_t to = i + 2 + signed_arg * 2;
            if (ops->jump_adds_caches) {
                to += 2 * caches;
            }
            t = to >= 0 && to < nbytes ? (int32_t)to : -1;
        }
        else if (fl & AN_JABS) {
            t = (int64_t)arg * 2 < nbytes ? (int32_t)(arg * 2) : -1;
        }
        w->index[i / 2] = ninstr;
        w->off[ninstr] = i;
        w->op[ninstr] = (uint8_t)op;
        target[ninstr * NO_SUCC] = t;
        ninstr++;
        i += 2 + 2 * caches;
    }
    return ninstr;
}

/* Successors of each instruction: the exit, the jump's target (from
 * decode()), the next instruction; -2 for none. */
static void
link_successors(an_work *w, const cov_optable *ops, int32_t ninstr)
{
    for (int32_t n = 0; n < ninstr; n++) {
        int fl = ops->flags[w->op[n]];
        int32_t t = w->succ[n * NO_SUCC];
        int32_t *s = &w->succ[n * NO_SUCC];
        int k = 0;
        if (fl & AN_EXIT) {
            s[k++] = EXIT;
        }
        if (t >= 0 && w->index[t / 2] >= 0 && (t & 1) == 0) {
            s[k++] = w->index[t / 2];
        }
        if (!(fl & AN_NOFALL) && n + 1 < ninstr) {
            s[k++] = n + 1;
        }
        for (; k < NO_SUCC; k++) {
            s[k] = -2;
        }
    }
}

/* The conditional jumps that run, by line, each line's destinations given
 * to @p sink. */
static int
line_branches(an_work *w, const cov_optable *ops, PyCodeObject *code, int32_t ninstr,
              const cov_an_sink *sink)
{
    w->conds.n = 0;
    for (int32_t n = 0; n < ninstr; n++) {
        int32_t line = w->unit_line[w->off[n] / 2];
        if (w->seen[n] && line > 0 && (ops->flags[w->op[n]] & AN_COND)
            && (ivec_push(&w->conds, line) < 0 || ivec_push(&w->conds, n) < 0)) {
            return -1;
        }
    }
    size_t npairs = w->conds.n / 2;
    if (npairs > 1) {
        qsort(w->conds.v, npairs, 2 * sizeof(int32_t), cmp_pair);
    }
    for (size_t i = 0; i < npairs;) {
        int32_t line = w->conds.v[2 * i];
        size_t j = i;
        while (j < npairs && w->conds.v[2 * j] == line) {
            j++;
        }
        if (trail(w, line, i, j, -code->co_firstlineno, ops) < 0) {
            return -1;
        }
        if (w->dests.n >= 2) {
            qsort(w->dests.v, w->dests.n, sizeof(int32_t), cmp_dest);
            if (sink->branch(sink->ctx, line, w->dests.v, (int32_t)w->dests.n) < 0) {
                return -1;
            }
        }
        i = j;
    }
    return 0;
}

/* The branches of one code object whose bytecode is @p raw (@p nbytes). */
static int
branches(an_work *w, const cov_optable *ops, PyCodeObject *code, const uint8_t *raw,
         int32_t nbytes, const cov_an_sink *sink)
{
    /* Most code objects of a test module have no conditional jump: found
     * on the opcode bytes alone (the inline caches are zeros). */
    int any = 0;
    for (int32_t i = 0; i < nbytes && !any; i += 2) {
        any = (ops->flags[raw[i]] & AN_COND) != 0;
    }
    if (!any) {
        return 0;
    }
    int32_t units = nbytes / 2;
    if (work_reserve(w, units) < 0) {
        return -1;
    }
    int32_t ninstr = decode(w, ops, raw, nbytes);
    link_successors(w, ops, ninstr);
    if (reachable(w, code, ninstr, units) < 0) {
        return -1;
    }
    return line_branches(w, ops, code, ninstr, sink);
}

/* ---- a code object, and the tree --------------------------------------- */

static int
analyze_one(an_work *w, const cov_optable *ops, PyCodeObject *code, int want_arcs,
            const cov_an_sink *sink)
{
    PyObject *bytecode = PyCode_GetCode(code);
    if (!bytecode) {
        return -1;
    }
    int rc = -1;
    if (!PyBytes_Check(bytecode)) {
        PyErr_SetString(PyExc_TypeError, "co_code is not bytes");
        goto done;
    }
    const uint8_t *raw = (const uint8_t *)PyBytes_AS_STRING(bytecode);
    int32_t nbytes = (int32_t)(PyBytes_GET_SIZE(bytecode) & ~(Py_ssize_t)1);
    int32_t start = -1;
    for (int32_t i = 0; i < nbytes; i += 2) {
        if (ops->flags[raw[i]] & AN_RESUME) {
            start = i;
            break;
        }
    }
    int32_t units = nbytes / 2;
    int32_t after = start + 2 + (start >= 0 ? 2 * ops->caches[raw[start]] : 0);
    if (reserve(&w->unit_line, &w->cap_units, (size_t)units + 1,
                sizeof(int32_t)) < 0
        || decode_lines(w, code, after, units) < 0) {
        goto done;
    }
    /* sorted, each once */
    if (w->own.n > 1) { /* (own.v is NULL while nothing was pushed) */
        qsort(w->own.v, w->own.n, sizeof(int32_t), cmp_int32);
    }
    size_t n = 0;
    for (size_t i = 0; i < w->own.n; i++) {
        if (n == 0 || w->own.v[n - 1] != w->own.v[i]) {
            w->own.v[n++] = w->own.v[i];
        }
    }
    w->own.n = n;
    if (sink->code(sink->ctx, code, start, w->own.v, (int32_t)w->own.n) < 0) {
        goto done;
    }
    if (want_arcs && branches(w, ops, code, raw, nbytes, sink) < 0) {
        goto done;
    }
    rc = 0;
done:
    Py_DECREF(bytecode);
    return rc;
}

int
cov_analyze(const cov_optable *ops, PyCodeObject *root, int want_arcs,
            const cov_an_sink *sink)
{
    an_work w;
    memset(&w, 0, sizeof(w));
    /* Depth first, the root first and siblings in source order: a stack of
     * borrowed references (the root holds them all). */
    PyObject **stack = NULL;
    size_t cap = 0, sp = 0;
    int rc = -1;
    if (reserve(&stack, &cap, 16, sizeof(*stack)) < 0) {
        goto done;
    }
    stack[sp++] = (PyObject *)root;
    while (sp > 0) {
        PyCodeObject *code = (PyCodeObject *)stack[--sp];
        if (analyze_one(&w, ops, code, want_arcs, sink) < 0) {
            goto done;
        }
        PyObject *consts = code->co_consts;
        if (!consts || !PyTuple_Check(consts)) {
            continue;
        }
        for (Py_ssize_t i = PyTuple_GET_SIZE(consts) - 1; i >= 0; i--) {
            PyObject *k = PyTuple_GET_ITEM(consts, i);
            if (PyCode_Check(k)) {
                if (reserve(&stack, &cap, sp + 1, sizeof(*stack)) < 0) {
                    goto done;
                }
                stack[sp++] = k;
            }
        }
    }
    rc = 0;
done:
    free(stack);
    work_free(&w);
    return rc;
}
