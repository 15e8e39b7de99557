/* pytracekit: runs a Python program under chosen plugins.
 *
 *   pytracekit [-p PLUGIN[:KEY=VALUE,...]]... [-o DIR] [--threads current|all]
 *              [--plugin-path DIR] (SCRIPT | -m MODULE | -c CODE) [ARGS...]
 *
 * The program sees the same sys.argv, sys.path[0] and __main__ as under
 * `python`: the interpreter is configured from the equivalent python
 * command line and run with Py_RunMain(). The session is checked (started
 * and stopped) before Python runs anything, and started for good when the
 * program starts (the audit event cpython.run_file, run_module,
 * run_command or run_stdin): what the interpreter does before, such as
 * asking whether the script is a zip file, is not the program's. Reports
 * are written from an atexit callback, so they are written when the
 * program returns, raises, calls sys.exit or is interrupted, and before
 * os._exit in the same process; the exit status is the program's own.
 *
 * Built for a statically linked interpreter whose static archive does not
 * link (cmake/libpython.cmake: PTK_EXEC_INTERPRETER), the command does not
 * embed the slower shared libpython: after reading its arguments it execs
 * the interpreter with the same python command line and a start-up hook
 * that does the above in that process (python/pytracekit/_command/,
 * docs/building.md). PYTRACEKIT_LAUNCH=auto|embed|exec chooses. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pytracekit/pytracekit.h>

#include "cov_config.h"
#include "follow_wait.h"
#include "ptk_cmdline.h"
#include "ptk_progstart.h"
#include "ptk_usage.h"

#define EXIT_USAGE 2

static ptk_session *session;
/* A plugin's report failed, or tracing could not start: the run did not
 * produce what it was asked to (exit status 1 when the program's is 0). */
static int report_failed;
static int program_started; /* the program's start was seen */
static int sigint_at_exit;  /* Ctrl-C came while the reports were written */
/* With --follow-children: the report directory, and the pid-N directories
 * in it before the program ran (children of earlier runs). */
static const char *follow_outdir;
static child_dirs follow_before;
static const char *report_dir; /* -o DIR */
static long main_pid;          /* the process the command started as */

/* Runs in exit() with the status given to it (also when sys.exit() ends
 * the program, which exits from inside Py_RunMain): followed children get
 * a bounded wait for their reports; a Ctrl-C held while
 * reports were written ends the process by SIGINT now; a report that could
 * not be written turns a status of 0 into PTK_EXIT_REPORT_FAILED. */
static void
exit_status_hook(int status, void *unused)
{
    (void)unused;
    fflush(NULL);
    if (follow_outdir != NULL) {
        /* the program and Python are done (main's return, or Py_Exit) */
        ptk_close_inherited();
        ptk_wait_for_children(follow_outdir, &follow_before, 0);
        follow_outdir = NULL;
    }
    if (sigint_at_exit) {
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    }
    if (status == 0 && report_failed) {
        _exit(PTK_EXIT_REPORT_FAILED);
    }
}

static void
usage(FILE *out)
{
    fputs(PTK_USAGE_TEXT, out);
}

static void
list_one(const char *file, const ptk_plugin_desc *d, const char *error,
         void *data)
{
    (void)data;
    if (d == NULL) {
        printf("%s: rejected: %s\n", file, error ? error : "?");
        return;
    }
    printf("%s %s — %s\n  file: %s\n  events:", d->name,
           d->version ? d->version : "", d->description ? d->description : "",
           file);
    for (int k = 0; k < PTK_EV_COUNT; k++) {
        if (d->events & PTK_MASK(k)) {
            printf(" %s", ptk_event_name(k));
        }
    }
    printf("\n");
    for (const ptk_option_spec *o = d->options; o && o->name; o++) {
        static const char *const types[] = {"?", "bool", "int", "number",
                                            "text", "choice", "list"};
        printf("  option %s (%s%s%s) default %s: %s\n", o->name,
               types[o->type <= PTK_OPT_LIST ? o->type : 0],
               o->choices ? ": " : "", o->choices ? o->choices : "",
               o->default_value ? o->default_value : "(none)",
               o->help ? o->help : "");
    }
}

