/* pytracekit._pytracekit: sessions from Python code. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pytracekit/pytracekit.h>

#include "cov_analyze_py.h"
#include "follow_wait.h"
#include "ptk_cmdline.h"
#include "cov_config.h"
#include "ptk_filter_keys.h"
#include "ptk_progstart.h"
#include "ptk_usage.h"

/* The exception raised for a library error: the package (__init__.py)
 * installs its classes with _set_errors(base, {code: class}); until then
 * (or for a code without a class), RuntimeError. */
static PyObject *ErrorBase;
static PyObject *ErrorByCode;

typedef struct {
    PyObject_HEAD
        ptk_session *s;
    int reported;
    int reporting;     /* in report(): close() waits for its end */
    int close_pending; /* close() came during report() */
    PyObject *weakrefs;
    int follow;        /* follow_children */
    char *outdir;      /* output_dir as given */
    long start_pid;    /* the process that started it */
    child_dirs before; /* outdir's pid-N/ then */
    int command;       /* runs the program for the pytracekit command */
} SessionObject;

/* ---- The pytracekit command's end, when it ran the program by the
 * interpreter's executable (python -m pytracekit for the command, see
 * tools/pytracekit.c): what the command does after Py_RunMain, done here
 * after the interpreter's own end (a C exit handler). */
static char *cmd_follow_outdir; /* the followed run's report directory */
static child_dirs cmd_follow_before;
static int cmd_report_failed, cmd_sigint, cmd_hooked;
static PyObject *cmd_hold; /* the command's session (_for_command) */

static void
command_exit_hook(int status, void *unused)
{
    (void)unused;
    fflush(NULL);
    if (cmd_follow_outdir != NULL) {
        /* the program and Python are done */
        ptk_close_inherited();
        ptk_wait_for_children(cmd_follow_outdir, &cmd_follow_before, 0);
        cmd_follow_outdir = NULL;
    }
    if (cmd_sigint) {
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    }
    if (status == 0 && cmd_report_failed) {
        _exit(PTK_EXIT_REPORT_FAILED);
    }
}

/* Raises the class for @p rc with @p msg and the code: cls(msg, code). */
static PyObject *
raise_str(int rc, const char *msg)
{
    PyObject *code = PyLong_FromLong(rc);
    PyObject *cls = code && ErrorByCode ? PyDict_GetItemWithError(ErrorByCode, code)
                                        : NULL; /* borrowed */
    if (cls == NULL && !PyErr_Occurred()) {
        cls = ErrorBase ? ErrorBase : PyExc_RuntimeError;
    }
    PyObject *exc = cls ? PyObject_CallFunction(cls, "sO", msg, code) : NULL;
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    Py_XDECREF(code);
    return NULL;
}

/* Raises the class for @p rc with the library's message (@p err, freed),
 * or the code's description. */
static PyObject *
raise_ptk(int rc, char *err)
{
    raise_str(rc, err ? err : ptk_strerror(rc));
    ptk_free(err);
    return NULL;
}

/* raise_ptk with a message of ours: @p fmt has one %s, @p arg. */
static PyObject *
raise_msg(int rc, const char *fmt, const char *arg)
{
    char m[512];
    snprintf(m, sizeof m, fmt, arg);
    return raise_str(rc, m);
}

/* One of @p choices (NULL-terminated), by name, or TypeError/ValueError. */
static int
choice_arg(PyObject *o, const char *what, const char *const *choices)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    for (int i = 0; choices[i]; i++) {
        if (PyUnicode_CompareWithASCIIString(o, choices[i]) == 0) {
            return i;
        }
    }
    PyObject *names = PyUnicode_FromString("");
    for (int i = 0; names && choices[i]; i++) {
        PyObject *n = PyUnicode_FromFormat("%U%s'%s'", names,
                                           i == 0 ? "" : choices[i + 1] ? ", "
                                                                        : " or ",
                                           choices[i]);
        Py_SETREF(names, n);
    }
    if (names != NULL) {
        PyErr_Format(PyExc_ValueError, "%s must be %U, not %R", what, names, o);
        Py_DECREF(names);
    }
    return -1;
}

/* The UTF-8 text of str @p o, or NULL with ValueError if it holds a NUL
 * (the library takes C strings: it would be cut there silently). */
static const char *
utf8_nonul(PyObject *o, const char *what)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(o, &n);
    if (u != NULL && strlen(u) != (size_t)n) {
        PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
        return NULL;
    }
    return u;
}

static const char *const thread_choices[] = {"current", "all", NULL};
static const char *const backend_choices[] = {"auto", "legacy", "monitoring", NULL};

