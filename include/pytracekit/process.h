/**
 * @file process.h
 * @brief Sessions across processes: fork, children, exec, signals.
 *
 * One process writes one set of reports, and never another process's:
 *
 * - A process forked while a session runs (os.fork(), multiprocessing's
 *   `fork` and `forkserver` start methods, a C fork() followed by
 *   PyOS_AfterFork_Child()) starts with no session of its own: its copy of
 *   the session is stopped and writes nothing — unless the session follows
 *   children (ptk_session_follow_children()), in which case every plugin
 *   instance is started afresh (empty state, same options) and reports into
 *   `OUTPUT_DIR/pid-N/`. A process that forked by other means (no
 *   after-fork hook) still writes nothing: a session reports only in the
 *   process that started it.
 * - A session that follows children also puts `PYTRACEKIT_FOLLOW` and a
 *   start-up directory on `PYTHONPATH` into the environment, so Python
 *   programs started from it (subprocess, multiprocessing `spawn` and
 *   `forkserver`, os.exec*) start the same plugins with the same options,
 *   each reporting into `OUTPUT_DIR/pid-N/`.
 * - os.execv()/os.execve() (which every os.exec* goes through) and
 *   os._exit() write the reports of the sessions not reported yet first
 *   (running ones, and ones stopped but not yet reported).
 * - SIGTERM and SIGHUP, where their action is the default one when the
 *   first session starts in the main thread, write the reports of the
 *   sessions not reported yet and then end the process by the same signal.
 * - Every report directory gets `run.json` (the run's pid, parent pid,
 *   start and end time, command line, host, plugins and the files written),
 *   and each JSON report a `"run"` member with the same identity (and,
 *   for a session attached to a running process, when and by whom:
 *   ptk_session_mark_attached()); hidden
 *   temporary files left by a killed run are removed when the next session
 *   starts there.
 */
#ifndef PYTRACEKIT_PROCESS_H
#define PYTRACEKIT_PROCESS_H

#include "export.h"
#include "session.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief The exit status of the `pytracekit` command when the program ended
 * with status 0 but a report could not be written. @since 0.3
 */
#define PTK_EXIT_REPORT_FAILED 3

/**
 * @brief Makes a session follow child processes (see the file comment).
 * @param s A session that is not running.
 * @param follow Non-zero to follow.
 * @return #PTK_OK, `PTK_EINVAL` for NULL, `PTK_ESTATE` if it is running.
 * @since 0.3
 */
PTK_API int ptk_session_follow_children(ptk_session *s, int follow);

/**
 * @brief Records that the session was attached to a running process
 * (`pytracekit attach`, docs/attach.md): its run.json then holds
 * `"attached": {"at": AT, "by_pid": BY_PID}`.
 * @param s A session.
 * @param at When, as ISO 8601 text (copied).
 * @param by_pid The process that asked for the attach (> 0).
 * @return #PTK_OK, `PTK_EINVAL` for a NULL argument or a pid <= 0,
 * `PTK_ENOMEM`.
 * @since 0.3
 */
PTK_API int ptk_session_mark_attached(ptk_session *s, const char *at, long by_pid);

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_PROCESS_H */