/* Did the program end with an uncaught KeyboardInterrupt? PyErr_Print()
 * leaves its type in sys.last_type before atexit runs. */
static int
ended_by_keyboard_interrupt(void)
{
    PyObject *t = PySys_GetObject("last_type"); /* borrowed */
    return t != NULL && PyType_Check(t) &&
           PyType_IsSubtype((PyTypeObject *)t,
                            (PyTypeObject *)PyExc_KeyboardInterrupt);
}

/* Py_RunMain exits by SIGINT after an uncaught KeyboardInterrupt, as
 * python does, unless some code was evaluated meanwhile: every eval/exec
 * resets that flag (a plugin's report importing json does). Evaluating a
 * KeyboardInterrupt sets it again. */
static void
rearm_keyboard_interrupt(void)
{
    PyObject *g = PyDict_New();
    if (g != NULL &&
        PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0) {
        PyObject *r = PyRun_String("raise KeyboardInterrupt", Py_file_input,
                                   g, g);
        Py_XDECREF(r);
    }
    Py_XDECREF(g);
    PyErr_Clear();
}

/* Does DIR/pyvenv.cfg exist and name a Python of our major.minor (exact:
 * our very version, PY_VERSION)? */
static int
venv_matches(const char *dir, int exact)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pyvenv.cfg", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    char want[16], line[1024];
    if (exact) {
        snprintf(want, sizeof want, "%s", PY_VERSION);
    }
    else {
        snprintf(want, sizeof want, "%d.%d.", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    }
    int ok = 0;
    while (!ok && fgets(line, sizeof line, f)) {
        char *p = line;
        if (strncmp(p, "version_info", 12) == 0) {
            p += 12;
        }
        else if (strncmp(p, "version", 7) == 0) {
            p += 7;
        }
        else {
            continue;
        }
        p += strspn(p, " \t");
        if (*p++ != '=') {
            continue;
        }
        p += strspn(p, " \t");
        size_t n = strlen(want);
        ok = strncmp(p, want, n) == 0 &&
             (!exact || strchr(" .\r\n", p[n]) != NULL);
    }
    fclose(f);
    return ok;
}

/* DIR/python3.X, else DIR/python3, if executable: into @p out. */
static int
python_in(const char *dir, char *out, size_t size)
{
    snprintf(out, size, "%s/python%d.%d", dir, PY_MAJOR_VERSION, PY_MINOR_VERSION);
    if (access(out, X_OK) == 0) {
        return 1;
    }
    snprintf(out, size, "%s/python%d", dir, PY_MAJOR_VERSION);
    return access(out, X_OK) == 0;
}

/* The interpreter this run stands for, as `python` would be found: its
 * path decides sys.executable and, through a pyvenv.cfg next to it or one
 * directory up, sys.prefix and sys.path (CPython's getpath). In order:
 *  - the command installed in a virtual environment (<venv>/bin/pytracekit,
 *    <venv>/pyvenv.cfg for our Python version): <venv>/bin/python3.X;
 *  - an activated virtual environment ($VIRTUAL_ENV) made by a Python of
 *    exactly our version (the command links that version's libpython);
 *  - the command next to an interpreter of our version (installed into a
 *    Python's own prefix): that interpreter;
 *  - the interpreter the command was built with. */
static const char *
choose_python(char *buf, size_t size)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0'; /* <prefix>/bin */
            char up[sizeof self + 4];
            snprintf(up, sizeof up, "%s/..", self);
            if ((venv_matches(self, 0) || venv_matches(up, 0)) &&
                python_in(self, buf, size)) {
                return buf;
            }
        }
    }
    const char *venv = getenv("VIRTUAL_ENV");
    if (venv != NULL && *venv && venv_matches(venv, 1)) {
        char bin[4096];
        snprintf(bin, sizeof bin, "%s/bin", venv);
        if (python_in(bin, buf, size)) {
            return buf;
        }
    }
    if (n > 0) {
        int len = snprintf(buf, size, "%s/python%d.%d", self, PY_MAJOR_VERSION,
                           PY_MINOR_VERSION);
        if (len > 0 && (size_t)len < size && access(buf, X_OK) == 0) {
            return buf;
        }
    }
    return PTK_PYTHON_EXECUTABLE;
}

