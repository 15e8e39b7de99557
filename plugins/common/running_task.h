/*
 * The asyncio Task running now, for plugins that follow Tasks (the timer's
 * await=true, the timeline's task tracks): asyncio.current_task() once the
 * program has imported asyncio (a plugin never imports it), and whether a
 * Task kept by a weak reference is a given object.
 */
#ifndef PTK_KIT_RUNNING_TASK_H
#define PTK_KIT_RUNNING_TASK_H

#include <Python.h>

typedef struct {
    PyObject *name;         /* "asyncio", interned at the first look */
    PyObject *current_task; /* asyncio.current_task, once asyncio is imported */
} ptk_kit_task_finder;

/* The running Task (new reference), or NULL with no exception set: asyncio
 * not imported (yet), or no loop running. */
static inline PyObject *
ptk_kit_running_task(ptk_kit_task_finder *f)
{
    if (f->current_task == NULL) {
        if (f->name == NULL && (f->name = PyUnicode_InternFromString("asyncio")) == NULL) {
            PyErr_Clear();
            return NULL;
        }
        PyObject *mod = PyImport_GetModule(f->name);
        if (mod == NULL) {
            PyErr_Clear();
            return NULL; /* not imported (yet): never imported here */
        }
        f->current_task = PyObject_GetAttrString(mod, "current_task");
        Py_DECREF(mod);
        if (f->current_task == NULL) {
            PyErr_Clear();
            return NULL;
        }
    }
    PyObject *task = PyObject_CallNoArgs(f->current_task);
    if (task == NULL || task == Py_None) {
        PyErr_Clear(); /* no running loop */
        Py_XDECREF(task);
        return NULL;
    }
    return task;
}

/* Releases what the finder holds (with the GIL). */
static inline void
ptk_kit_task_finder_clear(ptk_kit_task_finder *f)
{
    Py_CLEAR(f->current_task);
    Py_CLEAR(f->name);
}

/* Is the object @p wref refers to @p obj (compared only; a Task gone, or a
 * new one at the address of one gone, is not)? */
static inline int
ptk_kit_weak_is(PyObject *wref, PyObject *obj)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(wref, &o) < 0) {
        PyErr_Clear();
        return 0;
    }
    Py_XDECREF(o);
    return o == obj;
#else
    return PyWeakref_GetObject(wref) == obj; /* borrowed */
#endif
}

#endif
