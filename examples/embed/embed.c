/*
 * embed: a C program that embeds CPython and runs a pytracekit session
 * around part of the Python code it runs.
 *
 *   ./embed [OUTPUT_DIR] [PLUGIN_SPEC]
 *
 * It defines a small word-statistics module in the interpreter, runs it once
 * untraced (warm-up), once inside a session with the installed `counter`
 * plugin (found by name in the installed plugin directory), and once more
 * untraced; then it finalizes the interpreter, and does it all three times.
 * The counter's report (OUTPUT_DIR/counter.json, written in each round)
 * holds the calls of exactly one traced run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pytracekit/pytracekit.h>

#include <stdio.h>
#include <stdlib.h>

static const char setup_code[] =
    "class Stats:\n"
    "    def __init__(self):\n"
    "        self.counts = {}\n"
    "    def add(self, word):\n"
    "        self.counts[word] = self.counts.get(word, 0) + 1\n"
    "    def top(self, n):\n"
    "        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]\n"
    "\n"
    "def words(text):\n"
    "    for line in text.splitlines():\n"
    "        for w in line.split():\n"
    "            yield w.strip('.,').lower()\n"
    "\n"
    "def analyse(text):\n"
    "    stats = Stats()\n"
    "    for w in words(text):\n"
    "        stats.add(w)\n"
    "    return stats.top(3)\n"
    "\n"
    "TEXT = '''The hub owns the hooks. The plugins get the events.\n"
    "Every plugin gets the events it asked for, and no more.'''\n";

/* Runs `code` in __main__; returns 0, or -1 with the Python error printed. */
static int
run(const char *code)
{
    PyObject *main = PyImport_AddModule("__main__"); /* borrowed */
    if (main == NULL) {
        PyErr_Print();
        return -1;
    }
    PyObject *globals = PyModule_GetDict(main); /* borrowed */
    PyObject *r = PyRun_String(code, Py_file_input, globals, globals);
    if (r == NULL) {
        PyErr_Print();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* The traced part: one analysis inside a session. */
static int
traced_run(const char *output_dir, const char *spec)
{
    ptk_session_config cfg = PTK_SESSION_CONFIG_INIT;
    cfg.output_dir = output_dir;
#ifdef EMBED_PLUGIN_DIR
    cfg.plugin_path = EMBED_PLUGIN_DIR; /* see CMakeLists.txt */
#endif
    ptk_session *s = NULL;
    char *err = NULL;
    int rc = ptk_session_new(&cfg, &s, &err);
    if (rc == PTK_OK) {
        rc = ptk_session_add_plugin(s, spec, &err);
    }
    if (rc == PTK_OK) {
        rc = ptk_session_start(s, &err);
    }
    if (rc != PTK_OK) {
        fprintf(stderr, "embed: %s: %s\n", ptk_err_name(rc),
                err ? err : ptk_strerror(rc));
        ptk_free(err);
        ptk_session_free(s);
        return -1;
    }

    int failed = run("traced = analyse(TEXT)\n");

    ptk_session_stop(s);
    rc = ptk_session_report(s, &err);
    if (rc != PTK_OK || ptk_session_failures(s) > 0) {
        fprintf(stderr, "embed: report: %s\n", err ? err : ptk_strerror(rc));
        failed = -1;
    }
    ptk_free(err);
    ptk_session_free(s);
    return failed;
}

int
main(int argc, char **argv)
{
    const char *output_dir = argc > 1 ? argv[1] : "embed-out";
    const char *spec = argc > 2 ? argv[2] : "counter:top=5";

    /* Three lives of the interpreter, each with its own session: a session
     * belongs to the interpreter it was made in, and is stopped, reported
     * and freed before Py_FinalizeEx (after it, those calls answer
     * PTK_ESTATE). */
    int failed = 0;
    for (int round = 1; round <= 3 && !failed; round++) {
        PyConfig config;
        PyConfig_InitPythonConfig(&config);
        config.parse_argv = 0; /* our arguments are not Python's options */
        PyStatus status = PyConfig_SetBytesArgv(&config, argc, argv);
        if (!PyStatus_Exception(status)) {
            status = Py_InitializeFromConfig(&config);
        }
        PyConfig_Clear(&config);
        if (PyStatus_Exception(status)) {
            Py_ExitStatusException(status);
        }

        printf("embed: round %d: pytracekit %s (headers %s), Python %s\n", round,
               ptk_version_string(), PTK_VERSION_STRING, Py_GetVersion());
        failed = run(setup_code) < 0
            || run("before = analyse(TEXT)\n") < 0
            || traced_run(output_dir, spec) < 0
            || run("after = analyse(TEXT)\n"
                   "assert before == traced == after, (before, traced, after)\n"
                   "print('embed: top words', traced)\n") < 0;
        fflush(stdout);

        if (Py_FinalizeEx() < 0) {
            failed = 1;
        }
    }
    return failed ? 1 : 0;
}
