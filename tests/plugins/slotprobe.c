/* slotprobe: a test plugin for host->code_slot. On each CALL it reads its
 * slot for the code object: NULL means "a code object this instance has
 * not seen", and it stores the index of a new entry of its own there.
 * slotprobe.json: {"code_objects": distinct entries, "calls": CALL events,
 * "missing": calls without a slot, "names": {co_name: calls}}. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>

#include <pytracekit/plugin.h>

typedef struct {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    PyObject **names; /* per entry: co_name (strong) */
    uint64_t *calls;  /* per entry */
    size_t n, cap;
    uint64_t total, missing;
} probe;

static int
sp_init(const ptk_init_args *a, void **state, unsigned int *events)
{
    (void)events;
    if (a->struct_size < offsetof(ptk_init_args, subscription) + sizeof(void *) ||
        a->host->struct_size < offsetof(ptk_host, subscribe_filter) + sizeof(void *)) {
        snprintf(a->errbuf, a->errbuf_size, "needs a host of ABI 1.2");
        return PTK_EUNSUPPORTED;
    }
    probe *p = calloc(1, sizeof *p);
    if (p == NULL) {
        return PTK_ENOMEM;
    }
    p->host = a->host;
    p->ctx = a->ctx;
    *state = p;
    return PTK_OK;
}

static int
sp_event(void *state, const ptk_event *ev)
{
    probe *p = state;
    p->total++;
    void **slot = p->host->code_slot(p->ctx, ev->code);
    if (slot == NULL) {
        p->missing++;
        return PTK_OK;
    }
    size_t i = (size_t)(uintptr_t)*slot;
    if (i == 0) {
        if (p->n == p->cap) {
            size_t nc = p->cap ? p->cap * 2 : 64;
            PyObject **nn = realloc(p->names, nc * sizeof *nn);
            uint64_t *ncalls = nn ? realloc(p->calls, nc * sizeof *ncalls) : NULL;
            if (nn) {
                p->names = nn;
            }
            if (ncalls == NULL) {
                return PTK_ENOMEM;
            }
            p->calls = ncalls;
            p->cap = nc;
        }
        p->names[p->n] = Py_NewRef(ev->code->co_name);
        p->calls[p->n] = 0;
        i = ++p->n;
        *slot = (void *)(uintptr_t)i;
    }
    p->calls[i - 1]++;
    return PTK_OK;
}

static int
sp_report(void *state, const ptk_report_args *a)
{
    probe *p = state;
    PyObject *names = PyDict_New();
    for (size_t i = 0; names && i < p->n; i++) {
        PyObject *v = PyDict_GetItemWithError(names, p->names[i]);
        PyObject *nv = PyLong_FromUnsignedLongLong((v ? PyLong_AsUnsignedLongLong(v) : 0) +
                                                   p->calls[i]);
        if (nv == NULL || PyDict_SetItem(names, p->names[i], nv) < 0) {
            Py_XDECREF(nv);
            Py_CLEAR(names);
        }
        Py_XDECREF(nv);
    }
    PyObject *root = names ? Py_BuildValue("{snsKsKsO}", "code_objects", (Py_ssize_t)p->n,
                                           "calls", (unsigned long long)p->total,
                                           "missing", (unsigned long long)p->missing,
                                           "names", names)
                           : NULL;
    Py_XDECREF(names);
    if (root == NULL) {
        return PTK_EPYTHON;
    }
    int rc = p->host->report_write_object(a->ctx, "slotprobe.json", root, PTK_FMT_JSON);
    Py_DECREF(root);
    return rc;
}

static void
sp_fini(void *state)
{
    probe *p = state;
    for (size_t i = 0; i < p->n; i++) {
        Py_DECREF(p->names[i]);
    }
    free(p->names);
    free(p->calls);
    free(p);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "slotprobe",
    .version = "1",
    .description = "test plugin: host->code_slot",
    .events = PTK_MASK(PTK_EV_CALL),
    .init = sp_init,
    .on_event = sp_event,
    .report = sp_report,
    .fini = sp_fini,
};

PTK_PLUGIN_DEFINE(desc)
