/*
 * When the program itself starts, told from the interpreter's audit events:
 * one watcher for the command that embeds the interpreter
 * (tools/pytracekit.c) and for the command run by the interpreter's own
 * executable (python/_pytracekit.c, pytracekit/_command/sitecustomize.py),
 * so that both start their session at the same event and give the same
 * profile. Not part of the library's API.
 */
#ifndef PTK_PROGSTART_H
#define PTK_PROGSTART_H

#include <Python.h>

/** What the watcher has seen of the program's start. */
typedef struct ptk_progstart {
    int command_pending;  /**< -c: the start is the exec of "<string>" */
    char *script_pending; /**< a script's real path, until its code runs */
} ptk_progstart;

/**
 * One audit event: 1 when the program starts at it (start the session now),
 * else 0. For a script the start is the exec of its code (after the
 * interpreter's own work for it); for -c the exec of "<string>"; for -m,
 * stdin and the rest, python's cpython.run_* event, with runpy imported
 * first for -m (python imports it right after that event: not the
 * program's). Never raises.
 */
int ptk_progstart_event(ptk_progstart *w, const char *event, PyObject *args);

#endif
