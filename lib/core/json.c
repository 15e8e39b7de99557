/* A Python value as json.dumps writes it, without the json package: the
 * host's json_write (see core.h and ptk_host::json_write). */
#include "core/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Output through a buffer of its own: a report's text is millions of short
 * pieces, and a stdio call per piece cost more than the encoding. Into
 * @p f, or (f NULL) into the growing string @p mem. */
typedef struct {
    FILE *f;
    char *mem;
    size_t memlen, memcap;
    int indent;           /* -1: one line */
    const char *item_sep; /* "," or ", " */
    const char *key_sep;  /* ":" or ": " */
    size_t n;
    int failed;
    char buf[16384];
} jv_out;

static void
jv_write(jv_out *o, const char *s, size_t n)
{
    if (o->failed || n == 0) {
        return;
    }
    if (o->f != NULL) {
        o->failed = fwrite(s, 1, n, o->f) != n;
        return;
    }
    if (o->memlen + n + 1 > o->memcap) {
        size_t cap = o->memcap ? o->memcap : 256;
        while (cap < o->memlen + n + 1) {
            cap *= 2;
        }
        char *m = realloc(o->mem, cap);
        if (m == NULL) {
            o->failed = 1;
            return;
        }
        o->mem = m;
        o->memcap = cap;
    }
    memcpy(o->mem + o->memlen, s, n);
    o->memlen += n;
    o->mem[o->memlen] = '\0';
}

static void
jv_flush(jv_out *o)
{
    jv_write(o, o->buf, o->n);
    o->n = 0;
}

static void
jv_put(jv_out *o, const char *s, size_t n)
{
    if (o->n + n > sizeof o->buf) {
        jv_flush(o);
        if (n > sizeof o->buf) {
            jv_write(o, s, n);
            return;
        }
    }
    memcpy(o->buf + o->n, s, n);
    o->n += n;
}

static void
jv_putc(jv_out *o, char c)
{
    if (o->n == sizeof o->buf) {
        jv_flush(o);
    }
    o->buf[o->n++] = c;
}

/* @p n bytes of text, in quotes when @p quoted (a dict key). */
static void
jv_text(jv_out *o, const char *s, size_t n, int quoted)
{
    if (quoted) {
        jv_putc(o, '"');
    }
    jv_put(o, s, n);
    if (quoted) {
        jv_putc(o, '"');
    }
}

static void
jv_escape_unit(jv_out *o, unsigned int u)
{
    static const char hex[] = "0123456789abcdef";
    char e[6] = {'\\', 'u', hex[(u >> 12) & 15], hex[(u >> 8) & 15], hex[(u >> 4) & 15],
                 hex[u & 15]};
    jv_put(o, e, sizeof e);
}

/* json's ensure_ascii: ' '..'~' as they are but '"' and '\\'; the five
 * short escapes; everything else "\\uNNNN" (lower-case hex), a character
 * beyond the BMP as its surrogate pair. */
static int
jv_string(jv_out *o, PyObject *s)
{
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t len = PyUnicode_GET_LENGTH(s);
    jv_putc(o, '"');
    Py_ssize_t run = 0; /* start of the pending run of plain ASCII */
    for (Py_ssize_t i = 0; i < len; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= ' ' && c <= '~' && c != '"' && c != '\\') {
            continue;
        }
        if (kind == PyUnicode_1BYTE_KIND && i > run) {
            jv_put(o, (const char *)data + run, (size_t)(i - run));
        }
        else {
            for (Py_ssize_t j = run; j < i; j++) {
                jv_putc(o, (char)PyUnicode_READ(kind, data, j));
            }
        }
        run = i + 1;
        const char *short_esc = c == '"'    ? "\\\""
                                : c == '\\' ? "\\\\"
                                : c == '\n' ? "\\n"
                                : c == '\r' ? "\\r"
                                : c == '\t' ? "\\t"
                                : c == '\b' ? "\\b"
                                : c == '\f' ? "\\f"
                                            : NULL;
        if (short_esc) {
            jv_put(o, short_esc, 2);
        }
        else if (c >= 0x10000) {
            c -= 0x10000;
            jv_escape_unit(o, 0xd800 | (c >> 10));
            jv_escape_unit(o, 0xdc00 | (c & 0x3ff));
        }
        else {
            jv_escape_unit(o, c);
        }
    }
    if (kind == PyUnicode_1BYTE_KIND) {
        jv_put(o, (const char *)data + run, (size_t)(len - run));
    }
    else {
        for (Py_ssize_t j = run; j < len; j++) {
            jv_putc(o, (char)PyUnicode_READ(kind, data, j));
        }
    }
    jv_putc(o, '"');
    return 0;
}

