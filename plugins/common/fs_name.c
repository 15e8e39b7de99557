/* The bytes of names that may not be UTF-8 (see fs_name.h). */
#include "fs_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
ptk_kit_name_bytes(PyObject *s, Py_ssize_t *n, PyObject **hold)
{
    *hold = NULL;
    const char *u = PyUnicode_AsUTF8AndSize(s, n);
    if (u != NULL || !PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        return u;
    }
    PyErr_Clear();
    /* surrogateescape gives back the bytes os.fsdecode took in; a lone
     * surrogate it cannot take (not U+DC80..U+DCFF) stays as text. */
    PyObject *b = PyUnicode_AsEncodedString(s, "utf-8", "surrogateescape");
    if (b == NULL && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
        b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
    }
    if (b == NULL) {
        return NULL;
    }
    *hold = b;
    if (n != NULL) {
        *n = PyBytes_GET_SIZE(b);
    }
    return PyBytes_AS_STRING(b);
}

PyObject *
ptk_kit_name_str(const char *b)
{
    return PyUnicode_DecodeUTF8(b, (Py_ssize_t)strlen(b), "surrogateescape");
}

size_t
ptk_kit_utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80) {
        return 1;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    }
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80;
        hi = c == 0xed ? 0x9f : 0xbf; /* no surrogates */
    }
    else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;
    }
    else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf) {
            return 0;
        }
    }
    return len;
}

char *
ptk_kit_name_text(const char *b)
{
    size_t n = strlen(b);
    char *out = malloc(n * 4 + 1);
    if (out == NULL) {
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)b;
    char *o = out;
    while (*p != 0) {
        size_t k = ptk_kit_utf8_len(p);
        if (k == 0) {
            o += sprintf(o, "\\x%02x", *p++);
            continue;
        }
        memcpy(o, p, k);
        o += k;
        p += k;
    }
    *o = '\0';
    return out;
}

int
ptk_kit_name_write(FILE *f, const char *b)
{
    const unsigned char *p = (const unsigned char *)b;
    while (*p != 0) {
        const unsigned char *run = p;
        size_t k;
        while (*p != 0 && (k = ptk_kit_utf8_len(p)) > 0) {
            p += k;
        }
        if (p > run && fwrite(run, 1, (size_t)(p - run), f) != (size_t)(p - run)) {
            return -1;
        }
        if (*p != 0 && fprintf(f, "\\x%02x", *p++) < 0) {
            return -1;
        }
    }
    return 0;
}
