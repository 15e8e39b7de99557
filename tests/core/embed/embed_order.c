/*
 * embed_order: a program that embeds CPython and calls pytracekit in the
 * orders an embedder can get wrong around Py_FinalizeEx.
 *
 *   embed_order CASE OUTPUT_DIR
 *
 * Every call prints one line "STEP: RESULT" (the error name and message for
 * a failure), so that the test (test_embed.py) checks what each call said.
 * The process must never crash; its exit status is 0 when it got to the end.
 * EMBED_PLUGIN names the plugin of the first session (default counter).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pytracekit/pytracekit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *outdir;

static void
init(void)
{
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    PyStatus st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        Py_ExitStatusException(st);
    }
}

static void
say(const char *step, int rc, char *err)
{
    if (rc < 0) {
        printf("%s: %s: %s\n", step, ptk_err_name(rc), err ? err : ptk_strerror(rc));
    }
    else {
        printf("%s: ok\n", step);
    }
    ptk_free(err);
    fflush(stdout);
}

static void
run(const char *code)
{
    PyObject *g = PyDict_New();
    PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
    PyObject *r = PyRun_String(code, Py_file_input, g, g);
    if (r == NULL) {
        PyErr_Print();
        exit(3);
    }
    Py_DECREF(r);
    Py_DECREF(g);
}

static const char work[] =
    "def fib(n):\n"
    "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    "fib(10)\n";

/* A session with counter writing to OUTPUT_DIR/sub. */
static ptk_session *
session(const char *sub, int start)
{
    ptk_session_config cfg = PTK_SESSION_CONFIG_INIT;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", outdir, sub);
    cfg.output_dir = dir;
    ptk_session *s = NULL;
    char *err = NULL;
    int rc = ptk_session_new(&cfg, &s, &err);
    if (rc == PTK_OK) {
        const char *spec = getenv("EMBED_PLUGIN");
        rc = ptk_session_add_plugin(s, spec ? spec : "counter:top=0", &err);
    }
    if (rc == PTK_OK && start) {
        rc = ptk_session_start(s, &err);
    }
    if (rc < 0) {
        say("session", rc, err);
        exit(4);
    }
    return s;
}

static void
report(ptk_session *s, const char *step)
{
    char *err = NULL;
    int rc = ptk_session_report(s, &err);
    say(step, rc, err);
}

static void
stop(ptk_session *s, const char *step)
{
    say(step, ptk_session_stop(s), NULL);
}

static void
start(ptk_session *s, const char *step)
{
    char *err = NULL;
    int rc = ptk_session_start(s, &err);
    say(step, rc, err);
}

int
main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: embed_order CASE OUTPUT_DIR\n");
        return 2;
    }
    const char *c = argv[1];
    outdir = argv[2];
    if (strcmp(c, "three_cycles") == 0) {
        /* initialise -> trace -> finalize, three times */
        for (int i = 1; i <= 3; i++) {
            char sub[24]; /* "cycle" and any int */
            snprintf(sub, sizeof sub, "cycle%d", i);
            init();
            ptk_session *s = session(sub, 1);
            run(work);
            stop(s, "stop");
            report(s, "report");
            ptk_session_free(s);
            say("finalize", Py_FinalizeEx() < 0 ? PTK_EPYTHON : PTK_OK, NULL);
        }
    }
    else if (strcmp(c, "report_after_finalize") == 0) {
        init();
        ptk_session *s = session("a", 1);
        run(work);
        stop(s, "stop");
        Py_FinalizeEx();
        report(s, "report after finalize");
        ptk_session_free(s);
    }
    else if (strcmp(c, "free_running_after_finalize") == 0) {
        init();
        ptk_session *s = session("a", 1);
        run(work);
        Py_FinalizeEx();
        stop(s, "stop after finalize");
        ptk_session_free(s);
    }
    else if (strcmp(c, "stop_finalize_free") == 0) {
        init();
        ptk_session *s = session("a", 1);
        run(work);
        stop(s, "stop");
        Py_FinalizeEx();
        ptk_session_free(s);
    }
    else if (strcmp(c, "running_across_reinit") == 0) {
        init();
        ptk_session *s = session("a", 1);
        unsetenv("EMBED_PLUGIN");
        run(work);
        Py_FinalizeEx();
        init();
        run(work);
        start(s, "start again");
        stop(s, "stop");
        report(s, "report");
        ptk_session_free(s);
        /* a new session in the new interpreter works */
        ptk_session *t = session("b", 1);
        run(work);
        stop(t, "new stop");
        report(t, "new report");
        ptk_session_free(t);
        Py_FinalizeEx();
    }
    else if (strcmp(c, "before_initialize") == 0) {
        ptk_session *s = NULL;
        char *err = NULL;
        int rc = ptk_session_new(NULL, &s, &err);
        say("new before initialize", rc, err);
        ptk_session_free(s);
    }
    else {
        fprintf(stderr, "embed_order: unknown case %s\n", c);
        return 2;
    }
    printf("end\n");
    return 0;
}
