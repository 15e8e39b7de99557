/*
 * callcount: a CPython extension module that links libpytracekit and counts
 * Python calls per function with a plugin of its own.
 *
 *   import callcount
 *   callcount.start()
 *   ...
 *   counts = callcount.stop()   # {(filename, firstlineno, qualname): calls}
 *
 * The plugin is linked into the module and attached with
 * ptk_session_add_static(); the session also writes the counts as JSON
 * (callcount.json) into its output directory. Other pytracekit sessions in
 * the same process (the `pytracekit` command, another extension) keep
 * running alongside: each gets its own events from the one hub.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pytracekit/pytracekit.h>

/* ---- the plugin ---------------------------------------------------------- */

typedef struct cc_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    PyObject *counts; /* {code object: int} */
} cc_state;

static int
cc_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    (void)events;
    cc_state *st = PyMem_Calloc(1, sizeof(*st));
    if (st == NULL) {
        return PTK_ENOMEM;
    }
    st->counts = PyDict_New();
    if (st->counts == NULL) {
        PyErr_Clear();
        PyMem_Free(st);
        return PTK_ENOMEM;
    }
    st->host = args->host;
    st->ctx = args->ctx;
    *state = st;
    return PTK_OK;
}

static int
cc_on_event(void *state, const ptk_event *ev)
{
    cc_state *st = state;
    PyObject *key = (PyObject *)ev->code;
    PyObject *old = PyDict_GetItemWithError(st->counts, key); /* borrowed */
    if (old == NULL && PyErr_Occurred()) {
        return PTK_EPYTHON;
    }
    long n = old ? PyLong_AsLong(old) + 1 : 1;
    PyObject *value = PyLong_FromLong(n);
    if (value == NULL) {
        return PTK_EPYTHON;
    }
    int rc = PyDict_SetItem(st->counts, key, value);
    Py_DECREF(value);
    return rc < 0 ? PTK_EPYTHON : PTK_OK;
}

/* {(filename, firstlineno, qualname): calls}, a new reference. */
static PyObject *
cc_result(const cc_state *st)
{
    PyObject *out = PyDict_New();
    if (out == NULL) {
        return NULL;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(st->counts, &pos, &key, &value)) {
        PyCodeObject *code = (PyCodeObject *)key;
        PyObject *k = Py_BuildValue("(OiO)", code->co_filename,
                                    code->co_firstlineno, code->co_qualname);
        if (k == NULL || PyDict_SetItem(out, k, value) < 0) {
            Py_XDECREF(k);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(k);
    }
    return out;
}

/* What the last report produced, for stop() to return (the GIL guards it). */
static PyObject *cc_last_result;

static int
cc_report(void *state, const ptk_report_args *args)
{
    cc_state *st = state;
    Py_CLEAR(cc_last_result);
    cc_last_result = cc_result(st);
    if (cc_last_result == NULL) {
        return PTK_EPYTHON;
    }
    /* JSON wants string keys: "file:line:qualname". */
    PyObject *json = PyDict_New();
    if (json == NULL) {
        return PTK_EPYTHON;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(st->counts, &pos, &key, &value)) {
        PyCodeObject *code = (PyCodeObject *)key;
        PyObject *k = PyUnicode_FromFormat("%U:%d:%U", code->co_filename,
                                           code->co_firstlineno, code->co_qualname);
        if (k == NULL || PyDict_SetItem(json, k, value) < 0) {
            Py_XDECREF(k);
            Py_DECREF(json);
            return PTK_EPYTHON;
        }
        Py_DECREF(k);
    }
    int rc = args->host->report_write_object(args->ctx, "callcount.json", json,
                                             PTK_FMT_JSON);
    fprintf(args->summary, "callcount: %zd functions (%s/callcount.json)\n",
            PyDict_GET_SIZE(json), args->output_dir);
    Py_DECREF(json);
    return rc;
}

static void
cc_fini(void *state)
{
    cc_state *st = state;
    if (st != NULL) {
        Py_XDECREF(st->counts);
        PyMem_Free(st);
    }
}

static const ptk_plugin_desc cc_plugin = {
    PTK_PLUGIN_HEADER,
    .name = "callcount",
    .version = "1.0",
    .description = "Python calls per function, returned to Python",
    .events = PTK_MASK(PTK_EV_CALL),
    .init = cc_init,
    .on_event = cc_on_event,
    .report = cc_report,
    .fini = cc_fini,
};

/* ---- the module ---------------------------------------------------------- */

/* One session at a time per module; the GIL serialises access. */
static ptk_session *cc_session;

static PyObject *
cc_error(int code, char *msg)
{
    PyErr_Format(PyExc_RuntimeError, "pytracekit: %s (%s)",
                 msg ? msg : ptk_strerror(code), ptk_err_name(code));
    ptk_free(msg);
    return NULL;
}

static PyObject *
callcount_start(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = {"output_dir", NULL};
    const char *output_dir = "callcount-out";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|s:start", kwlist, &output_dir)) {
        return NULL;
    }
    if (cc_session != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "callcount is already running");
        return NULL;
    }
    ptk_session_config cfg = PTK_SESSION_CONFIG_INIT;
    cfg.output_dir = output_dir;
    ptk_session *s = NULL;
    char *err = NULL;
    int rc = ptk_session_new(&cfg, &s, &err);
    if (rc == PTK_OK) {
        rc = ptk_session_add_static(s, &cc_plugin, NULL, &err);
    }
    if (rc == PTK_OK) {
        rc = ptk_session_start(s, &err);
    }
    if (rc != PTK_OK) {
        ptk_session_free(s);
        return cc_error(rc, err);
    }
    cc_session = s;
    Py_RETURN_NONE;
}

static PyObject *
callcount_stop(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    if (cc_session == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "callcount is not running");
        return NULL;
    }
    ptk_session *s = cc_session;
    cc_session = NULL;
    ptk_session_stop(s);
    char *err = NULL;
    int rc = ptk_session_report(s, &err);
    int failures = ptk_session_failures(s);
    ptk_session_free(s);
    PyObject *result = cc_last_result; /* the report's, now ours */
    cc_last_result = NULL;
    if (rc != PTK_OK || failures > 0 || result == NULL) {
        Py_XDECREF(result);
        return cc_error(rc != PTK_OK ? rc : PTK_EPLUGIN, err);
    }
    ptk_free(err);
    return result;
}

static PyObject *
callcount_running(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyBool_FromLong(cc_session != NULL && ptk_session_running(cc_session));
}

static PyObject *
callcount_version(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyUnicode_FromString(ptk_version_string());
}

static PyMethodDef callcount_methods[] = {
    {"start", (PyCFunction)(void (*)(void))callcount_start, METH_VARARGS | METH_KEYWORDS,
     "start(output_dir='callcount-out')\nStart counting Python calls in this thread."},
    {"stop", callcount_stop, METH_NOARGS,
     "stop() -> {(filename, firstlineno, qualname): calls}\nStop and return the counts."},
    {"running", callcount_running, METH_NOARGS, "running() -> bool"},
    {"pytracekit_version", callcount_version, METH_NOARGS,
     "The version of libpytracekit loaded at run time."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef callcount_module = {
    PyModuleDef_HEAD_INIT, "callcount",
    "Counts Python calls per function with a pytracekit session.", -1,
    callcount_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC
PyInit_callcount(void)
{
    return PyModule_Create(&callcount_module);
}
