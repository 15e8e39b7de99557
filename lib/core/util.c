/* Small helpers: strings, messages, clock, version. */
#include "core/core.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPython's public opcode numbers (CACHE, RESUME...): macros this file
 * alone sees; the rest of the library reads ptk__ops. */
#include <opcode.h>
#if !defined(RESUME) || !defined(CACHE) || !defined(YIELD_VALUE)
#error "this CPython's opcode.h lacks RESUME, CACHE or YIELD_VALUE (3.11+ has them)"
#endif

/* Levenshtein distance of @p a and @p b (their first 63 bytes). */
size_t
ptk__edit_distance(const char *a, const char *b)
{
    size_t la = strnlen(a, 63), lb = strnlen(b, 63);
    size_t row[64];
    for (size_t j = 0; j <= lb; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) {
                best = up + 1;
            }
            if (row[j - 1] + 1 < best) {
                best = row[j - 1] + 1;
            }
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

char *
ptk__strdup(const char *s)
{
    if (s == NULL) {
        return NULL;
    }
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL) {
        memcpy(p, s, n);
    }
    return p;
}

static char *
vformat(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        return NULL;
    }
    char *p = malloc((size_t)n + 1);
    if (p != NULL) {
        vsnprintf(p, (size_t)n + 1, fmt, ap);
    }
    return p;
}

char *
ptk__asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = vformat(fmt, ap);
    va_end(ap);
    return p;
}

int
ptk__err(char **errmsg, int code, const char *fmt, ...)
{
    if (errmsg != NULL) {
        va_list ap;
        va_start(ap, fmt);
        free(*errmsg);
        *errmsg = vformat(fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *
ptk__python_version(void)
{
    static char buf[32];
    if (buf[0] == '\0') {
        unsigned long v = (unsigned long)Py_Version;
        snprintf(buf, sizeof buf, "%lu.%lu.%lu", (v >> 24) & 0xff,
                 (v >> 16) & 0xff, (v >> 8) & 0xff);
    }
    return buf;
}

/* What an import leaves behind besides the module: the names in
 * sys.modules, and the path entries sys.path_importer_cache has a finder
 * for (a path entry searched for the first time is cached there, and a
 * program that imports through it later then takes another way through
 * the import system: other events). */
typedef struct {
    PyObject *mods;  /* names in sys.modules (a set), or NULL */
    PyObject *cache; /* keys of sys.path_importer_cache (a set), or NULL */
} import_mark;

static PyObject *
keys_of(PyObject *dict)
{
    PyObject *keys = dict != NULL && PyDict_Check(dict) ? PySet_New(dict) : NULL;
    if (keys == NULL) {
        PyErr_Clear();
    }
    return keys;
}

/* Drops from @p dict every key not in @p before. */
static void
drop_new_keys(PyObject *dict, PyObject *before)
{
    if (dict == NULL || before == NULL || !PyDict_Check(dict)) {
        return;
    }
    PyObject *now = PyDict_Keys(dict);
    for (Py_ssize_t i = 0; now != NULL && i < PyList_GET_SIZE(now); i++) {
        PyObject *k = PyList_GET_ITEM(now, i);
        if (PySet_Contains(before, k) == 0 && PyDict_DelItem(dict, k) < 0) {
            PyErr_Clear();
        }
    }
    Py_XDECREF(now);
    PyErr_Clear();
}

static import_mark
imports_before(void)
{
    import_mark m;
    m.mods = keys_of(PyImport_GetModuleDict());                /* borrowed dict */
    m.cache = keys_of(PySys_GetObject("path_importer_cache")); /* borrowed */
    return m;
}

/* Takes out of sys.modules every name that is not in @p m (and releases
 * it), and out of sys.path_importer_cache every path entry first searched
 * since. The module objects stay alive for whoever holds them; a later
 * import makes new ones. The pending exception is kept. */
static void
imports_restore(import_mark m)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    drop_new_keys(PyImport_GetModuleDict(), m.mods);
    drop_new_keys(PySys_GetObject("path_importer_cache"), m.cache);
    Py_XDECREF(m.mods);
    Py_XDECREF(m.cache);
    PyErr_Restore(et, ev, tb);
}

PyObject *
ptk__import_quietly(const char *name)
{
    import_mark before = imports_before();
    /* Through the import system itself, not builtins.__import__: a report
     * may run where builtins has lost it (an interpreter finalizing) and a
     * program's replacement of it is not for the library's imports. A
     * dotted name needs the package's submodule back. */
    PyObject *mod = strchr(name, '.') == NULL
                        ? PyImport_ImportModuleLevel(name, NULL, NULL, NULL, 0)
                        : PyImport_ImportModule(name);
    imports_restore(before);
    return mod;
}

const ptk__opcodes ptk__ops = {
    .cache = CACHE,
    .resume = RESUME,
    .return_generator = RETURN_GENERATOR,
    .pop_top = POP_TOP,
    .make_cell = MAKE_CELL,
    .copy_free_vars = COPY_FREE_VARS,
    .extended_arg = EXTENDED_ARG,
#ifdef RETURN_VALUE
    .return_value = RETURN_VALUE,
#else
    .return_value = -1,
#endif
#ifdef RETURN_CONST /* 3.12 and 3.13 */
    .return_const = RETURN_CONST,
#else
    .return_const = -1,
#endif
    .yield_value = YIELD_VALUE,
};

PyObject *
ptk__run_snippet(const char *src, const char *name, PyObject *value)
{
    import_mark before = imports_before();
    PyObject *globals = PyDict_New();
    PyObject *r = NULL;
    /* the interpreter's builtins, not the current frame's (a signal
     * handler may run in one with its own, as namedtuple's __new__) */
    PyObject *builtins = PyImport_ImportModuleLevel("builtins", NULL, NULL, NULL, 0);
    if (globals != NULL && builtins != NULL &&
        PyDict_SetItemString(globals, "__builtins__", builtins) == 0 &&
        (name == NULL || PyDict_SetItemString(globals, name, value) == 0)) {
        r = PyRun_String(src, Py_file_input, globals, globals);
    }
    if (r == NULL) {
        Py_CLEAR(globals);
    }
    Py_XDECREF(r);
    Py_XDECREF(builtins);
    PyErr_Clear();
    imports_restore(before);
    return globals;
}

char *
ptk__format_exception(void)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (et == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&et, &ev, &tb);
    char *out = NULL;
    PyObject *mod = PyImport_ImportModuleLevel("traceback", NULL, NULL, NULL, 0);
    PyObject *lines = mod ? PyObject_CallMethod(mod, "format_exception", "OOO",
                                                et, ev ? ev : Py_None,
                                                tb ? tb : Py_None)
                          : NULL;
    PyObject *empty = PyUnicode_FromString("");
    PyObject *joined = lines && empty ? PyUnicode_Join(empty, lines) : NULL;
    if (joined != NULL) {
        const char *u = PyUnicode_AsUTF8(joined);
        out = u ? ptk__strdup(u) : NULL;
    }
    if (out == NULL) {
        PyErr_Clear();
        PyObject *s = ev ? PyObject_Str(ev) : NULL;
        const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
        out = ptk__asprintf("%s: %s", ((PyTypeObject *)et)->tp_name,
                            u ? u : "?");
        Py_XDECREF(s);
    }
    Py_XDECREF(joined);
    Py_XDECREF(empty);
    Py_XDECREF(lines);
    Py_XDECREF(mod);
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    PyErr_Clear();
    return out;
}
