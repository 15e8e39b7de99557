/* Allocation-failure injection (built with -DPTK_FAULT_INJECTION=ON only).
 *
 * Every malloc/calloc/realloc of the library goes through here (macros in
 * ptk_fault.h). PYTRACEKIT_FAIL_ALLOC=N makes the Nth one fail (N >= 1;
 * 0 or unset: none fails). PYTRACEKIT_FAIL_ALLOC_LOG=FILE appends a line
 * "fail N FILE:LINE" when the failure is injected, and "total N" at exit:
 * how many allocations the run made. A run with N = 0 (the reference run)
 * also writes, at exit, one line "site FILE:LINE N1 N2 ..." per allocation
 * site: the allocations made there, in order (tests/core/faults picks the
 * Ns to fail from them).
 *
 * Each shipped plugin links its own copy, built with PTK_FAULT_PLUGIN set
 * to its name: PYTRACEKIT_FAIL_ALLOC_PLUGIN=NAME:N fails plugin NAME's Nth
 * allocation, logged as "plugin-fail N FILE:LINE" and "plugin-total N". */
#include "../internal/ptk_fault.h" /* also compiled into each plugin */

#ifdef PTK_FAULT_INJECTION
#undef malloc
#undef calloc
#undef realloc

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PTK_FAULT_PLUGIN
#define LOG_PREFIX "plugin-"
#else
#define LOG_PREFIX ""
#endif

static long fail_at = -1; /* -1: not read yet */
static long count;
static const char *log_path;

/* The reference run's sites, in the order first seen, each with the
 * allocation numbers made there. Kept with the real allocator; a site
 * that cannot be recorded (out of memory) is left out of the log, and
 * "sites-incomplete" says so. */
typedef struct {
    const char *file;
    int line;
    long *at;
    size_t n, cap;
} site;
static site *sites;
static size_t nsites, capsites;
static int sites_incomplete;

static const char *
base_name(const char *file)
{
    const char *base = strrchr(file, '/');
    return base ? base + 1 : file;
}

static void
record_site(const char *file, int line)
{
    site *s = NULL;
    for (size_t i = nsites; i-- > 0;) {
        if (sites[i].line == line && strcmp(sites[i].file, file) == 0) {
            s = &sites[i];
            break;
        }
    }
    if (s == NULL) {
        if (nsites == capsites) {
            size_t cap = capsites ? capsites * 2 : 64;
            site *t = realloc(sites, cap * sizeof *t);
            if (t == NULL) {
                sites_incomplete = 1;
                return;
            }
            sites = t;
            capsites = cap;
        }
        s = &sites[nsites++];
        memset(s, 0, sizeof *s);
        s->file = file;
        s->line = line;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        long *t = realloc(s->at, cap * sizeof *t);
        if (t == NULL) {
            sites_incomplete = 1;
            return;
        }
        s->at = t;
        s->cap = cap;
    }
    s->at[s->n++] = count;
}

static void
write_total(void)
{
    FILE *f = fopen(log_path, "a");
    if (f != NULL) {
        fprintf(f, LOG_PREFIX "total %ld\n", count);
        for (size_t i = 0; i < nsites; i++) {
            fprintf(f, LOG_PREFIX "site %s:%d", base_name(sites[i].file), sites[i].line);
            for (size_t j = 0; j < sites[i].n; j++) {
                fprintf(f, " %ld", sites[i].at[j]);
            }
            fputc('\n', f);
        }
        if (sites_incomplete) {
            fprintf(f, LOG_PREFIX "sites-incomplete\n");
        }
        fclose(f);
    }
}

/* fail_at from the environment; 0: no failure, and (for a plugin the
 * variable does not name) nothing logged. */
static long
read_fail_at(void)
{
#ifdef PTK_FAULT_PLUGIN
    const char *v = getenv("PYTRACEKIT_FAIL_ALLOC_PLUGIN"); /* NAME:N */
    size_t k = strlen(PTK_FAULT_PLUGIN);
    if (v == NULL || strncmp(v, PTK_FAULT_PLUGIN, k) != 0 || v[k] != ':') {
        return -1;
    }
    return strtol(v + k + 1, NULL, 10);
#else
    const char *v = getenv("PYTRACEKIT_FAIL_ALLOC");
    return v ? strtol(v, NULL, 10) : 0;
#endif
}

static int
inject(const char *file, int line)
{
    if (fail_at < 0) {
        fail_at = read_fail_at();
        log_path = fail_at >= 0 ? getenv("PYTRACEKIT_FAIL_ALLOC_LOG") : NULL;
        if (fail_at < 0) {
            fail_at = 0;
        }
        if (log_path != NULL && log_path[0] != '\0') {
            atexit(write_total);
        }
        else {
            log_path = NULL;
        }
    }
    ++count;
    if (fail_at == 0 && log_path != NULL) {
        record_site(file, line);
    }
    if (count != fail_at) {
        return 0;
    }
    if (log_path != NULL) {
        FILE *f = fopen(log_path, "a");
        if (f != NULL) {
            fprintf(f, LOG_PREFIX "fail %ld %s:%d\n", count, base_name(file), line);
            fclose(f);
        }
    }
    return 1;
}

void *
ptk__fi_malloc(size_t n, const char *file, int line)
{
    return inject(file, line) ? NULL : malloc(n);
}

void *
ptk__fi_calloc(size_t a, size_t b, const char *file, int line)
{
    return inject(file, line) ? NULL : calloc(a, b);
}

void *
ptk__fi_realloc(void *p, size_t n, const char *file, int line)
{
    return inject(file, line) ? NULL : realloc(p, n);
}

#else
typedef int ptk__fault_injection_off; /* ISO C wants something here */
#endif
