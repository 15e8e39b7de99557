/* pytracekit._pytracekit: sessions from Python code. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include <pytracekit/pytracekit.h>

static PyObject *ErrorType;

typedef struct {
    PyObject_HEAD
    ptk_session *s;
    int reported;
} SessionObject;

static PyObject *
raise_ptk(int rc, char *err)
{
    PyObject *args = Py_BuildValue("(si)", err ? err : ptk_strerror(rc), rc);
    if (args != NULL) {
        PyErr_SetObject(ErrorType, args);
        Py_DECREF(args);
    }
    ptk_free(err);
    return NULL;
}

/* Appends "key=items" to parts for a filter keyword given as a str or a
 * sequence of str (items joined with ';'). 0, or -1 with TypeError. */
static int
filter_part(PyObject *parts, const char *key, PyObject *v)
{
    if (v == NULL || v == Py_None) {
        return 0;
    }
    PyObject *text = NULL;
    if (PyUnicode_Check(v)) {
        text = Py_NewRef(v);
    }
    else if (PyLong_Check(v) && strcmp(key, "max_depth") == 0) {
        text = PyObject_Str(v);
    }
    else if (PySequence_Check(v) && strcmp(key, "max_depth") != 0) {
        PyObject *sep = PyUnicode_FromString(";");
        text = sep ? PyUnicode_Join(sep, v) : NULL;
        Py_XDECREF(sep);
    }
    else {
        PyErr_Format(PyExc_TypeError, "%s must be %s, not %.100s",
                     key[0] == 'm' && key[1] == 'a' ? "max_depth" : key,
                     strcmp(key, "max_depth") == 0 ? "an int"
                                                   : "a str or a sequence of str",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    if (text == NULL) {
        return -1;
    }
    PyObject *kv = PyUnicode_FromFormat("%s=%U", key, text);
    Py_DECREF(text);
    int rc = kv ? PyList_Append(parts, kv) : -1;
    Py_XDECREF(kv);
    return rc;
}

static int
Session_init(SessionObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"plugins", "output_dir", "threads", "plugin_path",
                             "backend", "filter", "include", "exclude",
                             "modules", "functions", "thread_names",
                             "max_depth", NULL};
    PyObject *plugins = NULL;
    const char *outdir = "pytracekit-out", *threads = "current",
               *plugin_path = NULL, *backend = "auto", *filter = NULL;
    PyObject *fv[6] = {NULL};
    static const char *const fkeys[6] = {"include", "exclude", "modules",
                                         "functions", "threads", "max_depth"};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Osszsz$OOOOOO", kwlist,
                                     &plugins, &outdir, &threads, &plugin_path,
                                     &backend, &filter, &fv[0], &fv[1], &fv[2],
                                     &fv[3], &fv[4], &fv[5])) {
        return -1;
    }
    /* filter= and the keywords make the session's default filter */
    PyObject *parts = PyList_New(0);
    if (parts == NULL) {
        return -1;
    }
    if (filter != NULL && *filter) {
        PyObject *f = PyUnicode_FromString(filter);
        if (f == NULL || PyList_Append(parts, f) < 0) {
            Py_XDECREF(f);
            Py_DECREF(parts);
            return -1;
        }
        Py_DECREF(f);
    }
    for (int k = 0; k < 6; k++) {
        if (filter_part(parts, fkeys[k], fv[k]) < 0) {
            Py_DECREF(parts);
            return -1;
        }
    }
    PyObject *comma = PyUnicode_FromString(",");
    PyObject *ftext = comma ? PyUnicode_Join(comma, parts) : NULL;
    Py_XDECREF(comma);
    Py_DECREF(parts);
    if (ftext == NULL) {
        return -1;
    }
    if (self->s != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Session already initialised");
        return -1;
    }
    ptk_session_config cfg = PTK_SESSION_CONFIG_INIT;
    cfg.output_dir = outdir;
    cfg.plugin_path = plugin_path;
    cfg.filter = PyUnicode_AsUTF8(ftext); /* copied by ptk_session_new */
    if (cfg.filter == NULL) {
        Py_DECREF(ftext);
        return -1;
    }
    if (strcmp(threads, "all") == 0) {
        cfg.threads = PTK_THREADS_ALL;
    }
    else if (strcmp(threads, "current") != 0) {
        PyErr_Format(PyExc_ValueError,
                     "threads must be 'current' or 'all', not %R",
                     PyTuple_GET_SIZE(args) > 2 ? PyTuple_GET_ITEM(args, 2)
                                                : Py_None);
        Py_DECREF(ftext);
        return -1;
    }
    if (ptk_backend_parse(backend, &cfg.backend) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "backend must be 'auto', 'legacy' or 'monitoring', not '%s'",
                     backend);
        Py_DECREF(ftext);
        return -1;
    }
    char *err = NULL;
    int rc = ptk_session_new(&cfg, &self->s, &err);
    Py_DECREF(ftext);
    if (rc < 0) {
        raise_ptk(rc, err);
        return -1;
    }
    if (plugins != NULL && plugins != Py_None) {
        PyObject *seq = PySequence_Fast(plugins, "plugins must be a sequence of str");
        if (seq == NULL) {
            return -1;
        }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            const char *spec = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
            if (spec == NULL) {
                Py_DECREF(seq);
                return -1;
            }
            rc = ptk_session_add_plugin(self->s, spec, &err);
            if (rc < 0) {
                Py_DECREF(seq);
                raise_ptk(rc, err);
                return -1;
            }
        }
        Py_DECREF(seq);
    }
    return 0;
}

