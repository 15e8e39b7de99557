/* libFuzzer target: the filter parser (the hub's keys include, exclude,
 * modules, functions, threads, max_depth, parsed with the option parser
 * and built by ptk__filter_build), in an initialised interpreter (named
 * sets read sys.path). The input is the text after "plugin:", or, after a
 * NUL byte, also the extra text a plugin passes to host->subscribe_filter.
 * A refusal always says why; nothing may leak. */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "fuzz",
};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    PyStatus st = PyConfig_SetBytesString(&config, &config.home, PTK_FUZZ_PYTHON_HOME);
    if (!PyStatus_Exception(st)) {
        st = Py_InitializeFromConfig(&config);
    }
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        Py_ExitStatusException(st);
    }
    return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 2);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = text[size + 1] = '\0';
    const char *extra = NULL;
    size_t n = strlen(text);
    if (n < size) {
        extra = text + n + 1;
    }
    ptk__options o = {0};
    char *err = NULL;
    int rc = ptk__options_parse_ex(&desc, ptk__filter_specs, "plugin 'fuzz'", text,
                                   &o, &err);
    if (rc == PTK_OK) {
        ptk__filter *f = NULL;
        rc = ptk__filter_build("plugin 'fuzz'", &o, NULL, extra, &f, &err);
        if (rc == PTK_OK && err != NULL) {
            abort();
        }
        ptk__filter_free(f);
        ptk__options_free(&o);
    }
    if (rc < 0 && (err == NULL || err[0] == '\0')) {
        abort(); /* a rejection always says why */
    }
    if (PyErr_Occurred()) {
        abort(); /* no exception left behind */
    }
    free(err);
    free(text);
    return 0;
}
