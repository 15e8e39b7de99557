/* When the program starts, from the audit events (ptk_progstart.h). */
#include "ptk_progstart.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Is args[0] a code object of the file whose real path is @real, or, with
 * @name, of that exact file name? */
static int
is_code_of(PyObject *args, const char *real, const char *name)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1 ||
        !PyCode_Check(PyTuple_GET_ITEM(args, 0))) {
        return 0;
    }
    PyObject *fn = ((PyCodeObject *)PyTuple_GET_ITEM(args, 0))->co_filename;
    if (name != NULL) {
        return PyUnicode_Check(fn) && PyUnicode_CompareWithASCIIString(fn, name) == 0;
    }
    PyObject *bytes = NULL;
    char *path = NULL;
    if (PyUnicode_FSConverter(fn, &bytes)) {
        path = realpath(PyBytes_AS_STRING(bytes), NULL);
    }
    Py_XDECREF(bytes);
    PyErr_Clear();
    int mine = path != NULL && strcmp(path, real) == 0;
    free(path);
    return mine;
}

/* cpython.run_file: 1 to start now, 0 to wait for the script's code (or
 * for python to say it cannot open the file, and exit 2). */
static int
run_file(ptk_progstart *w, PyObject *args)
{
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != 1) {
        return 1;
    }
    PyObject *bytes = NULL;
    if (PyUnicode_FSConverter(PyTuple_GET_ITEM(args, 0), &bytes) &&
        access(PyBytes_AS_STRING(bytes), R_OK) != 0) {
        Py_DECREF(bytes);
        return 0;
    }
    /* A source script: the start is the exec of its code, after the
     * interpreter's own work for it (a SourceFileLoader for
     * __main__.__loader__), which is no more the program's than the
     * runner's under cProfile. A .pyc holds another file name. */
    const char *f = bytes != NULL ? PyBytes_AS_STRING(bytes) : NULL;
    size_t n = f != NULL ? strlen(f) : 0;
    if (f != NULL && !(n > 4 && strcmp(f + n - 4, ".pyc") == 0)) {
        w->script_pending = realpath(f, NULL);
    }
    Py_XDECREF(bytes);
    PyErr_Clear();
    return w->script_pending == NULL;
}

int
ptk_progstart_event(ptk_progstart *w, const char *event, PyObject *args)
{
    if (w->script_pending != NULL) {
        if (strcmp(event, "exec") == 0 && is_code_of(args, w->script_pending, NULL)) {
            free(w->script_pending);
            w->script_pending = NULL;
            return 1;
        }
        return 0;
    }
    if (w->command_pending) {
        return strcmp(event, "exec") == 0 && is_code_of(args, NULL, "<string>");
    }
    if (strncmp(event, "cpython.run_", 12) != 0) {
        return 0;
    }
    const char *what = event + 12;
    if (strcmp(what, "command") == 0) {
        w->command_pending = 1;
        return 0;
    }
    if (strcmp(what, "module") == 0) {
        /* python -m imports runpy right after this event: imported before
         * the start, its import (runpy, importlib.util, types) is not in
         * the program's profile; sys.modules ends up the same. A failure
         * is left for python to report when it imports runpy itself. */
        PyObject *runpy = PyImport_ImportModule("runpy");
        Py_XDECREF(runpy);
        PyErr_Clear();
        return 1;
    }
    if (strcmp(what, "file") == 0) {
        return run_file(w, args);
    }
    return strcmp(what, "stdin") == 0;
}
