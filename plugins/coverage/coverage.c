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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <marshal.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/grow.h"
#include "pytracekit/errors.h"
#include "pytracekit/plugin.h"

#include "analyze.h"
#include "cov_embedded.h"
#include "match.h"

#define COV_VERSION "0.1"

/* ---- data ----------------------------------------------------------- */

typedef struct cov_func {
    char *qualname;
    int32_t line;
    uint64_t calls;
    int32_t *own;    /* the code object's own lines (for calls=false) */
    int32_t nown;
} cov_func;

typedef struct cov_arc {
    uint64_t key;   /* (from << 32) | to, as uint32 each */
    uint64_t count;
} cov_arc;

typedef struct cov_branch {
    int32_t line;
    int32_t ndest;
    int32_t *dest;   /* ndest destinations and a 0 */
    size_t capdest;
} cov_branch;

typedef struct cov_file {
    char *path;          /* absolute */
    int32_t maxline;     /* possible[] and hits[] have maxline + 1 entries */
    uint8_t *possible;   /* 1: the line could run */
    uint64_t *hits;      /* times the line ran (1 at most without branch=) */
    cov_func *funcs;
    size_t nfuncs, capfuncs;
    cov_arc *arcs;       /* in the order first seen */
    size_t narcs, caparcs;
    uint32_t *arcidx;    /* open addressing on the key: 1 + index in arcs,
                            0 = empty; capacity a power of two */
    size_t capidx;
    cov_branch *branches;
    size_t nbranches, capbranches;
    int seen;            /* some of its code ran (else: found under source=) */
    int analysed;        /* analysed from its module's code or its source */
    int unparsed;        /* its source does not compile */
} cov_file;

/* Branch events: one conditional jump of a code object and the directions
 * of it seen so far (the location is switched off once both are). */
typedef struct cov_br {
    int32_t src;         /* byte offset of the jump */
    int32_t dest[2];     /* byte offsets it went to */
    int32_t n;           /* how many of dest[] are set */
} cov_br;

typedef struct cov_code {
    PyCodeObject *code;  /* strong reference; the key; NULL = empty slot */
    cov_file *file;      /* NULL: not measured */
    int32_t func;        /* index in file->funcs */
    int32_t firstline;
    int32_t start;       /* byte offset of the first RESUME */
    int generator;       /* generator, coroutine or async generator */
    PyObject *bytecode;  /* co_code (generators, and code with branch events) */
    int analysed;        /* its lines are in the file's analysis (report time) */
    int32_t *bridx;      /* branch events: per code unit, 1 + index in brs, or 0 */
    cov_br *brs;
    int32_t nbrs, capbrs;
    /* Arcs from LINE events: per line of the code (its index x: line -
     * firstline + 1, 0 for the entry), in succ[2x] and succ[2x + 1], 1 +
     * the index in the file's arcs of two arcs taken from it, or 0. Nearly
     * every line leads to one or two lines: their arcs are counted without
     * a hash lookup. nsucc counts lines. */
    uint32_t *succ;
    int32_t nsucc;
} cov_code;

/* Branch mode: what each frame on a thread's stack last ran. */
typedef struct cov_slot {
    PyCodeObject *code;  /* borrowed, compared only */
    int32_t last;
} cov_slot;

typedef struct cov_tstack {
    cov_slot *slots;
    int32_t cap;
} cov_tstack;

typedef struct cov_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    int branch;
    int counts;          /* count every execution (every LINE event) */
    const ptk_subscription *sub; /* what the session delivers (BRANCH or not) */
    int calls;           /* count calls (CALL events); else ran = a line ran */
    cov_match *match;
    char *include;       /* the options, for the "no data" hint */
    char *source;
    int coveragepy;      /* COVPY_* */
    int html;            /* write DIR/html */
    int found_coveragepy; /* coverage.py is importable (looked for unless COVPY_NO) */

    cov_code *codes;     /* open addressing on the code pointer */
    size_t ncodes, capcodes;
    cov_code *last;      /* one-entry cache */

    cov_file **files;
    size_t nfiles, capfiles;
    PyObject *file_index; /* dict: co_filename -> index in files, or -1 */

    int arcs_fast;       /* branch && arcs_from_lines(): cov_on_event's
                            short way is open (set by cov_on_event_full) */
    cov_tstack *threads;
    size_t nthreads;

    uint64_t line_events; /* LINE events received for measured code */
    uint64_t call_events; /* CALL events received for measured code */
    uint64_t branch_events; /* BRANCH events received for measured code */

    PyObject *analysis;  /* module dict of analysis.py */
    PyObject *format;    /* module dict of pytracekit-coverage.py */
    int op_resume, op_yield;
    uint8_t opclass[256]; /* OPC_*: what a branch trail does at each opcode */
    cov_optable an_ops;  /* the opcodes, for the static analysis (and its
                            inline cache sizes for the branch trails) */
    int py_analysis;     /* analyse with analysis.py (the reference) instead */
} cov_state;

/* How a branch trail (the instructions a branch direction runs until the
 * next line) treats an opcode. */
enum { OPC_PLAIN, OPC_EXTENDED, OPC_EXIT, OPC_STOP, OPC_COND, OPC_FWD, OPC_BACK };

static const ptk_option_spec cov_options[] = {
    {"branch", PTK_OPT_BOOL, "false",
     "measure (from, to) line transitions and report branches", NULL},
    {"counts", PTK_OPT_BOOL, "false",
     "count every execution of each line and branch (every LINE event); without it, on "
     "sys.monitoring each line and branch direction is recorded once and switched off",
     NULL},
    {"include", PTK_OPT_LIST, NULL,
     "globs of absolute file paths to measure (',' or ';' separated)", NULL},
    {"exclude", PTK_OPT_LIST, NULL,
     "globs of absolute file paths not to measure", NULL},
    {"calls", PTK_OPT_BOOL, "false",
     "count calls per function (a CALL event per call); false: only whether it ran, "
     "from its lines",
     NULL},
    {"source", PTK_OPT_STRING, NULL,
     "measure only files under this directory; report its unexecuted .py files too", NULL},
    {"coveragepy", PTK_OPT_CHOICE, "no",
     "also write DIR/.coverage through coverage.py's data API (for coverage report/html/"
     "combine): no, yes (error if coverage.py is not importable), auto (if it is)",
     "no|yes|auto"},
    {"html", PTK_OPT_BOOL, "false",
     "also write the HTML report into DIR/html (index.html; no external tool)", NULL},
    {NULL, 0, NULL, NULL, NULL}};

enum { COVPY_NO, COVPY_YES, COVPY_AUTO };

/* ---- small tables ------------------------------------------------------ */

static inline size_t
ptr_hash(const void *p, size_t mask)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 17;
    h *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 29) & mask;
}