/* Called by atexit at interpreter shutdown: stop and write the reports. */
static PyObject *
finish(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int sigint = ended_by_keyboard_interrupt();
    /* A forked child reports only if children are followed (then into
     * its own pid-N/): the library decides (lib/session/process.c). */
    if (session != NULL && !program_started) {
        /* the program never started (a script that cannot be opened) */
        ptk_session_free(session);
        session = NULL;
    }
    if (session != NULL) {
        char *err = NULL;
        ptk_session_stop(session);
        int failed_before = ptk_session_failures(session);
        /* failures are printed per plugin; those of the run keep the
         * program's exit status, a report that failed does not */
        if (ptk_session_report(session, &err) < 0 ||
            ptk_session_failures(session) > failed_before) {
            report_failed = 1;
        }
        ptk_free(err);
        ptk_session_free(session);
        session = NULL;
        if ((long)getpid() == main_pid) {
            fprintf(stderr, "pytracekit: reports in %s/ (run.json lists them)\n",
                    report_dir);
        }
        /* A Ctrl-C held while the reports were written is pending now. */
        if (PyErr_CheckSignals() < 0) {
            if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
                sigint_at_exit = 1;
            }
            PyErr_Clear();
        }
    }
    if (sigint) {
        rearm_keyboard_interrupt();
    }
    Py_RETURN_NONE;
}

static PyMethodDef finish_def = {"_pytracekit_finish", finish, METH_NOARGS,
                                 "write pytracekit's reports"};

/* The audit hook: starts the session when the program starts. A script
 * that cannot be read is not started (python says why and exits 2). For
 * -c, the start is the exec of the command's own code ("<string>"): in
 * between, 3.13 imports linecache to keep the command's source. */
static ptk_progstart watch; /* when the program starts */

static int
start_now(void)
{
    program_started = 1;
    char *err = NULL;
    int rc = ptk_session_start(session, &err);
    if (rc < 0) {
        /* It started before (every check passed), so this is a resource
         * running out: the program runs all the same, untraced, and the
         * run does not count as a success. */
        fprintf(stderr,
                "pytracekit: cannot start tracing: %s; the program runs "
                "without it and no report is written\n",
                err ? err : ptk_strerror(rc));
        ptk_free(err);
        ptk_session_free(session);
        session = NULL;
        report_failed = 1;
    }
    return 0;
}

static int
program_starts(const char *event, PyObject *args, void *data)
{
    (void)data;
    if (program_started || session == NULL) {
        return 0;
    }
    return ptk_progstart_event(&watch, event, args) ? start_now() : 0;
}

/* os._exit ends the process without atexit: in the process that traces,
 * the reports are written first. */
static PyObject *real_os_exit;

static PyObject *
os_exit(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    if (session != NULL) { /* the library writes nothing in an unfollowed child */
        Py_XDECREF(finish(NULL, NULL));
        if (report_failed && args != NULL && PyTuple_GET_SIZE(args) == 1 &&
            PyLong_Check(PyTuple_GET_ITEM(args, 0)) &&
            PyLong_AsLong(PyTuple_GET_ITEM(args, 0)) == 0) {
            return PyObject_CallFunction(real_os_exit, "i", PTK_EXIT_REPORT_FAILED);
        }
    }
    return PyObject_Call(real_os_exit, args, kwargs);
}

static PyMethodDef os_exit_def = {"_exit", (PyCFunction)(void (*)(void))os_exit,
                                  METH_VARARGS | METH_KEYWORDS,
                                  "os._exit, after pytracekit's reports"};