static int
check(SessionObject *self)
{
    if (self->s == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Session is closed");
        return -1;
    }
    return 0;
}

static PyObject *
Session_add_plugin(SessionObject *self, PyObject *arg)
{
    const char *spec = PyUnicode_AsUTF8(arg);
    if (spec == NULL || check(self) < 0) {
        return NULL;
    }
    char *err = NULL;
    int rc = ptk_session_add_plugin(self->s, spec, &err);
    if (rc < 0) {
        return raise_ptk(rc, err);
    }
    Py_RETURN_NONE;
}

static PyObject *
Session_remove_plugin(SessionObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL || check(self) < 0) {
        return NULL;
    }
    int rc = ptk_session_remove_plugin(self->s, name);
    if (rc < 0) {
        return raise_ptk(rc, NULL);
    }
    Py_RETURN_NONE;
}

static PyObject *
Session_start(SessionObject *self, PyObject *unused)
{
    (void)unused;
    if (check(self) < 0) {
        return NULL;
    }
    char *err = NULL;
    int rc = ptk_session_start(self->s, &err);
    if (rc < 0) {
        return raise_ptk(rc, err);
    }
    Py_RETURN_NONE;
}

static PyObject *
Session_stop(SessionObject *self, PyObject *unused)
{
    (void)unused;
    if (check(self) < 0) {
        return NULL;
    }
    int rc = ptk_session_stop(self->s);
    if (rc < 0) {
        return raise_ptk(rc, NULL);
    }
    Py_RETURN_NONE;
}

/* Returns the number of failed plugins (their errors go to stderr). */
static PyObject *
Session_report(SessionObject *self, PyObject *unused)
{
    (void)unused;
    if (check(self) < 0) {
        return NULL;
    }
    char *err = NULL;
    int rc = ptk_session_report(self->s, &err);
    ptk_free(err);
    if (rc == PTK_ESTATE) {
        PyErr_SetString(PyExc_RuntimeError, "stop the session before report()");
        return NULL;
    }
    self->reported = 1;
    return PyLong_FromLong(ptk_session_failures(self->s));
}

static PyObject *
Session_close(SessionObject *self, PyObject *unused)
{
    (void)unused;
    ptk_session_free(self->s);
    self->s = NULL;
    Py_RETURN_NONE;
}