static int
add_plugins(SessionObject *self, PyObject *plugins)
{
    if (PyUnicode_Check(plugins)) { /* one spec, not a sequence of letters */
        const char *spec = utf8_nonul(plugins, "a plugin spec");
        char *err = NULL;
        int rc = spec ? ptk_session_add_plugin(self->s, spec, &err) : -1;
        if (rc < 0 && spec != NULL) {
            raise_ptk(rc, err);
        }
        return rc < 0 ? -1 : 0;
    }
    PyObject *seq = PySequence_Fast(plugins, "plugins must be a str or a "
                                             "sequence of str");
    if (seq == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "plugins[%zd] must be str, not %.100s",
                         i, Py_TYPE(item)->tp_name);
            Py_DECREF(seq);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *spec = utf8_nonul(PySequence_Fast_GET_ITEM(seq, i), "a plugin spec");
        char *err = NULL;
        int rc = spec ? ptk_session_add_plugin(self->s, spec, &err) : -1;
        if (rc < 0) {
            Py_DECREF(seq);
            if (spec != NULL) {
                raise_ptk(rc, err);
            }
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
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
    if (PyUnicode_Check(v) && strcmp(key, "max_depth") != 0) {
        text = Py_NewRef(v);
    }
    else if (PyLong_Check(v) && !PyBool_Check(v) && strcmp(key, "max_depth") == 0) {
        text = PyObject_Str(v);
    }
    else if (PySequence_Check(v) && strcmp(key, "max_depth") != 0) {
        PyObject *sep = PyUnicode_FromString(";");
        text = sep ? PyUnicode_Join(sep, v) : NULL;
        Py_XDECREF(sep);
    }
    else {
        PyErr_Format(PyExc_TypeError, "%s must be %s, not %.100s",
                     key,
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

/* "O&" converter: None, or a path as PyUnicode_FSConverter takes it. */
static int
opt_fspath(PyObject *o, void *out)
{
    if (o == Py_None) {
        *(PyObject **)out = NULL;
        return 1;
    }
    return PyUnicode_FSConverter(o, out);
}

static int
str_arg(PyObject *o, const char *fn, const char **out)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s() argument must be str, not %.100s",
                     fn, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = utf8_nonul(o, "the argument");
    return *out ? 0 : -1;
}

/* The filter keys (ptk_filter_keys.h): the option key of each, in the
 * order of Session's keywords after filter=. */
#define KEY_ROW(key, flag, kw, type, help) key,
static const char *const fkeys[PTK_FILTER_KEY_COUNT] = {PTK_FILTER_KEYS(KEY_ROW)};
#undef KEY_ROW

/* The session's default filter text: filter= (a str or None), then
 * "key=items" for each filter keyword given. New reference, or NULL with
 * an exception. */
static PyObject *
session_filter_text(PyObject *filter, PyObject *const *fv)
{
    PyObject *parts = PyList_New(0), *ftext = NULL;
    if (parts == NULL) {
        return NULL;
    }
    if (filter != NULL && filter != Py_None) {
        if (!PyUnicode_Check(filter)) {
            PyErr_Format(PyExc_TypeError, "filter must be str or None, not %.100s",
                         Py_TYPE(filter)->tp_name);
            goto done;
        }
        if (PyUnicode_GET_LENGTH(filter) > 0 && PyList_Append(parts, filter) < 0) {
            goto done;
        }
    }
    for (int k = 0; k < PTK_FILTER_KEY_COUNT; k++) {
        if (filter_part(parts, fkeys[k], fv[k]) < 0) {
            goto done;
        }
    }
    PyObject *comma = PyUnicode_FromString(",");
    ftext = comma ? PyUnicode_Join(comma, parts) : NULL;
    Py_XDECREF(comma);
done:
    Py_DECREF(parts);
    return ftext;
}

/* threads= and backend= into cfg; -1 with an exception. */
static int
session_choices(PyObject *threads, PyObject *backend, ptk_session_config *cfg)
{
    int t = threads ? choice_arg(threads, "threads", thread_choices) : 0;
    int b = backend ? choice_arg(backend, "backend", backend_choices) : 0;
    if (t < 0 || b < 0) {
        return -1;
    }
    cfg->threads = t == 1 ? PTK_THREADS_ALL : PTK_THREADS_CURRENT;
    ptk_backend_parse(backend_choices[b], &cfg->backend);
    return 0;
}

static int
Session_init(SessionObject *self, PyObject *args, PyObject *kw)
{
#define KW_ROW(key, flag, kw, type, help) kw,
    static char *kwlist[] = {"plugins", "output_dir", "threads", "plugin_path",
                             "backend", "filter", PTK_FILTER_KEYS(KW_ROW) "follow_children", NULL};
#undef KW_ROW
    _Static_assert(PTK_FILTER_KEY_COUNT == 6, "a format unit per filter keyword");
    PyObject *plugins = NULL, *threads = NULL, *backend = NULL;
    PyObject *outdir = NULL, *plugin_path = NULL, *filter = NULL;
    PyObject *fv[PTK_FILTER_KEY_COUNT] = {NULL};
    int follow = 0, rc = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO&OO&OO$OOOOOOp", kwlist,
                                     &plugins, opt_fspath, &outdir, &threads,
                                     opt_fspath, &plugin_path, &backend,
                                     &filter, &fv[0], &fv[1], &fv[2], &fv[3],
                                     &fv[4], &fv[5], &follow)) {
        return -1;
    }
    /* filter= and the keywords make the session's default filter */
    PyObject *ftext = session_filter_text(filter, fv);
    if (ftext == NULL) {
        goto done;
    }
    if (self->s != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Session already initialised");
        goto done;
    }
    ptk_session_config cfg = PTK_SESSION_CONFIG_INIT;
    cfg.output_dir = outdir ? PyBytes_AS_STRING(outdir) : "pytracekit-out";
    cfg.plugin_path = plugin_path ? PyBytes_AS_STRING(plugin_path) : NULL;
    cfg.filter = utf8_nonul(ftext, "the filter"); /* copied by ptk_session_new */
    if (cfg.filter == NULL || session_choices(threads, backend, &cfg) < 0) {
        goto done;
    }
    char *err = NULL;
    int prc = ptk_session_new(&cfg, &self->s, &err);
    if (prc < 0) {
        raise_ptk(prc, err);
        goto done;
    }
    ptk_session_follow_children(self->s, follow);
    self->follow = follow;
    free(self->outdir);
    self->outdir = strdup(cfg.output_dir);
    if (plugins != NULL && plugins != Py_None && add_plugins(self, plugins) < 0) {
        ptk_session_free(self->s);
        self->s = NULL;
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(ftext);
    Py_XDECREF(outdir);
    Py_XDECREF(plugin_path);
    return rc;
}

static int
check(SessionObject *self)
{
    if (self->s == NULL || self->close_pending) {
        raise_str(PTK_ESTATE, "the session is closed");
        return -1;
    }
    return 0;
}

static PyObject *
Session_add_plugin(SessionObject *self, PyObject *arg)
{
    const char *spec;
    if (str_arg(arg, "add_plugin", &spec) < 0 || check(self) < 0) {
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
    const char *name;
    if (str_arg(arg, "remove_plugin", &name) < 0 || check(self) < 0) {
        return NULL;
    }
    int rc = ptk_session_remove_plugin(self->s, name);
    if (rc < 0) {
        return raise_msg(rc, "no plugin named '%s' in this session", name);
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
    if (self->follow && self->outdir != NULL) {
        /* the children of this start are the pid-N/ not there now */
        ptk_child_dirs_free(&self->before);
        ptk_child_dirs_read(self->outdir, &self->before);
        self->start_pid = (long)getpid();
    }
    char *err = NULL;
    int rc = ptk_session_start(self->s, &err);
    if (rc < 0) {
        return raise_ptk(rc, err);
    }
    Py_RETURN_NONE;
}

/* _start_and_run(code, globals): starts the session, then runs @p code in
 * @p globals, for python -m pytracekit. Started here, in C, the program's
 * code is the first thing the hub sees: no runner's call (builtins.exec)
 * enters the program's profile, and this method's own return, whose call
 * the hub never saw, is dropped as start()'s is. */
static PyObject *
Session_start_and_run(SessionObject *self, PyObject *args)
{
    PyObject *code, *globals;
    if (!PyArg_ParseTuple(args, "O!O!:_start_and_run", &PyCode_Type, &code,
                          &PyDict_Type, &globals)) {
        return NULL;
    }
    PyObject *r = Session_start(self, NULL);
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    return PyEval_EvalCode(code, globals, globals);
}

/* After a stop: followed children writing their reports get a bounded wait,
 * those still running are named (tools/follow_wait.c). */
static void
wait_children(SessionObject *self)
{
    if (self->follow && self->outdir != NULL && self->start_pid == (long)getpid()) {
        Py_BEGIN_ALLOW_THREADS
            ptk_wait_for_children(self->outdir, &self->before, 1);
        Py_END_ALLOW_THREADS
    }
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
        return raise_str(rc, "the session is not running");
    }
    if (self->command) {
        /* the command waits for every followed child at its very end */
        if (self->follow && self->outdir != NULL && cmd_follow_outdir == NULL &&
            self->start_pid == (long)getpid()) {
            cmd_follow_outdir = strdup(self->outdir);
            cmd_follow_before = self->before;
            memset(&self->before, 0, sizeof self->before);
        }
    }
    else {
        wait_children(self);
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
    if (self->reporting) {
        /* from code the report runs: a signal handler, a finalizer */
        return raise_str(PTK_ESTATE, "the session is writing its reports");
    }
    char *err = NULL;
    self->reporting = 1;
    int rc = ptk_session_report(self->s, &err);
    self->reporting = 0;
    ptk_free(err);
    int failed = ptk_session_failures(self->s);
    if (self->close_pending) {
        ptk_session_free(self->s);
        self->s = NULL;
    }
    if (rc == PTK_ESTATE) {
        return raise_str(rc, "stop the session before report()");
    }
    self->reported = 1;
    return PyLong_FromLong(failed);
}

/* _mark_attached(at, by_pid): run.json says the session was attached to
 * this running process (pytracekit._attach). */
static PyObject *
Session_mark_attached(SessionObject *self, PyObject *args)
{
    const char *at;
    long by_pid;
    if (!PyArg_ParseTuple(args, "sl", &at, &by_pid) || check(self) < 0) {
        return NULL;
    }
    int rc = ptk_session_mark_attached(self->s, at, by_pid);
    if (rc < 0) {
        return raise_str(rc, "cannot mark the session attached");
    }
    Py_RETURN_NONE;
}

static PyObject *
Session_close(SessionObject *self, PyObject *unused)
{
    (void)unused;
    if (self->reporting) {
        self->close_pending = 1; /* report() closes it when done */
        Py_RETURN_NONE;
    }
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
        /* Stopped here, in C: a Python-level __exit__ would be a frame
         * whose call the hub saw and whose return it never sees. */
        if (ptk_session_running(self->s)) {
            ptk_session_stop(self->s);
            wait_children(self);
        }
        /* report() as the object has it (the package's refreshes results) */
        PyObject *r = PyObject_CallMethod((PyObject *)self, "report", NULL);
        if (r == NULL) {
            return NULL;
        }
        Py_DECREF(r);
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
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    ptk_session_free(self->s);
    ptk_child_dirs_free(&self->before);
    free(self->outdir);
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* _for_command(): this session runs the program for the pytracekit
 * command (python/pytracekit/_command/sitecustomize.py): stop() leaves followed children
 * to the process's end, which waits for them as the command does. */
static PyObject *
Session_for_command(SessionObject *self, PyObject *unused)
{
    (void)unused;
    self->command = 1;
    /* held to the end of the process by the extension itself, not by
     * sys.modules (the program starts with the bare interpreter's) nor only
     * by the exit hooks (multiprocessing's fork children clear atexit's) */
    Py_XSETREF(cmd_hold, Py_NewRef((PyObject *)self));
    if (!cmd_hooked && on_exit(command_exit_hook, NULL) == 0) {
        cmd_hooked = 1;
    }
    Py_RETURN_NONE;
}

/* ---- The program's start, for the command run by the interpreter
 * (pytracekit/_command/sitecustomize.py): the session starts when the
 * program does, told by the same watcher as the command's own
 * (tools/ptk_progstart.c). */
static SessionObject *cmd_session; /* strong reference, until started */
static int cmd_started;
/* the start-up hook itself as sitecustomize, when there is no other: it
 * leaves sys.modules when the program starts */
static PyObject *cmd_drop_site;
static ptk_progstart cmd_watch; /* when the program starts */

static int
cmd_start_now(void)
{
    cmd_started = 1;
    if (cmd_drop_site != NULL) {
        PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
        PyObject *now = PyDict_GetItemString(mods, "sitecustomize");
        if (now == cmd_drop_site && PyDict_DelItemString(mods, "sitecustomize") < 0) {
            PyErr_Clear();
        }
        Py_CLEAR(cmd_drop_site);
    }
    SessionObject *self = cmd_session;
    cmd_session = NULL;
    PyObject *r = self ? Session_start(self, NULL) : NULL;
    if (r == NULL && self != NULL) {
        /* The start's checks (the output directory, the backend and its
         * events, following children) are made here, when the program
         * starts, and not before from the start-up hook: a start and stop
         * on sys.monitoring made there, while the import system's frames
         * ran, left 3.14's importlib without some of its events in the
         * program (core.backends.Differential.test_objects). A failure is
         * the command's usage error, as when it embeds: status 2, and the
         * program does not run. */
        PyObject *et, *exc, *tb;
        PyErr_Fetch(&et, &exc, &tb);
        PyErr_NormalizeException(&et, &exc, &tb);
        PyObject *args = exc ? PyObject_GetAttrString(exc, "args") : NULL;
        PyObject *msg = args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) > 0 &&
                                PyUnicode_Check(PyTuple_GET_ITEM(args, 0))
                            ? Py_NewRef(PyTuple_GET_ITEM(args, 0))
                            : (exc ? PyObject_Str(exc) : NULL);
        fprintf(stderr, "pytracekit: %s\n",
                msg && PyUnicode_Check(msg) ? PyUnicode_AsUTF8(msg) : "?");
        fflush(stderr);
        fflush(stdout);
        _exit(2);
    }
    Py_XDECREF(r);
    Py_XDECREF(self);
    return 0;
}

static int
cmd_program_starts(const char *event, PyObject *args, void *data)
{
    (void)data;
    if (cmd_started || cmd_session == NULL) {
        return 0;
    }
    return ptk_progstart_event(&cmd_watch, event, args) ? cmd_start_now() : 0;
}

/* _start_with_program(): the session starts when the program does. */
static PyObject *
Session_start_with_program(SessionObject *self, PyObject *args)
{
    PyObject *drop = Py_None;
    if (!PyArg_ParseTuple(args, "|O:_start_with_program", &drop)) {
        return NULL;
    }
    if (cmd_session != NULL || cmd_started) {
        PyErr_SetString(PyExc_RuntimeError, "a session already waits for the program");
        return NULL;
    }
    if (PySys_AddAuditHook(cmd_program_starts, NULL) < 0) {
        return NULL;
    }
    Py_INCREF(self);
    cmd_session = self;
    Py_XSETREF(cmd_drop_site, drop != Py_None ? Py_NewRef(drop) : NULL);
    Py_RETURN_NONE;
}

/* _stop_at_exit(): stop() if running, for atexit (a C callback: no frame
 * of Python code between the program's last event and the stop). */
static PyObject *
Session_stop_at_exit(SessionObject *self, PyObject *unused)
{
    if (self->s != NULL && ptk_session_running(self->s)) {
        return Session_stop(self, unused);
    }
    Py_RETURN_NONE;
}

/* _program_started() -> bool */
static PyObject *
mod_program_started(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(cmd_started);
}

static PyMethodDef Session_methods[] = {
    {"_for_command", (PyCFunction)Session_for_command, METH_NOARGS, NULL},
    {"_start_with_program", (PyCFunction)Session_start_with_program, METH_VARARGS, NULL},
    {"_stop_at_exit", (PyCFunction)Session_stop_at_exit, METH_NOARGS, NULL},
    {"_mark_attached", (PyCFunction)Session_mark_attached, METH_VARARGS, NULL},
    {"add_plugin", (PyCFunction)Session_add_plugin, METH_O,
     "add_plugin(spec): load and add a plugin (attached at once if running)"},
    {"remove_plugin", (PyCFunction)Session_remove_plugin, METH_O,
     "remove_plugin(name): detach a plugin"},
    {"start", (PyCFunction)Session_start, METH_NOARGS, "start delivering events"},
    {"stop", (PyCFunction)Session_stop, METH_NOARGS, "stop delivering events"},
    {"_start_and_run", (PyCFunction)Session_start_and_run, METH_VARARGS,
     "_start_and_run(code, globals): start, then exec code in globals"},
    {"report", (PyCFunction)Session_report, METH_NOARGS,
     "write the reports; returns the number of failed plugins"},
    {"close", (PyCFunction)Session_close, METH_NOARGS, "free the session"},
    {"__enter__", (PyCFunction)Session_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Session_exit, METH_VARARGS,
     "__exit__(*exc): stop, then report(); exceptions propagate"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Session_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(SessionObject, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Session_getset[] = {
    {"running", (getter)Session_get_running, NULL, "whether events flow", NULL},
    {"backend", (getter)Session_get_backend, NULL,
     "the backend in use once started: 'legacy' or 'monitoring' (before: "
     "what was asked for)",
     NULL},
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
    {Py_tp_members, Session_members},
    {Py_tp_doc, (void *)"Session(plugins=(), output_dir='pytracekit-out', "
                        "threads='current', plugin_path=None, "
                        "backend='auto', filter=None, *, include=None, "
                        "exclude=None, modules=None, functions=None, "
                        "thread_names=None, max_depth=None, "
                        "follow_children=False)\n\n"
                        "filter and the keywords after it are the default "
                        "filter of every plugin (docs/filters.md); a "
                        "plugin's own options replace them key by key."},
    {0, NULL},
};

static PyType_Spec Session_spec = {
    .name = "pytracekit._pytracekit.Session",
    .basicsize = sizeof(SessionObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = Session_slots,
};

static PyObject *
mod_version(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    return PyUnicode_FromString(ptk_version_string());
}

/* set_context(name): ptk_context_set(); None or "" ends the context.
 * Returns the new context's id (0: none). */
static PyObject *
mod_set_context(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *name = NULL;
    if (arg != Py_None) {
        if (!PyUnicode_Check(arg)) {
            PyErr_Format(PyExc_TypeError, "set_context() argument must be str or None, "
                                          "not %.100s",
                         Py_TYPE(arg)->tp_name);
            return NULL;
        }
        name = utf8_nonul(arg, "the context's name");
        if (name == NULL) {
            return NULL;
        }
    }
    int rc = ptk_context_set(name);
    if (rc < 0) {
        return raise_str(rc, ptk_strerror(rc));
    }
    uint64_t id;
    ptk_context_current(&id);
    return PyLong_FromUnsignedLongLong(id);
}

/* context(): (id, name) of the current context; (0, None) when none. */
static PyObject *
mod_context(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    uint64_t id;
    const char *name = ptk_context_current(&id);
    return Py_BuildValue("(Kz)", (unsigned long long)id, name);
}

static PyObject *
mod_set_errors(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *base, *by_code;
    if (!PyArg_ParseTuple(args, "OO!:_set_errors", &base, &PyDict_Type, &by_code)) {
        return NULL;
    }
    Py_XSETREF(ErrorBase, Py_NewRef(base));
    Py_XSETREF(ErrorByCode, Py_NewRef(by_code));
    Py_RETURN_NONE;
}

/* The error table (errors.h): [(code, "PTK_NAME", description)]. */
static PyObject *
mod_error_codes(PyObject *m, PyObject *unused)
{
    (void)m;
    (void)unused;
    static const int codes[] = {
#define PTK__CODE(name, value, text) value,
        PTK_ERRNO_MAP(PTK__CODE)
#undef PTK__CODE
    };
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < sizeof codes / sizeof codes[0]; i++) {
        PyObject *t = Py_BuildValue("(iss)", codes[i], ptk_err_name(codes[i]),
                                    ptk_strerror(codes[i]));
        if (t == NULL || PyList_Append(l, t) < 0) {
            Py_XDECREF(t);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(t);
    }
    return l;
}

typedef struct {
    PyObject *list;
    int failed;
} scan_acc;

static const char *const option_types[] = {"?", "bool", "int", "number",
                                           "text", "choice", "list"};

static PyObject *
plugin_record(const char *file, const ptk_plugin_desc *d)
{
    PyObject *events = PyList_New(0);
    PyObject *options = PyList_New(0);
    for (int k = 0; events && k < PTK_EV_COUNT; k++) {
        if (d->events & PTK_MASK(k)) {
            PyObject *n = PyUnicode_FromString(ptk_event_name(k));
            if (n == NULL || PyList_Append(events, n) < 0) {
                Py_CLEAR(events);
            }
            Py_XDECREF(n);
        }
    }
    for (const ptk_option_spec *o = d->options; options && o && o->name; o++) {
        PyObject *t = Py_BuildValue(
            "(sszzz)", o->name, option_types[o->type <= PTK_OPT_LIST ? o->type : 0],
            o->choices, o->default_value, o->help);
        if (t == NULL || PyList_Append(options, t) < 0) {
            Py_CLEAR(options);
        }
        Py_XDECREF(t);
    }
    if (events == NULL || options == NULL) {
        Py_XDECREF(events);
        Py_XDECREF(options);
        return NULL;
    }
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:N,s:N,s:O}", "file", file, "name",
                         d->name, "version", d->version ? d->version : "",
                         "description", d->description ? d->description : "",
                         "events", events, "options", options, "error", Py_None);
}

static void
scan_one(const char *file, const ptk_plugin_desc *d, const char *error,
         void *data)
{
    scan_acc *acc = data;
    if (acc->failed) {
        return;
    }
    PyObject *r = d != NULL
                      ? plugin_record(file, d)
                      : Py_BuildValue("{s:s,s:O,s:s}", "file", file, "name", Py_None, "error",
                                      error ? error : "?");
    if (r == NULL || PyList_Append(acc->list, r) < 0) {
        acc->failed = 1;
    }
    Py_XDECREF(r);
}

static PyObject *
mod_scan(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "|O&:_scan", opt_fspath, &path)) {
        return NULL;
    }
    scan_acc acc = {PyList_New(0), 0};
    if (acc.list != NULL) {
        ptk_plugin_scan(path ? PyBytes_AS_STRING(path) : NULL, scan_one, &acc);
    }
    Py_XDECREF(path);
    if (acc.failed) {
        Py_CLEAR(acc.list);
    }
    return acc.list;
}

/* A str from a command-line argument (file-system encoded). */
static PyObject *
arg_str(const char *s)
{
    return s != NULL ? PyUnicode_DecodeFSDefault(s) : Py_NewRef(Py_None);
}

/* argv[from..to) as a list of str. */
static PyObject *
arg_list(char *const *argv, int from, int to)
{
    PyObject *l = PyList_New(0);
    for (int i = from; l != NULL && i < to; i++) {
        PyObject *a = arg_str(argv[i]);
        if (a == NULL || PyList_Append(l, a) < 0) {
            Py_CLEAR(l);
        }
        Py_XDECREF(a);
    }
    return l;
}

/* {flag: [values]} of the filter flags given. */
static PyObject *
cmdline_filter(const ptk_cmdline *o)
{
#define FLAG_ROW(key, flag, kw, type, help) flag,
    static const char *const flags[] = {PTK_FILTER_KEYS(FLAG_ROW)};
#undef FLAG_ROW
    PyObject *d = PyDict_New();
    for (int k = 0; d != NULL && k < PTK_FILTER_KEY_COUNT; k++) {
        PyObject *l = o->nfilter[k] ? arg_list((char *const *)o->filter[k], 0,
                                               o->nfilter[k])
                                    : NULL;
        if (o->nfilter[k] && (l == NULL || PyDict_SetItemString(d, flags[k], l) < 0)) {
            Py_CLEAR(d);
        }
        Py_XDECREF(l);
    }
    return d;
}

/* What ptk_cmdline_parse read, as python -m pytracekit uses it. */
static PyObject *
cmdline_dict(const ptk_cmdline *o, int argc, char *const *argv)
{
    static const char *const actions[] = {"run", "list", "version", "help"};
    int run = o->action == PTK_CMD_RUN;
    PyObject *target = run ? arg_str(argv[o->program]) : Py_NewRef(Py_None);
    return Py_BuildValue(
        "{s:N,s:N,s:s,s:s,s:N,s:O,s:s,s:z,s:N,s:N,s:N,s:O,s:O}",
        "plugins", arg_list((char *const *)o->plugins, 0, o->nplugins),
        "output", arg_str(o->outdir),
        "threads", o->threads == PTK_THREADS_ALL ? "all" : "current",
        "backend", ptk_backend_name(o->backend),
        "plugin_path", arg_str(o->plugin_path),
        "list", o->action == PTK_CMD_LIST ? Py_True : Py_False,
        "action", actions[o->action], "mode", o->mode,
        "target", target,
        "args", arg_list(argv, run ? o->program + 1 : argc, argc),
        "filter", cmdline_filter(o),
        "follow", o->follow ? Py_True : Py_False,
        "armed", o->armed ? Py_True : Py_False);
}

/* A callable _call_in_main() queued, called in the main thread. */
static int
run_in_main(void *fn)
{
    PyObject *r = PyObject_CallNoArgs((PyObject *)fn);
    if (r == NULL) {
        PyErr_WriteUnraisable((PyObject *)fn);
    }
    Py_XDECREF(r);
    Py_DECREF((PyObject *)fn);
    return 0;
}

/* _call_in_main(fn): fn() in the main thread at its next safe point
 * (Py_AddPendingCall), for pytracekit._attach's --duration timer: a
 * session is stopped where its signal handlers can be put back. */
static PyObject *
mod_call_in_main(PyObject *self, PyObject *fn)
{
    (void)self;
    if (!PyCallable_Check(fn)) {
        return PyErr_Format(PyExc_TypeError, "_call_in_main expects a callable");
    }
    Py_INCREF(fn);
    if (Py_AddPendingCall(run_in_main, fn) < 0) {
        Py_DECREF(fn);
        return PyErr_Format(PyExc_RuntimeError, "the interpreter's queue of "
                                                "pending calls is full");
    }
    Py_RETURN_NONE;
}

/* _parse_command_line(args): the command's arguments (without the
 * command's name) read by the command's own reader (ptk_cmdline.c):
 * (dict, None), or (None, the usage error's message). */
static PyObject *
mod_parse_command_line(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *bytes = PySequence_List(args), *ret = NULL;
    Py_ssize_t n = bytes ? PyList_GET_SIZE(bytes) : 0;
    char **argv = bytes ? calloc((size_t)n + 2, sizeof *argv) : NULL;
    if (argv == NULL) {
        Py_XDECREF(bytes);
        return bytes ? PyErr_NoMemory() : NULL;
    }
    argv[0] = (char *)"pytracekit";
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = NULL, *item = PyList_GET_ITEM(bytes, i);
        if (!PyUnicode_FSConverter(item, &b)) {
            goto done;
        }
        PyList_SET_ITEM(bytes, i, b); /* kept alive by the list */
        Py_DECREF(item);
        argv[i + 1] = PyBytes_AS_STRING(b);
    }
    ptk_cmdline o;
    if (ptk_cmdline_parse((int)n + 1, argv, &o) < 0) {
        ret = Py_BuildValue("(Os)", Py_None, o.error);
    }
    else {
        PyObject *d = cmdline_dict(&o, (int)n + 1, argv);
        ret = d ? Py_BuildValue("(NO)", d, Py_None) : NULL;
    }
    ptk_cmdline_free(&o);
done:
    free(argv);
    Py_DECREF(bytes);
    return ret;
}

/* _command_exit(report_failed, sigint): how the command's process ends
 * (command_exit_hook): a report that failed turns a status of 0 into
 * PTK_EXIT_REPORT_FAILED; a Ctrl-C held while the reports were written
 * ends it by SIGINT. */
static PyObject *
mod_command_exit(PyObject *self, PyObject *args)
{
    (void)self;
    int failed, sigint;
    if (!PyArg_ParseTuple(args, "pp", &failed, &sigint)) {
        return NULL;
    }
    cmd_report_failed = cmd_report_failed || failed;
    cmd_sigint = cmd_sigint || sigint;
    /* Python ends by SIGINT after an uncaught KeyboardInterrupt unless
     * code was evaluated since (the reports may): evaluating one again
     * sets that back (as tools/pytracekit.c rearm_keyboard_interrupt). */
    PyObject *t = PySys_GetObject("last_type"); /* borrowed */
    if (t != NULL && PyType_Check(t) &&
        PyType_IsSubtype((PyTypeObject *)t, (PyTypeObject *)PyExc_KeyboardInterrupt)) {
        PyObject *g = PyDict_New();
        if (g != NULL &&
            PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0) {
            PyObject *r = PyRun_String("raise KeyboardInterrupt", Py_file_input, g, g);
            Py_XDECREF(r);
        }
        Py_XDECREF(g);
        PyErr_Clear();
    }
    if (!cmd_hooked && on_exit(command_exit_hook, NULL) == 0) {
        cmd_hooked = 1;
    }
    Py_RETURN_NONE;
}

/* _json_dumps(value, indent) -> str: the host's json_write into a string
 * (indent: -1 compact, -2 json's default separators, N >= 0 indent=N), for
 * the tests that compare it with json.dumps. */
static PyObject *
mod_json_dumps(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *value;
    int indent;
    if (!PyArg_ParseTuple(args, "Oi", &value, &indent)) {
        return NULL;
    }
    FILE *f = tmpfile();
    if (f == NULL) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    int rc = ptk_host_services()->json_write(f, value, indent);
    long n = rc == 0 && fflush(f) == 0 ? ftell(f) : -1;
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf != NULL) {
        rewind(f);
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    if (rc == -1) {
        free(buf);
        return NULL;
    }
    if (buf == NULL) {
        PyErr_SetString(PyExc_OSError, "json_write: the text could not be written or read back");
        return NULL;
    }
    PyObject *text = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "strict");
    free(buf);
    return text;
}

/* _coverage_config_needed(spec): whether @p spec names the coverage plugin
 * and a coverage.py configuration is there for it to read (cov_config.h). */
static PyObject *
mod_coverage_config_needed(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *spec = PyUnicode_AsUTF8(arg);
    if (spec == NULL) {
        return NULL;
    }
    return PyBool_FromLong(ptk_cli_coverage_config_needed(spec));
}

static PyMethodDef mod_methods[] = {
    {"_json_dumps", mod_json_dumps, METH_VARARGS, NULL},
    {"_command_exit", mod_command_exit, METH_VARARGS, NULL},
    {"_program_started", mod_program_started, METH_NOARGS, NULL},
    {"version", mod_version, METH_NOARGS, "version() -> str: the library's version"},
    {"set_context", mod_set_context, METH_O, NULL},
    {"_coverage_analyze", ptk_py_coverage_analyze, METH_VARARGS, NULL},
    {"context", mod_context, METH_NOARGS, NULL},
    {"_set_errors", mod_set_errors, METH_VARARGS, NULL},
    {"_error_codes", mod_error_codes, METH_NOARGS, NULL},
    {"_scan", mod_scan, METH_VARARGS, NULL},
    {"_parse_command_line", mod_parse_command_line, METH_O, NULL},
    {"_call_in_main", mod_call_in_main, METH_O, NULL},
    {"_coverage_config_needed", mod_coverage_config_needed, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

/* _filter_keys: the one list of filter keys (ptk_filter_keys.h), a tuple
 * of (key, flag, keyword, is_int, help), for python -m pytracekit and the
 * tests that check the usage text and docs against it. */
static PyObject *
filter_keys(void)
{
#define TUPLE_ROW(key, flag, kw, type, help) \
    Py_BuildValue("(sssis)", key, flag, kw, type == PTK_OPT_INT, help),
    PyObject *rows[] = {PTK_FILTER_KEYS(TUPLE_ROW)};
#undef TUPLE_ROW
    PyObject *t = PyTuple_New(PTK_FILTER_KEY_COUNT);
    for (int k = 0; k < PTK_FILTER_KEY_COUNT; k++) {
        if (t == NULL || rows[k] == NULL) {
            Py_XDECREF(rows[k]);
            continue;
        }
        PyTuple_SET_ITEM(t, k, rows[k]);
    }
    for (int k = 0; t != NULL && k < PTK_FILTER_KEY_COUNT; k++) {
        if (rows[k] == NULL) {
            Py_CLEAR(t);
        }
    }
    return t;
}

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT,
    "pytracekit._pytracekit",
    "The C part of the pytracekit package (use the package).",
    -1,
    mod_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__pytracekit(void); /* the module's entry, for the importer alone */

PyMODINIT_FUNC
PyInit__pytracekit(void)
{
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) {
        return NULL;
    }
    PyObject *type = PyType_FromSpec(&Session_spec);
    if (type == NULL || PyModule_AddObject(m, "Session", type) < 0 ||
        PyModule_AddStringConstant(m, "_built_for", PY_VERSION) < 0 ||
        PyModule_AddStringConstant(m, "_usage", PTK_USAGE_TEXT) < 0 ||
        PyModule_AddObject(m, "_filter_keys", filter_keys()) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
