/*
 * timeline: names of spans, made once per function and shared by the
 * encoders — pstats' `file:line(func)` for Python functions, cProfile's
 * labels for C functions — and the map that finds them.
 */
#include "timeline.h"
#include "../common/c_label.h"
#include "../common/fs_name.h"
#include "../common/json_quote.h"

#include <stdlib.h>
#include <string.h>

/* ---- names -------------------------------------------------------------- */

static int
tl_set_text(tl_name *n, PyObject *text)
{
    /* the JSON carries the bytes of a name that is not UTF-8 whole; the
     * trace's strings must be UTF-8: their text form (fs_name.h) */
    Py_ssize_t len;
    PyObject *hold;
    const char *u = ptk_kit_name_bytes(text, &len, &hold);
    if (u == NULL) {
        return -1;
    }
    n->text = ptk_kit_name_text(u);
    n->json = ptk_kit_json_quote(u, (size_t)len);
    Py_XDECREF(hold);
    if (n->text == NULL || n->json == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int
tl__name_label(tl_name *n, const char *text)
{
    n->text = strdup(text);
    n->json = ptk_kit_json_quote(text, strlen(text));
    n->kind = TL_NAME_OTHER;
    return n->text && n->json ? 0 : -1;
}

static tl_file *
tl_file_get(tl_state *st, PyObject *filename)
{
    tl_file *f = ptk_kit_map_get(&st->files, filename, NULL);
    if (f != NULL) {
        return f;
    }
    Py_ssize_t len;
    PyObject *hold;
    const char *u = ptk_kit_name_bytes(filename, &len, &hold);
    if (u == NULL) {
        return NULL;
    }
    if (PTK_KIT_RESERVE(st->file_list, st->files_cap, st->nfiles + 1, 64) != 0) {
        Py_XDECREF(hold);
        PyErr_NoMemory();
        return NULL;
    }
    f = calloc(1, sizeof(*f));
    int bad = f == NULL || (f->text = ptk_kit_name_text(u)) == NULL ||
              (f->json = ptk_kit_json_quote(u, (size_t)len)) == NULL ||
              ptk_kit_map_put(&st->files, filename, NULL, f) != 0;
    Py_XDECREF(hold);
    if (bad) {
        if (f != NULL) {
            free(f->text);
            free(f->json);
            free(f);
        }
        PyErr_NoMemory();
        return NULL;
    }
    st->file_list[st->nfiles++] = f;
    return f;
}

/* Registers @p n (filled in) under (key, kind) (in the list only when
 * @p keyed is 0: a code slot finds it); takes @p ref. */
static tl_name *
tl_name_add_as(tl_state *st, tl_name *n, int keyed)
{
    if (PTK_KIT_RESERVE(st->name_list, st->names_cap, st->nnames + 1, 256) != 0) {
        goto fail;
    }
    if (keyed &&
        ptk_kit_map_put(&st->names, n->key, (const void *)(uintptr_t)n->kind, n) != 0) {
        goto fail;
    }
    st->name_list[st->nnames++] = n;
    return n;
fail:
    PyErr_NoMemory();
    return NULL;
}

static tl_name *
tl_name_add(tl_state *st, tl_name *n)
{
    return tl_name_add_as(st, n, 1);
}

static void
tl_name_drop(tl_name *n)
{
    if (n != NULL) {
        Py_XDECREF(n->ref);
        free(n->text);
        free(n->json);
        free(n);
    }
}

tl_name *
tl__name_code(tl_state *st, PyCodeObject *code)
{
    /* the hub's per-(instance, code) slot when it has one (ABI 1.2): it
     * goes with the code object, so the name keeps only its text (a
     * program that makes and drops code keeps none of it alive); else our
     * map, keyed by the address, and the name holds a reference, so the
     * code object stays */
    void **slot = NULL;
    if (st->host->struct_size > offsetof(ptk_host, code_slot) &&
        st->host->code_slot != NULL) {
        slot = st->host->code_slot(st->ctx, code);
        if (slot != NULL && *slot != NULL) {
            return *slot;
        }
    }
    tl_name *n = ptk_kit_map_get(&st->names, code, (const void *)(uintptr_t)TL_NAME_PY);
    if (n != NULL) {
        if (slot != NULL) {
            *slot = n;
        }
        return n;
    }
    n = calloc(1, sizeof(*n));
    if (n == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    n->key = code;
    n->kind = TL_NAME_PY;
    n->line = code->co_firstlineno;
    n->coro = (code->co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE |
                                 CO_ASYNC_GENERATOR)) != 0;
    n->file = tl_file_get(st, code->co_filename);
    PyObject *text = n->file == NULL ? NULL
        : PyUnicode_FromFormat("%U:%d(%U)", code->co_filename,
                               code->co_firstlineno, code->co_name);
    if (text == NULL || tl_set_text(n, text) != 0) {
        Py_XDECREF(text);
        tl_name_drop(n);
        return NULL;
    }
    Py_DECREF(text);
    n->ref = slot != NULL ? NULL : Py_NewRef((PyObject *)code);
    if (tl_name_add_as(st, n, slot == NULL) == NULL) {
        tl_name_drop(n);
        return NULL;
    }
    if (slot != NULL) {
        *slot = n;
    }
    return n;
}

tl_name *
tl__name_c(tl_state *st, PyObject *callable, PyObject *cself, const void *key)
{
    tl_name *n = ptk_kit_map_get(&st->names, key, (const void *)(uintptr_t)TL_NAME_C);
    if (n != NULL) {
        return n;
    }
    n = calloc(1, sizeof(*n));
    if (n == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    n->key = key;
    n->kind = TL_NAME_C;
    PyObject *text = ptk_kit_c_label(callable, cself);
    if (text == NULL || tl_set_text(n, text) != 0) {
        Py_XDECREF(text);
        tl_name_drop(n);
        return NULL;
    }
    Py_DECREF(text);
    if (key == (const void *)callable) {
        n->ref = Py_NewRef(callable); /* keyed by identity: keep it alive */
    }
    if (tl_name_add(st, n) == NULL) {
        tl_name_drop(n);
        return NULL;
    }
    return n;
}

tl_name *
tl__name_exc(tl_state *st, PyObject *type)
{
    tl_name *n = ptk_kit_map_get(&st->names, type, (const void *)(uintptr_t)TL_NAME_OTHER);
    if (n != NULL) {
        return n;
    }
    n = calloc(1, sizeof(*n));
    if (n == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    n->key = type;
    n->kind = TL_NAME_OTHER;
    const char *tn = PyType_Check(type) ? ((PyTypeObject *)type)->tp_name : "?";
    PyObject *text = PyUnicode_FromFormat("exception %s", tn);
    if (text == NULL || tl_set_text(n, text) != 0) {
        Py_XDECREF(text);
        tl_name_drop(n);
        return NULL;
    }
    Py_DECREF(text);
    n->ref = Py_NewRef(type);
    if (tl_name_add(st, n) == NULL) {
        tl_name_drop(n);
        return NULL;
    }
    return n;
}

void
tl__names_free(tl_state *st)
{
    for (size_t i = 0; i < st->nnames; i++) {
        tl_name *n = st->name_list[i];
        if (Py_IsInitialized()) {
            Py_CLEAR(n->ref);
        }
        free(n->text);
        free(n->json);
        free(n);
    }
    for (size_t i = 0; i < st->nfiles; i++) {
        free(st->file_list[i]->text);
        free(st->file_list[i]->json);
        free(st->file_list[i]);
    }
    free(st->name_list);
    free(st->file_list);
    ptk_kit_map_free(&st->names);
    ptk_kit_map_free(&st->files);
    st->name_list = NULL;
    st->file_list = NULL;
    st->nnames = st->nfiles = 0;
}
