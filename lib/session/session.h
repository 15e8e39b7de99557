/*
 * lib/session: sessions, the interpreter's life, the plugin loader,
 * processes and the host table. The top room: it sees every room below,
 * fills the list of backends (backends.c) and is what the public API of
 * session.h lands in.
 */
#ifndef PTK_SESSION_H
#define PTK_SESSION_H

#include "core/core.h"

#pragma GCC visibility push(hidden)

/* ---- backends: which ones there are (backends.c) ------------------------ */

/* The backends, in order of preference. */
extern const ptk__backend_ops *const ptk__backends[];
extern const size_t ptk__nbackends;
/* NULL for PTK_BACKEND_AUTO or an unknown value. */
const ptk__backend_ops *ptk__backend_ops_of(ptk_backend id);
/* What a session asks for, with PYTRACEKIT_BACKEND applied to `auto` and
 * `auto` resolved: legacy or monitoring (an error if unavailable). */
int ptk__backend_resolve(ptk_backend requested, ptk_backend *out, int *explicit,
                         char **errmsg);
/* At start: the backend the session runs on. The first running session
 * claims it (a tool id for monitoring; legacy, with a warning, if none is
 * free); later ones join it, or fail if they explicitly asked otherwise. */
int ptk__backend_choose(ptk_backend requested, int explicit, FILE *warn,
                        ptk_backend *out, char **errmsg);
/* Before a running session stops (its report notes). */
void ptk__backends_before_stop(struct ptk_session *s);
/* After Py_FinalizeEx: every backend forgets the interpreter. */
void ptk__backends_reset(void);

/* ---- the interpreter's life (life.c) ------------------------------------ */

/* Counts interpreters: increases when Py_FinalizeEx has finished. */
extern uint64_t ptk__interp_gen;
/* PTK_ESTATE unless Python is initialised; the first call in each
 * interpreter registers the callbacks that follow its finalization. */
int ptk__interp_check(char **errmsg);
/* PTK_EINVAL for NULL, PTK_ESTATE for a session of a finalized interpreter. */
int ptk__session_check(const struct ptk_session *s, char **errmsg);

/* ---- an instance's init (session.c) -------------------------------------- */

/* Runs the instance's init from the subscription its descriptor declares
 * and takes what init answered (events, optional and fallback kinds,
 * flags), the mask checked against the descriptor's callbacks: for a new
 * instance (session.c), again in a followed child (process.c), and for an
 * instance attached to a running program. `where` names the plugin in
 * messages; errbuf (errbuf_size bytes, at least 1) gets the plugin's own.
 * On failure (< 0) the instance holds no state and is not initialised:
 * init's exception, if any, is still set, and *why (to free) says why a
 * mask was refused (NULL when init itself failed). */
struct ptk_plugin_ctx;
int ptk__instance_init(struct ptk_plugin_ctx *c, const char *output_dir,
                       const char *where, char *errbuf, size_t errbuf_size,
                       char **why);

/* ---- the plugin loader (loader.c) ---------------------------------------- */

int ptk__load(const char *path_or_name, const char *extra_path,
              const ptk_plugin_desc **desc, void **dl, char **found_path,
              char **errmsg);
int ptk__validate_desc(const ptk_plugin_desc *d, const char *where,
                       unsigned int events, char **errmsg);
char *ptk__library_dir(void);

/* ---- processes (process.c) ------------------------------------------- */

/* At ptk_session_start, once the output directory exists: remembers the
 * process and the start time, removes temporary files of dead processes,
 * installs the process hooks once (at-fork, os._exit/os.exec*, SIGTERM and
 * SIGHUP) and, for a session that follows children, the environment. */
int ptk__process_session_start(struct ptk_session *s, char **errmsg);
/* s has started: until its report begins, os._exit, os.exec* and
 * SIGTERM/SIGHUP write its reports, running or stopped. */
void ptk__process_unreported_add(struct ptk_session *s);
/* Does s report in this process (and has not already)? */
int ptk__process_owns(const struct ptk_session *s);
/* Around the plugins' reports: SIGINT is held (delivered afterwards). */
void ptk__process_report_begin(struct ptk_session *s);
void ptk__process_report_end(struct ptk_session *s);
/* For the session that made the follow root (the top process), once its
 * own reports are written: the followed processes of this run whose
 * plugins failed (their pid-N/run.json says so), each named on the
 * summary. Sets and returns s->children_failed. */
int ptk__process_children_failed(struct ptk_session *s);
/* A report file was committed (its name is listed in run.json). */
void ptk__process_note_written(struct ptk_plugin_ctx *ctx, const char *name);
/* {"pid", "ppid", "started", "argv", "host"}: the run, for JSON reports.
 * A new reference, or NULL with an exception. */
PyObject *ptk__process_identity(const struct ptk_session *s);
/* DIR/.pytracekit-tmp.<this process's identity>.NAME.XXXXXX, for mkstemp:
 * the name a later session's clean-up can tell is ours and stale. */
char *ptk__process_temp_name(const char *dir, const char *name);
/* DIR/NAME made new (host.c): a temporary file created O_EXCL in DIR (no
 * planted symlink is followed), renamed into place; the descriptor, open
 * for writing, or a negative error. */
int ptk__create_new(const char *dir, const char *name);
void ptk__process_session_free(struct ptk_session *s);
/* At stop: puts back the environment a following session changed. */
void ptk__process_session_stop(struct ptk_session *s);

/* ---- host services (host.c) ------------------------------------------- */

extern const ptk_host ptk__host;
/* The instance is freed: the report names it wrote are free again. */
void ptk__report_release(uint64_t id);

#pragma GCC visibility pop

#endif /* PTK_SESSION_H */
