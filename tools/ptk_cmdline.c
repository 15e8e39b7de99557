/* The pytracekit command's arguments (ptk_cmdline.h). */
#include "ptk_cmdline.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --include … --max-depth, from the one list of filter keys */
#define FLAG_ROW(key, flag, kw, type, help) {flag, key},
static const char *const fkeys[][2] = {PTK_FILTER_KEYS(FLAG_ROW)};
#undef FLAG_ROW
enum { NFKEYS = PTK_FILTER_KEY_COUNT };

static int
usage_error(ptk_cmdline *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->error, sizeof o->error, fmt, ap);
    va_end(ap);
    /* one line, and where the rest is */
    size_t n = strlen(o->error);
    if (strstr(o->error, "see --help") == NULL && n + 15 < sizeof o->error) {
        memcpy(o->error + n, " (see --help)", 14);
    }
    return -1;
}

/* Index of a filter flag (--include …) in fkeys, or -1. */
static int
filter_key(const char *arg)
{
    for (int k = 0; k < NFKEYS; k++) {
        if (strcmp(arg, fkeys[k][0]) == 0) {
            return k;
        }
    }
    return -1;
}

/* 1 with *val its value (argv[*ip + 1]; *ip moves to it) when argv[*ip] is
 * opt; 0 if it is not; -1 (said) when its value is missing. */
static int
take(int argc, char *const *argv, int *ip, const char *opt, const char **val,
     ptk_cmdline *o)
{
    if (strcmp(argv[*ip], opt) != 0) {
        return 0;
    }
    if (*ip + 1 >= argc) {
        return usage_error(o, "%s needs a value", opt);
    }
    *val = argv[++*ip];
    return 1;
}

/* a + ":" + b, a (may be NULL) freed; NULL when out of memory. */
static char *
path_join(char *a, const char *b)
{
    size_t n = (a ? strlen(a) + 1 : 0) + strlen(b) + 1;
    char *r = malloc(n);
    if (r != NULL) {
        snprintf(r, n, "%s%s%s", a ? a : "", a ? ":" : "", b);
    }
    free(a);
    return r;
}

/* An option with a value that sets up the session (-p, -o, --threads,
 * --backend, --plugin-path, the filter flags): 1 if argv[*ip] is one
 * (taken into o), 0 if not, -1 after a usage error. */
static int
session_option(int argc, char *const *argv, int *ip, ptk_cmdline *o)
{
    const char *val = NULL, *a = argv[*ip];
    int fk = filter_key(a), t;
    if ((t = take(argc, argv, ip, "-p", &val, o)) || (t = take(argc, argv, ip, "--plugin", &val, o))) {
        if (t > 0) {
            o->plugins[o->nplugins++] = val;
        }
    }
    else if ((t = take(argc, argv, ip, "-o", &val, o)) || (t = take(argc, argv, ip, "--output", &val, o))) {
        o->outdir = t > 0 ? val : o->outdir;
    }
    else if ((t = take(argc, argv, ip, "--threads", &val, o)) > 0) {
        if (strcmp(val, "current") != 0 && strcmp(val, "all") != 0) {
            return usage_error(o, "--threads expects 'current' or 'all', found '%s'", val);
        }
        o->threads = val[0] == 'c' ? PTK_THREADS_CURRENT : PTK_THREADS_ALL;
    }
    else if (t == 0 && (t = take(argc, argv, ip, "--backend", &val, o)) > 0) {
        if (ptk_backend_parse(val, &o->backend) < 0) {
            return usage_error(o, "--backend expects 'auto', 'legacy' or 'monitoring', "
                                  "found '%s'",
                               val);
        }
    }
    else if (t == 0 && (t = take(argc, argv, ip, "--plugin-path", &val, o)) > 0) {
        o->plugin_path = path_join(o->plugin_path, val);
        if (o->plugin_path == NULL) {
            return usage_error(o, "out of memory");
        }
    }
    else if (t == 0 && fk >= 0 && (t = take(argc, argv, ip, a, &val, o)) > 0) {
        o->filter[fk][o->nfilter[fk]++] = val;
    }
    return t;
}

/* The options, up to the program (o->program, o->mode). 0, or -1 after a
 * usage error. --version and --help end the reading where they stand. */
