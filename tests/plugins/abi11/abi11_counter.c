/* abi11_counter: a plugin built against the 0.2 headers (plugin ABI 1.1),
 * as a third party built it then. It counts events per kind and Python
 * calls per function name into abi11_counter.json; a newer host must load
 * it, run it and apply filters to it with exact counts. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>

#include <pytracekit/plugin.h>

#if PTK_ABI_MINOR != 1
#error "abi11_counter must be built against the ABI 1.1 headers"
#endif

typedef struct {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    uint64_t kinds[PTK_EV_COUNT];
    PyObject *calls; /* co_name -> count */
} oldc;

static int
oc_init(const ptk_init_args *a, void **state, unsigned int *events)
{
    (void)events;
    oldc *c = calloc(1, sizeof *c);
    if (c == NULL) {
        return PTK_ENOMEM;
    }
    c->host = a->host;
    c->ctx = a->ctx;
    c->calls = PyDict_New();
    *state = c;
    return c->calls ? PTK_OK : PTK_ENOMEM;
}

static int
oc_event(void *state, const ptk_event *ev)
{
    oldc *c = state;
    c->kinds[ev->kind]++;
    if (ev->kind == PTK_EV_CALL) {
        PyObject *n = ev->code->co_name;
        PyObject *v = PyDict_GetItemWithError(c->calls, n);
        long k = v ? PyLong_AsLong(v) : 0;
        PyObject *nv = PyLong_FromLong(k + 1);
        if (nv == NULL || PyDict_SetItem(c->calls, n, nv) < 0) {
            Py_XDECREF(nv);
            return PTK_EPYTHON;
        }
        Py_DECREF(nv);
    }
    return PTK_OK;
}

static int
oc_report(void *state, const ptk_report_args *a)
{
    oldc *c = state;
    PyObject *kinds = PyDict_New();
    for (int k = 0; kinds && k < PTK_EV_COUNT; k++) {
        PyObject *v = PyLong_FromUnsignedLongLong(c->kinds[k]);
        if (v == NULL || PyDict_SetItemString(kinds, ptk_event_name(k), v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(kinds);
            break;
        }
        Py_DECREF(v);
    }
    PyObject *root = kinds ? Py_BuildValue("{sOsO}", "events", kinds, "calls", c->calls) : NULL;
    Py_XDECREF(kinds);
    if (root == NULL) {
        return PTK_EPYTHON;
    }
    int rc = c->host->report_write_object(a->ctx, "abi11_counter.json", root, PTK_FMT_JSON);
    Py_DECREF(root);
    return rc;
}

static void
oc_fini(void *state)
{
    oldc *c = state;
    Py_XDECREF(c->calls);
    free(c);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "abi11_counter",
    .version = "0.2",
    .description = "test plugin built against the ABI 1.1 headers",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN) |
              PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |
              PTK_MASK(PTK_EV_LINE),
    .init = oc_init,
    .on_event = oc_event,
    .report = oc_report,
    .fini = oc_fini,
};

PTK_PLUGIN_DEFINE(desc)
