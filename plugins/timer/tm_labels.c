/* timer reports: the labels (pstats keys), their names and short names. */
#include "tm_report.h"

void
tm__acc_add(tm_acc *a, const tm_fig *f)
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
    return Py_BuildValue("(OiO)", fn->filename, fn->line, fn->name);
}

/* "qualname (file:line)" for Python code, the cProfile name as pstats
 * prints it ("{method 'append' of 'list' objects}") for C functions. */
static PyObject *
tm_func_name(const tm_func *fn)
{
    if (fn->is_c) {
        return ptk_kit_c_display(fn->label);
    }
    return PyUnicode_FromFormat("%U (%U:%d)", fn->qualname, fn->filename, fn->line);
}

void
tm__labels_clear(tm_labels *L)
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

/* counts[suffix] = how many of the files in @p flist end with it, the last
 * @p k parts of each path; -1 on error. */
static int
tm_count_suffixes(PyObject *flist, PyObject *counts, int k)
{
    PyDict_Clear(counts);
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(flist); j++) {
        PyObject *hold;
        const char *f = ptk_kit_name_bytes(PyList_GET_ITEM(flist, j), NULL, &hold);
        PyObject *suf = f ? ptk_kit_name_str(tm_path_suffix(f, k)) : NULL;
        Py_XDECREF(hold);
        PyObject *c = suf ? PyDict_GetItemWithError(counts, suf) : NULL;
        PyObject *n = suf && !PyErr_Occurred()
                          ? PyLong_FromLong(c ? PyLong_AsLong(c) + 1 : 1)
                          : NULL;
        int bad = n == NULL || PyDict_SetItem(counts, suf, n) < 0;
        Py_XDECREF(suf);
        Py_XDECREF(n);
        if (bad) {
            return -1;
        }
    }
    return 0;
}

/* files[file] = the shortest suffix of its path that no other file of
 * @p flist ends with (None: not settled yet), k = 1, 2, ... parts. */
static int
tm_settle_suffixes(PyObject *flist, PyObject *files, PyObject *counts)
{
    Py_ssize_t nf = PyList_GET_SIZE(flist), left = nf;
    for (int k = 1; left > 0 && k < 256; k++) {
        if (tm_count_suffixes(flist, counts, k) < 0) {
            return -1;
        }
        for (Py_ssize_t j = 0; j < nf; j++) {
            PyObject *file = PyList_GET_ITEM(flist, j);
            if (PyDict_GetItemWithError(files, file) != Py_None) {
                continue; /* settled */
            }
            PyObject *hold;
            const char *f = ptk_kit_name_bytes(file, NULL, &hold);
            const char *sufs = f ? tm_path_suffix(f, k) : NULL;
            PyObject *suf = sufs ? ptk_kit_name_str(sufs) : NULL;
            Py_XDECREF(hold);
            PyObject *c = suf ? PyDict_GetItemWithError(counts, suf) : NULL;
            if (c == NULL) {
                Py_XDECREF(suf);
                return -1;
            }
            if (PyLong_AsLong(c) == 1 || sufs == f) {
                if (PyDict_SetItem(files, file, suf) < 0) {
                    Py_DECREF(suf);
                    return -1;
                }
                left--;
            }
            Py_DECREF(suf);
        }
    }
    return 0;
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
            PyDict_SetItem(files, fn->filename, Py_None) < 0) {
            goto fail;
        }
    }
    flist = PyDict_Keys(files);
    if (flist == NULL) {
        goto fail;
    }
    if (tm_settle_suffixes(flist, files, counts) < 0) {
        goto fail;
    }
    for (size_t i = 0; i < L->n; i++) {
        const tm_func *fn = st->func_list[L->first[i]];
        PyObject *name;
        if (fn->is_c) {
            name = Py_NewRef(PyList_GET_ITEM(L->names, i));
        }
        else {
            PyObject *suf = PyDict_GetItemWithError(files, fn->filename);
            if (suf == NULL || suf == Py_None) {
                suf = fn->filename;
            }
            name = PyErr_Occurred() ? NULL
                                    : PyUnicode_FromFormat("%U (%U:%d)", fn->qualname, suf,
                                                           fn->line);
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

/* One label per pstats key: L->canon, L->first, L->keys, L->names, L->n;
 * @p index maps each key to its label id. -1 on error. */
static int
tm_labels_index(tm_state *st, tm_labels *L, PyObject *index)
{
    for (size_t i = 0; i < st->nfuncs; i++) {
        const tm_func *fn = st->func_list[i];
        PyObject *key = tm_func_key(fn);
        if (key == NULL) {
            return -1;
        }
        PyObject *id = PyDict_GetItemWithError(index, key);
        if (id != NULL) {
            L->canon[i] = (uint32_t)PyLong_AsUnsignedLong(id);
            Py_DECREF(key);
            continue;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            return -1;
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
            return -1;
        }
        L->first[L->n] = (uint32_t)i;
        L->canon[i] = (uint32_t)L->n++;
    }
    return 0;
}

/* L->cnames and L->snames: the text form and the bytes (fs_name.h) of the
 * names and short names, kept
 * alive by L->cname_objs, with ';' (separates frames) and newlines (end a
 * line) replaced. -1 on error. */
static int
tm_labels_cnames(tm_labels *L)
{
    L->cnames = calloc(L->n + 1, sizeof(*L->cnames));
    L->snames = calloc(L->n + 1, sizeof(*L->snames));
    if (L->cnames == NULL || L->snames == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < 2 * L->n; i++) {
        /* ';' separates frames and a newline ends the line: replace both. */
        PyObject *name = i < L->n ? PyList_GET_ITEM(L->names, i)
                                  : PyList_GET_ITEM(L->shorts, i - L->n);
        /* the bytes a file name stands for (fs_name.h); the table shows
         * the text form of those that are not UTF-8 */
        PyObject *hold;
        const char *u = ptk_kit_name_bytes(name, NULL, &hold);
        char *text = u != NULL && i < L->n ? ptk_kit_name_text(u) : NULL;
        PyObject *b = u == NULL                       ? NULL
                      : i < L->n && text != NULL      ? PyBytes_FromString(text)
                      : i < L->n                      ? PyErr_NoMemory()
                                                      : PyBytes_FromString(u);
        free(text);
        Py_XDECREF(hold);
        if (b == NULL || PyList_Append(L->cname_objs, b) < 0) {
            Py_XDECREF(b);
            return -1;
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
    return 0;
}

int
tm__labels_build(tm_state *st, tm_labels *L)
{
    int rc = -1;
    PyObject *index = PyDict_New();
    L->canon = calloc(st->nfuncs + 1, sizeof(*L->canon));
    L->first = calloc(st->nfuncs + 1, sizeof(*L->first));
    L->keys = PyList_New(0);
    L->names = PyList_New(0);
    L->cname_objs = PyList_New(0);
    if (index != NULL && L->canon != NULL && L->first != NULL && L->keys != NULL &&
        L->names != NULL && L->cname_objs != NULL && tm_labels_index(st, L, index) == 0 &&
        (L->shorts = tm_short_names(st, L)) != NULL && tm_labels_cnames(L) == 0) {
        rc = 0;
    }
    Py_XDECREF(index);
    return rc;
}