static PyObject *
Session_enter(SessionObject *self, PyObject *unused)
{
    if (Session_start(self, unused) == NULL) {
        return NULL;
    }
    Py_DECREF(Py_None);
    return Py_NewRef(self);
}

static PyObject *
Session_exit(SessionObject *self, PyObject *args)
{
    (void)args;
    if (self->s != NULL) {
        if (ptk_session_running(self->s)) {
            ptk_session_stop(self->s);
        }
        char *err = NULL;
        ptk_session_report(self->s, &err);
        ptk_free(err);
        self->reported = 1;
    }
    Py_RETURN_FALSE;
}

static PyObject *
Session_get_running(SessionObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->s && ptk_session_running(self->s));
}

static PyObject *
Session_get_backend(SessionObject *self, void *closure)
{
    (void)closure;
    const char *b = ptk_backend_name(self->s ? ptk_session_backend(self->s)
                                             : PTK_BACKEND_AUTO);
    return PyUnicode_FromString(b ? b : "auto");
}

static PyObject *
Session_get_failures(SessionObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->s ? ptk_session_failures(self->s) : 0);
}

static void
Session_dealloc(SessionObject *self)
{
    ptk_session_free(self->s);
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef Session_methods[] = {
    {"add_plugin", (PyCFunction)Session_add_plugin, METH_O,
     "add_plugin(spec): load and add a plugin (attached at once if running)"},
    {"remove_plugin", (PyCFunction)Session_remove_plugin, METH_O,
     "remove_plugin(name): detach a plugin"},
    {"start", (PyCFunction)Session_start, METH_NOARGS, "start delivering events"},
    {"stop", (PyCFunction)Session_stop, METH_NOARGS, "stop delivering events"},
    {"report", (PyCFunction)Session_report, METH_NOARGS,
     "write the reports; returns the number of failed plugins"},
    {"close", (PyCFunction)Session_close, METH_NOARGS, "free the session"},
    {"__enter__", (PyCFunction)Session_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Session_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Session_getset[] = {
    {"running", (getter)Session_get_running, NULL, "whether events flow", NULL},
    {"backend", (getter)Session_get_backend, NULL,
     "the backend in use once started: 'legacy' or 'monitoring' (before: "
     "what was asked for)", NULL},
    {"failures", (getter)Session_get_failures, NULL,
     "number of plugins detached after an error", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot Session_slots[] = {
    {Py_tp_init, (void *)Session_init},
    {Py_tp_new, (void *)PyType_GenericNew},
    {Py_tp_dealloc, (void *)Session_dealloc},
    {Py_tp_methods, Session_methods},
    {Py_tp_getset, Session_getset},
    {Py_tp_doc, (void *)"Session(plugins=(), output_dir='pytracekit-out', "
                        "threads='current', plugin_path=None, "
                        "backend='auto', filter=None, *, include=None, "
                        "exclude=None, modules=None, functions=None, "
                        "thread_names=None, max_depth=None)\n\n"
                        "filter and the keywords after it are the default "
                        "filter of every plugin (docs/filters.md); a "
                        "plugin's own options replace them key by key."},
    {0, NULL},
};

static PyType_Spec Session_spec = {
    .name = "pytracekit.Session",
    .basicsize = sizeof(SessionObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = Session_slots,
};

static PyObject *
mod_version(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyUnicode_FromString(ptk_version_string());
}

static PyMethodDef mod_methods[] = {
    {"version", mod_version, METH_NOARGS, "the library's version"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "pytracekit._pytracekit",
    "pytracekit sessions from Python", -1, mod_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__pytracekit(void)
{
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) {
        return NULL;
    }
    ErrorType = PyErr_NewExceptionWithDoc(
        "pytracekit.Error", "A pytracekit call failed: args are (message, code).",
        NULL, NULL);
    PyObject *type = PyType_FromSpec(&Session_spec);
    if (ErrorType == NULL || type == NULL ||
        PyModule_AddObjectRef(m, "Error", ErrorType) < 0 ||
        PyModule_AddObject(m, "Session", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
