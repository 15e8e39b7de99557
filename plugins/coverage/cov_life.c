/* coverage: init and fini; the plugin's options and entry point. */
#include "cov_private.h"

#include "cov_embedded.h"

static const ptk_option_spec cov_options[] = {
    {"branch", PTK_OPT_BOOL, "false",
     "measure (from, to) line transitions and report branches", NULL},
    {"counts", PTK_OPT_BOOL, "false",
     "count every execution of each line and branch (every LINE event); without it, on "
     "sys.monitoring each line and branch direction is recorded once and switched off",
     NULL},
    {"include", PTK_OPT_LIST, NULL,
     "globs of absolute file paths to measure (',' or ';' separated)", NULL},
    {"exclude", PTK_OPT_LIST, NULL,
     "globs of absolute file paths not to measure", NULL},
    {"calls", PTK_OPT_BOOL, "false",
     "count calls per function (a CALL event per call); false: only whether it ran, "
     "from its lines",
     NULL},
    {"source", PTK_OPT_STRING, NULL,
     "measure only files under this directory; report its unexecuted .py files too", NULL},
    {"coveragepy", PTK_OPT_CHOICE, "no",
     "also write DIR/.coverage through coverage.py's data API (for coverage report/html/"
     "combine): no, yes (error if coverage.py is not importable), auto (if it is)",
     "no|yes|auto"},
    {"html", PTK_OPT_BOOL, "false",
     "also write the HTML report into DIR/html (index.html; no external tool)", NULL},
    {"reports", PTK_OPT_BOOL, "true",
     "write the reports (lcov, Cobertura XML, the summary, html=) and the statement model "
     "in coverage.json at the end of the run; false: write only what ran (coverage.json "
     "marked deferred, and .coverage with coveragepy=), without analysing the code at run "
     "time: `pytracekit report`/`combine` complete it from the sources later",
     NULL},
    {"contexts", PTK_OPT_BOOL, "false",
     "record which lines ran in each context (each test's setup, call and teardown under "
     "pytest -p pytracekit): the JSON's per-line contexts, coverage.py's contexts in "
     ".coverage; with branch=true also the arcs of each context (arc_contexts)",
     NULL},
    {NULL, 0, NULL, NULL, NULL}};

/* ---- init / fini ----------------------------------------------------- */

/*
 * What init needs from Python (startup.py's setup()): the directories of the
 * standard library and of installed packages (only for the default scope,
 * @p need_dirs), whether coverage.py is importable (@p find_coveragepy),
 * and the opcode tables (analysis.py's op_tables()) unless the ones baked
 * in at build time hold (@p baked: the interpreter's magic number is the
 * build's). None when nothing of it is needed: the common case (include=
 * or source=, no coveragepy=) runs no Python and imports nothing.
 */
static PyObject *
python_setup(int find_coveragepy, int need_dirs, int baked)
{
    if (baked && !find_coveragepy && !need_dirs) {
        Py_RETURN_NONE;
    }
    /* Kept in the interpreter's own dict (it goes with the interpreter):
     * what it finds does not change while the process runs, and running it
     * again imports sysconfig and co. afresh each time (they are taken out
     * of sys.modules), whose new module objects other modules' registries
     * keep: a process with many sessions (`pytracekit attach` and detach
     * over and over, docs/attach.md) would grow by each. */
    char key[64];
    snprintf(key, sizeof key, "pytracekit.coverage.setup.%d%d%d", find_coveragepy != 0,
             need_dirs != 0, baked != 0);
    PyObject *cache = PyInterpreterState_GetDict(PyInterpreterState_Get()); /* borrowed */
    PyObject *res = cache ? PyDict_GetItemString(cache, key) : NULL; /* borrowed */
    if (res != NULL) {
        return Py_NewRef(res);
    }
    PyObject *analysis = NULL, *tables = Py_None; /* borrowed */
    if (!baked) {
        /* the opcode tables come from analysis.py (whose c_optable()
         * `pytracekit report` also uses to complete deferred data): one
         * definition of them */
        analysis = cov__load_module("_ptk_coverage_analysis", cov_analysis_py,
                                    cov_analysis_py_code, cov_analysis_py_code_len);
        tables = analysis ? PyDict_GetItemString(analysis, "op_tables") : NULL;
    }
    PyObject *mod = tables ? cov__load_module("_ptk_coverage_setup", cov_startup_py,
                                              cov_startup_py_code, cov_startup_py_code_len)
                           : NULL;
    PyObject *fn = mod ? PyDict_GetItemString(mod, "setup") : NULL; /* borrowed */
    res = fn ? PyObject_CallFunction(fn, "iiO", find_coveragepy, need_dirs, tables) : NULL;
    if (!res && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_RuntimeError, "the embedded set-up or analysis is incomplete");
    }
    Py_XDECREF(mod);
    Py_XDECREF(analysis);
    if (res != NULL && cache != NULL && PyDict_SetItemString(cache, key, res) < 0) {
        PyErr_Clear();
    }
    return res;
}

