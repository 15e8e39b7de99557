/* The coverage plugin's spec completed from the project's coverage.py
 * configuration, before the session is made: the reading is the report
 * writer's (tools/pytracekit-coverage.py, run_plugin_spec), compiled in as
 * the plugin compiles it in (plugins/coverage/embed.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include <stdlib.h>
#include <string.h>

#include "cov_config.h"
#include "cov_config_embedded.h"

static char *
dup_message(const char *s)
{
    char *r = malloc(strlen(s) + 1);
    if (r != NULL) {
        strcpy(r, s);
    }
    return r;
}

/* The report writer's module dict, run afresh (not imported: it does not
 * stay in sys.modules). */
static PyObject *
load_format(void)
{
    PyObject *code = NULL;
    if (COV_EMBED_PY_VERSION == ((PY_MAJOR_VERSION << 8) | PY_MINOR_VERSION)) {
        code = PyMarshal_ReadObjectFromString((const char *)cov_format_py_code,
                                              (Py_ssize_t)cov_format_py_code_len);
    }
    else {
        code = Py_CompileString(cov_format_py, "_ptk_coverage_config", Py_file_input);
    }
    PyObject *d = code ? PyDict_New() : NULL;
    PyObject *name = d ? PyUnicode_FromString("_ptk_coverage_config") : NULL;
    PyObject *r = NULL;
    if (name && PyDict_SetItemString(d, "__name__", name) == 0 &&
        PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins()) == 0) {
        r = PyEval_EvalCode(code, d, d);
    }
    Py_XDECREF(name);
    Py_XDECREF(code);
    if (r == NULL) {
        Py_XDECREF(d);
        return NULL;
    }
    Py_DECREF(r);
    return d;
}

/* Takes out of sys.modules every module not in @p before. */
static void
restore_modules(PyObject *before)
{
    PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
    PyObject *keys = PyDict_Keys(mods);
    for (Py_ssize_t i = 0; keys && i < PyList_GET_SIZE(keys); i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        if (PyDict_Contains(before, k) == 0 && PyDict_DelItem(mods, k) < 0) {
            PyErr_Clear();
        }
    }
    Py_XDECREF(keys);
    PyErr_Clear();
}

int
ptk_cli_coverage_config(const char *spec, char **out_spec, int *follow,
                        char **errmsg)
{
    *out_spec = NULL;
    *errmsg = NULL;
    if (!ptk_cli_coverage_config_needed(spec)) {
        /* another plugin, or no configuration: no Python run (4.1 M
         * instructions on 3.13, the reader unmarshalled) */
        return 0;
    }
    PyObject *before = PyDict_Copy(PyImport_GetModuleDict());
    if (before == NULL) {
        PyErr_Clear();
        *errmsg = dup_message("coverage: out of memory reading the configuration");
        return -1;
    }
    int rc = -1;
    PyObject *d = load_format();
    PyObject *fn = d ? PyDict_GetItemString(d, "config_spec") : NULL; /* borrowed */
    PyObject *r = fn ? PyObject_CallFunction(fn, "s", spec) : NULL;
    const char *s = NULL;
    if (r != NULL && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 3) {
        PyObject *err = PyTuple_GET_ITEM(r, 2);
        if (err != Py_None) {
            const char *m = PyUnicode_AsUTF8(err);
            size_t n = strlen("coverage: ") + strlen(m ? m : "?") + 1;
            *errmsg = malloc(n);
            if (*errmsg != NULL) {
                snprintf(*errmsg, n, "coverage: %s", m ? m : "?");
            }
        }
        else if ((s = PyUnicode_AsUTF8(PyTuple_GET_ITEM(r, 0))) != NULL) {
            if (PyObject_IsTrue(PyTuple_GET_ITEM(r, 1)) == 1) {
                *follow = 1;
            }
            *out_spec = dup_message(s);
            rc = *out_spec != NULL ? 0 : -1;
        }
    }
    if (rc < 0 && *errmsg == NULL) {
        PyErr_Print();
        *errmsg = dup_message("coverage: the configuration could not be read");
    }
    PyErr_Clear();
    Py_XDECREF(r);
    Py_XDECREF(d);
    restore_modules(before);
    Py_DECREF(before);
    return rc;
}
