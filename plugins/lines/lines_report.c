/* lines: the reports, made by the embedded lines_format.py from the
 * figures of every code object seen. */
#include "lines.h"

#include <string.h>

#include "lines_embedded.h"
#include "../common/embed_module.h"

/* The embedded module's dict: its marshalled code when this interpreter
 * is the one it was built by, else its source compiled. */
static PyObject *
ln_load_format(void)
{
    return ptk_kit_load_module("_ptk_lines_format", lines_format_py, lines_format_py_code,
                               lines_format_py_code_len, COV_EMBED_PY_VERSION);
}

/* (file, qualname, first, calls, {line: (hits, time_ns)}, thread index,
 * context index) per code object (and thread, with per_thread=true, and
 * context, with per_context=true). */
static PyObject *
ln_funcs_list(const ln_state *st)
{
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < st->nfuncs; i++) {
        const ln_func *fn = st->funcs[i];
        PyObject *lines = PyDict_New();
        if (lines == NULL) {
            goto fail;
        }
        for (size_t j = 0; j < fn->nlines; j++) {
            const ln_line *l = &fn->lines[j];
            if (l->hits == 0 && l->time_ns == 0) {
                continue;
            }
            PyObject *k = PyLong_FromLong((long)fn->base + (long)j);
            PyObject *v = Py_BuildValue("(KK)", (unsigned long long)l->hits,
                                        (unsigned long long)l->time_ns);
            int bad = k == NULL || v == NULL || PyDict_SetItem(lines, k, v) < 0;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (bad) {
                Py_DECREF(lines);
                goto fail;
            }
        }
        PyObject *t = Py_BuildValue("(OOiKNII)", fn->file, fn->qualname, (int)fn->first,
                                    (unsigned long long)fn->calls, lines,
                                    (unsigned int)fn->thread, (unsigned int)fn->context);
        if (t == NULL || PyList_Append(list, t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

/* per_thread=true: {index: (ident, name or None)} of every thread the hub
 * has seen; otherwise None. A new reference, NULL with an exception. */
static PyObject *
ln_threads_dict(const ln_state *st)
{
    if (!st->per_thread) {
        Py_RETURN_NONE;
    }
    PyObject *d = PyDict_New();
    size_t n = st->host->thread_count();
    for (size_t i = 0; d != NULL && i < n; i++) {
        const ptk_thread *t = st->host->thread_at(i);
        if (t == NULL) {
            continue;
        }
        PyObject *k = PyLong_FromUnsignedLong((unsigned long)t->index);
        PyObject *name = t->name != NULL
                             ? PyUnicode_DecodeUTF8(t->name, (Py_ssize_t)strlen(t->name),
                                                    "surrogateescape")
                             : Py_NewRef(Py_None);
        PyObject *v = name != NULL ? Py_BuildValue("(KN)", (unsigned long long)t->ident,
                                                   name)
                                   : NULL;
        if (k == NULL || v == NULL || PyDict_SetItem(d, k, v) < 0) {
            Py_CLEAR(d);
        }
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    return d;
}

/* Writes @p data (bytes) as output_dir/@p name, atomically. */
static int
ln_write_bytes(ln_state *st, const char *name, PyObject *data)
{
    if (!PyBytes_Check(data)) {
        return st->host->fail(st->ctx, PTK_EPYTHON, "%s: the formatter gave no bytes", name);
    }
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, name, &token);
    if (f == NULL) {
        return PTK_EIO; /* the reason is recorded */
    }
    size_t n = (size_t)PyBytes_GET_SIZE(data);
    int bad = fwrite(PyBytes_AS_STRING(data), 1, n, f) != n || ferror(f);
    if (st->host->report_commit(token, !bad) != PTK_OK || bad) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write %s", name);
    }
    return PTK_OK;
}

int
ln__report(ln_state *st, const ptk_report_args *args)
{
    int rc = PTK_EPYTHON;
    PyObject *fmt = NULL, *funcs = NULL, *threads = NULL, *res = NULL;
    fmt = ln_load_format();
    funcs = fmt != NULL ? ln_funcs_list(st) : NULL;
    threads = funcs != NULL ? ln_threads_dict(st) : NULL;
    PyObject *render = fmt != NULL ? PyDict_GetItemString(fmt, "render") : NULL;
    if (threads != NULL && render != NULL) {
        res = PyObject_CallFunction(render, "OiLiOO", funcs, st->calls, (long long)st->top,
                                    st->html, threads,
                                    st->per_context ? st->ctx_names : Py_None);
    }
    if (res == NULL || !PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 4) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "the lines formatter gave no 4-tuple");
        }
        rc = st->host->fail(st->ctx, PTK_EPYTHON, "making the reports failed");
        goto done;
    }
    rc = st->host->report_write_object(args->ctx, "lines.json", PyTuple_GET_ITEM(res, 0),
                                       PTK_FMT_JSON);
    if (rc != PTK_OK) {
        goto done;
    }
    rc = ln_write_bytes(st, "lines.txt", PyTuple_GET_ITEM(res, 1));
    if (rc == PTK_OK && PyTuple_GET_ITEM(res, 2) != Py_None) {
        rc = ln_write_bytes(st, "lines.html", PyTuple_GET_ITEM(res, 2));
    }
    if (rc != PTK_OK) {
        goto done;
    }
    const char *summary = PyUnicode_AsUTF8(PyTuple_GET_ITEM(res, 3));
    if (summary == NULL) {
        PyErr_Clear();
    }
    else if (args->summary != NULL) {
        fprintf(args->summary, "lines: %s", summary);
        fprintf(args->summary, "lines: written %s/lines.json, lines.txt%s\n",
                args->output_dir, st->html ? ", lines.html" : "");
    }
done:
    Py_XDECREF(res);
    Py_XDECREF(threads);
    Py_XDECREF(funcs);
    Py_XDECREF(fmt);
    return rc;
}
