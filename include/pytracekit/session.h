/**
 * @file session.h
 * @brief Sessions: a set of plugin instances attached to the process's hub.
 *
 * Any number of sessions may exist; several may run at once, each with its
 * own plugins, output directory and thread scope. Stopping one leaves the
 * others running. Every function here needs the GIL.
 *
 * @code
 * ptk_session *s;
 * char *err = NULL;
 * ptk_session_config cfg = PTK_SESSION_CONFIG_INIT;
 * cfg.output_dir = "pytracekit-out";
 * if (ptk_session_new(&cfg, &s, &err) < 0
 *     || ptk_session_add_plugin(s, "counter:top=5", &err) < 0
 *     || ptk_session_start(s, &err) < 0) {
 *     fprintf(stderr, "%s\n", err);
 *     ptk_free(err);
 * }
 * ...  run Python code  ...
 * ptk_session_stop(s);
 * ptk_session_report(s, &err);
 * ptk_session_free(s);
 * @endcode
 */
#ifndef PYTRACEKIT_SESSION_H
#define PYTRACEKIT_SESSION_H

#include <stddef.h>
#include <stdio.h>

#include "export.h"
#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A session (opaque). @since 0.1 */
typedef struct ptk_session ptk_session;

/** @brief Which threads a session observes. @since 0.1 */
typedef enum ptk_thread_scope {
    PTK_THREADS_CURRENT = 0, /**< only the thread that called ptk_session_start() */
    PTK_THREADS_ALL = 1      /**< every thread, including those started later through `threading` */
} ptk_thread_scope;

/** @brief Where events come from. @since 0.1 */
typedef enum ptk_backend {
    PTK_BACKEND_AUTO = 0,   /**< `PYTRACEKIT_BACKEND` if set, else the best
                                 one this Python supports (monitoring on
                                 3.12+, legacy before) */
    PTK_BACKEND_LEGACY = 1, /**< PyEval_SetProfile / PyEval_SetTrace */
    PTK_BACKEND_MONITORING = 2 /**< sys.monitoring (PEP 669), CPython 3.12+;
                                    @since 0.2 */
} ptk_backend;

/**
 * @brief How to create a session. Start from #PTK_SESSION_CONFIG_INIT.
 * @since 0.1
 */
typedef struct ptk_session_config {
    size_t struct_size;      /**< `sizeof(ptk_session_config)` */
    const char *output_dir;  /**< reports go here; created at start; default `pytracekit-out` */
    ptk_thread_scope threads; /**< default #PTK_THREADS_CURRENT */
    ptk_backend backend;     /**< default #PTK_BACKEND_AUTO */
    const char *plugin_path; /**< extra `:`-separated directories searched first; may be NULL */
    FILE *summary;           /**< human summaries; NULL means stderr */
    /* End of ABI 1.0. */
    /** Default filter of every plugin instance of the session, in the
     *  option syntax (`"modules=myapp,max_depth=3"`; docs/filters.md).
     *  An instance's own options replace it key by key; a plugin that
     *  declares an option of the same name keeps its own meaning for it.
     *  NULL: no filter. A config with a smaller `struct_size` (built
     *  before 0.3) is read as if this were NULL. @since 0.3 */
    const char *filter;
} ptk_session_config;

/** @brief Default configuration. @since 0.1 */
#define PTK_SESSION_CONFIG_INIT                                             \
    {sizeof(ptk_session_config), NULL, PTK_THREADS_CURRENT,                 \
     PTK_BACKEND_AUTO, NULL, NULL, NULL}

/**
 * @brief Creates a session (nothing is traced yet).
 * @param cfg Configuration; NULL for the defaults.
 * @param[out] out The new session.
 * @param[out] errmsg On failure, a message to ptk_free(); may be NULL.
 * @return #PTK_OK or a negative error.
 * @since 0.1
 */
PTK_API int ptk_session_new(const ptk_session_config *cfg, ptk_session **out,
                            char **errmsg);

