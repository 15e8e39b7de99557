/* recorder: a test plugin that writes down every event it gets, as
 * [kind, function name, line, arg, depth, thread index, origin] rows in
 * recorder.json (name recorder-<tag>.json with option tag=).
 *
 * arg is recorded as: "NULL", "None", or the type name of the object.
 * Options:
 *   events=LIST        what to subscribe to (names as in ptk_event_name)
 *   tag=TEXT           suffix of the output file
 *   disable=LIST       kinds for which on_event returns PTK_DISABLE
 *   only=NAME          record only events of functions named NAME
 *   no_lines=NAME      on the first LINE of a frame of NAME, set
 *                      frame.f_trace_lines = False
 *   opcodes_check=BOOL for OPCODE: record whether frame.f_trace_opcodes is set
 *   unbound=BOOL       take PTK_FLAG_UNBOUND_C; C events then record their
 *                      name from ptk_event_c_def() and, in the last column,
 *                      [form, type of ptk_event_c_self() or None] where form
 *                      is "descriptor" or "bound"
 *   own_stack=BOOL     take PTK_FLAG_OWN_STACK (depth is then not read)
 *   exec=BOOL          take PTK_FLAG_EXEC_CONTEXT; the last column is then
 *                      [ptk_thread::exec_id, whether the top of the hub's
 *                      shadow stack is the event's code] (CALL and RETURN;
 *                      null for the other kinds)
 *   task=BOOL          the last column is then [number, name] of the asyncio
 *                      Task running (ptk_host::running_task; [0, null]
 *                      when none), asked at every event
 *   counts=BOOL        write [kind, function name, line, C name or null, count]
 *                      rows instead, one per distinct event (the C callable's
 *                      __name__ for C events, null for the others): what a
 *                      test comparing aggregated counts reads, without a row
 *                      per event
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include <pytracekit/plugin.h>

typedef struct {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    PyObject *rows;
    PyObject *counts; /* counts=true: (kind, name, line, cname) -> count */
    unsigned int disable;
    const char *tag, *only, *no_lines;
    int opcodes_check, unbound, exec, task;
} rec;