static int
read_options(int argc, char *const *argv, ptk_cmdline *o)
{
    int i;
    const char *val;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int t = session_option(argc, argv, &i, o);
        if (t != 0) {
            if (t < 0) {
                return -1;
            }
        }
        else if (strcmp(a, "--follow-children") == 0) {
            o->follow = 1;
        }
        else if (strcmp(a, "--armed") == 0) {
            o->armed = 1;
        }
        else if (strcmp(a, "--list-plugins") == 0) {
            o->action = PTK_CMD_LIST;
        }
        else if (strcmp(a, "--version") == 0 || strcmp(a, "-h") == 0 ||
                 strcmp(a, "--help") == 0) {
            o->action = a[2] == 'v' ? PTK_CMD_VERSION : PTK_CMD_HELP;
            return 0;
        }
        else if ((t = take(argc, argv, &i, "-m", &val, o)) ||
                 (t = take(argc, argv, &i, "-c", &val, o))) {
            o->mode = a;
            o->program = i; /* the module or code */
            return t > 0 ? 0 : -1;
        }
        else if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        else if (a[0] == '-' && a[1] != '\0') {
            return usage_error(o, "unknown option '%s' (see --help)", a);
        }
        else {
            break;
        }
    }
    o->program = i;
    return 0;
}

int
ptk_cmdline_parse(int argc, char *const *argv, ptk_cmdline *o)
{
    memset(o, 0, sizeof *o);
    o->outdir = "pytracekit-out";
    o->threads = PTK_THREADS_ALL;
    o->backend = PTK_BACKEND_AUTO;
    const char *fenv = getenv("PYTRACEKIT_FOLLOW_CHILDREN");
    o->follow = fenv != NULL && fenv[0] != '\0' && strcmp(fenv, "0") != 0;
    /* no flag has more values than there are arguments */
    o->plugins = calloc((size_t)argc + 1, sizeof *o->plugins);
    for (int k = 0; k < NFKEYS; k++) {
        o->filter[k] = calloc((size_t)argc + 1, sizeof *o->filter[k]);
        if (o->filter[k] == NULL) {
            return usage_error(o, "out of memory");
        }
    }
    if (o->plugins == NULL) {
        return usage_error(o, "out of memory");
    }
    if (read_options(argc, argv, o) < 0) {
        return -1;
    }
    if (o->action == PTK_CMD_RUN && o->mode == NULL && o->program >= argc) {
        return usage_error(o, "no program given (SCRIPT, -m MODULE or -c CODE; see --help)");
    }
    if (o->armed && o->action == PTK_CMD_RUN && o->nplugins > 0) {
        return usage_error(o, "--armed starts no session: give the plugins to "
                              "`pytracekit attach PID` (see --help)");
    }
    if (o->nplugins == 0) {
        o->plugins[o->nplugins++] = "counter"; /* argc >= 1: room for it */
    }
    return 0;
}

void
ptk_cmdline_free(ptk_cmdline *o)
{
    free(o->plugins);
    free(o->plugin_path);
    for (int k = 0; k < NFKEYS; k++) {
        free(o->filter[k]);
    }
    memset(o, 0, sizeof *o);
}

char *
ptk_cmdline_filter_text(const ptk_cmdline *o, int *oom)
{
    size_t n = 1;
    *oom = 0;
    for (int k = 0; k < NFKEYS; k++) {
        for (int j = 0; j < o->nfilter[k]; j++) {
            n += strlen(fkeys[k][1]) + strlen(o->filter[k][j]) + 2;
        }
    }
    if (n == 1) {
        return NULL;
    }
    char *text = calloc(1, n);
    if (text == NULL) {
        *oom = 1;
        return NULL;
    }
    for (int k = 0; k < NFKEYS; k++) {
        /* max_depth (the last key): the last value given */
        int first = k == NFKEYS - 1 && o->nfilter[k] ? o->nfilter[k] - 1 : 0;
        for (int j = first; j < o->nfilter[k]; j++) {
            if (j == first) {
                strcat(strcat(strcat(text, text[0] ? "," : ""), fkeys[k][1]), "=");
            }
            else {
                strcat(text, ";");
            }
            strcat(text, o->filter[k][j]);
        }
    }
    return text;
}