static inline cov_code *
code_find(cov_state *st, PyCodeObject *code)
{
    if (st->capcodes == 0) {
        return NULL;
    }
    size_t mask = st->capcodes - 1;
    for (size_t i = ptr_hash(code, mask);; i = (i + 1) & mask) {
        cov_code *c = &st->codes[i];
        if (c->code == code) {
            return c;
        }
        if (c->code == NULL) {
            return NULL;
        }
    }
}

/* Inserts @p code (taking a new reference); returns the entry or NULL. */
static cov_code *
code_add(cov_state *st, PyCodeObject *code)
{
    if ((st->ncodes + 1) * 2 > st->capcodes) {
        size_t cap = st->capcodes ? st->capcodes * 2 : 256;
        cov_code *t = calloc(cap, sizeof(*t));
        if (!t) {
            PyErr_NoMemory();
            return NULL;
        }
        for (size_t j = 0; j < st->capcodes; j++) {
            cov_code *o = &st->codes[j];
            if (o->code) {
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
        st->last = NULL;
    }
    size_t mask = st->capcodes - 1;
    size_t i = ptr_hash(code, mask);
    while (st->codes[i].code) {
        i = (i + 1) & mask;
    }
    cov_code *c = &st->codes[i];
    memset(c, 0, sizeof(*c));
    Py_INCREF(code);
    c->code = code;
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

static __attribute__((noinline)) int
file_reserve(cov_file *f, int32_t line)
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

static void
file_free(cov_file *f)
{
    if (!f) {
        return;
    }
    free(f->path);
    free(f->possible);
    free(f->hits);
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
static int32_t
file_func(cov_file *f, const char *qualname, int32_t line)
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

/* ---- first sight of a code object (may call Python) -------------------- */

/*
 * Runs an embedded module: its code object as marshalled at build time when
 * this is the interpreter version it was built by, else compiled from
 * @p source. Returns the module's dict.
 */
static PyObject *
load_module(const char *name, const char *source, const unsigned char *code_bytes,
            size_t code_len)
{
    PyObject *mod = PyModule_New(name);
    if (!mod) {
        return NULL;
    }
    PyObject *dict = PyModule_GetDict(mod); /* borrowed */
    if (PyDict_SetItemString(dict, "__builtins__", PyEval_GetBuiltins()) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    PyObject *code = NULL;
    if (code_bytes && (unsigned long)(Py_Version >> 16) == COV_EMBED_PY_VERSION) {
        code = PyMarshal_ReadObjectFromString((const char *)code_bytes, (Py_ssize_t)code_len);
        if (!code || !PyCode_Check(code)) {
            Py_CLEAR(code);
            PyErr_Clear();
        }
    }
    if (!code) {
        code = Py_CompileString(source, name, Py_file_input);
    }
    if (!code) {
        Py_DECREF(mod);
        return NULL;
    }
    PyObject *res = PyEval_EvalCode(code, dict, dict);
    Py_DECREF(code);
    if (!res) {
        Py_DECREF(mod);
        return NULL;
    }
    Py_DECREF(res);
    Py_INCREF(dict);
    Py_DECREF(mod); /* the dict keeps the functions' globals alive */
    return dict;
}

static int
is_generator_code(PyCodeObject *code)
{
    return (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0;
}

/*
 * Fills the per-code fields that the event path needs, without Python code
 * (nothing may be imported while the program runs): for a generator or
 * coroutine its bytecode and the offset of its first RESUME (a frame whose
 * f_lasti is at or before it has not started).
 */
static int
code_describe(const cov_state *st, cov_code *c)
{
    c->generator = is_generator_code(c->code);
    if (!c->generator) {
        return 0;
    }
    c->bytecode = PyObject_GetAttrString((PyObject *)c->code, "co_code");
    if (!c->bytecode) {
        return -1;
    }
    if (!PyBytes_Check(c->bytecode)) {
        PyErr_SetString(PyExc_TypeError, "co_code is not bytes");
        return -1;
    }
    const unsigned char *raw = (const unsigned char *)PyBytes_AS_STRING(c->bytecode);
    Py_ssize_t n = PyBytes_GET_SIZE(c->bytecode);
    for (Py_ssize_t off = 0; off + 1 < n; off += 2) {
        if (raw[off] == st->op_resume) {
            c->start = (int32_t)off;
            break;
        }
    }
    return 0;
}

/* One analysis of a tree of code objects into a file (file_analyze). */
typedef struct cov_an_ctx {
    cov_state *st;
    cov_file *f;
    size_t known;  /* f->branches before this analysis: not changed by it */
} cov_an_ctx;

/* A code object of the tree: its lines could run, it is a function of the
 * file, and it needs no analysis of its own at report time. */
static int
an_code(void *ctx, PyCodeObject *code, int32_t start, const int32_t *own, int32_t nown)
{
    cov_an_ctx *a = ctx;
    cov_file *f = a->f;
    (void)start;
    for (int32_t i = 0; i < nown; i++) {
        if (own[i] <= 0 || own[i] > INT32_MAX / 2) {
            continue;
        }
        if (file_reserve(f, own[i]) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        f->possible[own[i]] = 1;
    }
    const char *qualname = PyUnicode_AsUTF8(code->co_qualname);
    if (!qualname) {
        return -1;
    }
    int32_t fi = file_func(f, qualname, code->co_firstlineno);
    if (fi < 0) {
        PyErr_NoMemory();
        return -1;
    }
    cov_func *fn = &f->funcs[fi];
    if (!fn->own && nown > 0) {
        fn->own = malloc((size_t)nown * sizeof(int32_t));
        if (!fn->own) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(fn->own, own, (size_t)nown * sizeof(int32_t));
        fn->nown = nown;
    }
    cov_code *c = code_find(a->st, code);
    if (c) {
        c->analysed = 1;
    }
    return 0;
}

/* A branch line and its destinations: merged into what this analysis found
 * on that line before (another code object of the tree), left alone if an
 * earlier analysis of the file knew it. */
static int
an_branch(void *ctx, int32_t line, const int32_t *dest, int32_t ndest)
{
    cov_an_ctx *a = ctx;
    cov_file *f = a->f;
    size_t k;
    for (k = 0; k < f->nbranches && f->branches[k].line != line; k++) {
    }
    if (k < a->known) {
        return 0;
    }
    if (k == f->nbranches) {
        if (PTK_KIT_RESERVE(f->branches, f->capbranches, f->nbranches + 1, 16) != 0) {
            PyErr_NoMemory();
            return -1;
        }
        f->branches[k] = (cov_branch){.line = line};
        f->nbranches++;
    }
    cov_branch *b = &f->branches[k];
    if (PTK_KIT_RESERVE(b->dest, b->capdest, (size_t)b->ndest + (size_t)ndest + 1, 4) != 0) {
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t i = 0; i < ndest; i++) {
        int32_t j;
        for (j = 0; j < b->ndest && b->dest[j] != dest[i]; j++) {
        }
        if (j == b->ndest) {
            b->dest[b->ndest++] = dest[i];
        }
    }
    b->dest[b->ndest] = 0;
    return 0;
}

/* int32 items of a list of ints into @p out (@p n of them); -1 on error. */
static int
int_list(PyObject *list, int32_t **out, int32_t *n)
{
    *n = (int32_t)PyList_GET_SIZE(list);
    *out = malloc(((size_t)*n + 1) * sizeof(int32_t));
    if (!*out) {
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t j = 0; j < *n; j++) {
        long v = PyLong_AsLong(PyList_GET_ITEM(list, j));
        if (v == -1 && PyErr_Occurred()) {
            free(*out);
            *out = NULL;
            return -1;
        }
        (*out)[j] = (int32_t)v;
    }
    return 0;
}

/* file_analyze with analysis.py's analyze(), the reference the C analysis
 * is checked against (PYTRACEKIT_COVERAGE_ANALYSIS=python). */
static int
file_analyze_py(cov_an_ctx *a, PyObject *root)
{
    PyObject *fn = PyDict_GetItemString(a->st->analysis, "analyze"); /* borrowed */
    if (!fn) {
        PyErr_SetString(PyExc_RuntimeError, "coverage analysis has no analyze()");
        return -1;
    }
    PyObject *res = PyObject_CallFunction(fn, "Oi", root, a->st->branch);
    if (!res) {
        return -1;
    }
    PyObject *lines, *funcs, *branches;
    int rc = -1;
    if (!PyArg_ParseTuple(res, "O!O!O!", &PyList_Type, &lines, &PyList_Type, &funcs,
                          &PyDict_Type, &branches)) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(funcs); i++) {
        PyObject *code, *own;
        const char *qualname;
        int line, start;
        int32_t *v, n;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(funcs, i), "O!siiO!", &PyCode_Type, &code,
                              &qualname, &line, &start, &PyList_Type, &own)
            || int_list(own, &v, &n) < 0) {
            goto done;
        }
        int r = an_code(a, (PyCodeObject *)code, start, v, n);
        free(v);
        if (r < 0) {
            goto done;
        }
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(branches, &pos, &key, &value)) {
        long line = PyLong_AsLong(key);
        if ((line == -1 && PyErr_Occurred()) || !PyList_Check(value)) {
            PyErr_SetString(PyExc_TypeError, "bad branch table");
            goto done;
        }
        int32_t *v, n;
        if (int_list(value, &v, &n) < 0) {
            goto done;
        }
        int r = an_branch(a, (int32_t)line, v, n);
        free(v);
        if (r < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(res);
    return rc;
}

/*
 * Analyses @p root (a code object and those nested in it) and records in
 * @p f which lines could run, its functions and its branches; the code
 * objects of the tree that ran are marked as analysed. Report time only.
 */
static int
file_analyze(cov_state *st, cov_file *f, PyObject *root)
{
    cov_an_ctx a = {st, f, f->nbranches};
    if (st->py_analysis) {
        return file_analyze_py(&a, root);
    }
    if (!PyCode_Check(root)) {
        PyErr_SetString(PyExc_TypeError, "coverage analysis of something not a code object");
        return -1;
    }
    const cov_an_sink sink = {&a, an_code, an_branch};
    return cov_analyze(&st->an_ops, (PyCodeObject *)root, st->branch, &sink);
}

static cov_file *
file_new(cov_state *st, const char *path)
{
    if (PTK_KIT_RESERVE(st->files, st->capfiles, st->nfiles + 1, 16) != 0) {
        return NULL;
    }
    cov_file *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return NULL;
    }
    f->maxline = -1;
    if (file_reserve(f, 64) < 0) {
        file_free(f);
        return NULL;
    }
    st->files[st->nfiles++] = f;
    return f;
}

/* Index of the file named @p filename in st->files, -1 if not measured,
 * -2 on error. */
static Py_ssize_t
file_lookup(cov_state *st, PyObject *filename)
{
    PyObject *idx = PyDict_GetItemWithError(st->file_index, filename);
    if (idx) {
        return PyLong_AsSsize_t(idx);
    }
    if (PyErr_Occurred()) {
        return -2;
    }
    Py_ssize_t result = -1;
    const char *name = PyUnicode_AsUTF8(filename);
    if (!name) {
        return -2;
    }
    if (name[0] != '\0' && name[0] != '<') {
        char *path = cov_abspath(name);
        if (!path) {
            PyErr_NoMemory();
            return -2;
        }
        if (cov_match_file(st->match, path)) {
            /* Another name of a file already seen (relative vs absolute)? */
            for (size_t i = 0; i < st->nfiles; i++) {
                if (strcmp(st->files[i]->path, path) == 0) {
                    result = (Py_ssize_t)i;
                    break;
                }
            }
            if (result < 0) {
                if (!file_new(st, path)) {
                    free(path);
                    PyErr_NoMemory();
                    return -2;
                }
                result = (Py_ssize_t)st->nfiles - 1;
            }
        }
        free(path);
    }
    PyObject *v = PyLong_FromSsize_t(result);
    if (!v || PyDict_SetItem(st->file_index, filename, v) < 0) {
        Py_XDECREF(v);
        return -2;
    }
    Py_DECREF(v);
    return result;
}

/*
 * The first event of a code object: is its file measured, and which function
 * is it. The file's analysis (which lines could run) waits for the report.
 */
static cov_code *
code_first_sight(cov_state *st, PyCodeObject *code)
{
    Py_ssize_t fi = file_lookup(st, code->co_filename);
    if (fi == -2) {
        return NULL;
    }
    cov_code *c = code_add(st, code);
    if (!c || fi < 0) {
        return c;
    }
    cov_file *f = st->files[fi];
    const char *qualname = PyUnicode_AsUTF8(code->co_qualname);
    if (!qualname) {
        return NULL;
    }
    c->func = file_func(f, qualname, code->co_firstlineno);
    if (c->func < 0) {
        PyErr_NoMemory();
        return NULL;
    }
    if (code_describe(st, c) < 0) {
        return NULL;
    }
    c->file = f;
    f->seen = 1;
    return c;
}

/* code_get for another code object than the last event's. */
static __attribute__((noinline)) cov_code *
code_get_other(cov_state *st, PyCodeObject *code)
{
    cov_code *c = code_find(st, code);
    if (!c) {
        c = code_first_sight(st, code);
    }
    st->last = c;
    return c;
}

static inline cov_code *
code_get(cov_state *st, PyCodeObject *code)
{
    cov_code *c = st->last;
    if (c && c->code == code) {
        return c;
    }
    return code_get_other(st, code);
}

/* ---- events ------------------------------------------------------------ */

static int
cov_fail_python(cov_state *st, const char *what)
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

/* What the frame of @p ev last ran (branch mode); NULL when out of memory. */
static inline cov_slot *
thread_slot(cov_state *st, const ptk_event *ev)
{
    size_t t = ev->thread ? ev->thread->index : 0;
    int32_t d = ev->depth < 0 ? 0 : ev->depth;
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
    return raw[lasti] == st->op_resume && raw[lasti + 1] != 0 && lasti >= 2
           && raw[lasti - 2] == st->op_yield;
}

#define COV_BRANCH_KINDS                                                   \
    (PTK_MASK(PTK_EV_BRANCH) | PTK_MASK(PTK_EV_BRANCH_LEFT) |              \
     PTK_MASK(PTK_EV_BRANCH_RIGHT))

/* 1 if arcs come from the LINE events (every LINE is delivered), 0 if
 * from branch events (sys.monitoring's BRANCH, or its two directions on
 * 3.14+; lines are switched off). */
static inline int
arcs_from_lines(const cov_state *st)
{
    return !st->sub || !(st->sub->events & COV_BRANCH_KINDS);
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
        return cov_fail_python(st, "recording a branch");
    }
    if (b->n > 0 && b->dest[0] == dest) {
        return PTK_OK;
    }
    if (b->n < 2) {
        int32_t from = PyCode_Addr2Line(c->code, src);
        int32_t to = from > 0 ? branch_trail(st, c, from, dest) : TRAIL_NONE;
        if (to != TRAIL_NONE) {
            cov_file *f = c->file;
            if ((from > f->maxline && file_reserve(f, from) < 0)
                || arc_add(f, from, to) < 0) {
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
        return cov_fail_python(st, "recording a branch");
    }
    int32_t from = PyCode_Addr2Line(c->code, src);
    int32_t to = from > 0 ? branch_trail(st, c, from, ev->target) : TRAIL_NONE;
    if (to != TRAIL_NONE) {
        cov_file *f = c->file;
        int64_t i = from > f->maxline && file_reserve(f, from) < 0 ? -1
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
    }
    return PTK_DISABLE;
}

/* A LINE event of measured code (the commonest one of branch coverage is
 * counted by cov_on_event's short way before it gets here). */
static inline __attribute__((always_inline)) int
on_line(cov_state *st, cov_code *c, cov_file *f, const ptk_event *ev)
{
    int32_t line = ev->line;
    st->line_events++;
    int lines_only = !st->branch || !arcs_from_lines(st);
    if (line <= 0) {
        return lines_only && !st->counts ? PTK_DISABLE : PTK_OK;
    }
    if (line > f->maxline && file_reserve(f, line) < 0) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
    }
    f->possible[line] = 1;
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
    if (arc_step(f, c, last, line) < 0) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
    }
    return PTK_OK;
}

static __attribute__((noinline)) int
cov_on_event_full(void *state, const ptk_event *ev)
{
    cov_state *st = state;
    st->arcs_fast = st->branch && arcs_from_lines(st);
    cov_code *c = code_get(st, ev->code);
    if (!c) {
        return cov_fail_python(st, "analysing a code object");
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
        if (st->branch && arcs_from_lines(st)) {
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
        if (!arcs_from_lines(st)) {
            return PTK_DISABLE; /* exits come from the branch trails */
        }
        cov_slot *s = thread_slot(st, ev);
        if (!s) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
        }
        if (s->code == ev->code && !return_is_yield(st, c, ev)
            && arc_step(f, c, s->last, -c->firstline) < 0) {
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
static int
cov_on_event(void *state, const ptk_event *ev)
{
    cov_state *st = state;
    const cov_code *c = st->last;
    if (ev->kind != PTK_EV_LINE || !st->arcs_fast || c == NULL || c->code != ev->code
        || c->file == NULL || ev->thread == NULL) {
        return cov_on_event_full(state, ev);
    }
    cov_file *f = c->file;
    int32_t line = ev->line;
    size_t t = ev->thread->index;
    /* (negative line and depth: unsigned, too large) */
    if ((uint32_t)line - 1 >= (uint32_t)f->maxline || t >= st->nthreads
        || (uint32_t)ev->depth >= (uint32_t)st->threads[t].cap) {
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

/* ---- init / fini ----------------------------------------------------- */

/*
 * What init needs from Python: the directories of the standard library and
 * of installed packages (sysconfig, site; only for the default scope,
 * @p need_dirs), and the opcodes of RESUME and
 * YIELD_VALUE (opcode). Whatever this imports is taken out of sys.modules
 * again: the program must start with the modules it would have without the
 * plugin, and import (and run, and be measured in) them itself.
 */
static PyObject *
python_setup(int find_coveragepy, int need_dirs)
{
    static const char src[] =
        "def _setup(find_coveragepy, need_dirs):\n"
        "    import sys\n"
        "    before = set(sys.modules)\n"
        "    try:\n"
        "        import os, opcode\n"
        "        out = set()\n"
        "        if need_dirs:\n"
        "            import sysconfig\n"
        "            paths = sysconfig.get_paths()\n"
        "            for key in ('stdlib', 'platstdlib', 'purelib', 'platlib'):\n"
        "                p = paths.get(key)\n"
        "                if p: out.add(os.path.abspath(p))\n"
        "            for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):\n"
        "                v = 'python%d.%d' % sys.version_info[:2]\n"
        "                out.add(os.path.join(os.path.abspath(p), 'lib', v))\n"
        "            site = sys.modules.get('site')\n"
        "            try:\n"
        "                out.update(os.path.abspath(p) for p in site.getsitepackages())\n"
        "                out.add(os.path.abspath(site.getusersitepackages()))\n"
        "            except Exception:\n"
        "                pass\n"
        "            ptk = sys.modules.get('pytracekit')\n"
        "            if getattr(ptk, '__file__', None):\n"
        "                out.add(os.path.dirname(os.path.abspath(ptk.__file__)))\n"
        "        ops = (opcode.opmap['RESUME'], opcode.opmap['YIELD_VALUE'])\n"
        "        m = opcode.opmap\n"
        "        cls = bytearray(256)\n"
        "        jumps = set(getattr(opcode, 'hasjump', ()) or opcode.hasjrel)\n"
        "        for op in jumps:\n"
        "            if op >= 256: continue\n"
        "            name = opcode.opname[op]\n"
        "            if name.startswith(('POP_JUMP', 'JUMP_IF')) or name == 'FOR_ITER':\n"
        "                cls[op] = 4\n"
        "        for names, c in ((('EXTENDED_ARG',), 1),\n"
        "                         (('RETURN_VALUE', 'RETURN_CONST'), 2),\n"
        "                         (('RAISE_VARARGS', 'RERAISE'), 3),\n"
        "                         (('JUMP_FORWARD',), 5),\n"
        "                         (('JUMP_BACKWARD', 'JUMP_BACKWARD_NO_INTERRUPT'), 6)):\n"
        "            for name in names:\n"
        "                if name in m: cls[m[name]] = c\n"
        "        table = getattr(opcode, '_inline_cache_entries', None)\n"
        "        caches = bytearray(256)\n"
        "        for op in range(256):\n"
        "            if hasattr(table, 'get'):  # by name: a dict, a frozendict (3.15)\n"
        "                caches[op] = table.get(opcode.opname[op], 0)\n"
        "            elif table is not None:\n"
        "                caches[op] = table[op]\n"
        "        jumps = set(getattr(opcode, 'hasjump', None) or (opcode.hasjrel + opcode.hasjabs))\n"
        "        nofall = {'JUMP_FORWARD', 'JUMP_BACKWARD', 'JUMP_BACKWARD_NO_INTERRUPT',\n"
        "                  'JUMP_ABSOLUTE', 'JUMP', 'JUMP_NO_INTERRUPT', 'RETURN_VALUE',\n"
        "                  'RETURN_CONST', 'RAISE_VARARGS', 'RERAISE'}\n"
        "        an = bytearray(256)\n"
        "        for op in range(256):\n"
        "            name, f = opcode.opname[op], 0\n"
        "            if op in jumps and op in opcode.hasjrel: f |= 1\n"
        "            elif op in jumps and op in opcode.hasjabs: f |= 2\n"
        "            if 'JUMP_BACKWARD' in name: f |= 4\n"
        "            if (op in jumps and name not in nofall and\n"
        "                    (name.startswith(('POP_JUMP', 'JUMP_IF')) or name == 'FOR_ITER')):\n"
        "                f |= 8\n"
        "            if name in ('RETURN_VALUE', 'RETURN_CONST'): f |= 16\n"
        "            if name in nofall: f |= 32\n"
        "            if name == 'EXTENDED_ARG': f |= 64\n"
        "            if name == 'RESUME': f |= 128\n"
        "            an[op] = f\n"
        "        events = getattr(getattr(sys, 'monitoring', None), 'events', None)\n"
        "        dirs = hasattr(events, 'BRANCH_LEFT') and hasattr(events, 'BRANCH_RIGHT')\n"
        "        found = 0\n"
        "        if find_coveragepy:\n"
        "            import importlib.util\n"
        "            found = importlib.util.find_spec('coverage') is not None\n"
        "    finally:\n"
        "        for name in set(sys.modules) - before:\n"
        "            del sys.modules[name]\n"
        "    return (sorted(out), ops[0], ops[1], int(found), bytes(cls), bytes(caches),\n"
        "            bytes(an), int(dirs))\n";
    PyObject *mod = load_module("_ptk_coverage_setup", src, NULL, 0);
    if (!mod) {
        return NULL;
    }
    PyObject *fn = PyDict_GetItemString(mod, "_setup");
    PyObject *res = fn ? PyObject_CallFunction(fn, "ii", find_coveragepy, need_dirs) : NULL;
    Py_DECREF(mod);
    return res;
}

static void cov_fini(void *state);

static int
cov_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    const ptk_host *host = args->host;
    cov_state *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->host = host;
    st->ctx = args->ctx;
    const ptk_option_value *branch = host->option(args, "branch");
    const ptk_option_value *include = host->option(args, "include");
    const ptk_option_value *exclude = host->option(args, "exclude");
    const ptk_option_value *source = host->option(args, "source");
    const ptk_option_value *calls = host->option(args, "calls");
    const ptk_option_value *counts = host->option(args, "counts");
    st->branch = branch && branch->is_set && branch->i;
    st->counts = counts && counts->is_set && counts->i;
    st->calls = calls && calls->is_set && calls->i;

    const ptk_option_value *html = host->option(args, "html");
    st->html = html && html->is_set && html->i;
    const ptk_option_value *covpy = host->option(args, "coveragepy");
    st->coveragepy = covpy && covpy->is_set ? (int)covpy->i : COVPY_NO;
    int rc = PTK_EPYTHON;
    /* the default scope's directories: not needed with include= or source= */
    int need_dirs = !(include && include->is_set && include->s && *include->s)
                    && !(source && source->is_set && source->s && *source->s);
    PyObject *setup = python_setup(st->coveragepy != COVPY_NO, need_dirs);
    PyObject *dirs = NULL;
    const char **dirv = NULL;
    int found = 0;
    PyObject *opclass = NULL, *opcaches = NULL, *anflags = NULL;
    int branch_dirs = 0; /* sys.monitoring has BRANCH_LEFT / BRANCH_RIGHT (3.14+) */
    if (!setup || !PyArg_ParseTuple(setup, "O!iiiSSSi", &PyList_Type, &dirs, &st->op_resume,
                                    &st->op_yield, &found, &opclass, &opcaches, &anflags,
                                    &branch_dirs)) {
        goto pyfail;
    }
    if (PyBytes_GET_SIZE(opclass) != 256 || PyBytes_GET_SIZE(opcaches) != 256
        || PyBytes_GET_SIZE(anflags) != 256) {
        PyErr_SetString(PyExc_ValueError, "bad opcode tables");
        goto pyfail;
    }
    memcpy(st->opclass, PyBytes_AS_STRING(opclass), 256);
    memcpy(st->an_ops.flags, PyBytes_AS_STRING(anflags), 256);
    memcpy(st->an_ops.caches, PyBytes_AS_STRING(opcaches), 256);
    st->an_ops.jump_adds_caches = PY_VERSION_HEX >= 0x030C0000;
    {
        const char *how = getenv("PYTRACEKIT_COVERAGE_ANALYSIS");
        st->py_analysis = how && strcmp(how, "python") == 0;
    }
    if (st->coveragepy == COVPY_YES && !found) {
        snprintf(args->errbuf, args->errbuf_size,
                 "coveragepy=yes: coverage.py is not importable by this interpreter "
                 "(install it, or use coveragepy=auto)");
        rc = PTK_EINVAL;
        goto fail;
    }
    st->found_coveragepy = found;
    dirv = calloc((size_t)PyList_GET_SIZE(dirs) + 1, sizeof(char *));
    if (!dirv) {
        rc = PTK_ENOMEM;
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(dirs); i++) {
        dirv[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(dirs, i));
        if (!dirv[i]) {
            goto pyfail;
        }
    }
    st->match = cov_match_new(include && include->is_set ? include->s : NULL,
                              exclude && exclude->is_set ? exclude->s : NULL,
                              source && source->is_set ? source->s : NULL,
                              dirv, args->errbuf, args->errbuf_size);
    if (!st->match) {
        rc = PTK_EINVAL;
        goto fail;
    }
    /* The same choice as a hub filter: code of files this instance would
     * not record is switched off where it runs (docs/filters.md), instead
     * of reaching on_event to be looked up and dropped. */
    if (args->struct_size > offsetof(ptk_init_args, subscription) &&
        host->struct_size > offsetof(ptk_host, subscribe_filter)) {
        char *bus = cov_match_bus_filter(st->match);
        int frc = bus != NULL ? host->subscribe_filter(args->ctx, bus) : PTK_OK;
        if (frc != PTK_OK) {
            free(bus);
            rc = frc;
            snprintf(args->errbuf, args->errbuf_size, "cannot set the file filter: %s",
                     host->strerror ? host->strerror(frc) : "refused");
            goto fail;
        }
        free(bus);
    }
    if ((include && include->is_set && !(st->include = strdup(include->s)))
        || (source && source->is_set && !(st->source = strdup(source->s)))) {
        rc = PTK_ENOMEM;
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        goto fail;
    }
    st->file_index = PyDict_New();
    if (!st->file_index) {
        goto pyfail;
    }
    free(dirv);
    Py_DECREF(setup);
    *events = PTK_MASK(PTK_EV_LINE);
    if (st->calls) {
        *events |= PTK_MASK(PTK_EV_CALL);
    }
    /* Branches from BRANCH events where the backend has them (each
     * location switched off once both directions are seen, and every line
     * after its first run), from every LINE event where it has not: those
     * arcs also need every call and return (the fallback kinds, which the
     * session adds only where BRANCH is left out). */
    unsigned from_lines = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN);
    if (st->branch && !st->counts && args->struct_size > offsetof(ptk_init_args, subscription)
        && args->subscription
        && args->subscription->struct_size > offsetof(ptk_subscription, fallback)) {
        st->sub = args->subscription;
        /* 3.14+: the two directions, each switched off once taken (CPython's
         * BRANCH cannot do that: docs/events.md) */
        unsigned kinds = branch_dirs ? PTK_MASK(PTK_EV_BRANCH_LEFT) | PTK_MASK(PTK_EV_BRANCH_RIGHT)
                                     : PTK_MASK(PTK_EV_BRANCH);
        *events |= kinds;
        args->subscription->optional |= kinds;
        args->subscription->fallback |= from_lines & ~*events;
    }
    else if (st->branch) {
        *events |= from_lines;
    }
    *state = st;
    return PTK_OK;

pyfail: {
#if PY_VERSION_HEX >= 0x030C0000
        PyObject *exc = PyErr_GetRaisedException();
#else
        PyObject *type = NULL, *exc = NULL, *tb = NULL;
        PyErr_Fetch(&type, &exc, &tb);
        PyErr_NormalizeException(&type, &exc, &tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
#endif
        PyObject *s = exc ? PyObject_Str(exc) : NULL;
        snprintf(args->errbuf, args->errbuf_size, "setting up: %s",
                 s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "unknown error");
        Py_XDECREF(s);
        Py_XDECREF(exc);
        PyErr_Clear();
    }
fail:
    free(dirv);
    Py_XDECREF(setup);
    cov_fini(st);
    return rc;
}

/* Frees what an entry of the code table owns besides its references. */
static void
code_free(cov_code *c)
{
    free(c->bridx);
    free(c->brs);
    free(c->succ);
}

/* Drops every Python reference; needs the GIL. */
static void
cov_release_python(cov_state *st)
{
    for (size_t i = 0; i < st->capcodes; i++) {
        if (st->codes[i].code) {
            Py_CLEAR(st->codes[i].bytecode);
            Py_CLEAR(st->codes[i].code);
            code_free(&st->codes[i]);
        }
    }
    free(st->codes);
    st->codes = NULL;
    st->capcodes = st->ncodes = 0;
    st->last = NULL;
    Py_CLEAR(st->file_index);
    Py_CLEAR(st->analysis);
    Py_CLEAR(st->format);
}

static void
cov_fini(void *state)
{
    cov_state *st = state;
    if (!st) {
        return;
    }
    if (st->codes || st->analysis || st->format || st->file_index) {
        if (Py_IsInitialized()) {
            PyGILState_STATE g = PyGILState_Ensure();
            cov_release_python(st);
            PyGILState_Release(g);
        }
        else {
            for (size_t i = 0; i < st->capcodes; i++) {
                code_free(&st->codes[i]);
            }
            free(st->codes); /* the interpreter and its objects are gone */
        }
    }
    for (size_t i = 0; i < st->nfiles; i++) {
        file_free(st->files[i]);
    }
    free(st->files);
    for (size_t i = 0; i < st->nthreads; i++) {
        free(st->threads[i].slots);
    }
    free(st->threads);
    cov_match_free(st->match);
    free(st->include);
    free(st->source);
    free(st);
}

/* ---- report ------------------------------------------------------------ */

/* Adds the .py files under source= that never ran (with every line missed). */
static int
add_unexecuted(cov_state *st)
{
    const char *src = cov_match_source(st->match);
    if (!src) {
        return 0;
    }
    PyObject *fn = PyDict_GetItemString(st->analysis, "python_files");
    PyObject *list = fn ? PyObject_CallFunction(fn, "s", src) : NULL;
    if (!list) {
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(list); i++) {
        const char *name = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i));
        if (!name) {
            rc = -1;
            break;
        }
        char *path = cov_abspath(name);
        if (!path) {
            PyErr_NoMemory();
            rc = -1;
            break;
        }
        int known = 0;
        for (size_t k = 0; k < st->nfiles; k++) {
            known |= strcmp(st->files[k]->path, path) == 0;
        }
        if (!known && cov_match_file(st->match, path) && !file_new(st, path)) {
            PyErr_NoMemory();
            rc = -1;
        }
        free(path);
    }
    Py_DECREF(list);
    return rc;
}

/* The report's Python: the analysis and the report writer. Loaded only
 * now, so that what they import is imported after the program ran. */
static int
ensure_python(cov_state *st)
{
    if (!st->analysis) {
        st->analysis = load_module("_ptk_coverage_analysis", cov_analysis_py,
                                   cov_analysis_py_code, cov_analysis_py_code_len);
    }
    if (st->analysis && !st->format) {
        st->format = load_module("_ptk_coverage_format", cov_format_py, cov_format_py_code,
                                 cov_format_py_code_len);
    }
    return st->format ? 0 : -1;
}

static int
is_module_code(PyCodeObject *code)
{
    return PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0;
}

/*
 * Which lines of each measured file could run: analysed from the module
 * code objects that ran, else from the file's source (compiled again), and
 * then from every code object that ran but is in neither (exec(), a reload,
 * a module imported before measuring began). A file whose source does not
 * compile gets a warning in @p warnings.
 */
static int
analyse_files(cov_state *st, PyObject *warnings)
{
    for (size_t i = 0; i < st->capcodes; i++) {
        cov_code *c = &st->codes[i];
        if (c->code && c->file && !c->analysed && is_module_code(c->code)) {
            if (file_analyze(st, c->file, (PyObject *)c->code) < 0) {
                return -1;
            }
            c->file->analysed = 1;
        }
    }
    PyObject *compile = PyDict_GetItemString(st->analysis, "compile_file");
    if (!compile) {
        PyErr_SetString(PyExc_RuntimeError, "coverage analysis has no compile_file()");
        return -1;
    }
    for (size_t i = 0; i < st->nfiles; i++) {
        cov_file *f = st->files[i];
        if (f->analysed) {
            continue;
        }
        PyObject *root = PyObject_CallFunction(compile, "s", f->path);
        if (!root) {
            return -1;
        }
        int rc = 0;
        if (PyUnicode_Check(root)) {
            f->unparsed = 1;
            PyObject *w = PyUnicode_FromFormat(
                "couldn't parse '%s' as Python: %U%s", f->path, root,
                f->seen ? "" : " (never ran; not reported)");
            rc = w ? PyList_Append(warnings, w) : -1;
            Py_XDECREF(w);
        }
        else {
            rc = file_analyze(st, f, root);
            f->analysed = 1;
        }
        Py_DECREF(root);
        if (rc < 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < st->capcodes; i++) {
        cov_code *c = &st->codes[i];
        if (c->code && c->file && !c->analysed
            && file_analyze(st, c->file, (PyObject *)c->code) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
list_append_new(PyObject *list, PyObject *item)
{
    if (!item) {
        return -1;
    }
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static int
func_order(const void *a, const void *b)
{
    const cov_func *x = *(const cov_func *const *)a, *y = *(const cov_func *const *)b;
    if (x->line != y->line) {
        return x->line < y->line ? -1 : 1;
    }
    return strcmp(x->qualname, y->qualname);
}

static PyObject *
file_data(const cov_state *st, const cov_file *f)
{
    PyObject *rec = PyDict_New();
    PyObject *lines = PyList_New(0), *hits = PyList_New(0), *funcs = PyList_New(0);
    PyObject *branches = PyList_New(0), *arcs = PyList_New(0);
    if (!rec || !lines || !hits || !funcs || !branches || !arcs) {
        goto fail;
    }
    for (int32_t n = 1; n <= f->maxline; n++) {
        if (f->possible[n] && list_append_new(lines, PyLong_FromLong(n)) < 0) {
            goto fail;
        }
        if (f->hits[n]
            && list_append_new(hits, Py_BuildValue("[iK]", n,
                                                   (unsigned long long)f->hits[n])) < 0) {
            goto fail;
        }
    }
    /* Functions in source order (they are found in the order they ran). */
    const cov_func **order = malloc((f->nfuncs + 1) * sizeof(*order));
    if (!order) {
        PyErr_NoMemory();
        goto fail;
    }
    for (size_t i = 0; i < f->nfuncs; i++) {
        order[i] = &f->funcs[i];
    }
    qsort(order, f->nfuncs, sizeof(*order), func_order);
    for (size_t i = 0; i < f->nfuncs; i++) {
        const cov_func *fn = order[i];
        uint64_t calls = fn->calls;
        if (!st->calls) {
            /* Not counted: 1 if one of its own lines ran. */
            calls = 0;
            for (int32_t j = 0; j < fn->nown && !calls; j++) {
                calls = fn->own[j] <= f->maxline && f->hits[fn->own[j]] ? 1 : 0;
            }
        }
        if (list_append_new(funcs, Py_BuildValue("[siK]", fn->qualname, fn->line,
                                                 (unsigned long long)calls)) < 0) {
            free(order);
            goto fail;
        }
    }
    free(order);
    for (size_t i = 0; st->branch && i < f->nbranches; i++) {
        PyObject *d = PyList_New(0);
        if (!d) {
            goto fail;
        }
        for (int32_t j = 0; j < f->branches[i].ndest; j++) {
            if (list_append_new(d, PyLong_FromLong(f->branches[i].dest[j])) < 0) {
                Py_DECREF(d);
                goto fail;
            }
        }
        if (list_append_new(branches, Py_BuildValue("[iN]", f->branches[i].line, d)) < 0) {
            goto fail;
        }
    }
    for (size_t i = 0; i < f->narcs; i++) {
        const cov_arc *a = &f->arcs[i];
        if (list_append_new(arcs, Py_BuildValue(
                              "[iiK]", (int)(int32_t)(uint32_t)(a->key >> 32),
                              (int)(int32_t)(uint32_t)(a->key & 0xffffffffu),
                              (unsigned long long)a->count)) < 0) {
            goto fail;
        }
    }
    if (PyList_Sort(branches) < 0 || PyList_Sort(arcs) < 0
        || PyDict_SetItemString(rec, "lines", lines) < 0
        || PyDict_SetItemString(rec, "hits", hits) < 0
        || PyDict_SetItemString(rec, "functions", funcs) < 0
        || PyDict_SetItemString(rec, "branches", branches) < 0
        || PyDict_SetItemString(rec, "arcs", arcs) < 0) {
        goto fail;
    }
    Py_DECREF(lines);
    Py_DECREF(hits);
    Py_DECREF(funcs);
    Py_DECREF(branches);
    Py_DECREF(arcs);
    return rec;
fail:
    Py_XDECREF(rec);
    Py_XDECREF(lines);
    Py_XDECREF(hits);
    Py_XDECREF(funcs);
    Py_XDECREF(branches);
    Py_XDECREF(arcs);
    return NULL;
}

static PyObject *
build_data(const cov_state *st)
{
    PyObject *files = PyDict_New();
    if (!files) {
        return NULL;
    }
    for (size_t i = 0; i < st->nfiles; i++) {
        if (st->files[i]->unparsed && !st->files[i]->seen) {
            continue;
        }
        PyObject *rec = file_data(st, st->files[i]);
        if (!rec || PyDict_SetItemString(files, st->files[i]->path, rec) < 0) {
            Py_XDECREF(rec);
            Py_DECREF(files);
            return NULL;
        }
        Py_DECREF(rec);
    }
    PyObject *sorted = PyDict_New();
    PyObject *keys = sorted ? PyDict_Keys(files) : NULL;
    if (!keys || PyList_Sort(keys) < 0) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        if (PyDict_SetItem(sorted, k, PyDict_GetItem(files, k)) < 0) {
            goto fail;
        }
    }
    Py_DECREF(keys);
    Py_DECREF(files);
    char version[32];
    const char *full = Py_GetVersion(); /* "3.11.7 (main, ...)" */
    size_t vn = strcspn(full, " ");
    snprintf(version, sizeof(version), "%.*s", (int)(vn < 31 ? vn : 31), full);
    return Py_BuildValue("{s:{s:s,s:i,s:O,s:s,s:s,s:i,s:{s:K,s:K,s:K}},s:N}", "meta",
                         "format", "pytracekit-coverage", "version", 1, "branch",
                         st->branch ? Py_True : Py_False, "measured",
                         !st->branch ? (st->counts ? "line counts" : "lines")
                         : arcs_from_lines(st) ? "line transitions" : "branch events",
                         "python", version, "runs", 1, "events", "line",
                         (unsigned long long)st->line_events, "call",
                         (unsigned long long)st->call_events, "branch",
                         (unsigned long long)st->branch_events, "files", sorted);
fail:
    Py_XDECREF(keys);
    Py_XDECREF(sorted);
    Py_DECREF(files);
    return NULL;
}

static int
write_text(cov_state *st, const char *filename, const char *function, PyObject *data)
{
    PyObject *fn = PyDict_GetItemString(st->format, function);
    PyObject *text = fn ? PyObject_CallOneArg(fn, data) : NULL;
    Py_ssize_t n = 0;
    const char *s = text ? PyUnicode_AsUTF8AndSize(text, &n) : NULL;
    if (!s) {
        Py_XDECREF(text);
        return cov_fail_python(st, function);
    }
    void *token;
    FILE *fp = st->host->report_open(st->ctx, filename, &token);
    if (!fp) {
        Py_DECREF(text);
        return PTK_EIO;
    }
    int ok = fwrite(s, 1, (size_t)n, fp) == (size_t)n;
    Py_DECREF(text);
    int rc = st->host->report_commit(token, ok);
    if (!ok && rc == PTK_OK) {
        rc = st->host->fail(st->ctx, PTK_EIO, "cannot write %s", filename);
    }
    return rc;
}

/* Calls the report writer's @p function(data, DIR + @p suffix), which writes
 * its files atomically itself. */
static int
write_in_dir(cov_state *st, const ptk_report_args *args, const char *function,
             PyObject *data, const char *suffix, const char *what)
{
    size_t n = strlen(args->output_dir) + strlen(suffix) + 32;
    char *path = malloc(n);
    if (!path) {
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory");
    }
    snprintf(path, n, "%s%s", args->output_dir, suffix);
    const ptk_host *h = st->host;
    /* the name claimed for this instance: another coverage instance in the
     * same directory gets html-2/, .coverage-2 */
    if (h->struct_size >= offsetof(ptk_host, report_claim) + sizeof h->report_claim) {
        int crc = h->report_claim(st->ctx, suffix + 1, path, n);
        if (crc < 0) {
            free(path);
            return h->fail(st->ctx, crc, "%s: cannot claim %s", what, suffix + 1);
        }
    }
    PyObject *fn = PyDict_GetItemString(st->format, function); /* borrowed */
    PyObject *res = fn ? PyObject_CallFunction(fn, "Os", data, path) : NULL;
    int rc = PTK_OK;
    if (!res) {
        rc = cov_fail_python(st, what);
    }
    Py_XDECREF(res);
    free(path);
    return rc;
}

/* DIR/.coverage through coverage.py's own CoverageData. */
static int
write_coveragepy(cov_state *st, const ptk_report_args *args, PyObject *data, FILE *out)
{
    if (!st->found_coveragepy) {
        fprintf(out, "pytracekit coverage: coveragepy=auto: coverage.py is not importable; "
                     "no .coverage written\n");
        return PTK_OK;
    }
    return write_in_dir(st, args, "write_coveragepy", data, "/.coverage",
                        "writing .coverage through coverage.py");
}

/* The hint of the "no data" warning: why nothing may have matched. */
static PyObject *
no_data_warning(const cov_state *st)
{
    if (st->include) {
        return PyUnicode_FromFormat("no data was collected: no file that ran matched "
                                    "include=%s", st->include);
    }
    if (st->source) {
        return PyUnicode_FromFormat("no data was collected: no file ran under source=%s "
                                    "and it holds no .py file", st->source);
    }
    return PyUnicode_FromString(
        "no data was collected: no file that ran is measured (the standard library and "
        "installed packages are not, by default); choose files with include= or source=");
}

static int
cov_report(void *state, const ptk_report_args *args)
{
    cov_state *st = state;
    int rc = PTK_OK;
    /* The report makes tens of thousands of lists and tuples, none of them
     * garbage until it ends: collections over the traced program's heap
     * that they would trigger find nothing (on test_enum, 8 M of the report
     * step's 207 M instructions). */
    int gc_was_on = PyGC_Disable();
    PyObject *data = NULL, *warnings = PyList_New(0);
    FILE *out = args->summary ? args->summary : stderr;
    if (!warnings || ensure_python(st) < 0 || add_unexecuted(st) < 0
        || analyse_files(st, warnings) < 0 || !(data = build_data(st))) {
        rc = cov_fail_python(st, "collecting the coverage data");
        goto done;
    }
    PyObject *files = PyDict_GetItemString(data, "files"); /* borrowed */
    if (files && PyDict_GET_SIZE(files) == 0) {
        PyObject *w = no_data_warning(st);
        if (!w || PyList_Append(warnings, w) < 0) {
            Py_XDECREF(w);
            rc = cov_fail_python(st, "collecting the coverage data");
            goto done;
        }
        Py_DECREF(w);
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(warnings); i++) {
        const char *w = PyUnicode_AsUTF8(PyList_GET_ITEM(warnings, i));
        fprintf(out, "pytracekit coverage: warning: %s\n", w ? w : "?");
    }
    PyErr_Clear();
    rc = write_text(st, "coverage.json", "json_text", data);
    if (rc == PTK_OK) {
        rc = write_text(st, "coverage.lcov", "lcov_text", data);
    }
    if (rc == PTK_OK) {
        rc = write_text(st, "coverage.xml", "cobertura_text", data);
    }
    if (rc == PTK_OK) {
        rc = write_text(st, "coverage.txt", "summary_text", data);
    }
    if (rc == PTK_OK && st->coveragepy != COVPY_NO) {
        rc = write_coveragepy(st, args, data, out);
    }
    if (rc == PTK_OK && st->html) {
        rc = write_in_dir(st, args, "write_html", data, "/html", "writing the HTML report");
    }
    if (rc == PTK_OK) {
        /* the whole table is coverage.txt */
        PyObject *fn = PyDict_GetItemString(st->format, "summary_short");
        PyObject *text = fn ? PyObject_CallOneArg(fn, data) : NULL;
        const char *s = text ? PyUnicode_AsUTF8(text) : NULL;
        if (!s) {
            rc = cov_fail_python(st, "summary_short");
        }
        else {
            fputs(s, out);
        }
        Py_XDECREF(text);
    }
done:
    Py_XDECREF(data);
    Py_XDECREF(warnings);
    /* The code objects stay referenced (and their per-code state kept)
     * until fini: a session started again keeps counting on the same
     * records, and its next report analyses them again. */
    if (gc_was_on) {
        PyGC_Enable();
    }
    return rc;
}

static const ptk_plugin_desc cov_desc = {
    PTK_PLUGIN_HEADER,
    .name = "coverage",
    .version = COV_VERSION,
    .description = "line, function and branch coverage (lcov, Cobertura XML, JSON)",
    .events = PTK_MASK(PTK_EV_LINE) | PTK_MASK(PTK_EV_CALL),
    .flags = 0,
    .options = cov_options,
    .init = cov_init,
    .on_event = cov_on_event,
    .on_ref = NULL,
    .report = cov_report,
    .fini = cov_fini,
};

PTK_PLUGIN_DEFINE(cov_desc)
