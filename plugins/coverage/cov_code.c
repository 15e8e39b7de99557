/* coverage: first sight of a code object (may call Python). */
#include "cov_private.h"

#include "cov_embedded.h"
#include "../common/embed_module.h"

/* ---- first sight of a code object (may call Python) -------------------- */

/*
 * Runs an embedded module: its code object as marshalled at build time when
 * this is the interpreter version it was built by, else compiled from
 * @p source. Returns the module's dict.
 */
PyObject *
cov__load_module(const char *name, const char *source, const unsigned char *code_bytes,
                 size_t code_len)
{
    return ptk_kit_load_module(name, source, code_bytes, code_len, COV_EMBED_PY_VERSION);
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

/* One analysis of a tree of code objects into a file (cov__file_analyze),
 * or into a record (rec not NULL: cov__code_record). */
typedef struct cov_an_ctx {
    cov_state *st;
    cov_file *f;
    size_t known; /* f->branches before this analysis: not changed by it */
    cov_rec *rec;
} cov_an_ctx;

/* Appends a sink call to a->rec; -1 (MemoryError) when out of memory. */
static int
rec_add(cov_an_ctx *a, const char *qualname, int32_t line, const int32_t *v, int32_t n)
{
    cov_rec *r = a->rec;
    if (PTK_KIT_RESERVE(r->items, r->capitems, r->nitems + 1, 8) != 0) {
        PyErr_NoMemory();
        return -1;
    }
    cov_rec_item *it = &r->items[r->nitems];
    *it = (cov_rec_item){NULL, line, n, NULL};
    if ((qualname && !(it->qualname = strdup(qualname))) || (n > 0 && !(it->v = malloc((size_t)n * sizeof(int32_t))))) {
        free(it->qualname);
        PyErr_NoMemory();
        return -1;
    }
    if (n > 0) {
        memcpy(it->v, v, (size_t)n * sizeof(int32_t));
    }
    r->nitems++;
    return 0;
}

/* A code object of the tree (its co_qualname, co_firstlineno): its lines
 * could run, and it is a function of the file. */
static int
an_code_apply(cov_an_ctx *a, const char *qualname, int32_t firstline, const int32_t *own,
              int32_t nown)
{
    cov_file *f = a->f;
    for (int32_t i = 0; i < nown; i++) {
        if (own[i] <= 0 || own[i] > INT32_MAX / 2) {
            continue;
        }
        if (cov__file_reserve(f, own[i]) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        f->possible[own[i]] = 1;
    }
    int32_t fi = cov__file_func(f, qualname, firstline);
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
    return 0;
}

static int
an_code(void *ctx, PyCodeObject *code, int32_t start, const int32_t *own, int32_t nown)
{
    cov_an_ctx *a = ctx;
    (void)start;
    const char *qualname = PyUnicode_AsUTF8(code->co_qualname);
    if (!qualname) {
        return -1;
    }
    return a->rec ? rec_add(a, qualname, code->co_firstlineno, own, nown)
                  : an_code_apply(a, qualname, code->co_firstlineno, own, nown);
}

/* A branch line and its destinations: merged into what this analysis found
 * on that line before (another code object of the tree), left alone if an
 * earlier analysis of the file knew it. */
static int
an_branch_apply(cov_an_ctx *a, int32_t line, const int32_t *dest, int32_t ndest)
{
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

static int
an_branch(void *ctx, int32_t line, const int32_t *dest, int32_t ndest)
{
    cov_an_ctx *a = ctx;
    return a->rec ? rec_add(a, NULL, line, dest, ndest) : an_branch_apply(a, line, dest, ndest);
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

/* cov__file_analyze with analysis.py's analyze(), the reference the C analysis
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
                              &qualname, &line, &start, &PyList_Type, &own) ||
            int_list(own, &v, &n) < 0) {
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

/* Analyses @p root into @p a (a file, or a record). */
static int
an_run(cov_an_ctx *a, PyObject *root)
{
    cov_state *st = a->st;
    if (st->py_analysis) {
        return file_analyze_py(a, root);
    }
    if (!PyCode_Check(root)) {
        PyErr_SetString(PyExc_TypeError, "coverage analysis of something not a code object");
        return -1;
    }
    const cov_an_sink sink = {a, an_code, an_branch};
    return cov_analyze(&st->an_ops, (PyCodeObject *)root, st->branch, &sink);
}

/*
 * Analyses @p root (a code object and those nested in it) and records in
 * @p f which lines could run, its functions and its branches.
 */
int
cov__file_analyze(cov_state *st, cov_file *f, PyObject *root)
{
    cov_an_ctx a = {st, f, f->nbranches, NULL};
    return an_run(&a, root);
}

static int
is_module_code(PyCodeObject *code)
{
    return PyUnicode_CompareWithASCIIString(code->co_name, "<module>") == 0;
}

void
cov__rec_free(cov_rec *r)
{
    if (!r) {
        return;
    }
    for (size_t i = 0; i < r->nitems; i++) {
        free(r->items[i].qualname);
        free(r->items[i].v);
    }
    free(r->items);
    free(r);
}

/*
 * Analyses @p code (and the code objects nested in it), of the measured
 * entry @p c, into a record appended to st->recs: what cov__file_analyze
 * would do with it at report time, done while it lives.
 */
int
cov__code_record(cov_state *st, cov_code *c, PyCodeObject *code)
{
    if (PTK_KIT_RESERVE(st->recs, st->caprecs, st->nrecs + 1, 64) != 0) {
        PyErr_NoMemory();
        return -1;
    }
    cov_rec *r = calloc(1, sizeof(*r));
    if (!r) {
        PyErr_NoMemory();
        return -1;
    }
    r->file = c->file;
    r->module = is_module_code(code);
    cov_an_ctx a = {st, c->file, 0, r};
    if (an_run(&a, (PyObject *)code) < 0) {
        cov__rec_free(r);
        return -1;
    }
    st->recs[st->nrecs++] = r;
    c->recorded = 1;
    return 0;
}

/* Replays @p r into its file, as cov__file_analyze of its root would. */
int
cov__rec_replay(cov_state *st, const cov_rec *r)
{
    cov_an_ctx a = {st, r->file, r->file->nbranches, NULL};
    for (size_t i = 0; i < r->nitems; i++) {
        const cov_rec_item *it = &r->items[i];
        if ((it->qualname ? an_code_apply(&a, it->qualname, it->line, it->v, it->n)
                          : an_branch_apply(&a, it->line, it->v, it->n)) < 0) {
            return -1;
        }
    }
    return 0;
}

cov_file *
cov__file_new(cov_state *st, const char *path)
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
    if (cov__file_reserve(f, 64) < 0) {
        cov__file_free(f);
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
    PyObject *hold; /* the file system's bytes of the name (fs_name.h) */
    const char *name = ptk_kit_name_bytes(filename, NULL, &hold);
    if (!name) {
        return -2;
    }
    if (name[0] != '\0' && name[0] != '<') {
        char *path = cov_abspath(name);
        Py_CLEAR(hold);
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
                if (!cov__file_new(st, path)) {
                    free(path);
                    PyErr_NoMemory();
                    return -2;
                }
                result = (Py_ssize_t)st->nfiles - 1;
            }
        }
        free(path);
    }
    Py_XDECREF(hold);
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
    cov_code *c = cov__code_add(st, code);
    if (!c || fi < 0) {
        return c;
    }
    if (st->py_analysis && !st->deferred && !c->pin) {
        /* analysis.py runs at report time (it is the reference, not the
         * way measurements are taken): the code object is kept until then */
        c->pin = Py_NewRef((PyObject *)code);
    }
    cov_file *f = st->files[fi];
    const char *qualname = PyUnicode_AsUTF8(code->co_qualname);
    if (!qualname) {
        return NULL;
    }
    c->func = cov__file_func(f, qualname, code->co_firstlineno);
    if (c->func < 0) {
        PyErr_NoMemory();
        return NULL;
    }
    if (code_describe(st, c) < 0) {
        return NULL;
    }
    c->file = f;
    f->seen = 1;
    /* reports=false: no analysis at all (the report commands analyse the
     * sources later) */
    if (!st->py_analysis && !st->deferred && cov__code_record(st, c, code) < 0) {
        return NULL;
    }
    return c;
}

/* cov__code_get for another code object than the last event's. */
__attribute__((noinline)) cov_code *
cov__code_get_other(cov_state *st, PyCodeObject *code)
{
    cov_code *c = cov__code_find(st, code);
    if (!c) {
        c = code_first_sight(st, code);
    }
    st->last = c;
    return c;
}