static void cov_fini(void *state);

/* Whether an option of type bool (or choice, as an int) was set to true. */
static int
opt_on(const ptk_option_value *v)
{
    return v && v->is_set && v->i;
}

/* The string of an option given, or NULL. */
static const char *
opt_str(const ptk_option_value *v)
{
    return v && v->is_set ? v->s : NULL;
}

/* One opcode table of op_tables()'s dict @p tables into @p dst. */
static int
table_bytes(PyObject *tables, const char *key, uint8_t dst[256])
{
    PyObject *b = PyDict_GetItemString(tables, key); /* borrowed */
    if (!b || !PyBytes_Check(b) || PyBytes_GET_SIZE(b) != 256) {
        PyErr_Format(PyExc_ValueError, "bad opcode table %s", key);
        return -1;
    }
    memcpy(dst, PyBytes_AS_STRING(b), 256);
    return 0;
}

/* An opcode (or flag) of op_tables()'s dict @p tables; -1 with an exception. */
static int
table_int(PyObject *tables, const char *key)
{
    PyObject *v = PyDict_GetItemString(tables, key); /* borrowed */
    long n = v && PyLong_Check(v) ? PyLong_AsLong(v) : -1;
    if (n < 0 || n > 255) {
        PyErr_Format(PyExc_ValueError, "bad opcode table entry %s", key);
        return -1;
    }
    return (int)n;
}

/* The opcode tables, from what python_setup() found (@p setup) or as
 * baked at build time (@p baked), and the rest of it: the directories of
 * the default scope (a borrowed list, in *dirs; NULL when there are none),
 * whether coverage.py is importable, whether sys.monitoring has the two
 * branch directions (3.14+). -1 with a Python exception set. */
static int
setup_tables(cov_state *st, PyObject *setup, int baked, PyObject **dirs, int *found,
             int *branch_dirs)
{
    PyObject *tables = Py_None;
    *dirs = NULL;
    *found = 0;
    if (setup != Py_None && !PyArg_ParseTuple(setup, "O!iO", &PyList_Type, dirs, found,
                                              &tables)) {
        return -1;
    }
    if (baked) {
        st->op_resume = COV_OP_RESUME;
        st->op_yield = COV_OP_YIELD_VALUE;
        *branch_dirs = COV_OP_BRANCH_DIRS;
        memcpy(st->opclass, cov_op_opclass, 256);
        memcpy(st->an_ops.flags, cov_op_anflags, 256);
        memcpy(st->an_ops.caches, cov_op_caches, 256);
    }
    else if (!PyDict_Check(tables) || (st->op_resume = table_int(tables, "resume")) < 0
             || (st->op_yield = table_int(tables, "yield_value")) < 0
             || (*branch_dirs = table_int(tables, "branch_dirs")) < 0
             || table_bytes(tables, "opclass", st->opclass) < 0
             || table_bytes(tables, "anflags", st->an_ops.flags) < 0
             || table_bytes(tables, "caches", st->an_ops.caches) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "bad opcode tables");
        }
        return -1;
    }
    st->an_ops.jump_adds_caches = PY_VERSION_HEX >= 0x030C0000;
    const char *how = getenv("PYTRACEKIT_COVERAGE_ANALYSIS");
    st->py_analysis = how && strcmp(how, "python") == 0;
    return 0;
}

