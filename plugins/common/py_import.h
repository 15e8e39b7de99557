/*
 * Imports and builtins for plugin code that may run anywhere. A report can
 * run inside a signal handler (SIGTERM writes the reports first), where the
 * interrupted frame's builtins are the current ones: namedtuple's __new__,
 * for one, runs with an empty dict, and PyImport_ImportModule and
 * PyEval_GetBuiltins see that frame's. These go to the import system and
 * the interpreter's builtins module instead.
 */
#ifndef PTK_KIT_PY_IMPORT_H
#define PTK_KIT_PY_IMPORT_H

#include <Python.h>

/* A top-level module (new reference), or NULL with an exception set. */
static inline PyObject *
ptk_kit_import(const char *name)
{
    return PyImport_ImportModuleLevel(name, NULL, NULL, NULL, 0);
}

/* The interpreter's builtins module, for a globals dict's __builtins__. */
static inline PyObject *
ptk_kit_builtins(void)
{
    return ptk_kit_import("builtins");
}

#endif
