/* coverage: the report. */
#include "cov_private.h"

#include "cov_embedded.h"
#include "../common/py_import.h"

#include <sys/stat.h>

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
        PyObject *hold;
        const char *name = ptk_kit_name_bytes(PyList_GET_ITEM(list, i), NULL, &hold);
        if (!name) {
            rc = -1;
            break;
        }
        char *path = cov_abspath(name);
        Py_XDECREF(hold);
        if (!path) {
            PyErr_NoMemory();
            rc = -1;
            break;
        }
        int known = 0;
        for (size_t k = 0; k < st->nfiles; k++) {
            known |= strcmp(st->files[k]->path, path) == 0;
        }
        if (!known && cov_match_file(st->match, path) && !cov__file_new(st, path)) {
            PyErr_NoMemory();
            rc = -1;
        }
        free(path);
    }
    Py_DECREF(list);
    return rc;
}

/* The report's Python: the analysis and the report writer, each only
 * where it is used. Loaded only now, so that what they import is imported
 * after the program ran. */
static int
ensure_python(cov_state *st)
{
    /* reports=false analyses nothing (analysis.py only lists source='s
     * files) and writes coverage.json in C: the writer only for .coverage */
    int analyse = !st->deferred || cov_match_source(st->match) != NULL;
    int format = !st->deferred || st->coveragepy != COVPY_NO;
    if (!st->analysis && analyse) {
        st->analysis = cov__load_module("_ptk_coverage_analysis", cov_analysis_py,
                                        cov_analysis_py_code, cov_analysis_py_code_len);
        if (!st->analysis) {
            return -1;
        }
    }
    if (!st->format && format) {
        st->format = cov__load_module("_ptk_coverage_format", cov_format_py, cov_format_py_code,
                                      cov_format_py_code_len);
        if (!st->format) {
            return -1;
        }
    }
    return 0;
}

/*
 * Which lines of each measured file could run: analysed from the module
 * code objects that ran, else from the file's source (compiled again), and
 * then from every code object that ran but is in neither (exec(), a reload,
 * a module imported before measuring began). The code objects were analysed
 * when first seen (cov__code_record): their records are replayed here, in
 * that order, modules first. A code object inside a module analysed before
 * adds nothing when its own record is replayed (the same lines, functions
 * and branch lines, which an analysis leaves as an earlier one found them).
 * A file whose source does not compile gets a warning in @p warnings.
 */