static int
wrap_os_exit(void)
{
    PyObject *os = PyImport_ImportModule("os");
    real_os_exit = os ? PyObject_GetAttrString(os, "_exit") : NULL;
    PyObject *fn = real_os_exit ? PyCFunction_New(&os_exit_def, NULL) : NULL;
    int rc = fn ? PyObject_SetAttrString(os, "_exit", fn) : -1;
    Py_XDECREF(fn);
    Py_XDECREF(os);
    if (rc < 0) {
        PyErr_Print();
    }
    return rc;
}

/* atexit.register(finish). The interpreter keeps the registrations, not
 * the module: atexit leaves sys.modules again if it was not there, for
 * the program to import (or not) as it would without pytracekit. */
static int
register_finish(void)
{
    PyObject *name = PyUnicode_FromString("atexit");
    PyObject *had = name ? PyImport_GetModule(name) : NULL;
    PyErr_Clear();
    PyObject *atexit = name ? PyImport_Import(name) : NULL;
    PyObject *fn = PyCFunction_New(&finish_def, NULL);
    PyObject *r = atexit && fn ? PyObject_CallMethod(atexit, "register", "O", fn)
                               : NULL;
    if (r != NULL && had == NULL && PyDict_DelItem(PyImport_GetModuleDict(), name) < 0) {
        PyErr_Clear();
    }
    Py_XDECREF(r);
    Py_XDECREF(fn);
    Py_XDECREF(atexit);
    Py_XDECREF(had);
    Py_XDECREF(name);
    if (r == NULL) {
        PyErr_Print();
        return -1;
    }
    return 0;
}

/* The directory holding this build's (build tree) or installation's
 * pytracekit Python package, into @p dir; 0 if there is none. */
