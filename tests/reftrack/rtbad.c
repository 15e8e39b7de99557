/* rtbad: a test-only plugin whose on_ref breaks the reference-tracer rules
 * once, after `after` events, in the way `mode` says:
 *   raise   sets an exception (made at init, so nothing is created)
 *   clear   clears the pending exception (at the first event that has a
 *           ValueError pending: the test program raises and catches those)
 *   create  creates (and drops) a Python object
 * The hub must detach it with a clear error and leave the program alone. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>

#include <pytracekit/plugin.h>

typedef struct bad {
    int mode;
    int64_t after;
    uint64_t events;
    int done;
    PyObject *exc;
} bad;

static const ptk_option_spec bad_options[] = {
    {"mode", PTK_OPT_CHOICE, "raise", "how to break the rules",
     "raise|clear|create"},
    {"after", PTK_OPT_INT, "100", "events before misbehaving", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static int
bad_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    (void)events;
    bad *b = calloc(1, sizeof *b);
    if (b == NULL) {
        return PTK_ENOMEM;
    }
    b->mode = (int)args->host->option(args, "mode")->i;
    b->after = args->host->option(args, "after")->i;
    b->exc = PyObject_CallFunction(PyExc_RuntimeError, "s", "rtbad: boom");
    if (b->exc == NULL) {
        free(b);
        return PTK_EPYTHON;
    }
    *state = b;
    return PTK_OK;
}

static void
bad_on_ref(void *state, PyObject *obj, ptk_event_kind kind)
{
    (void)obj;
    (void)kind;
    bad *b = state;
    if (b->done || ++b->events <= (uint64_t)b->after) {
        return;
    }
    switch (b->mode) {
    case 0:
        PyErr_SetRaisedException(Py_NewRef(b->exc));
        b->done = 1;
        break;
    case 1:
        if (PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            b->done = 1;
        }
        break;
    default: {
        PyObject *o = PyLong_FromLongLong(1234567890123LL);
        Py_XDECREF(o);
        b->done = 1;
        break;
    }
    }
}

static int
bad_report(void *state, const ptk_report_args *args)
{
    bad *b = state;
    fprintf(args->summary, "rtbad: %llu events\n",
            (unsigned long long)b->events);
    return PTK_OK;
}

static void
bad_fini(void *state)
{
    bad *b = state;
    Py_XDECREF(b->exc);
    free(b);
}

static const ptk_plugin_desc bad_desc = {
    PTK_PLUGIN_HEADER,
    .name = "rtbad",
    .version = "0",
    .description = "breaks the on_ref rules (tests only)",
    .events = PTK_MASK_REF,
    .options = bad_options,
    .init = bad_init,
    .on_ref = bad_on_ref,
    .report = bad_report,
    .fini = bad_fini,
};

PTK_PLUGIN_DEFINE(bad_desc)
