/* Contexts numbered by name (see context_index.h). */
#include "context_index.h"

#include <string.h>

Py_ssize_t
ptk_kit_context_index(PyObject **index, PyObject *names, const char *name, Py_ssize_t next,
                      PyObject **key)
{
    if (key != NULL) {
        *key = NULL;
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Py_ssize_t at = -1;
    PyObject *k = PyUnicode_DecodeUTF8(name ? name : "", (Py_ssize_t)(name ? strlen(name) : 0),
                                       "surrogateescape");
    if (k != NULL && *index == NULL) {
        *index = PyDict_New();
    }
    PyObject *have = k != NULL && *index != NULL ? PyDict_GetItemWithError(*index, k) : NULL;
    if (have != NULL) {
        at = PyLong_AsSsize_t(have);
    }
    else if (k != NULL && *index != NULL && !PyErr_Occurred()) {
        if (names != NULL) {
            next = PyList_GET_SIZE(names);
        }
        PyObject *n = PyLong_FromSsize_t(next);
        if (n != NULL && (names == NULL || PyList_Append(names, k) == 0)) {
            if (PyDict_SetItem(*index, k, n) == 0) {
                at = next;
                if (key != NULL) {
                    *key = Py_NewRef(k);
                }
            }
            else if (names != NULL) {
                PyList_SetSlice(names, next, next + 1, NULL);
            }
        }
        Py_XDECREF(n);
    }
    Py_XDECREF(k);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    return at;
}