/**
 * @brief Loads a plugin and adds it to the session.
 *
 * @p spec is `NAME[:KEY=VALUE,…]` or `PATH[:KEY=VALUE,…]`. A name is looked
 * up as `NAME.so` (or `libptk_NAME.so`) in ptk_session_config::plugin_path,
 * then each directory of `PYTRACEKIT_PLUGIN_PATH`, then the build's and the
 * installed plugin directory — never the current directory. A value
 * containing `,` may be quoted with `'…'`.
 * If the session is running, the plugin is attached at once.
 * @return #PTK_OK or a negative error (`PTK_ENOENT`, `PTK_ENOTSO`,
 *   `PTK_ENOENTRY`, `PTK_EABIMAJOR`, `PTK_EABIMINOR`, `PTK_ESIZE`, `PTK_EMASK`,
 *   `PTK_EOPTION`, `PTK_EOPTTYPE`, `PTK_EUNSUPPORTED`, or what `init`
 *   returned), with a message that says what was expected and what was found.
 * @since 0.1
 */
PTK_API int ptk_session_add_plugin(ptk_session *s, const char *spec,
                                   char **errmsg);

/**
 * @brief Adds a plugin linked into the program (same checks as a loaded one).
 * @param s The session.
 * @param desc The descriptor; must outlive the session.
 * @param options `KEY=VALUE,…` or NULL.
 * @param[out] errmsg On failure, a message to ptk_free(); may be NULL.
 * @return As ptk_session_add_plugin().
 * @since 0.1
 */
PTK_API int ptk_session_add_static(ptk_session *s, const ptk_plugin_desc *desc,
                                   const char *options, char **errmsg);

/**
 * @brief Detaches a plugin instance by name from a session (running or not).
 *
 * Its `report` is not called; `fini` is called when the session is freed.
 * @return #PTK_OK, or `PTK_ENOENT` if no attached instance has that name.
 * @since 0.1
 */
PTK_API int ptk_session_remove_plugin(ptk_session *s, const char *name);

/**
 * @brief Starts delivering events to the session's plugins.
 *
 * Creates the output directory (and fails with `PTK_EIO` if it cannot be
 * written), then attaches every plugin to the hub, which installs the hooks
 * the union of all subscriptions needs.
 * @return #PTK_OK or a negative error with @p errmsg.
 * @since 0.1
 */
PTK_API int ptk_session_start(ptk_session *s, char **errmsg);

/**
 * @brief Stops delivering events; hooks nobody needs any more are removed.
 * @return #PTK_OK, or `PTK_ESTATE` if the session was not running.
 * @since 0.1
 */
PTK_API int ptk_session_stop(ptk_session *s);

/**
 * @brief Calls each plugin's `report` (the session must be stopped), then
 * prints the failures recorded for plugins that were detached. A session
 * that follows children, in the process that started following, also names
 * each followed process of this run whose plugins failed (its
 * `pid-N/run.json` says so) and then returns `PTK_EPLUGIN` if nothing else
 * failed.
 *
 * Reports run Python code, so signal handlers, finalizers and GC callbacks
 * may run inside them: meanwhile ptk_session_report, ptk_session_start,
 * ptk_session_add_plugin and ptk_session_remove_plugin on the same session
 * return `PTK_ESTATE`, and ptk_session_free is carried out when the report
 * returns (then the caller must not use the session after it).
 * @return #PTK_OK, or the first error (every plugin is still asked);
 *   `PTK_ESTATE` after `Py_FinalizeEx` of the session's interpreter, or
 *   while the session's report is being written.
 * @since 0.1
 */
PTK_API int ptk_session_report(ptk_session *s, char **errmsg);

/**
 * @brief Number of plugin instances that failed and were detached, plus,
 * after ptk_session_report(), the followed processes whose plugins failed.
 * @since 0.1
 */
PTK_API int ptk_session_failures(const ptk_session *s);

