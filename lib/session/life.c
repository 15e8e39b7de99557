/* The interpreter's life: sessions belong to the interpreter they were made
 * in. When Py_FinalizeEx runs, the sessions still running are stopped
 * while Python still works (an atexit callback), and once the interpreter
 * is gone every pointer the library holds into it is forgotten (Py_AtExit):
 * a later Py_Initialize starts from scratch, and a session of the old
 * interpreter answers PTK_ESTATE instead of touching freed objects. */
#include "session/session.h"

uint64_t ptk__interp_gen = 1;
static int watching; /* both callbacks are registered for this interpreter */

/* atexit (Python still works): stop what still runs, so that the hooks
 * come out cleanly. Registered when the first session is made, hence
 * called after the atexit callbacks registered later (the command's). */
static PyObject *
at_python_exit(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    while (ptk__active_sessions != NULL) {
        struct ptk_session *s = ptk__active_sessions;
        if (ptk_session_stop(s) < 0) {
            ptk__active_sessions = s->next_active; /* never loop */
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef at_python_exit_def = {
    "_pytracekit_at_exit", at_python_exit, METH_NOARGS,
    "stops the pytracekit sessions still running"};

/* Py_AtExit: the interpreter is gone; nothing here may call Python. */
static void
after_finalize(void)
{
    ptk__hub_reset();
    ptk__backends_reset();
    ptk__code_reset();
    ptk__thread_reset();
    ptk__interp_gen++;
    watching = 0;
}

/* Is Python running here? Py_IsInitialized() is 0 on 3.15 while site and
 * sitecustomize are imported (a followed child starts its session there),
 * although the calling thread runs Python code: its thread state says so. */
static int
python_runs(void)
{
    if (Py_IsInitialized()) {
        return 1;
    }
#if PTK_HAVE_THREADSTATE_GETUNCHECKED
    PyThreadState *ts = PyThreadState_GetUnchecked();
    return ts != NULL && PyThreadState_GetInterpreter(ts) != NULL;
#else
    return 0;
#endif
}

int
ptk__interp_check(char **errmsg)
{
    if (!python_runs()) {
        return ptk__err(errmsg, PTK_ESTATE,
                        "Python is not initialized (call Py_Initialize first)");
    }
    if (watching) {
        return PTK_OK;
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    /* (registrations live in the interpreter, not the module object) */
    PyObject *atexit = ptk__import_quietly("atexit");
    PyObject *fn = PyCFunction_New(&at_python_exit_def, NULL);
    PyObject *r = atexit && fn
                      ? PyObject_CallMethod(atexit, "register", "O", fn)
                      : NULL;
    Py_XDECREF(r);
    Py_XDECREF(fn);
    Py_XDECREF(atexit);
    int rc = PTK_OK;
    if (r == NULL) {
        char *why = ptk__format_exception();
        rc = ptk__err(errmsg, PTK_EPYTHON,
                      "cannot register with atexit: %s", why ? why : "?");
        free(why);
    }
    else if (Py_AtExit(after_finalize) < 0) {
        rc = ptk__err(errmsg, PTK_ELIMIT,
                      "cannot register with Py_AtExit (its 32 places are "
                      "taken)");
    }
    else {
        watching = 1;
    }
    PyErr_Restore(et, ev, tb);
    return rc;
}

int
ptk__session_check(const struct ptk_session *s, char **errmsg)
{
    if (s == NULL) {
        return ptk__err(errmsg, PTK_EINVAL, "no session");
    }
    if (s->gen != ptk__interp_gen || !python_runs()) {
        return ptk__err(errmsg, PTK_ESTATE,
                        "the Python interpreter this session was made in has "
                        "been finalized (Py_FinalizeEx); free the session "
                        "and make a new one");
    }
    return PTK_OK;
}