static int
package_dir(char *dir, size_t size, char *exe, size_t exe_size)
{
    ssize_t n = readlink("/proc/self/exe", exe, exe_size - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
    const char *rel[] = {"../python", PTK_PYTHONDIR_FROM_BINDIR};
    dir[0] = '\0';
    for (int k = 0; k < 2 && dir[0] == '\0'; k++) {
        char probe[4096 + 300];
        snprintf(probe, sizeof probe, "%s/%s/pytracekit/__main__.py", exe, rel[k]);
        if (access(probe, R_OK) == 0) {
            snprintf(dir, size, "%s/%s", exe, rel[k]);
        }
    }
    return dir[0] != '\0';
}

/* Puts @p dir first on PYTHONPATH (saving the old value in
 * _PYTRACEKIT_PYTHONPATH when @p save). */
static int
prepend_pythonpath(const char *dir, int save)
{
    const char *old = getenv("PYTHONPATH");
    if (save && old != NULL && setenv("_PYTRACEKIT_PYTHONPATH", old, 1) < 0) {
        return -1;
    }
    size_t len = strlen(dir) + (old ? strlen(old) + 1 : 0) + 1;
    char *pp = malloc(len);
    if (pp == NULL) {
        return -1;
    }
    snprintf(pp, len, "%s%s%s", dir, old && old[0] ? ":" : "", old ? old : "");
    int rc = setenv("PYTHONPATH", pp, 1);
    free(pp);
    return rc;
}

/* Replaces this process by `PYTHON -m pytracekit ARGV[1:]`, with the
 * package directory @p dir first on PYTHONPATH. Returns only if the exec
 * failed. */
static void
exec_module(const char *python, const char *dir, int argc, char **argv)
{
    if (prepend_pythonpath(dir, 0) < 0) {
        return;
    }
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (args == NULL) {
        return;
    }
    int k = 0;
    args[k++] = (char *)python;
    args[k++] = (char *)"-m";
    args[k++] = (char *)"pytracekit";
    for (int i = 1; i < argc; i++) {
        args[k++] = argv[i];
    }
    execv(python, args);
    int e = errno;
    free(args);
    errno = e;
}

/* Replaces this process by the interpreter running the program as
 * `python` would (@p pargv, from python_argv()), with the command's start-up
 * hook (python/pytracekit/_command/sitecustomize.py) first on PYTHONPATH
 * and the command's arguments (ARGV[1:], hex, comma-separated) in
 * _PYTRACEKIT_COMMAND; the hook puts the environment back. Returns only if
 * the exec failed. */
static void
exec_program(const char *python, const char *dir, int argc, char **argv,
             char **pargv)
{
    size_t len = 1;
    for (int i = 1; i < argc; i++) {
        len += 2 * strlen(argv[i]) + 1;
    }
    char *hex = malloc(len), *h = hex;
    char hook[4096 + 300];
    snprintf(hook, sizeof hook, "%s/pytracekit/_command", dir);
    if (hex == NULL) {
        errno = ENOMEM;
        return;
    }
    *h = '\0';
    for (int i = 1; i < argc; i++) {
        for (const unsigned char *c = (const unsigned char *)argv[i]; *c; c++) {
            h += sprintf(h, "%02x", *c);
        }
        *h++ = ',';
        *h = '\0';
    }
    if (setenv("_PYTRACEKIT_COMMAND", hex, 1) == 0 &&
        setenv("_PYTRACEKIT_PKGDIR", dir, 1) == 0 && prepend_pythonpath(hook, 1) == 0) {
        execv(python, pargv);
    }
    int e = errno;
    free(hex);
    errno = e;
}

/* `pytracekit combine ...` is `python -m pytracekit combine ...` with the
 * pytracekit package of this build (build tree) or installation; so are
 * attach, detach and dump (pytracekit/_attach_cli.py). */
static int
run_combine(int argc, char **argv)
{
    char exe[4096], dir[4096 + 256];
    if (!package_dir(dir, sizeof dir, exe, sizeof exe)) {
        fprintf(stderr, "pytracekit: %s: the pytracekit Python package "
                    "is not installed next to %s\n",
            argv[1], exe);
        return EXIT_USAGE;
    }
    exec_module(PTK_PYTHON_EXECUTABLE, dir, argc, argv);
    fprintf(stderr, "pytracekit: %s: cannot run %s: %s\n", argv[1],
            PTK_PYTHON_EXECUTABLE, strerror(errno));
    return EXIT_USAGE;
}

/* How the program is run: inside this process, on the libpython the
 * command links (embed), or by the interpreter's own executable running
 * `-m pytracekit` (exec). exec is faster where the build found the
 * interpreter statically linked and the command linked to the shared
 * libpython instead (cmake/libpython.cmake: Debian's, Ubuntu's, Fedora's
 * python3.X), which runs every program about a third slower, and is the
 * default there; the environment variable PYTRACEKIT_LAUNCH=auto|embed|exec chooses (exec
 * needs the pytracekit package next to the command: the build tree's, or
 * the installation's). 1 for exec, 0 for embed, -1 (and a message) for
 * another value. */
static int
launch_by_exec(void)
{
    const char *v = getenv("PYTRACEKIT_LAUNCH");
    if (v == NULL || v[0] == '\0' || strcmp(v, "auto") == 0) {
        return PTK_EXEC_INTERPRETER;
    }
    if (strcmp(v, "exec") == 0) {
        return 1;
    }
    if (strcmp(v, "embed") == 0) {
        return 0;
    }
    fprintf(stderr, "pytracekit: PYTRACEKIT_LAUNCH=%s: expected auto, embed or exec\n", v);
    return -1;
}

/* The python command line this run is equivalent to (the interpreter,
 * then -m MODULE, -c CODE or the script, and the program's arguments). */
static char **
python_argv(int argc, char **argv, const ptk_cmdline *o, const char *python,
            int *pargc)
{
    char **pargv = calloc((size_t)(argc + 4), sizeof *pargv);
    int i = o->program;
    *pargc = 0;
    if (pargv == NULL) {
        fprintf(stderr, "pytracekit: out of memory\n");
        return NULL;
    }
    pargv[(*pargc)++] = (char *)python;
    if (o->mode != NULL) {
        pargv[(*pargc)++] = (char *)o->mode;
    }
    else if (argv[i][0] == '-' && argv[i][1] != '\0') {
        pargv[(*pargc)++] = (char *)"--"; /* a script named like an option */
    }
    for (; i < argc; i++) {
        pargv[(*pargc)++] = argv[i];
    }
    return pargv;
}

/* Starts the interpreter for the program; -1 with *status the command's
 * exit status (Python's own when it exits, e.g. for a bad -X option). */
static int
start_python(int pargc, char **pargv, const char *python, int *status)
{
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    PyStatus st = PyConfig_SetBytesArgv(&config, pargc, pargv);
    if (!PyStatus_Exception(st) && access(python, X_OK) == 0) {
        /* sys.executable: the interpreter, so that subprocesses work, and
         * whose pyvenv.cfg (if any) makes sys.prefix the venv's */
        st = PyConfig_SetBytesString(&config, &config.executable, python);
    }
    if (!PyStatus_Exception(st)) {
        st = PyConfig_SetBytesString(&config, &config.program_name, python);
    }
    if (!PyStatus_Exception(st)) {
        st = Py_InitializeFromConfig(&config);
    }
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        if (PyStatus_IsExit(st)) {
            *status = st.exitcode;
            return -1;
        }
        fprintf(stderr, "pytracekit: cannot start Python: %s\n",
                st.err_msg ? st.err_msg : "?");
        *status = EXIT_USAGE;
        return -1;
    }
    return 0;
}

