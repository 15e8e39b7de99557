/*
 * Shared by the shipped plugins that keep figures per context
 * (ptk_host::context, per_context=true / contexts=true): one way to number
 * the contexts by name, so that two contexts of one name (a test run
 * twice, the time between tests) are one.
 *
 * Compiled into each plugin (plugins/common/context_index.c), hidden.
 */
#ifndef PTK_PLUGINS_CONTEXT_INDEX_H
#define PTK_PLUGINS_CONTEXT_INDEX_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/**
 * @brief The number of the context named @p name: the one @p *index (a
 * dict of str to int, made on first use) holds for it; a new name gets the
 * next one, which is then recorded.
 *
 * The name is decoded from UTF-8 with surrogateescape; NULL is "" (no
 * context). The traced program's exception, if any, is kept. GIL held.
 * A plugin that keeps its own array of contexts makes room in it before
 * the call, so that a new number always has its element.
 *
 * @param index the address of the plugin's dict (NULL: none yet)
 * @param names a list of the names by number, which a new name is appended
 *        to (its number: its position); or NULL, and the number is @p next
 * @param name the context's name, from ptk_host::context
 * @param next without @p names, the number a new name gets
 * @param key when the name is new: its str (a new reference), for the
 *        plugin's own record of it; else NULL. May be NULL.
 * @return the number, or -1 when out of memory (nothing recorded)
 */
Py_ssize_t ptk_kit_context_index(PyObject **index, PyObject *names, const char *name,
                                 Py_ssize_t next, PyObject **key);

#endif
