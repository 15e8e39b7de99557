/*
 * Shared by the shipped plugins that write a Python value as JSON without
 * importing the json package (its import, with re's, costs more than a
 * short program's own start on 3.14): the text json.dumps(value,
 * separators=(",", ":")) gives, byte for byte. Compiled into each plugin
 * (plugins/common/json_value.c), hidden.
 */
#ifndef PTK_PLUGINS_JSON_VALUE_H
#define PTK_PLUGINS_JSON_VALUE_H

#include <Python.h>
#include <stdio.h>

/**
 * @brief Writes @p value to @p f as json.dumps(value, separators=(",",
 * ":")) writes it (ensure_ascii: every character outside ' '..'~' as a
 * "\\uNNNN" escape, two for one beyond the BMP; dict keys that are int,
 * bool or None as json turns them into strings).
 *
 * Takes dict, list, tuple, str, int, float, bool and None, and their
 * subclasses as json does (an int subclass by int's text); nested at most
 * 200 deep.
 *
 * @return 0; -1 with a Python error set for a value json would refuse
 *         (TypeError, ValueError for too deep) or when out of memory; -2
 *         when writing to @p f failed (no Python error set). On failure
 *         part of the text may have been written.
 */
int ptk_kit_json_dump(FILE *f, PyObject *value);

#endif
