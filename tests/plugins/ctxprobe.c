/* ctxprobe: a test plugin for host->context (ABI 1.4). On each CALL it
 * reads the current context and counts the call under the context's name
 * ("" when there is none). ctxprobe.json: {"contexts": {name: {co_name:
 * calls}}, "ids": [each context id, in the order first seen], "names":
 * [each id's name]}. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>

#include <pytracekit/plugin.h>

typedef struct {
    const ptk_host *host;
    PyObject *contexts; /* name -> {co_name: calls} */
    PyObject *ids, *names;
    PyObject *current; /* borrowed: contexts[name of last_id] */
    uint64_t last_id;
    int seen;
} probe;

static int
cp_init(const ptk_init_args *a, void **state, unsigned int *events)
{
    (void)events;
    if (a->host->struct_size < offsetof(ptk_host, context) + sizeof(void *)) {
        snprintf(a->errbuf, a->errbuf_size, "needs a host of ABI 1.4");
        return PTK_EUNSUPPORTED;
    }
    probe *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return PTK_ENOMEM;
    }
    p->host = a->host;
    p->contexts = PyDict_New();
    p->ids = PyList_New(0);
    p->names = PyList_New(0);
    *state = p;
    return p->contexts && p->ids && p->names ? PTK_OK : PTK_EPYTHON;
}

static int
cp_event(void *state, const ptk_event *ev)
{
    probe *p = state;
    uint64_t id;
    const char *name = p->host->context(&id);
    if (!p->seen || id != p->last_id) {
        PyObject *key = PyUnicode_FromString(name ? name : "");
        PyObject *idv = PyLong_FromUnsignedLongLong(id);
        if (key == NULL || idv == NULL || PyList_Append(p->ids, idv) < 0 ||
            PyList_Append(p->names, key) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(idv);
            return PTK_EPYTHON;
        }
        Py_DECREF(idv);
        PyObject *d = PyDict_GetItemWithError(p->contexts, key);
        if (d == NULL) {
            d = PyDict_New();
            if (d == NULL || PyDict_SetItem(p->contexts, key, d) < 0) {
                Py_XDECREF(d);
                Py_DECREF(key);
                return PTK_EPYTHON;
            }
            Py_DECREF(d); /* the dict keeps it */
        }
        Py_DECREF(key);
        p->current = d;
        p->last_id = id;
        p->seen = 1;
    }
    PyObject *co_name = ev->code->co_name;
    PyObject *v = PyDict_GetItemWithError(p->current, co_name);
    PyObject *nv = PyLong_FromLongLong((v ? PyLong_AsLongLong(v) : 0) + 1);
    if (nv == NULL || PyDict_SetItem(p->current, co_name, nv) < 0) {
        Py_XDECREF(nv);
        return PTK_EPYTHON;
    }
    Py_DECREF(nv);
    return PTK_OK;
}

static int
cp_report(void *state, const ptk_report_args *a)
{
    probe *p = state;
    PyObject *root = Py_BuildValue("{sOsOsO}", "contexts", p->contexts, "ids", p->ids,
                                   "names", p->names);
    if (root == NULL) {
        return PTK_EPYTHON;
    }
    int rc = p->host->report_write_object(a->ctx, "ctxprobe.json", root, PTK_FMT_JSON);
    Py_DECREF(root);
    return rc;
}

static void
cp_fini(void *state)
{
    probe *p = state;
    Py_XDECREF(p->contexts);
    Py_XDECREF(p->ids);
    Py_XDECREF(p->names);
    free(p);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "ctxprobe",
    .version = "1",
    .description = "test plugin: host->context",
    .events = PTK_MASK(PTK_EV_CALL),
    .init = cp_init,
    .on_event = cp_event,
    .report = cp_report,
    .fini = cp_fini,
};

PTK_PLUGIN_DEFINE(desc)