/**
 * @brief Stops the session if needed, calls `fini` of every plugin, frees it.
 *
 * A session belongs to the interpreter it was made in. Once that
 * interpreter has been finalized (`Py_FinalizeEx`), the plugins' `fini` is
 * not called (their state may hold its objects) and only the session's own
 * memory is freed; every other call on such a session returns `PTK_ESTATE`.
 * @param s The session; NULL is allowed.
 * @since 0.1
 */
PTK_API void ptk_session_free(ptk_session *s);

/**
 * @brief The backend a session runs on.
 *
 * Before the first ptk_session_start() this is what the configuration asked
 * for (possibly #PTK_BACKEND_AUTO); from then on the backend actually used:
 * #PTK_BACKEND_LEGACY or #PTK_BACKEND_MONITORING. `auto` resolves to
 * `PYTRACEKIT_BACKEND` when that is set, else to monitoring on 3.12+; a
 * monitoring request falls back to legacy, with a warning on the session's
 * summary stream, when sys.monitoring tool ids 3 and 4 are both taken.
 * @param s The session.
 * @return The backend, or #PTK_BACKEND_AUTO for NULL.
 * @since 0.2
 */
PTK_API ptk_backend ptk_session_backend(const ptk_session *s);

/**
 * @brief The name of a backend: `"auto"`, `"legacy"` or `"monitoring"`.
 * @param b A ::ptk_backend.
 * @return A static string, or NULL if @p b is out of range.
 * @since 0.2
 */
PTK_API const char *ptk_backend_name(ptk_backend b);

/**
 * @brief The backend a name stands for (the reverse of ptk_backend_name()).
 * @param name `"auto"`, `"legacy"` or `"monitoring"`.
 * @param[out] out The backend on success; untouched otherwise.
 * @return #PTK_OK, or `PTK_EINVAL` for any other name (or NULL).
 * @since 0.2
 */
PTK_API int ptk_backend_parse(const char *name, ptk_backend *out);

/**
 * @brief Whether the session is running.
 * @since 0.1
 */
PTK_API int ptk_session_running(const ptk_session *s);

/**
 * @brief Calls @p fn for every plugin found on the plugin path (for
 * `--list-plugins`), in search order; a name is reported once.
 * @param plugin_path Extra directories searched first; may be NULL.
 * @param fn Called with the file and its descriptor (or NULL and the
 *   reason it was rejected).
 * @param data Passed to @p fn.
 * @return #PTK_OK.
 * @since 0.1
 */
PTK_API int ptk_plugin_scan(const char *plugin_path,
                            void (*fn)(const char *file,
                                       const ptk_plugin_desc *desc,
                                       const char *error, void *data),
                            void *data);

/**
 * @brief Sets the process's current context: what the program is doing now,
 * for plugins that keep their data per context (a test and its phase, as
 * `pytest -p pytracekit` sets them: `"tests/test_a.py::test_x|call"`).
 *
 * Every call makes a new context with a new id (a number that is never
 * reused in the process), also when @p name is the last one's; plugins read
 * both through ptk_host::context. There is one current context per process,
 * whatever the sessions: it is the program's, not a session's.
 * @param name The context's name (copied); NULL or `""` ends the current
 *   context (no context: id 0, name NULL).
 * @return #PTK_OK, or `PTK_ENOMEM` (the current context is unchanged).
 *   Call with the GIL held.
 * @since 0.3 (ABI 1.4)
 */
PTK_API int ptk_context_set(const char *name);

/**
 * @brief The process's current context (see ptk_context_set()).
 * @param[out] id The context's id, 0 when there is none; may be NULL.
 * @return Its name, valid until the next ptk_context_set(); NULL when there
 *   is none. Call with the GIL held.
 * @since 0.3 (ABI 1.4)
 */
PTK_API const char *ptk_context_current(uint64_t *id);

/**
 * @brief The host services table given to plugins (also usable by
 * programs that link the library, e.g. to write reports atomically).
 * @since 0.1
 */
PTK_API const ptk_host *ptk_host_services(void);

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_SESSION_H */
