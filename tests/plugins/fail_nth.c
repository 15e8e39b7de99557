/* fail_nth: counts the events it gets and fails on the nth one.
 *
 * Options:
 *   n=INT       which event fails (default 1000); 0: never
 *   kind=CHOICE which events are counted: any (every profile event, the
 *               default), call, return, unwind (a RETURN with no value:
 *               the frame is unwinding for an exception) or exception (the
 *               trace event; subscribes to it), c_exception
 *   file=TEXT   count only events of code whose co_filename ends with TEXT
 *   mode=CHOICE how it fails:
 *               error   return PTK_EIO with a host->fail() message
 *               python  PyErr_SetString(RuntimeError) and return PTK_EPYTHON
 *               leak    PyErr_SetString(RuntimeError) but return PTK_OK
 *               pycode  run Python code that raises LookupError (so that
 *                       the exception has a traceback) and return
 *                       PTK_EPYTHON
 *               report  never on an event: report() fails with PTK_EIO
 * Writes fail_nth.json ({"seen": events received}) when its report runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include <pytracekit/plugin.h>

enum { K_ANY, K_CALL, K_RETURN, K_UNWIND, K_EXCEPTION, K_C_EXCEPTION };
enum { M_ERROR, M_PYTHON, M_LEAK, M_REPORT, M_PYCODE };

typedef struct {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    int64_t n, count, seen;
    int kind, mode;
    const char *file;
} fail_nth;

static const ptk_option_spec options[] = {
    {"n", PTK_OPT_INT, "1000", "the event that fails (0: none)", NULL},
    {"kind", PTK_OPT_CHOICE, "any", "events counted",
     "any|call|return|unwind|exception|c_exception"},
    {"file", PTK_OPT_STRING, NULL, "count only code from files ending so", NULL},
    {"mode", PTK_OPT_CHOICE, "error", "how to fail", "error|python|leak|report|pycode"},
    {NULL, 0, NULL, NULL, NULL},
};

static int
fn_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    fail_nth *f = calloc(1, sizeof *f);
    if (f == NULL) {
        return PTK_ENOMEM;
    }
    f->host = args->host;
    f->ctx = args->ctx;
    f->n = args->host->option(args, "n")->i;
    f->kind = (int)args->host->option(args, "kind")->i;
    f->mode = (int)args->host->option(args, "mode")->i;
    f->file = args->host->option(args, "file")->s;
    if (f->kind == K_EXCEPTION) {
        *events |= PTK_MASK(PTK_EV_EXCEPTION);
    }
    *state = f;
    return PTK_OK;
}

static int
counts(const fail_nth *f, const ptk_event *ev)
{
    if (f->file != NULL) {
        const char *fn = ev->code ? PyUnicode_AsUTF8(ev->code->co_filename) : NULL;
        size_t n = fn ? strlen(fn) : 0, m = strlen(f->file);
        if (fn == NULL) {
            PyErr_Clear();
        }
        if (fn == NULL || n < m || strcmp(fn + n - m, f->file) != 0) {
            return 0;
        }
    }
    switch (f->kind) {
    case K_CALL: return ev->kind == PTK_EV_CALL;
    case K_RETURN: return ev->kind == PTK_EV_RETURN;
    case K_UNWIND: return ev->kind == PTK_EV_RETURN && ev->arg == NULL;
    case K_EXCEPTION: return ev->kind == PTK_EV_EXCEPTION;
    case K_C_EXCEPTION: return ev->kind == PTK_EV_C_EXCEPTION;
    default: return 1;
    }
}

static int
fn_event(void *state, const ptk_event *ev)
{
    fail_nth *f = state;
    f->seen++;
    if (f->mode == M_REPORT || !counts(f, ev) || ++f->count != f->n) {
        return PTK_OK;
    }
    const char *kind = ptk_event_name(ev->kind);
    switch (f->mode) {
    case M_PYTHON:
        PyErr_Format(PyExc_RuntimeError,
                     "fail_nth raised on %s event %lld as asked", kind,
                     (long long)f->n);
        return PTK_EPYTHON;
    case M_LEAK:
        PyErr_Format(PyExc_RuntimeError,
                     "fail_nth left this exception set on %s event %lld",
                     kind, (long long)f->n);
        return PTK_OK;
    case M_PYCODE: {
        PyObject *code = Py_CompileString(
            "def boom():\n"
            "    raise LookupError('fail_nth: raised from Python code')\n"
            "boom()\n",
            "<fail_nth>", Py_file_input);
        PyObject *globals = code ? PyDict_New() : NULL;
        if (globals != NULL &&
            PyDict_SetItemString(globals, "__builtins__",
                                 PyEval_GetBuiltins()) == 0) {
            PyObject *r = PyEval_EvalCode(code, globals, globals);
            Py_XDECREF(r);
        }
        Py_XDECREF(globals);
        Py_XDECREF(code);
        return PTK_EPYTHON;
    }
    default:
        return f->host->fail(f->ctx, PTK_EIO,
                             "fail_nth failed on %s event %lld as asked",
                             kind, (long long)f->n);
    }
}

static int
fn_report(void *state, const ptk_report_args *args)
{
    fail_nth *f = state;
    if (f->mode == M_REPORT) {
        return f->host->fail(f->ctx, PTK_EIO,
                             "fail_nth report failed as asked after %lld "
                             "events",
                             (long long)f->seen);
    }
    PyObject *d = Py_BuildValue("{s:L}", "seen", (long long)f->seen);
    if (d == NULL) {
        return PTK_EPYTHON;
    }
    int rc = f->host->report_write_object(args->ctx, "fail_nth.json", d,
                                          PTK_FMT_JSON);
    Py_DECREF(d);
    return rc;
}

static void
fn_fini(void *state)
{
    free(state);
}

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "fail_nth",
    .version = "1",
    .description = "test plugin: fails on its nth event",
    .events = PTK_MASK_PROFILE,
    .options = options,
    .init = fn_init,
    .on_event = fn_event,
    .report = fn_report,
    .fini = fn_fini,
};

PTK_PLUGIN_DEFINE(desc)