/* The same choice as a hub filter: code of files this instance would not
 * record is switched off where it runs (docs/filters.md), instead of
 * reaching on_event to be looked up and dropped. */
static int
set_bus_filter(cov_state *st, const ptk_init_args *args)
{
    const ptk_host *host = st->host;
    if (args->struct_size <= offsetof(ptk_init_args, subscription) ||
        host->struct_size <= offsetof(ptk_host, subscribe_filter)) {
        return PTK_OK;
    }
    char *bus = cov_match_bus_filter(st->match);
    int frc = bus != NULL ? host->subscribe_filter(args->ctx, bus) : PTK_OK;
    free(bus);
    if (frc != PTK_OK) {
        snprintf(args->errbuf, args->errbuf_size, "cannot set the file filter: %s",
                 host->strerror ? host->strerror(frc) : "refused");
    }
    return frc;
}

/* What is measured: include=, exclude=, source= and the default scope's
 * directories @p dirs. PTK_OK, an error code with args->errbuf filled, or
 * PTK_EPYTHON with a Python exception set. */
static int
setup_match(cov_state *st, const ptk_init_args *args, PyObject *dirs)
{
    const ptk_host *host = st->host;
    const char *include = opt_str(host->option(args, "include"));
    const char *source = opt_str(host->option(args, "source"));
    Py_ssize_t ndirs = dirs ? PyList_GET_SIZE(dirs) : 0;
    const char **dirv = calloc((size_t)ndirs + 1, sizeof(char *));
    if (!dirv) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    for (Py_ssize_t i = 0; i < ndirs; i++) {
        dirv[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(dirs, i));
        if (!dirv[i]) {
            free(dirv);
            return PTK_EPYTHON;
        }
    }
    st->match = cov_match_new(include, opt_str(host->option(args, "exclude")), source, dirv,
                              args->errbuf, args->errbuf_size);
    free(dirv);
    if (!st->match) {
        return PTK_EINVAL;
    }
    int rc = set_bus_filter(st, args);
    if (rc != PTK_OK) {
        return rc;
    }
    if ((include && !(st->include = strdup(include)))
        || (source && !(st->source = strdup(source)))) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->file_index = PyDict_New();
    return st->file_index ? PTK_OK : PTK_EPYTHON;
}

/* The events to subscribe to. Branches from BRANCH events where the
 * backend has them (each location switched off once both directions are
 * seen, and every line after its first run), from every LINE event where
 * it has not: those arcs also need every call and return (the fallback
 * kinds, which the session adds only where BRANCH is left out). With
 * contexts=, arcs always come from the line transitions: a branch location
 * switched off once both its directions ran would not tell the arcs of the
 * contexts after, and each context has all of its arcs, as coverage.py's
 * tracers record them. */
static unsigned int
subscribe(cov_state *st, const ptk_init_args *args, int branch_dirs)
{
    unsigned int events = PTK_MASK(PTK_EV_LINE);
    if (st->calls) {
        events |= PTK_MASK(PTK_EV_CALL);
    }
    unsigned from_lines = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN);
    if (st->branch && !st->counts && !st->contexts && args->struct_size > offsetof(ptk_init_args, subscription)
        && args->subscription
        && args->subscription->struct_size > offsetof(ptk_subscription, fallback)) {
        st->sub = args->subscription;
        /* 3.14+: the two directions, each switched off once taken (CPython's
         * BRANCH cannot do that: docs/events.md) */
        unsigned kinds = branch_dirs ? PTK_MASK(PTK_EV_BRANCH_LEFT) | PTK_MASK(PTK_EV_BRANCH_RIGHT)
                                     : PTK_MASK(PTK_EV_BRANCH);
        events |= kinds;
        args->subscription->optional |= kinds;
        args->subscription->fallback |= from_lines & ~events;
    }
    else if (st->branch) {
        events |= from_lines;
    }
    return events;
}

