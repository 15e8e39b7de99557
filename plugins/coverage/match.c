/* File selection for the coverage plugin (see match.h). */
#define _POSIX_C_SOURCE 200809L
#include "match.h"

#include "../common/grow.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct cov_globs {
    char **pat;
    size_t n, cap;
} cov_globs;

struct cov_match {
    cov_globs include;
    cov_globs exclude;
    char *source;        /* absolute, no trailing slash, or NULL */
    char **stdlib;       /* absolute, no trailing slash */
    size_t nstdlib, cap_stdlib;
};

char *
cov_abspath(const char *path)
{
    char cwd[PATH_MAX];
    size_t plen = strlen(path), clen = 0;
    if (path[0] != '/') {
        if (!getcwd(cwd, sizeof(cwd))) {
            return NULL;
        }
        clen = strlen(cwd);
    }
    char *buf = malloc(clen + plen + 2);
    if (!buf) {
        return NULL;
    }
    if (clen) {
        memcpy(buf, cwd, clen);
    }
    buf[clen] = '/';
    memcpy(buf + clen + 1, path, plen + 1);

    /* Normalise in place: components are copied to `out`. */
    char *out = buf, *p = buf;
    size_t olen = 0;
    while (*p) {
        while (*p == '/') {
            p++;
        }
        if (!*p) {
            break;
        }
        char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 1 && p[0] == '.') {
            /* skip */
        }
        else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (olen > 0 && out[olen - 1] != '/') {
                olen--;
            }
            if (olen > 0) {
                olen--; /* the slash */
            }
        }
        else {
            out[olen++] = '/';
            memmove(out + olen, p, n);
            olen += n;
        }
        p += n;
    }
    if (olen == 0) {
        out[olen++] = '/';
    }
    out[olen] = '\0';
    return buf;
}

static void
globs_free(cov_globs *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->pat[i]);
    }
    free(g->pat);
    g->pat = NULL;
    g->n = g->cap = 0;
}

/* Splits @p list on ',' and ';'; relative patterns get the cwd in front. */
static int
globs_parse(cov_globs *g, const char *list, const char *what, char *errbuf,
            size_t errbuf_size)
{
    g->pat = NULL;
    g->n = g->cap = 0;
    if (!list) {
        return 0;
    }
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",;");
        const char *s = p;
        size_t len = n;
        while (len && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) {
            len--;
        }
        if (len) {
            char *item = malloc(len + 1);
            if (!item || PTK_KIT_RESERVE(g->pat, g->cap, g->n + 1, 8) != 0) {
                free(item);
                snprintf(errbuf, errbuf_size, "out of memory");
                return -1;
            }
            memcpy(item, s, len);
            item[len] = '\0';
            if (item[0] != '/' && item[0] != '*') {
                char *abs = cov_abspath(item);
                free(item);
                if (!abs) {
                    snprintf(errbuf, errbuf_size, "%s: cannot make '%.*s' absolute",
                             what, (int)len, s);
                    return -1;
                }
                item = abs;
            }
            g->pat[g->n++] = item;
        }
        p += n;
        if (*p) {
            p++;
        }
    }
    if (g->n == 0) {
        snprintf(errbuf, errbuf_size, "%s: empty pattern list '%s'", what, list);
        return -1;
    }
    return 0;
}

static int
globs_match(const cov_globs *g, const char *path)
{
    for (size_t i = 0; i < g->n; i++) {
        if (fnmatch(g->pat[i], path, 0) == 0) {
            return 1;
        }
    }
    return 0;
}

