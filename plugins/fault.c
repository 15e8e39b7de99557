/* Allocation-failure injection for one plugin: see fault.h. Linked into
 * each plugin's shared object (hidden), so each plugin counts its own. */
#include "fault.h"
#undef malloc
#undef calloc
#undef realloc

#include <stdio.h>
#include <string.h>

#define HIDDEN __attribute__((visibility("hidden")))

static long fail_at = -1; /* -1: not read yet; 0: this plugin is not tested */
static long count;
static const char *log_path;

static void
write_total(void)
{
    FILE *f = fopen(log_path, "a");
    if (f != NULL) {
        fprintf(f, "plugin-total %ld\n", count);
        fclose(f);
    }
}

static int
inject(const char *file, int line)
{
    if (fail_at < 0) {
        /* NAME:N, for this plugin only */
        const char *v = getenv("PYTRACEKIT_FAIL_ALLOC_PLUGIN");
        size_t k = strlen(PTKP_NAME);
        fail_at = 0;
        if (v != NULL && strncmp(v, PTKP_NAME, k) == 0 && v[k] == ':') {
            fail_at = strtol(v + k + 1, NULL, 10);
            log_path = getenv("PYTRACEKIT_FAIL_ALLOC_LOG");
            if (log_path != NULL && log_path[0] != '\0') {
                atexit(write_total);
            }
            else {
                log_path = NULL;
            }
        }
    }
    if (fail_at == 0 && log_path == NULL) {
        return 0;
    }
    if (++count != fail_at) {
        return 0;
    }
    if (log_path != NULL) {
        FILE *f = fopen(log_path, "a");
        if (f != NULL) {
            const char *base = strrchr(file, '/');
            fprintf(f, "plugin-fail %ld %s:%d\n", count, base ? base + 1 : file, line);
            fclose(f);
        }
    }
    return 1;
}

HIDDEN void *
ptkp__fi_malloc(size_t n, const char *file, int line)
{
    return inject(file, line) ? NULL : malloc(n);
}

HIDDEN void *
ptkp__fi_calloc(size_t a, size_t b, const char *file, int line)
{
    return inject(file, line) ? NULL : calloc(a, b);
}

HIDDEN void *
ptkp__fi_realloc(void *p, size_t n, const char *file, int line)
{
    return inject(file, line) ? NULL : realloc(p, n);
}
