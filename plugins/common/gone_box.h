/*
 * The weak-reference callback a plugin hangs on the code objects it saw,
 * to hear when one dies. The function holds a capsule with a box that
 * points to the plugin's state; fini empties the box (*box = NULL), so a
 * code object dying after the instance is gone (at shutdown) calls nothing
 * of it.
 */
#ifndef PTK_KIT_GONE_BOX_H
#define PTK_KIT_GONE_BOX_H

#include <Python.h>

#include <stdlib.h>

static inline void
ptk_kit_box_free(PyObject *capsule)
{
    free(PyCapsule_GetPointer(capsule, NULL));
}

/* The callback @p def bound to a new box holding @p state (new reference;
 * *box_out is the box), or NULL with an exception set. */
static inline PyObject *
ptk_kit_gone_callback(PyMethodDef *def, void *state, void ***box_out)
{
    void **box = malloc(sizeof(*box));
    if (box == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    *box = state;
    PyObject *cap = PyCapsule_New(box, NULL, ptk_kit_box_free);
    if (cap == NULL) {
        free(box);
        return NULL;
    }
    PyObject *fn = PyCFunction_New(def, cap);
    Py_DECREF(cap); /* frees the box if the function was not made */
    if (fn != NULL) {
        *box_out = box;
    }
    return fn;
}

/* In the callback: the state its box holds, NULL once fini emptied it. */
static inline void *
ptk_kit_gone_state(PyObject *self)
{
    void **box = PyCapsule_GetPointer(self, NULL);
    return box != NULL ? *box : NULL;
}

#endif