/* The session with its plugins, every check made before the program (a
 * start and a stop), and the hooks that start it with the program. */
static int
prepare_session(ptk_cmdline *o, const char *filter, char **err)
{
    ptk_session_config cfg = PTK_SESSION_CONFIG_INIT;
    cfg.filter = filter;
    cfg.output_dir = o->outdir;
    cfg.threads = o->threads;
    cfg.backend = o->backend;
    cfg.plugin_path = o->plugin_path;
    int rc = ptk_session_new(&cfg, &session, err);
    for (int p = 0; rc == PTK_OK && p < o->nplugins; p++) {
        char *spec = NULL; /* coverage: with the project's coverage.py [run] */
        rc = ptk_cli_coverage_config(o->plugins[p], &spec, &o->follow, err) < 0
                 ? PTK_EINVAL
                 : ptk_session_add_plugin(session, spec ? spec : o->plugins[p], err);
        free(spec);
    }
    if (rc == PTK_OK) {
        ptk_session_follow_children(session, o->follow);
    }
    if (rc == PTK_OK) {
        rc = register_finish() < 0 ? PTK_EPYTHON : PTK_OK;
    }
    if (rc == PTK_OK) {
        /* every check now, before the program; the events from its start */
        rc = ptk_session_start(session, err);
        if (rc == PTK_OK) {
            ptk_session_stop(session);
            rc = wrap_os_exit() < 0 || PySys_AddAuditHook(program_starts, NULL) < 0
                     ? PTK_EPYTHON
                     : PTK_OK;
        }
    }
    return rc;
}

/* --armed: no session; pytracekit._attach.arm() before the program (the
 * package from sys.path, else the one next to the command, which then
 * leaves sys.path again). 0, or -1 after printing why. */