static int
analyse_files(cov_state *st, PyObject *warnings)
{
    if (st->py_analysis) {
        /* analysis.py: the code objects were kept for it (code_first_sight) */
        for (size_t i = 0; i < st->capcodes; i++) {
            cov_code *c = &st->codes[i];
            if (c->code && c->code != COV_GONE && c->file && c->pin && !c->recorded
                && cov__code_record(st, c, (PyCodeObject *)c->pin) < 0) {
                return -1;
            }
        }
    }
    for (size_t i = 0; i < st->nrecs; i++) {
        cov_rec *r = st->recs[i];
        if (r->module && !r->replayed) {
            if (cov__rec_replay(st, r) < 0) {
                return -1;
            }
            r->replayed = 1;
            r->file->analysed = 1;
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
        /* the path's bytes back as os.fsdecode's str (fs_name.h) */
        PyObject *name = ptk_kit_name_str(f->path);
        PyObject *root = name ? PyObject_CallOneArg(compile, name) : NULL;
        if (!root) {
            Py_XDECREF(name);
            return -1;
        }
        int rc = 0;
        if (PyUnicode_Check(root)) {
            f->unparsed = 1;
            PyObject *w = PyUnicode_FromFormat(
                "couldn't parse '%U' as Python: %U%s", name, root,
                f->seen ? "" : " (never ran; not reported)");
            rc = w ? PyList_Append(warnings, w) : -1;
            Py_XDECREF(w);
        }
        else {
            rc = cov__file_analyze(st, f, root);
            f->analysed = 1;
        }
        Py_DECREF(root);
        Py_DECREF(name);
        if (rc < 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < st->nrecs; i++) {
        cov_rec *r = st->recs[i];
        if (!r->module && !r->replayed) {
            if (cov__rec_replay(st, r) < 0) {
                return -1;
            }
            r->replayed = 1;
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

/* [qualname, line, calls] of the functions of @p f, in source order (they
 * are found in the order they ran), appended to @p funcs; -1 on error. */
static int
file_functions(const cov_state *st, const cov_file *f, PyObject *funcs)
{
    const cov_func **order = malloc((f->nfuncs + 1) * sizeof(*order));
    if (!order) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < f->nfuncs; i++) {
        order[i] = &f->funcs[i];
    }
    qsort(order, f->nfuncs, sizeof(*order), func_order);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < f->nfuncs; i++) {
        const cov_func *fn = order[i];
        uint64_t calls = fn->calls;
        if (!st->calls && st->deferred) {
            calls = 1; /* it ran (its own lines are known only from an analysis) */
        }
        else if (!st->calls) {
            /* Not counted: 1 if one of its own lines ran. */
            calls = 0;
            for (int32_t j = 0; j < fn->nown && !calls; j++) {
                calls = fn->own[j] <= f->maxline && f->hits[fn->own[j]] ? 1 : 0;
            }
        }
        rc = list_append_new(funcs, Py_BuildValue("[siK]", fn->qualname, fn->line,
                                                  (unsigned long long)calls));
    }
    free(order);
    return rc;
}

/* [line, [destinations]] of the branch lines of @p f, and [from, to, count]
 * of its arcs, appended to @p branches and @p arcs; -1 on error. */
static int
file_branches(const cov_state *st, const cov_file *f, PyObject *branches, PyObject *arcs)
{
    for (size_t i = 0; st->branch && i < f->nbranches; i++) {
        PyObject *d = PyList_New(0);
        if (!d) {
            return -1;
        }
        for (int32_t j = 0; j < f->branches[i].ndest; j++) {
            if (list_append_new(d, PyLong_FromLong(f->branches[i].dest[j])) < 0) {
                Py_DECREF(d);
                return -1;
            }
        }
        if (list_append_new(branches, Py_BuildValue("[iN]", f->branches[i].line, d)) < 0) {
            return -1;
        }
    }
    for (size_t i = 0; i < f->narcs; i++) {
        const cov_arc *a = &f->arcs[i];
        if (list_append_new(arcs, Py_BuildValue(
                              "[iiK]", (int)(int32_t)(uint32_t)(a->key >> 32),
                              (int)(int32_t)(uint32_t)(a->key & 0xffffffffu),
                              (unsigned long long)a->count)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* contexts=: {line: [names of the contexts it ran in, sorted]}, as
 * coverage.py's JSON has it (json writes the line numbers as strings).
 * The names are gathered in a set per line (a context seen again later
 * has a second entry in f->fctx). */
static PyObject *
file_contexts(const cov_state *st, const cov_file *f)
{
    PyObject *by_line = PyDict_New();
    for (size_t i = 0; by_line && i < f->nfctx; i++) {
        const cov_fctx *x = &f->fctx[i];
        PyObject *name = PyList_GET_ITEM(st->ctx_names, x->ctx); /* borrowed */
        for (int32_t b = 0; by_line && b < x->nbytes * 8; b++) {
            if (!(x->bits[b >> 3] & (1u << (b & 7)))) {
                continue;
            }
            PyObject *line = PyLong_FromLong(b);
            PyObject *names = line ? PyDict_GetItemWithError(by_line, line) : NULL;
            if (!names && line && !PyErr_Occurred()) {
                names = PySet_New(NULL);
                if (names && PyDict_SetItem(by_line, line, names) < 0) {
                    Py_CLEAR(names);
                }
                Py_XDECREF(names); /* the dict keeps it */
            }
            Py_XDECREF(line);
            if (!names || PySet_Add(names, name) < 0) {
                Py_CLEAR(by_line);
            }
        }
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (by_line && PyDict_Next(by_line, &pos, &k, &v)) {
        PyObject *sorted = PySequence_List(v);
        if (!sorted || PyList_Sort(sorted) < 0 || PyDict_SetItem(by_line, k, sorted) < 0) {
            Py_XDECREF(sorted);
            Py_CLEAR(by_line);
            break;
        }
        Py_DECREF(sorted);
    }
    return by_line;
}

/* contexts= and branch=: [[from, to, [names of the contexts it was taken
 * in, sorted]]], sorted by arc. */
static PyObject *
file_arc_contexts(const cov_state *st, const cov_file *f)
{
    PyObject *by_arc = PyDict_New();
    for (size_t i = 0; by_arc && i < f->capcarcs; i++) {
        const cov_carc *e = &f->carcs[i];
        if (e->ctx < 0) {
            continue;
        }
        PyObject *name = PyList_GET_ITEM(st->ctx_names, e->ctx); /* borrowed */
        PyObject *arc = Py_BuildValue("(ii)", (int)(int32_t)(uint32_t)(e->key >> 32),
                                      (int)(int32_t)(uint32_t)(e->key & 0xffffffffu));
        PyObject *names = arc ? PyDict_GetItemWithError(by_arc, arc) : NULL;
        if (!names && arc && !PyErr_Occurred()) {
            names = PyList_New(0);
            if (names && PyDict_SetItem(by_arc, arc, names) < 0) {
                Py_CLEAR(names);
            }
            Py_XDECREF(names); /* the dict keeps it */
        }
        Py_XDECREF(arc);
        if (!names || PyList_Append(names, name) < 0) {
            Py_CLEAR(by_arc);
        }
    }
    PyObject *out = by_arc ? PyList_New(0) : NULL;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (out && PyDict_Next(by_arc, &pos, &k, &v)) {
        if (PyList_Sort(v) < 0
            || list_append_new(out, Py_BuildValue("[OOO]", PyTuple_GET_ITEM(k, 0),
                                                  PyTuple_GET_ITEM(k, 1), v)) < 0) {
            Py_CLEAR(out);
        }
    }
    Py_XDECREF(by_arc);
    if (out && PyList_Sort(out) < 0) {
        Py_CLEAR(out);
    }
    return out;
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
        if (!st->deferred && f->possible[n] && list_append_new(lines, PyLong_FromLong(n)) < 0) {
            goto fail;
        }
        if (f->hits[n]
            && list_append_new(hits, Py_BuildValue("[iK]", n,
                                                   (unsigned long long)f->hits[n])) < 0) {
            goto fail;
        }
    }
    if (file_functions(st, f, funcs) < 0 || file_branches(st, f, branches, arcs) < 0) {
        goto fail;
    }
    /* reports=false: what ran, without the lines that could run and the
     * branch destinations (the report commands analyse the source) */
    if (PyList_Sort(branches) < 0 || PyList_Sort(arcs) < 0
        || (!st->deferred && PyDict_SetItemString(rec, "lines", lines) < 0)
        || PyDict_SetItemString(rec, "hits", hits) < 0
        || PyDict_SetItemString(rec, "functions", funcs) < 0
        || (!st->deferred && PyDict_SetItemString(rec, "branches", branches) < 0)
        || PyDict_SetItemString(rec, "arcs", arcs) < 0) {
        goto fail;
    }
    if (st->contexts) {
        PyObject *ctx = file_contexts(st, f);
        if (!ctx || PyDict_SetItemString(rec, "contexts", ctx) < 0) {
            Py_XDECREF(ctx);
            goto fail;
        }
        Py_DECREF(ctx);
    }
    if (st->contexts && st->branch) {
        PyObject *actx = file_arc_contexts(st, f);
        if (!actx || PyDict_SetItemString(rec, "arc_contexts", actx) < 0) {
            Py_XDECREF(actx);
            goto fail;
        }
        Py_DECREF(actx);
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

/* Whether the data has file @p f: a file whose source does not compile is
 * left out when it never ran (a deferred run analyses no file: completing
 * its data decides). */
static int
file_reported(const cov_state *st, const cov_file *f)
{
    return !(f->unparsed && !f->seen && !st->deferred);
}

static PyObject *
build_data(const cov_state *st)
{
    PyObject *files = PyDict_New();
    if (!files) {
        return NULL;
    }
    for (size_t i = 0; i < st->nfiles; i++) {
        if (!file_reported(st, st->files[i])) {
            continue;
        }
        PyObject *rec = file_data(st, st->files[i]);
        PyObject *name = rec ? ptk_kit_name_str(st->files[i]->path) : NULL;
        if (!name || PyDict_SetItem(files, name, rec) < 0) {
            Py_XDECREF(name);
            Py_XDECREF(rec);
            Py_DECREF(files);
            return NULL;
        }
        Py_DECREF(name);
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
    PyObject *data = Py_BuildValue("{s:{s:s,s:i,s:O,s:s,s:s,s:i,s:{s:K,s:K,s:K}},s:N}", "meta",
                         "format", "pytracekit-coverage", "version", 1, "branch",
                         st->branch ? Py_True : Py_False, "measured",
                         !st->branch ? (st->counts ? "line counts" : "lines")
                         : cov__arcs_from_lines(st) ? "line transitions" : "branch events",
                         "python", version, "runs", 1, "events", "line",
                         (unsigned long long)st->line_events, "call",
                         (unsigned long long)st->call_events, "branch",
                         (unsigned long long)st->branch_events, "files", sorted);
    if (data && st->deferred) {
        /* reports=false: marked, with what completing it needs to know */
        PyObject *meta = PyDict_GetItemString(data, "meta"); /* borrowed */
        if (PyDict_SetItemString(meta, "deferred", Py_True) < 0
            || PyDict_SetItemString(meta, "calls", st->calls ? Py_True : Py_False) < 0) {
            Py_CLEAR(data);
        }
    }
    return data;
fail:
    Py_XDECREF(keys);
    Py_XDECREF(sorted);
    Py_DECREF(files);
    return NULL;
}

/* contexts= without branch=: {context name: {file: [lines]}}, what
 * .coverage takes per context (write_coveragepy), from each file's bits
 * per context. Pivoted back in Python from coverage.json's {line: [names]}
 * it took 0.25 s of networkx's tests (3,321 contexts, 425,854 pairs). A
 * context seen again later in a file adds its lines to the same list. */
static PyObject *
contexts_by_name(const cov_state *st)
{
    PyObject *all = PyDict_New();
    for (size_t i = 0; all && i < st->nfiles; i++) {
        const cov_file *f = st->files[i];
        if (f->nfctx == 0 || !file_reported(st, f)) {
            continue;
        }
        PyObject *path = ptk_kit_name_str(f->path);
        for (size_t j = 0; path && all && j < f->nfctx; j++) {
            const cov_fctx *x = &f->fctx[j];
            PyObject *name = PyList_GET_ITEM(st->ctx_names, x->ctx); /* borrowed */
            PyObject *per = PyDict_GetItemWithError(all, name);     /* borrowed */
            if (!per && !PyErr_Occurred() && (per = PyDict_New()) != NULL) {
                int bad = PyDict_SetItem(all, name, per) < 0;
                Py_DECREF(per); /* the dict keeps it */
                per = bad ? NULL : per;
            }
            PyObject *lines = per ? PyDict_GetItemWithError(per, path) : NULL;
            if (per && !lines && !PyErr_Occurred() && (lines = PyList_New(0)) != NULL) {
                int bad = PyDict_SetItem(per, path, lines) < 0;
                Py_DECREF(lines);
                lines = bad ? NULL : lines;
            }
            for (int32_t b = 0; lines && b < x->nbytes * 8; b++) {
                if (x->bits[b >> 3] & (1u << (b & 7))) {
                    PyObject *n = PyLong_FromLong(b);
                    if (!n || PyList_Append(lines, n) < 0) {
                        lines = NULL;
                    }
                    Py_XDECREF(n);
                }
            }
            if (!lines) {
                Py_CLEAR(all);
            }
        }
        if (!path) {
            Py_CLEAR(all);
        }
        Py_XDECREF(path);
    }
    return all;
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
        return cov__fail_python(st, function);
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
             PyObject *data, PyObject *extra, const char *suffix, const char *what)
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
    PyObject *res = !fn    ? NULL
                    : extra ? PyObject_CallFunction(fn, "OsO", data, path, extra)
                            : PyObject_CallFunction(fn, "Os", data, path);
    int rc = PTK_OK;
    if (!res) {
        rc = cov__fail_python(st, what);
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
    PyObject *by_name = NULL;
    if (st->contexts && !st->branch && !(by_name = contexts_by_name(st))) {
        return cov__fail_python(st, "writing .coverage through coverage.py");
    }
    int rc = write_in_dir(st, args, "write_coveragepy", data, by_name, "/.coverage",
                          "writing .coverage through coverage.py");
    Py_XDECREF(by_name);
    return rc;
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

/* The bytes of the file at the fs-encoded @p path, or NULL (no error set)
 * when it cannot be read. */
static PyObject *
read_bytes(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        return NULL;
    }
    size_t n = 0, cap = 0;
    char *buf = NULL;
    int ok = 1;
    while (ok) {
        if (n == cap) {
            char *more = realloc(buf, cap = cap ? cap * 2 : 65536);
            ok = more != NULL;
            buf = more ? more : buf;
            if (!ok) {
                break;
            }
        }
        n += fread(buf + n, 1, cap - n, fp);
        if (n < cap) {
            ok = !ferror(fp);
            break;
        }
    }
    fclose(fp);
    PyObject *bytes = ok ? PyBytes_FromStringAndSize(buf ? buf : "", (Py_ssize_t)n) : NULL;
    free(buf);
    PyErr_Clear(); /* out of memory here is "cannot be read" */
    return bytes;
}

/* [size, hash] of the source at @p path, as the report writer's
 * source_stamp() makes it (its size, and importlib.util.source_hash() of
 * its bytes as hex: _imp.source_hash keyed by the interpreter's magic
 * number, which is what that calls), or None when it cannot be read.
 * Here in C so that writing deferred data imports nothing. */
static PyObject *
source_stamp(PyObject *path)
{
    PyObject *fs = PyUnicode_EncodeFSDefault(path);
    if (!fs) {
        return NULL;
    }
    struct stat sb;
    PyObject *bytes = stat(PyBytes_AS_STRING(fs), &sb) == 0 ? read_bytes(PyBytes_AS_STRING(fs))
                                                             : NULL;
    Py_DECREF(fs);
    if (!bytes) {
        Py_RETURN_NONE;
    }
    PyObject *imp = ptk_kit_import("_imp");
    PyObject *digest = imp ? PyObject_CallMethod(imp, "source_hash", "lO",
                                                 PyImport_GetMagicNumber(), bytes)
                           : NULL;
    PyObject *hex = digest ? PyObject_CallMethod(digest, "hex", NULL) : NULL;
    PyObject *stamp = hex ? Py_BuildValue("[LO]", (long long)sb.st_size, hex) : NULL;
    Py_XDECREF(imp);
    Py_DECREF(bytes);
    Py_XDECREF(digest);
    Py_XDECREF(hex);
    return stamp;
}

/* coverage.json of reports=false: the data as the report writer's
 * deferred_text() gives it, byte for byte (its format version, each file
 * with its source's stamp, compact JSON), written in C (the host's
 * json_write): that function imported json (with re) and importlib.util,
 * more than the rest of the end of a short run
 * (tests/coverage/test_deferred.py compares the two). */
static int
write_deferred(cov_state *st, PyObject *data)
{
    PyObject *meta = PyDict_GetItemString(data, "meta");   /* borrowed */
    PyObject *files = PyDict_GetItemString(data, "files"); /* borrowed */
    /* the report writer's DEFERRED_VERSION, baked in at build time */
    PyObject *version = PyLong_FromLong(COV_DEFERRED_VERSION);
    if (!meta || !files || !version || PyDict_SetItemString(meta, "version", version) < 0) {
        Py_XDECREF(version);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "no deferred data to write");
        }
        return cov__fail_python(st, "writing the deferred data");
    }
    Py_DECREF(version);
    PyObject *path, *rec;
    Py_ssize_t pos = 0;
    while (PyDict_Next(files, &pos, &path, &rec)) {
        PyObject *stamp = source_stamp(path);
        if (!stamp || PyDict_SetItemString(rec, "source", stamp) < 0) {
            Py_XDECREF(stamp);
            return cov__fail_python(st, "writing the deferred data");
        }
        Py_DECREF(stamp);
    }
    void *token;
    FILE *fp = st->host->report_open(st->ctx, "coverage.json", &token);
    if (!fp) {
        return PTK_EIO;
    }
    int jrc = st->host->json_write(fp, data, PTK_JSON_COMPACT);
    int ok = jrc == 0 && fputc('\n', fp) != EOF;
    int rc = st->host->report_commit(token, ok);
    if (jrc == -1) {
        return cov__fail_python(st, "writing the deferred data");
    }
    if (!ok && rc == PTK_OK) {
        rc = st->host->fail(st->ctx, PTK_EIO, "cannot write coverage.json");
    }
    return rc;
}

/* reports=false: coverage.json with what ran (and the size and
 * hash of each source, so that completing it later can tell
 * a changed file), .coverage with coveragepy=, and a line saying how to
 * make the reports. */
static int
report_deferred(cov_state *st, const ptk_report_args *args, PyObject *data, FILE *out)
{
    int rc = write_deferred(st, data);
    if (rc == PTK_OK && st->coveragepy != COVPY_NO) {
        rc = write_coveragepy(st, args, data, out);
    }
    if (rc == PTK_OK) {
        PyObject *files = PyDict_GetItemString(data, "files"); /* borrowed */
        fprintf(out, "pytracekit coverage: %zd file%s measured; reports deferred "
                     "(reports=false): `pytracekit report %s` makes them\n",
                files ? PyDict_GET_SIZE(files) : 0,
                files && PyDict_GET_SIZE(files) == 1 ? "" : "s", args->output_dir);
    }
    return rc;
}

int
cov__report(void *state, const ptk_report_args *args)
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
        || (!st->deferred && analyse_files(st, warnings) < 0) || !(data = build_data(st))) {
        rc = cov__fail_python(st, "collecting the coverage data");
        goto done;
    }
    if (st->deferred) {
        rc = report_deferred(st, args, data, out);
        goto done;
    }
    PyObject *files = PyDict_GetItemString(data, "files"); /* borrowed */
    if (files && PyDict_GET_SIZE(files) == 0) {
        PyObject *w = no_data_warning(st);
        if (!w || PyList_Append(warnings, w) < 0) {
            Py_XDECREF(w);
            rc = cov__fail_python(st, "collecting the coverage data");
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
        rc = write_in_dir(st, args, "write_html", data, NULL, "/html",
                          "writing the HTML report");
    }
    if (rc == PTK_OK) {
        /* the whole table is coverage.txt */
        PyObject *fn = PyDict_GetItemString(st->format, "summary_short");
        PyObject *text = fn ? PyObject_CallOneArg(fn, data) : NULL;
        const char *s = text ? PyUnicode_AsUTF8(text) : NULL;
        if (!s) {
            rc = cov__fail_python(st, "summary_short");
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
