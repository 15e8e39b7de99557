/*
 * Shared by the shipped plugins: the bytes of a file or function name that
 * may not be valid UTF-8. On Linux a path is bytes; Python decodes the ones
 * that are not UTF-8 with surrogateescape (os.fsdecode: byte 0xNN becomes
 * U+DCNN), which PyUnicode_AsUTF8 refuses. These give the file system's own
 * bytes back instead, so a report carries the name whole (docs/reports.md,
 * "Names that are not UTF-8"). Compiled into each plugin, hidden.
 */
#ifndef PTK_PLUGINS_FS_NAME_H
#define PTK_PLUGINS_FS_NAME_H

#include <Python.h>
#include <stddef.h>
#include <stdio.h>

/**
 * @brief The bytes of the str @p s: its UTF-8 when it has one (no copy),
 * else the UTF-8 with each surrogate-escaped byte turned back into that
 * byte (os.fsencode's bytes), any other lone surrogate as "\\udNNN" text.
 *
 * @param s a str
 * @param n where the length goes (may be NULL)
 * @param hold set to a new reference the result lives in (NULL on the fast
 *        path); the caller drops it with Py_XDECREF when done with the bytes
 * @return the NUL-terminated bytes, or NULL with a Python error set
 */
const char *ptk_kit_name_bytes(PyObject *s, Py_ssize_t *n, PyObject **hold);

/**
 * @brief The str of the name bytes @p b (the reverse of
 * ptk_kit_name_bytes(): bytes that are not UTF-8 become U+DCNN, as
 * os.fsdecode does).
 *
 * @return a new reference, or NULL with a Python error set
 */
PyObject *ptk_kit_name_str(const char *b);

/**
 * @brief The length of the valid UTF-8 sequence at @p p (1 to 4), or 0
 * when the byte at @p p does not start one.
 */
size_t ptk_kit_utf8_len(const unsigned char *p);

/**
 * @brief A copy of the NUL-terminated name bytes @p b for text formats:
 * each byte that is not part of valid UTF-8 is written as the four
 * characters "\\xNN" (lower-case hex); the rest as it is.
 *
 * @return a malloc'd string, or NULL when out of memory
 */
char *ptk_kit_name_text(const char *b);

/**
 * @brief Writes the NUL-terminated name bytes @p b to @p f in the text form
 * of ptk_kit_name_text(), without a copy.
 *
 * @return 0, or -1 when the write failed
 */
int ptk_kit_name_write(FILE *f, const char *b);

#endif