static int
arm_program(void)
{
    static const char src[] =
        "import sys\n"
        "try:\n"
        "    import pytracekit._attach as a\n"
        "except ImportError:\n"
        "    if not pkgdir:\n"
        "        raise\n"
        "    sys.path.insert(0, pkgdir)\n"
        "    try:\n"
        "        import pytracekit._attach as a\n"
        "    finally:\n"
        "        sys.path.remove(pkgdir)\n"
        "a.arm()\n";
    char exe[4096], dir[4096 + 256];
    int have = package_dir(dir, sizeof dir, exe, sizeof exe);
    PyObject *g = PyDict_New();
    PyObject *d = have ? PyUnicode_DecodeFSDefault(dir) : Py_NewRef(Py_None);
    PyObject *r = NULL;
    if (g != NULL && d != NULL && PyDict_SetItemString(g, "pkgdir", d) == 0 &&
        PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) == 0) {
        r = PyRun_String(src, Py_file_input, g, g);
    }
    Py_XDECREF(d);
    Py_XDECREF(g);
    if (r == NULL) {
        fprintf(stderr, "pytracekit: --armed: cannot arm the program:\n");
        PyErr_Print();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* --list-plugins: plugins are C code that uses the Python C API, so they
 * are loaded with an interpreter around. */
static int
list_plugins(const char *plugin_path)
{
    Py_InitializeEx(0);
    ptk_plugin_scan(plugin_path, list_one, NULL);
    Py_FinalizeEx();
    return 0;
}

/* --version, --help, --list-plugins: their exit status; -1 for a run. */
static int
informational(const ptk_cmdline *o)
{
    switch (o->action) {
    case PTK_CMD_VERSION:
        printf("pytracekit %s (built for Python %s)\n", ptk_version_string(), PY_VERSION);
        return 0;
    case PTK_CMD_HELP:
        usage(stdout);
        return 0;
    case PTK_CMD_LIST:
        return list_plugins(o->plugin_path);
    default:
        return -1;
    }
}

/* The program, in this process's interpreter (started): armed (no session
 * to start in it) or under the session the options make; its exit status. */
static int
run_here(ptk_cmdline *o)
{
    if (o->armed) {
        if (arm_program() < 0) {
            Py_FinalizeEx();
            return EXIT_USAGE;
        }
        return Py_RunMain(); /* runs the program, then finalises */
    }
    int oom;
    char *filter = ptk_cmdline_filter_text(o, &oom), *err = NULL;
    int rc = oom ? PTK_ENOMEM : prepare_session(o, filter, &err);
    if (rc < 0) {
        fprintf(stderr, "pytracekit: %s\n", err ? err : ptk_strerror(rc));
        ptk_free(err);
        ptk_session_free(session);
        session = NULL;
        Py_FinalizeEx();
        free(filter);
        return EXIT_USAGE;
    }
    if (o->follow) {
        follow_outdir = o->outdir;
        ptk_child_dirs_read(o->outdir, &follow_before);
    }
    report_dir = o->outdir;
    main_pid = (long)getpid();
    on_exit(exit_status_hook, NULL);
    int status = Py_RunMain(); /* runs the program, then finalises */
    if (status == 0 && report_failed) {
        status = PTK_EXIT_REPORT_FAILED;
    }
    free(filter);
    return status;
}

int
main(int argc, char **argv)
{
    static const char *const python_side[] = {"combine", "report", "html", "xml",
                                              "json", "lcov", "attach", "detach",
                                              "dump"};
    for (size_t k = 0; argc > 1 && k < sizeof python_side / sizeof *python_side; k++) {
        if (strcmp(argv[1], python_side[k]) == 0) {
            return run_combine(argc, argv);
        }
    }
    ptk_cmdline o;
    int status = 0, pargc;
    if (ptk_cmdline_parse(argc, argv, &o) < 0) {
        fprintf(stderr, "pytracekit: %s\n", o.error);
        ptk_cmdline_free(&o);
        return EXIT_USAGE;
    }
    if ((status = informational(&o)) >= 0) {
        ptk_cmdline_free(&o);
        return status;
    }
    char pybuf[4096];
    const char *python = choose_python(pybuf, sizeof pybuf);
    int by_exec = launch_by_exec();
    if (by_exec < 0) {
        ptk_cmdline_free(&o);
        return EXIT_USAGE;
    }
    /* exec: the same arguments, read again by the same reader in the
     * start-up hook; without the package next to the command, embedded */
    char exe[4096], dir[4096 + 256];
    if (by_exec && (o.armed || !package_dir(dir, sizeof dir, exe, sizeof exe))) {
        by_exec = 0; /* --armed: no session to start in the program */
    }
    char **pargv = python_argv(argc, argv, &o, python, &pargc);
    if (pargv == NULL) {
        return EXIT_USAGE;
    }
    if (by_exec) {
        exec_program(python, dir, argc, argv, pargv);
        fprintf(stderr, "pytracekit: cannot run %s: %s\n", python, strerror(errno));
        ptk_cmdline_free(&o);
        free(pargv);
        return EXIT_USAGE;
    }
    if (start_python(pargc, pargv, python, &status) < 0) {
        return status;
    }
    status = run_here(&o);
    ptk_cmdline_free(&o);
    free(pargv);
    return status;
}