static const ptk_option_spec options[] = {
    {"events", PTK_OPT_LIST, "profile", "events to record", NULL},
    {"tag", PTK_OPT_STRING, "", "output file suffix", NULL},
    {"disable", PTK_OPT_LIST, "", "kinds answered with PTK_DISABLE", NULL},
    {"only", PTK_OPT_STRING, "", "record only this function", NULL},
    {"no_lines", PTK_OPT_STRING, "", "switch f_trace_lines off in this function", NULL},
    {"opcodes_check", PTK_OPT_BOOL, "false", "record f_trace_opcodes", NULL},
    {"unbound", PTK_OPT_BOOL, "false", "take method descriptors unbound", NULL},
    {"own_stack", PTK_OPT_BOOL, "false", "take PTK_FLAG_OWN_STACK", NULL},
    {"counts", PTK_OPT_BOOL, "false", "one counted row per distinct event", NULL},
    {"exec", PTK_OPT_BOOL, "false", "record the execution context", NULL},
    {"task", PTK_OPT_BOOL, "false", "record the running asyncio Task", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* The host's event-list parser; an empty list is no events. */
static int
mask_of(const ptk_init_args *a, const char *list, unsigned int *mask)
{
    *mask = 0;
    return list[0] ? a->host->event_parse_mask(list, mask) : PTK_OK;
}

static int
rec_init(const ptk_init_args *a, void **state, unsigned int *events)
{
    rec *r = calloc(1, sizeof *r);
    r->host = a->host;
    r->ctx = a->ctx;
    r->rows = PyList_New(0);
    if (mask_of(a, a->host->option(a, "events")->s, events) < 0 ||
        mask_of(a, a->host->option(a, "disable")->s, &r->disable) < 0) {
        snprintf(a->errbuf, a->errbuf_size, "bad event list");
        Py_XDECREF(r->rows);
        free(r);
        return PTK_EINVAL;
    }
    r->tag = a->host->option(a, "tag")->s;
    r->only = a->host->option(a, "only")->s;
    r->no_lines = a->host->option(a, "no_lines")->s;
    r->opcodes_check = (int)a->host->option(a, "opcodes_check")->i;
    r->unbound = (int)a->host->option(a, "unbound")->i;
    if (r->unbound) {
        a->subscription->flags |= PTK_FLAG_UNBOUND_C;
    }
    r->exec = (int)a->host->option(a, "exec")->i;
    r->task = (int)a->host->option(a, "task")->i;
    if (r->exec) {
        a->subscription->flags |= PTK_FLAG_EXEC_CONTEXT;
    }
    if (a->host->option(a, "own_stack")->i) {
        a->subscription->flags |= PTK_FLAG_OWN_STACK;
    }
    if (a->host->option(a, "counts")->i && (r->counts = PyDict_New()) == NULL) {
        Py_DECREF(r->rows);
        free(r);
        return PTK_ENOMEM;
    }
    *state = r;
    return r->rows ? PTK_OK : PTK_ENOMEM;
}

static int
rec_event(void *state, const ptk_event *ev)
{
    rec *r = state;
    const char *name = PyUnicode_AsUTF8(ev->code->co_name);
    if (r->only[0] && strcmp(name, r->only) != 0) {
        return PTK_OK;
    }
    PyObject *arg;
    if (ev->arg == NULL) {
        arg = PyUnicode_FromString("NULL");
    }
    else if (ev->arg == Py_None) {
        arg = PyUnicode_FromString("None");
    }
    else {
        arg = PyUnicode_FromString(Py_TYPE(ev->arg)->tp_name);
    }
    if (ev->kind == PTK_EV_C_CALL || ev->kind == PTK_EV_C_RETURN ||
        ev->kind == PTK_EV_C_EXCEPTION) {
        PyObject *n = PyObject_GetAttrString(ev->arg, "__name__");
        if (n == NULL) {
            PyErr_Clear();
        }
        else {
            Py_DECREF(arg);
            arg = n;
        }
    }
    if (r->counts != NULL) {
        int c_kind = ev->kind == PTK_EV_C_CALL || ev->kind == PTK_EV_C_RETURN ||
                     ev->kind == PTK_EV_C_EXCEPTION;
        PyObject *key = Py_BuildValue("(ssiO)", ptk_event_name(ev->kind), name, ev->line,
                                      c_kind ? arg : Py_None);
        Py_DECREF(arg);
        if (key == NULL) {
            return PTK_EPYTHON;
        }
        PyObject *one = PyLong_FromLong(1);
        PyObject *old = one != NULL ? PyDict_GetItemWithError(r->counts, key) : NULL;
        PyObject *n = old != NULL ? PyNumber_Add(old, one)
                                  : (PyErr_Occurred() ? NULL : Py_XNewRef(one));
        int rc = n != NULL ? PyDict_SetItem(r->counts, key, n) : -1;
        Py_XDECREF(n);
        Py_XDECREF(one);
        Py_DECREF(key);
        if (rc < 0) {
            return PTK_EPYTHON;
        }
        return (r->disable & PTK_MASK(ev->kind)) ? PTK_DISABLE : PTK_OK;
    }
    PyObject *extra = Py_NewRef(Py_None);
    if (r->unbound && (ev->kind == PTK_EV_C_CALL || ev->kind == PTK_EV_C_RETURN ||
                       ev->kind == PTK_EV_C_EXCEPTION)) {
        PyMethodDef *def = ptk_event_c_def(ev);
        PyObject *self = ptk_event_c_self(ev);
        Py_DECREF(extra);
        extra = Py_BuildValue(
            "(ss)", Py_IS_TYPE(ev->arg, &PyMethodDescr_Type) ? "descriptor" : "bound",
            self != NULL ? Py_TYPE(self)->tp_name : "None");
        if (def != NULL) {
            Py_DECREF(arg);
            arg = PyUnicode_FromString(def->ml_name);
        }
    }
    if (ev->kind == PTK_EV_BRANCH || ev->kind == PTK_EV_JUMP) {
        Py_DECREF(extra);
        extra = Py_BuildValue("(ii)", r->host->event_offset(ev), (int)ev->target);
    }
    if (r->exec) {
        const ptk_thread *t = ev->thread;
        PyObject *top = Py_NewRef(Py_None);
        if (ev->kind == PTK_EV_CALL || ev->kind == PTK_EV_RETURN) {
            Py_DECREF(top);
            top = PyBool_FromLong(t->depth > 0 && t->depth == ev->depth &&
                                  t->stack[t->depth - 1].code == ev->code);
        }
        Py_DECREF(extra);
        extra = Py_BuildValue("(KN)", (unsigned long long)t->exec_id, top);
    }
    if (r->task) {
        PyObject *task;
        uint64_t n = r->host->running_task(&task);
        PyObject *tname = task != NULL ? PyObject_CallMethod(task, "get_name", NULL)
                                       : Py_NewRef(Py_None);
        Py_DECREF(extra);
        extra = tname != NULL ? Py_BuildValue("(KN)", (unsigned long long)n, tname) : NULL;
        if (extra == NULL) {
            Py_DECREF(arg);
            return PTK_EPYTHON;
        }
    }
    PyFrameObject *f = r->host->event_frame(ev);
    if (ev->kind == PTK_EV_OPCODE && r->opcodes_check && f) {
        Py_DECREF(extra);
        extra = PyObject_GetAttrString((PyObject *)f, "f_trace_opcodes");
    }
    PyObject *row = Py_BuildValue("(ssiNiiiN)", ptk_event_name(ev->kind), name,
                                  ev->line, arg, (int)ev->depth,
                                  (int)ev->thread->index, (int)ev->origin,
                                  extra);
    if (row == NULL || PyList_Append(r->rows, row) < 0) {
        Py_XDECREF(row);
        return PTK_EPYTHON;
    }
    Py_DECREF(row);
    if (ev->kind == PTK_EV_LINE && r->no_lines[0] && f &&
        strcmp(name, r->no_lines) == 0) {
        if (PyObject_SetAttrString((PyObject *)f, "f_trace_lines", Py_False) < 0) {
            return PTK_EPYTHON;
        }
    }
    return (r->disable & PTK_MASK(ev->kind)) ? PTK_DISABLE : PTK_OK;
}

static int
rec_report(void *state, const ptk_report_args *a)
{
    rec *r = state;
    char name[256];
    snprintf(name, sizeof name, "recorder%s%s.json", r->tag[0] ? "-" : "", r->tag);
    if (r->counts != NULL) {
        PyObject *key, *n;
        Py_ssize_t pos = 0;
        while (PyDict_Next(r->counts, &pos, &key, &n)) {
            PyObject *row = Py_BuildValue("[OOOOO]", PyTuple_GET_ITEM(key, 0),
                                          PyTuple_GET_ITEM(key, 1), PyTuple_GET_ITEM(key, 2),
                                          PyTuple_GET_ITEM(key, 3), n);
            if (row == NULL || PyList_Append(r->rows, row) < 0) {
                Py_XDECREF(row);
                return PTK_EPYTHON;
            }
            Py_DECREF(row);
        }
        PyDict_Clear(r->counts);
    }
    return r->host->report_write_object(a->ctx, name, r->rows, PTK_FMT_JSON);
}

static void
rec_fini(void *state)
{
    rec *r = state;
    Py_XDECREF(r->rows);
    Py_XDECREF(r->counts);
    free(r);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "recorder",
    .version = "1",
    .description = "test plugin: records every event",
    .events = PTK_MASK_PROFILE,
    .options = options,
    .init = rec_init,
    .on_event = rec_event,
    .report = rec_report,
    .fini = rec_fini,
};

PTK_PLUGIN_DEFINE(desc)
