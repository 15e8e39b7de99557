/*
 * Which files the coverage plugin measures: include/exclude glob lists on
 * absolute paths, an optional source directory, and the default (the
 * program's own files: not the standard library, not site-packages, not
 * code without a file).
 *
 * Kept apart from the plugin so that a bus-wide filter can replace it: the
 * plugin only calls cov_match_file(), once per distinct file name.
 */
#ifndef PTK_COVERAGE_MATCH_H
#define PTK_COVERAGE_MATCH_H

#include <stddef.h>

typedef struct cov_match cov_match;

/*
 * Builds a matcher. @p include and @p exclude are lists of globs separated
 * by `,` or `;` (NULL or "" for none); a relative pattern is taken relative
 * to the current directory. @p source is a directory (NULL for none).
 * @p stdlib_dirs is a NULL-terminated list of directories excluded by
 * default (the interpreter's library and site-packages directories).
 * Returns NULL with a reason in @p errbuf on bad input or out of memory.
 */
cov_match *cov_match_new(const char *include, const char *exclude,
                         const char *source, const char *const *stdlib_dirs,
                         char *errbuf, size_t errbuf_size);

/* 1 if @p path (absolute, normalised) is to be measured, else 0. */
int cov_match_file(const cov_match *m, const char *path);

/* The source directory (absolute, no trailing slash), or NULL. */
const char *cov_match_source(const cov_match *m);

/* The hub filter (docs/filters.md) that selects every file cov_match_file
 * selects (possibly more, never less), so that code coverage would not
 * record is switched off where it runs; malloc'ed, or NULL if no
 * condition is needed. */
char *cov_match_bus_filter(const cov_match *m);

void cov_match_free(cov_match *m);

/*
 * Makes @p path absolute (relative to the current directory) and removes
 * `.`/`..` components and repeated slashes, without resolving symbolic
 * links (like os.path.abspath). Returns a malloc'd string, or NULL.
 */
char *cov_abspath(const char *path);

#endif /* PTK_COVERAGE_MATCH_H */