/* An int by int's own text (a subclass's __repr__ is not used, as json
 * does not use it). */
static int
jv_int(jv_out *o, PyObject *v, int quoted)
{
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (!overflow) {
        /* digits from the end, without printf (which was most of writing a
         * report of numbers) */
        char t[32];
        char *p = t + sizeof t;
        unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
        if (quoted) {
            *--p = '"';
        }
        do {
            *--p = (char)('0' + u % 10);
            u /= 10;
        } while (u != 0);
        if (n < 0) {
            *--p = '-';
        }
        if (quoted) {
            *--p = '"';
        }
        jv_put(o, p, (size_t)(t + sizeof t - p));
        return 0;
    }
    PyObject *text = PyLong_Type.tp_repr(v);
    Py_ssize_t k = 0;
    const char *s = text ? PyUnicode_AsUTF8AndSize(text, &k) : NULL;
    if (!s) {
        Py_XDECREF(text);
        return -1;
    }
    jv_text(o, s, (size_t)k, quoted);
    Py_DECREF(text);
    return 0;
}

/* A float as json writes it: float's repr, NaN, Infinity, -Infinity. */
static int
jv_float(jv_out *o, PyObject *v, int quoted)
{
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) {
        return -1;
    }
    const char *special = isnan(d) ? "NaN" : isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                                                      : NULL;
    char *text = special ? NULL : PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!special && !text) {
        return -1;
    }
    const char *t = special ? special : text;
    jv_text(o, t, strlen(t), quoted);
    PyMem_Free(text);
    return 0;
}

/* The scalars: None, bool, str, int, float; 1 when @p v is none of them. */
static int
jv_scalar(jv_out *o, PyObject *v, int quoted)
{
    const char *word = v == Py_None    ? "null"
                       : v == Py_True  ? "true"
                       : v == Py_False ? "false"
                                       : NULL;
    if (word) {
        jv_text(o, word, strlen(word), quoted);
        return 0;
    }
    if (PyUnicode_Check(v)) {
        return jv_string(o, v);
    }
    if (PyLong_Check(v)) {
        return jv_int(o, v, quoted);
    }
    if (PyFloat_Check(v)) {
        return jv_float(o, v, quoted);
    }
    return 1;
}

static int jv_value(jv_out *o, PyObject *v, int depth);

/* Before an item of a container at @p depth: the separator after the
 * previous one, and with indent= the new line and its indentation. */
static void
jv_item(jv_out *o, int first, int depth)
{
    if (!first) {
        jv_put(o, o->item_sep, strlen(o->item_sep));
    }
    if (o->indent >= 0) {
        jv_putc(o, '\n');
        for (long i = 0; i < (long)o->indent * (depth + 1); i++) {
            jv_putc(o, ' ');
        }
    }
}

/* After the last item of a non-empty container at @p depth. */
static void
jv_close(jv_out *o, int depth, char c)
{
    if (o->indent >= 0) {
        jv_putc(o, '\n');
        for (long i = 0; i < (long)o->indent * depth; i++) {
            jv_putc(o, ' ');
        }
    }
    jv_putc(o, c);
}

/* One member: the key as json turns it into a string, and the value. */
static int
jv_member(jv_out *o, PyObject *k, PyObject *v, int first, int depth)
{
    jv_item(o, first, depth);
    int rc = jv_scalar(o, k, 1);
    if (rc > 0) {
        PyErr_Format(PyExc_TypeError, "keys must be str, int, float, bool or None, not %.100s",
                     Py_TYPE(k)->tp_name);
    }
    if (rc != 0) {
        return -1;
    }
    jv_put(o, o->key_sep, strlen(o->key_sep));
    return jv_value(o, v, depth + 1);
}

