/* Shared by the bad_*.c test plugins: each is a descriptor that the loader
 * must reject for one reason; these are the do-nothing callbacks they
 * point at (or deliberately leave out). */
#ifndef PTK_TEST_BAD_COMMON_H
#define PTK_TEST_BAD_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pytracekit/plugin.h>

static int __attribute__((unused))
on_event(void *state, const ptk_event *ev)
{
    (void)state;
    (void)ev;
    return PTK_OK;
}

static void __attribute__((unused))
on_ref(void *state, PyObject *obj, ptk_event_kind kind)
{
    (void)state;
    (void)obj;
    (void)kind;
}

#endif
