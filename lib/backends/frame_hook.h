/* The legacy backend's frame hook: CPython's frame evaluation function
 * (PEP 523), where the interpreter has one and a per-thread tracing flag
 * (3.11). frame_hook.c holds the hook, the one file built with
 * CPython's internal headers (it reads the code object and globals of the
 * frame about to run); legacy.c decides what the thread's hooks are
 * while that frame runs. */
#ifndef PTK_FRAME_HOOK_H
#define PTK_FRAME_HOOK_H

#include <Python.h>

/* The `obj` handed to CPython with the hub's profile and trace functions
 * (legacy.c); callable. */
extern PyObject *ptk__hub_object;

/* What ptk__frame_enter changed, for ptk__frame_exit to undo. */
typedef struct ptk__frame_save {
    Py_tracefunc trace, profile; /* the thread's functions before */
    int how;                     /* PTK__FRAME_* bits */
} ptk__frame_save;

#define PTK__FRAME_SUSPENDED 1 /* nothing wanted of the frame: hooks emptied */
#define PTK__FRAME_RESUMED 2   /* wanted inside such a frame: trace fn back */
#define PTK__FRAME_BODY 4      /* a module body while threading's hook waits */

/* Before a frame runs on ts, whose trace object is the hub's (legacy.c):
 * 1 if ptk__frame_exit must run after it. */
int ptk__frame_enter(PyThreadState *ts, PyCodeObject *code, PyObject *globals,
                     ptk__frame_save *save);
void ptk__frame_exit(PyThreadState *ts, ptk__frame_save *save);
/* The hook found its thread half way down its C stack: it is removed for
 * the rest of the process, and every suspended thread gets the trace
 * function back (legacy.c). */
void ptk__frame_hook_too_deep(void);

/* Installs (on=1) or removes the hook in this interpreter. It is installed
 * only over CPython's own evaluation function (not over another tool's),
 * and removed only when it is still ours. Returns whether it is installed
 * now; 0 where this build has no frame hook. */
int ptk__frame_hook_set(int on);

#endif
