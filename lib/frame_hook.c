/* The legacy backend's frame hook (lib/frame_hook.h). Built with CPython's
 * internal headers, for the two fields of the frame about to run that no
 * public API gives before it runs: its code object and its globals. */
#define Py_BUILD_CORE 1
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ptk_config.h"
#include "frame_hook.h"

#if PTK_HAVE_FRAME_HOOK && PTK_HAVE_CFRAME_USE_TRACING
#include <internal/pycore_frame.h>

/* Every Python frame of the interpreter starts here while the hook is
 * installed (CPython then calls it rather than running a Python callee in
 * its caller's loop). Threads whose trace object is not the hub's pay one
 * compare. */
static PyObject *
frame_hook(PyThreadState *ts, struct _PyInterpreterFrame *frame, int throwflag)
{
    ptk__frame_save save;
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
