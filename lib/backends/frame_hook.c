/* The legacy backend's frame hook (frame_hook.h). Built with CPython's
 * internal headers, for the two fields of the frame about to run that no
 * public API gives before it runs: its code object and its globals. */
#define Py_BUILD_CORE 1
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ptk_config.h"
#include "backends/frame_hook.h"

#if PTK_HAVE_FRAME_HOOK && PTK_HAVE_CFRAME_USE_TRACING
#include <internal/pycore_frame.h>
#include <pthread.h>

/* With the hook installed CPython calls every Python callee through the C
 * stack (about 600 bytes a level on 3.11), where it would otherwise run it
 * in its caller's loop: a program that raised the recursion limit and
 * recurses deep in pure Python would run out of C stack. Below the middle
 * of its thread's stack the hook takes itself out for good (legacy.c), and
 * the program gets the rest as in a run without it. */
static _Thread_local char *stack_middle __attribute__((tls_model("initial-exec")));

static char *
stack_middle_get(void)
{
    pthread_attr_t attr;
    void *low = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        return (char *)1; /* unknown: never below it */
    }
    if (pthread_attr_getstack(&attr, &low, &size) != 0 || low == NULL) {
        low = NULL;
    }
    pthread_attr_destroy(&attr);
    return low != NULL ? (char *)low + size / 2 : (char *)1;
}

/* Every Python frame of the interpreter starts here while the hook is
 * installed (CPython then calls it rather than running a Python callee in
 * its caller's loop). Threads whose trace object is not the hub's pay one
 * compare. */
static PyObject *
frame_hook(PyThreadState *ts, struct _PyInterpreterFrame *frame, int throwflag)
{
    ptk__frame_save save;
    char here;
    char *middle = stack_middle;
    if (middle == NULL) {
        middle = stack_middle = stack_middle_get();
    }
    if (&here < middle) { /* the stack grows down on every target here */
        ptk__frame_hook_too_deep();
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    }
    if (ts->c_traceobj != ptk__hub_object || ptk__hub_object == NULL ||
        !ptk__frame_enter(ts, frame->f_code, frame->f_globals, &save)) {
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    }
    PyObject *result = _PyEval_EvalFrameDefault(ts, frame, throwflag);
    ptk__frame_exit(ts, &save);
    return result;
}

int
ptk__frame_hook_set(int on)
{
    PyInterpreterState *interp = PyInterpreterState_Get();
    _PyFrameEvalFunction cur = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (on && cur == _PyEval_EvalFrameDefault) {
        _PyInterpreterState_SetEvalFrameFunc(interp, frame_hook);
    }
    else if (!on && cur == frame_hook) {
        _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
    }
    return _PyInterpreterState_GetEvalFrameFunc(interp) == frame_hook;
}

#else

int
ptk__frame_hook_set(int on)
{
    (void)on;
    return 0;
}

#endif
