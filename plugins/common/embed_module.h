/*
 * A plugin's embedded Python module (made at build time by
 * plugins/coverage/embed.py): run as a fresh module whose builtins are the
 * interpreter's.
 */
#ifndef PTK_KIT_EMBED_MODULE_H
#define PTK_KIT_EMBED_MODULE_H

#include <Python.h>

#include <stddef.h>

/*
 * Runs the module @p name: its code object as marshalled at build time
 * (@p code_bytes, @p code_len; may be NULL) when this interpreter's version
 * is @p built_for (major << 8 | minor), else @p source compiled. Returns the
 * module's dict (new reference), or NULL with an exception set.
 */
PyObject *ptk_kit_load_module(const char *name, const char *source,
                              const unsigned char *code_bytes, size_t code_len,
                              unsigned long built_for);

#endif