/* The Python exception pending, as init's error message; cleared. */
static void
python_error(const ptk_init_args *args)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *type = NULL, *exc = NULL, *tb = NULL;
    PyErr_Fetch(&type, &exc, &tb);
    PyErr_NormalizeException(&type, &exc, &tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
#endif
    PyObject *s = exc ? PyObject_Str(exc) : NULL;
    snprintf(args->errbuf, args->errbuf_size, "setting up: %s",
             s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "unknown error");
    Py_XDECREF(s);
    Py_XDECREF(exc);
    PyErr_Clear();
}

/* The on/off options, and the choices (reports=, coveragepy=) into @p st;
 * -1 with the reason in the error buffer for a combination refused. */
static int
read_switches(cov_state *st, const ptk_init_args *args)
{
    const ptk_host *host = st->host;
    st->branch = opt_on(host->option(args, "branch"));
    st->counts = opt_on(host->option(args, "counts"));
    st->calls = opt_on(host->option(args, "calls"));
    st->html = opt_on(host->option(args, "html"));
    st->contexts = opt_on(host->option(args, "contexts"));
    const ptk_option_value *reports = host->option(args, "reports");
    st->deferred = reports && reports->is_set && !reports->i;
    if (st->deferred && st->html) {
        snprintf(args->errbuf, args->errbuf_size,
                 "html=true needs the reports at the end of the run (reports=false defers "
                 "them: `pytracekit html` makes the HTML report from the data later)");
        return -1;
    }
    const ptk_option_value *covpy = host->option(args, "coveragepy");
    st->coveragepy = covpy && covpy->is_set ? (int)covpy->i : COVPY_NO;
    return 0;
}

/* contexts=true: each line is recorded (and switched off) once per
 * context; with branch=, every arc (from every line transition, see
 * subscribe). Needs the host's contexts (ABI 1.4). */
static int
setup_contexts(cov_state *st, const ptk_init_args *args)
{
    if (st->host->struct_size <= offsetof(ptk_host, context)
        || args->struct_size <= offsetof(ptk_init_args, subscription) || !args->subscription) {
        snprintf(args->errbuf, args->errbuf_size, "contexts=true needs a host of ABI 1.4");
        return PTK_EUNSUPPORTED;
    }
    args->subscription->flags |= PTK_FLAG_PER_CONTEXT;
    st->ctx_names = PyList_New(0);
    st->ctx_index = PyDict_New();
    return st->ctx_names && st->ctx_index ? PTK_OK : PTK_EPYTHON;
}

static int
cov_init(const ptk_init_args *args, void **state, unsigned int *events)
{
    const ptk_host *host = args->host;
    cov_state *st = calloc(1, sizeof(*st));
    if (!st) {
        snprintf(args->errbuf, args->errbuf_size, "out of memory");
        return PTK_ENOMEM;
    }
    st->host = host;
    st->ctx = args->ctx;
    if (read_switches(st, args) < 0) {
        cov_fini(st);
        return PTK_EINVAL;
    }
    /* the default scope's directories: not needed with include= or source= */
    const char *include = opt_str(host->option(args, "include"));
    const char *source = opt_str(host->option(args, "source"));
    int need_dirs = !(include && *include) && !(source && *source);
    /* the opcode tables baked in at build time hold for the bytecode of the
     * build's magic number (PYTRACEKIT_COVERAGE_SETUP=python: ask Python
     * anyway, as under another interpreter; tests/coverage/test_setup.py) */
    const char *how = getenv("PYTRACEKIT_COVERAGE_SETUP");
    int baked = PyImport_GetMagicNumber() == COV_EMBED_MAGIC
                && !(how && strcmp(how, "python") == 0);
    PyObject *setup = python_setup(st->coveragepy != COVPY_NO, need_dirs, baked);
    PyObject *dirs = NULL;
    int found = 0, branch_dirs = 0;
    int rc = PTK_EPYTHON;
    if (!setup || setup_tables(st, setup, baked, &dirs, &found, &branch_dirs) < 0) {
        goto fail;
    }
    if (st->coveragepy == COVPY_YES && !found) {
        snprintf(args->errbuf, args->errbuf_size,
                 "coveragepy=yes: coverage.py is not importable by this interpreter "
                 "(install it, or use coveragepy=auto)");
        rc = PTK_EINVAL;
        goto fail;
    }
    st->found_coveragepy = found;
    rc = setup_match(st, args, dirs);
    if (rc != PTK_OK) {
        goto fail;
    }
    Py_CLEAR(setup);
    *events = subscribe(st, args, branch_dirs);
    rc = st->contexts ? setup_contexts(st, args) : PTK_OK;
    if (rc != PTK_OK) {
        goto fail;
    }
    *state = st;
    return PTK_OK;

fail:
    if (rc == PTK_EPYTHON) {
        python_error(args);
    }
    Py_XDECREF(setup);
    cov_fini(st);
    return rc;
}