/* 1 if @p path is @p dir or below it. */
static int
under(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') {
        return 1;
    }
    return strncmp(dir, path, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

cov_match *
cov_match_new(const char *include, const char *exclude, const char *source,
              const char *const *stdlib_dirs, char *errbuf, size_t errbuf_size)
{
    cov_match *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(errbuf, errbuf_size, "out of memory");
        return NULL;
    }
    if (globs_parse(&m->include, include && *include ? include : NULL,
                    "include", errbuf, errbuf_size) < 0
        || globs_parse(&m->exclude, exclude && *exclude ? exclude : NULL,
                       "exclude", errbuf, errbuf_size) < 0) {
        cov_match_free(m);
        return NULL;
    }
    if (source && *source) {
        struct stat st;
        m->source = cov_abspath(source);
        if (!m->source) {
            snprintf(errbuf, errbuf_size, "source: out of memory");
            cov_match_free(m);
            return NULL;
        }
        if (stat(m->source, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(errbuf, errbuf_size, "source: '%s' is not a directory (%s)",
                     source, stat(m->source, &st) != 0 ? strerror(errno)
                                                       : "not a directory");
            cov_match_free(m);
            return NULL;
        }
    }
    for (size_t i = 0; stdlib_dirs && stdlib_dirs[i]; i++) {
        char *d = cov_abspath(stdlib_dirs[i]);
        if (!d || PTK_KIT_RESERVE(m->stdlib, m->cap_stdlib, m->nstdlib + 1, 8) != 0) {
            free(d);
            snprintf(errbuf, errbuf_size, "out of memory");
            cov_match_free(m);
            return NULL;
        }
        m->stdlib[m->nstdlib++] = d;
    }
    return m;
}

int
cov_match_file(const cov_match *m, const char *path)
{
    if (globs_match(&m->exclude, path)) {
        return 0;
    }
    if (m->source || m->include.n) {
        if (m->source && !under(m->source, path)) {
            return 0;
        }
        if (m->include.n && !globs_match(&m->include, path)) {
            return 0;
        }
        return 1;
    }
    if (strstr(path, "/site-packages/") || strstr(path, "/dist-packages/")) {
        return 0;
    }
    for (size_t i = 0; i < m->nstdlib; i++) {
        if (under(m->stdlib[i], path)) {
            return 0;
        }
    }
    return 1;
}

const char *
cov_match_source(const cov_match *m)
{
    return m->source;
}

void
cov_match_free(cov_match *m)
{
    if (!m) {
        return;
    }
    globs_free(&m->include);
    globs_free(&m->exclude);
    free(m->source);
    for (size_t i = 0; i < m->nstdlib; i++) {
        free(m->stdlib[i]);
    }
    free(m->stdlib);
    free(m);
}

/* One glob of ours as a hub filter item with the same meaning: the hub
 * reads an item without glob characters as a directory prefix, so the last
 * character of such an item becomes a one-character class ([c]) and the
 * item stays an exact match. NULL for an item the hub list cannot carry. */
static char *
bus_item(const char *pat)
{
    size_t n = strlen(pat);
    if (n == 0 || strpbrk(pat, ",;") || pat[0] == '!') {
        return NULL;
    }
    char *r = malloc(n + 3);
    if (!r) {
        return NULL;
    }
    if (strpbrk(pat, "*?[")) {
        memcpy(r, pat, n + 1);
    }
    else {
        memcpy(r, pat, n - 1);
        snprintf(r + n - 1, 4, "[%c]", pat[n - 1]);
    }
    return r;
}

/* Appends "key=a;b;..." (or ";a;b" to an open list) to *out. */
static int
bus_append(char **out, const char *key, const char *item)
{
    size_t have = *out ? strlen(*out) : 0;
    size_t room = (key ? strlen(key) : 0) + strlen(item) + 3;
    char *n = realloc(*out, have + room);
    if (!n) {
        return -1;
    }
    if (key) {
        snprintf(n + have, room, "%s%s=%s", have ? "," : "", key, item);
    }
    else {
        snprintf(n + have, room, ";%s", item);
    }
    *out = n;
    return 0;
}

char *
cov_match_bus_filter(const cov_match *m)
{
    char *out = NULL;
    int ok = 1;
    /* include: the source directory (everything under it), else the
     * include globs; with both, the source alone (a superset of both) */
    if (m->source) {
        ok &= bus_append(&out, "include", m->source) == 0;
    }
    else if (m->include.n) {
        char *text = NULL;
        int all = 1;
        for (size_t i = 0; all && i < m->include.n; i++) {
            char *it = bus_item(m->include.pat[i]);
            if (!it || bus_append(&text, i ? NULL : "include", it) < 0) {
                all = 0; /* one we cannot say: no include condition at all */
            }
            free(it);
        }
        if (all && text) {
            out = text; /* the first condition: out was empty */
        }
        else {
            free(text);
        }
    }
    /* exclude: our globs; an item the hub cannot carry is left out (then
     * the hub excludes less, never more) */
    int first = 1;
    for (size_t i = 0; i < m->exclude.n; i++) {
        char *it = bus_item(m->exclude.pat[i]);
        if (it) {
            ok &= bus_append(&out, first ? "exclude" : NULL, it) == 0;
            first = 0;
            free(it);
        }
    }
    if (!m->source && !m->include.n) {
        /* the default: installed packages and the standard library */
        ok &= bus_append(&out, first ? "exclude" : NULL, "*/site-packages/*") == 0;
        ok &= bus_append(&out, NULL, "*/dist-packages/*") == 0;
        for (size_t i = 0; i < m->nstdlib; i++) {
            if (!strpbrk(m->stdlib[i], ",;") && strcmp(m->stdlib[i], "/") != 0) {
                ok &= bus_append(&out, NULL, m->stdlib[i]) == 0;
            }
        }
    }
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}
