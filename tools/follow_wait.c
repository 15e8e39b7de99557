/* Waiting for followed children's reports: shared by the command (after
 * the program) and the Python module's Session.stop(). See follow_wait.h. */
#include "follow_wait.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
ptk_child_dirs_read(const char *outdir, child_dirs *c)
{
    c->names = NULL;
    c->n = 0;
    DIR *d = opendir(outdir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "pid-", 4) != 0 || !isdigit((unsigned char)e->d_name[4])) {
            continue;
        }
        char **v = realloc(c->names, (c->n + 1) * sizeof *v);
        char *name = strdup(e->d_name);
        if (v == NULL || name == NULL) {
            free(name);
            if (v != NULL) {
                c->names = v;
            }
            break;
        }
        c->names = v;
        c->names[c->n++] = name;
    }
    if (d != NULL) {
        closedir(d);
    }
}

void
ptk_child_dirs_free(child_dirs *c)
{
    for (size_t k = 0; k < c->n; k++) {
        free(c->names[k]);
    }
    free(c->names);
    c->names = NULL;
    c->n = 0;
}

static int
child_dirs_has(const child_dirs *c, const char *name)
{
    for (size_t k = 0; k < c->n; k++) {
        if (strcmp(c->names[k], name) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Whether process @p pid still runs (a zombie has ended). */
static int
process_running(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return kill((pid_t)pid, 0) == 0 || errno == EPERM;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return end == NULL || (end[1] == ' ' && end[2] != 'Z' && end[2] != 'X');
}

/* A new pid-N directory whose run.json is not there yet: 1 while its
 * process runs, 2 once it has ended without; 0 when complete. */
static int
child_pending(const char *outdir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/run.json", outdir, name);
    if (access(path, F_OK) == 0) {
        return 0;
    }
    return process_running(strtol(name + 4, NULL, 10)) ? 1 : 2;
}

/* This process's children that run followed (PYTRACEKIT_FOLLOW in their
 * environment) and have not ended, up to @p max; how many. */
static size_t
followed_children(long *pids, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        long pid;
        while (f != NULL && n < max && fscanf(f, "%ld", &pid) == 1) {
            char env[64], buf[65536];
            snprintf(env, sizeof env, "/proc/%ld/environ", pid);
            FILE *g = fopen(env, "r");
            size_t len = g != NULL ? fread(buf, 1, sizeof buf, g) : 0;
            if (g != NULL) {
                fclose(g);
            }
            for (size_t k = 0; k + 18 <= len; k++) {
                if ((k == 0 || buf[k - 1] == '\0') &&
                    memcmp(buf + k, "PYTRACEKIT_FOLLOW=", 18) == 0) {
                    if (process_running(pid)) {
                        pids[n++] = pid;
                    }
                    break;
                }
            }
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

/* Whether the report of process @p pid is complete (OUTDIR/pid-N/run.json). */
static int
child_done(const char *outdir, long pid)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pid-%ld/run.json", outdir, pid);
    return access(path, F_OK) == 0;
}

/* Whether a report is being written into OUTDIR/NAME now (a report's
 * temporary file, ".pytracekit-tmp.IDENTITY.NAME.XXXXXX", is there; not
 * the start's probe of the directory, nor a report such as .coverage). */
static int
child_writing(const char *outdir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    DIR *d = opendir(path);
    struct dirent *e;
    int writing = 0;
    while (d != NULL && !writing && (e = readdir(d)) != NULL) {
        writing = strncmp(e->d_name, ".pytracekit-tmp.", 16) == 0;
    }
    if (d != NULL) {
        closedir(d);
    }
    return writing;
}

/* Adds @p name to @p c (not there yet); on a failed allocation it is not
 * added, and that child is no longer waited for once it pauses. */
static void
child_dirs_add(child_dirs *c, const char *name)
{
    char **v = realloc(c->names, (c->n + 1) * sizeof *v);
    char *copy = strdup(name);
    if (v != NULL) {
        c->names = v;
    }
    if (v == NULL || copy == NULL) {
        free(copy);
        return;
    }
    c->names[c->n++] = copy;
}

/* Closes every descriptor from 3 up: the program is over, and a child
 * that waits for the end of a pipe from this process (multiprocessing's
 * resource tracker) may now finish. */
void
ptk_close_inherited(void)
{
    fflush(NULL);
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) {
        return;
    }
    int keep = dirfd(d);
    int fds[256], n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) {
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != keep) {
            fds[n++] = fd;
        }
    }
    closedir(d);
    for (int k = 0; k < n; k++) {
        close(fds[k]);
    }
}

void
ptk_wait_for_children(const char *outdir, const child_dirs *before, int writing_only)
{
    const char *w = getenv("PYTRACEKIT_CHILD_WAIT");
    double limit = w != NULL && w[0] != '\0' ? strtod(w, NULL) : 10.0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    child_dirs c = {NULL, 0};
    /* writing_only: the children seen writing, waited for from then on (a
     * child is between two files, with none open, now and then) */
    child_dirs seen = {NULL, 0};
    long kids[64];
    size_t nkids = 0;
    for (;;) {
        ptk_child_dirs_free(&c);
        ptk_child_dirs_read(outdir, &c);
        int running = 0;
        for (size_t k = 0; k < c.n; k++) {
            if (child_dirs_has(before, c.names[k]) ||
                child_pending(outdir, c.names[k]) != 1) {
                continue;
            }
            int was = child_dirs_has(&seen, c.names[k]);
            int writing = !writing_only || was || child_writing(outdir, c.names[k]);
            if (writing && writing_only && !was) {
                child_dirs_add(&seen, c.names[k]);
            }
            running |= writing;
        }
        /* and the children that have not made their directory yet */
        nkids = writing_only ? 0 : followed_children(kids, 64);
        for (size_t k = 0; k < nkids; k++) {
            running |= !child_done(outdir, kids[k]);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        double spent = (double)(now.tv_sec - t0.tv_sec) +
                       (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
        if (!running || spent >= limit) {
            break;
        }
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    for (size_t k = 0; k < c.n; k++) {
        int p = child_dirs_has(before, c.names[k]) ? 0 : child_pending(outdir, c.names[k]);
        if (p == 1 && writing_only && !child_dirs_has(&seen, c.names[k])) {
            fprintf(stderr, "pytracekit: followed child %s is still running: its "
                            "report will be in %s/%s when it ends\n",
                    c.names[k] + 4,
                    outdir, c.names[k]);
        }
        else if (p != 0) {
            fprintf(stderr, "pytracekit: followed child %s has no complete report in "
                            "%s/%s: %s\n",
                    c.names[k] + 4, outdir, c.names[k],
                    p == 1 ? "still running after the wait "
                             "(PYTRACEKIT_CHILD_WAIT seconds, default 10)"
                           : "it ended without writing run.json");
        }
    }
    for (size_t k = 0; k < nkids; k++) {
        char name[32];
        snprintf(name, sizeof name, "pid-%ld", kids[k]);
        if (!child_dirs_has(&c, name)) {
            fprintf(stderr, "pytracekit: followed child %ld has no report in %s: "
                            "still running after the wait (PYTRACEKIT_CHILD_WAIT "
                            "seconds, default 10)\n",
                    kids[k], outdir);
        }
    }
    ptk_child_dirs_free(&c);
    ptk_child_dirs_free(&seen);
}