/* Drops every Python reference; needs the GIL. */
static void
cov_release_python(cov_state *st)
{
    for (size_t i = 0; i < st->capcodes; i++) {
        cov_code *c = &st->codes[i];
        if (c->code && c->code != COV_GONE) {
            Py_CLEAR(c->wr); /* first: no callback from here on */
            Py_CLEAR(c->pin);
            Py_CLEAR(c->bytecode);
            cov__code_free(c);
        }
    }
    free(st->codes);
    st->codes = NULL;
    st->capcodes = st->ncodes = 0;
    st->last = NULL;
    for (size_t i = 0; i < st->ndead; i++) {
        Py_DECREF(st->dead[i]);
    }
    free(st->dead);
    st->dead = NULL;
    st->ndead = st->capdead = 0;
    Py_CLEAR(st->gone_cb);
    Py_CLEAR(st->file_index);
    Py_CLEAR(st->ctx_names);
    Py_CLEAR(st->ctx_index);
    Py_CLEAR(st->analysis);
    Py_CLEAR(st->format);
}

static void
cov_fini(void *state)
{
    cov_state *st = state;
    if (!st) {
        return;
    }
    if (st->gone_box) {
        *st->gone_box = NULL; /* a callback from here on does nothing */
    }
    if (st->codes || st->analysis || st->format || st->file_index || st->gone_cb ||
        st->ctx_names || st->ctx_index) {
        if (Py_IsInitialized()) {
            PyGILState_STATE g = PyGILState_Ensure();
            cov_release_python(st);
            PyGILState_Release(g);
        }
        else {
            for (size_t i = 0; i < st->capcodes; i++) {
                cov__code_free(&st->codes[i]);
            }
            free(st->codes); /* the interpreter and its objects are gone */
            free(st->dead);
        }
    }
    ptk_kit_map_free(&st->wrs);
    for (size_t i = 0; i < st->nrecs; i++) {
        cov__rec_free(st->recs[i]);
    }
    free(st->recs);
    for (size_t i = 0; i < st->nfiles; i++) {
        cov__file_free(st->files[i]);
    }
    free(st->files);
    for (size_t i = 0; i < st->nthreads; i++) {
        free(st->threads[i].slots);
        for (size_t j = 0; j < st->threads[i].nsaved; j++) {
            free(st->threads[i].saved[j].slots);
        }
        free(st->threads[i].saved);
    }
    free(st->threads);
    cov_match_free(st->match);
    free(st->include);
    free(st->source);
    free(st);
}


static const ptk_plugin_desc cov_desc = {
    PTK_PLUGIN_HEADER,
    .name = "coverage",
    .version = COV_VERSION,
    .description = "line, function and branch coverage (lcov, Cobertura XML, JSON)",
    .events = PTK_MASK(PTK_EV_LINE) | PTK_MASK(PTK_EV_CALL),
    /* its slots per frame follow the hub's depth per execution context */
    .flags = PTK_FLAG_EXEC_CONTEXT,
    .options = cov_options,
    .init = cov_init,
    .on_event = cov__on_event,
    .on_ref = NULL,
    .report = cov__report,
    .fini = cov_fini,
};

PTK_PLUGIN_DEFINE(cov_desc)