/* A dict in its items() order: its own for a dict, and for a subclass
 * (an OrderedDict after move_to_end) what items() gives, as json reads
 * it. */
static int
jv_dict(jv_out *o, PyObject *d, int depth)
{
    int first = 1;
    jv_putc(o, '{');
    if (PyDict_CheckExact(d)) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(d, &pos, &k, &v)) {
            if (jv_member(o, k, v, first, depth) < 0) {
                return -1;
            }
            first = 0;
        }
    }
    else {
        PyObject *items = PyMapping_Items(d);
        if (items == NULL) {
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
            PyObject *kv = PyList_GET_ITEM(items, i);
            if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) {
                PyErr_SetString(PyExc_ValueError, "items must return 2-tuples");
                Py_DECREF(items);
                return -1;
            }
            if (jv_member(o, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1), first, depth) <
                0) {
                Py_DECREF(items);
                return -1;
            }
            first = 0;
        }
        Py_DECREF(items);
    }
    if (first) {
        jv_putc(o, '}');
    }
    else {
        jv_close(o, depth, '}');
    }
    return 0;
}

static int
jv_value(jv_out *o, PyObject *v, int depth)
{
    int rc = jv_scalar(o, v, 0);
    if (rc <= 0) {
        return rc;
    }
    /* nested containers: RecursionError where json's encoder raises it */
    if (Py_EnterRecursiveCall(" while encoding a JSON object")) {
        return -1;
    }
    if (PyDict_Check(v)) {
        rc = jv_dict(o, v, depth);
        Py_LeaveRecursiveCall();
        return rc;
    }
    if (!PyList_Check(v) && !PyTuple_Check(v)) {
        Py_LeaveRecursiveCall();
        PyErr_Format(PyExc_TypeError, "Object of type %.100s is not JSON serializable",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    jv_putc(o, '[');
    /* a list read by index each time: it keeps its items alive itself */
    Py_ssize_t n = 0;
    for (; n < PySequence_Fast_GET_SIZE(v); n++) {
        jv_item(o, n == 0, depth);
        if (jv_value(o, PySequence_Fast_GET_ITEM(v, n), depth + 1) < 0) {
            Py_LeaveRecursiveCall();
            return -1;
        }
    }
    Py_LeaveRecursiveCall();
    if (n == 0) {
        jv_putc(o, ']');
    }
    else {
        jv_close(o, depth, ']');
    }
    return 0;
}

/* One dump into @p f, or into a string when @p f is NULL (*@p text). */
static int
jv_dump(FILE *f, PyObject *value, int indent, char **text)
{
    jv_out *o = PyMem_Malloc(sizeof *o);
    if (o == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(o, 0, offsetof(jv_out, buf));
    o->f = f;
    o->indent = indent >= 0 ? indent : -1;
    o->item_sep = indent == PTK_JSON_SPACED ? ", " : ",";
    o->key_sep = indent == PTK_JSON_COMPACT ? ":" : ": ";
    int rc = jv_value(o, value, 0);
    jv_flush(o);
    rc = rc < 0 ? -1 : o->failed ? -2
                                 : 0;
    if (f == NULL && rc == 0) {
        *text = o->mem != NULL ? o->mem : ptk__strdup("");
        o->mem = NULL;
        if (*text == NULL) {
            rc = -1;
        }
    }
    if (f == NULL && rc == -2) {
        rc = -1; /* out of memory, which is a Python error here */
    }
    if (rc == -1 && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    free(o->mem);
    PyMem_Free(o);
    return rc;
}

int
ptk__json_write(FILE *f, PyObject *value, int indent)
{
    return f != NULL ? jv_dump(f, value, indent, NULL) : -2;
}

char *
ptk__json_text(PyObject *value, int indent)
{
    char *text = NULL;
    return jv_dump(NULL, value, indent, &text) == 0 ? text : NULL;
}
