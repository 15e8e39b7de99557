/* atreport: a test plugin that misbehaves while reports are written.
 * Counts CALL events; its report writes atreport.json ({"calls": N}),
 * after doing what the options say:
 *   signal=N   raise signal N first (a second Ctrl-C during reporting)
 *   fail=BOOL  fail instead of writing (a report that cannot be written)
 *   hold=MS    keep atreport.json's temporary file open MS milliseconds
 *              before it is renamed into place (a report still being written)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include <pytracekit/plugin.h>

typedef struct {
    const ptk_host *host;
    long calls;
    int signum;
    int fail;
    long hold_ms;
} atr;

static const ptk_option_spec options[] = {
    {"signal", PTK_OPT_INT, "0", "signal raised at report time", NULL},
    {"fail", PTK_OPT_BOOL, "false", "fail to write the report", NULL},
    {"hold", PTK_OPT_INT, "0", "milliseconds the report's file stays open", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static int
atr_init(const ptk_init_args *a, void **state, unsigned int *events)
{
    atr *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return PTK_ENOMEM;
    }
    r->host = a->host;
    r->signum = (int)a->host->option(a, "signal")->i;
    r->fail = (int)a->host->option(a, "fail")->i;
    r->hold_ms = (long)a->host->option(a, "hold")->i;
    *events = PTK_MASK(PTK_EV_CALL);
    *state = r;
    return PTK_OK;
}

static int
atr_event(void *state, const ptk_event *ev)
{
    (void)ev;
    ((atr *)state)->calls++;
    return PTK_OK;
}

static int
atr_report(void *state, const ptk_report_args *a)
{
    atr *r = state;
    if (r->signum > 0) {
        raise(r->signum);
    }
    if (r->fail) {
        return r->host->fail(a->ctx, PTK_EIO, "atreport: told to fail");
    }
    if (r->hold_ms > 0) {
        void *token = NULL;
        FILE *f = r->host->report_open(a->ctx, "atreport.json", &token);
        if (f == NULL) {
            return PTK_EIO;
        }
        fprintf(f, "{\"calls\": %ld}\n", r->calls);
        fflush(f);
        struct timespec nap = {r->hold_ms / 1000, (r->hold_ms % 1000) * 1000000L};
        PyThreadState *ts = PyEval_SaveThread();
        nanosleep(&nap, NULL);
        PyEval_RestoreThread(ts);
        return r->host->report_commit(token, 1);
    }
    PyObject *obj = Py_BuildValue("{s:l}", "calls", r->calls);
    if (obj == NULL) {
        return PTK_EPYTHON;
    }
    int rc = r->host->report_write_object(a->ctx, "atreport.json", obj,
                                          PTK_FMT_JSON);
    Py_DECREF(obj);
    return rc;
}

static void
atr_fini(void *state)
{
    free(state);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "atreport",
    .version = "1",
    .description = "test plugin: signals or fails while reporting",
    .events = PTK_MASK(PTK_EV_CALL),
    .options = options,
    .init = atr_init,
    .on_event = atr_event,
    .report = atr_report,
    .fini = atr_fini,
};

PTK_PLUGIN_DEFINE(desc)
