/* Small helpers: strings, messages, clock, version. */
#include "ptk_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

PyObject *
ptk__run_snippet(const char *src, const char *name, PyObject *value)
{
    PyObject *globals = PyDict_New();
    PyObject *r = NULL;
    if (globals != NULL &&
        PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0 &&
        (name == NULL || PyDict_SetItemString(globals, name, value) == 0)) {
        r = PyRun_String(src, Py_file_input, globals, globals);
    }
    if (r == NULL) {
        Py_CLEAR(globals);
    }
    Py_XDECREF(r);
    PyErr_Clear();
    return globals;
}
