/* hostileplug: a plugin that does what the host must survive.
 *   errbuf=true   init fills the whole error buffer, no NUL, and fails
 *   report=NAME   its report is written as NAME ({"calls": N})
 *   init_call=M:F init calls Python's M.F() (each init: a forked child's too)
 *   report_call=M:F its report calls M.F() before it writes (Python code run
 *                 inside the reports: the library's own write none since
 *                 their JSON is written in C)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pytracekit/plugin.h>

typedef struct {
    const ptk_host *host;
    const char *report;
    const char *report_call;
    long calls;
} hp;

static const ptk_option_spec options[] = {
    {"errbuf", PTK_OPT_BOOL, "false", "fill the init error buffer with no NUL, then fail", NULL},
    {"report", PTK_OPT_STRING, "hostileplug.json", "the report's file name", NULL},
    {"init_call", PTK_OPT_STRING, NULL, "MODULE:FUNCTION that init calls", NULL},
    {"report_call", PTK_OPT_STRING, NULL, "MODULE:FUNCTION that the report calls", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* Calls MODULE:FUNCTION (Python code run inside init or the report). */
static int
call_spec(const char *spec, char *errbuf, size_t size)
{
    const char *colon = strchr(spec, ':');
    if (colon == NULL) {
        snprintf(errbuf, size, "init_call: MODULE:FUNCTION, not '%s'", spec);
        return PTK_EINVAL;
    }
    PyObject *mod_name = PyUnicode_FromStringAndSize(spec, colon - spec);
    PyObject *mod = mod_name ? PyImport_Import(mod_name) : NULL;
    PyObject *res = mod ? PyObject_CallMethod(mod, colon + 1, NULL) : NULL;
    Py_XDECREF(mod_name);
    Py_XDECREF(mod);
    if (res == NULL) {
        snprintf(errbuf, size, "%s raised", spec);
        return PTK_EPYTHON;
    }
    Py_DECREF(res);
    return PTK_OK;
}

static int
hp_init(const ptk_init_args *a, void **state, unsigned int *events)
{
    if (a->host->option(a, "errbuf")->i) {
        memset(a->errbuf, 'x', a->errbuf_size);
        return PTK_EINVAL;
    }
    const char *spec = a->host->option(a, "init_call")->s;
    if (spec != NULL) {
        int rc = call_spec(spec, a->errbuf, a->errbuf_size);
        if (rc != PTK_OK) {
            return rc;
        }
    }
    hp *h = calloc(1, sizeof *h);
    if (h == NULL) {
        return PTK_ENOMEM;
    }
    h->host = a->host;
    h->report_call = a->host->option(a, "report_call")->s;
    h->report = a->host->option(a, "report")->s;
    if (h->report == NULL) {
        h->report = "hostileplug.json";
    }
    *events = PTK_MASK(PTK_EV_CALL);
    *state = h;
    return PTK_OK;
}

static int
hp_event(void *state, const ptk_event *ev)
{
    (void)ev;
    ((hp *)state)->calls++;
    return PTK_OK;
}

static int
hp_report(void *state, const ptk_report_args *a)
{
    hp *h = state;
    if (h->report_call != NULL) {
        char why[256];
        int rc = call_spec(h->report_call, why, sizeof why);
        if (rc != PTK_OK) {
            return h->host->fail(a->ctx, rc, "%s", why);
        }
    }
    PyObject *obj = Py_BuildValue("{s:l}", "calls", h->calls);
    if (obj == NULL) {
        return PTK_EPYTHON;
    }
    int rc = h->host->report_write_object(a->ctx, h->report, obj, PTK_FMT_JSON);
    Py_DECREF(obj);
    return rc;
}

static void
hp_fini(void *state)
{
    free(state);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "hostileplug",
    .version = "1",
    .description = "test plugin: an init error with no NUL, a report named at will",
    .events = PTK_MASK(PTK_EV_CALL),
    .options = options,
    .init = hp_init,
    .on_event = hp_event,
    .report = hp_report,
    .fini = hp_fini,
};

PTK_PLUGIN_DEFINE(desc)
