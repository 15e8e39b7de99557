/* Subscription filters: the option keys the hub accepts for every plugin
 * (include, exclude, modules, functions, threads, max_depth), compiled
 * once per instance and judged once per code object (code.c caches the
 * verdict as one bit per subscriber) and once per thread. docs/filters.md
 * says what they mean. */
#include "core/core.h"
#include "ptk_filter_keys.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPEC_ROW(key, flag, kw, type, help) {key, type, NULL, help, NULL},
const ptk_option_spec ptk__filter_specs[] = {
    PTK_FILTER_KEYS(SPEC_ROW){NULL, 0, NULL, NULL, NULL},
};
#undef SPEC_ROW

/* Named sets usable in include/exclude, resolved at build time. */
enum { SET_NONE = 0, SET_STDLIB = 1, SET_SITE = 2 };

/* The include/exclude verdict of one file. The code objects of a module
 * share one co_filename object, and each of them is judged (once): the
 * memo saves matching the same path against every glob again. An entry is
 * found by the object's address and taken only if its text is the same
 * (a freed name's address may hold another file's). */
#define FILE_MEMO 64
typedef struct file_memo {
    const void *name; /* the co_filename object, by address only */
    char *path;       /* its text, as judged (before the cwd is added) */
    int ok;
} file_memo;

typedef struct filter_impl {
    ptk__filter pub;
    char **stdlib_dirs; /* NULL-terminated */
    char **site_dirs;   /* NULL-terminated */
    char cwd[PATH_MAX];
    file_memo memo[FILE_MEMO];
} filter_impl;

/* ---- building ------------------------------------------------------------- */

_Static_assert(PTK_FILTER_KEY_COUNT == PTK__F_NLISTS + 1,
               "the list keys, then max_depth");
/* the list keys come first in the one list (ptk_filter_keys.h) */
#define list_keys(which) (ptk__filter_specs[which].name)

static int
has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* An unterminated '[' makes fnmatch compare it literally: say so instead. */
static int
brackets_ok(const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '[') {
            const char *q = p + 1;
            if (*q == '!' || *q == '^') {
                q++;
            }
            if (*q == ']') {
                q++;
            }
            while (*q && *q != ']') {
                q++;
            }
            if (*q != ']') {
                return 0;
            }
            p = q;
        }
    }
    return 1;
}

static int
module_name_ok(const char *s)
{
    if (*s == '\0' || *s == '.') {
        return 0;
    }
    char prev = 0;
    for (const char *p = s; *p; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' ||
                 (unsigned char)*p >= 0x80;
        if (!ok || (*p == '.' && prev == '.')) {
            return 0;
        }
        prev = *p;
    }
    return prev != '.';
}

static char **
dirs_add(char **v, const char *dir)
{
    size_t n = 0;
    while (v && v[n]) {
        if (strcmp(v[n], dir) == 0) {
            return v;
        }
        n++;
    }
    char **nv = realloc(v, (n + 2) * sizeof *nv);
    if (nv == NULL) {
        return v;
    }
    nv[n] = ptk__strdup(dir);
    nv[n + 1] = NULL;
    if (nv[n] == NULL) {
        nv[n] = NULL;
    }
    return nv;
}

static void
dirs_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) {
        free(v[i]);
    }
    free(v);
}

/* The standard library's directory (that of os.py) and the site-packages
 * directories on sys.path. Reads only modules already imported. */
static void
resolve_sets(filter_impl *f)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
    PyObject *os = mods ? PyDict_GetItemString(mods, "os") : NULL;
    PyObject *file = os ? PyObject_GetAttrString(os, "__file__") : NULL;
    const char *u = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
    if (u != NULL) {
        char *d = ptk__strdup(u);
        char *slash = d ? strrchr(d, '/') : NULL;
        if (slash != NULL) {
            *slash = '\0';
            f->stdlib_dirs = dirs_add(f->stdlib_dirs, d);
        }
        free(d);
    }
    Py_XDECREF(file);
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    for (Py_ssize_t i = 0; path && PyList_Check(path) && i < PyList_GET_SIZE(path); i++) {
        PyObject *item = PyList_GET_ITEM(path, i);
        const char *p = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        if (p == NULL) {
            continue;
        }
        const char *base = strrchr(p, '/');
        base = base ? base + 1 : p;
        if (!strcmp(base, "site-packages") || !strcmp(base, "dist-packages")) {
            f->site_dirs = dirs_add(f->site_dirs, p);
        }
        else if (!strcmp(base, "lib-dynload")) {
            f->stdlib_dirs = dirs_add(f->stdlib_dirs, p);
        }
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

/* An absolute path taken as the shell takes it, by its text: "." parts
 * dropped, ".." taking the part before it (never above "/"), repeated
 * slashes and a trailing one dropped ("." of a relative item made
 * "/cwd/." matched nothing). In place: the result is never longer. */
static void
path_tidy(char *p)
{
    size_t w = 1; /* p[0] is the root's '/' */
    const char *r = p + 1;
    while (*r != '\0') {
        while (*r == '/') {
            r++;
        }
        const char *part = r;
        while (*r != '\0' && *r != '/') {
            r++;
        }
        size_t n = (size_t)(r - part);
        if (n == 0 || (n == 1 && part[0] == '.')) {
            continue;
        }
        if (n == 2 && part[0] == '.' && part[1] == '.') {
            while (w > 1 && p[w - 1] != '/') {
                w--;
            }
            w -= w > 1; /* and its '/' */
            continue;
        }
        if (w > 1) {
            p[w++] = '/';
        }
        memmove(p + w, part, n);
        w += n;
    }
    p[w] = '\0';
}

/* The item's text, unquoted by the caller, checked and made what it is
 * matched as: a named set, a directory or file prefix made absolute, or a
 * glob (include, exclude). *prefix says which. */
static int
file_item(filter_impl *f, int which, char *text, const char *item, size_t n,
          int *prefix, const char *subject, char **errmsg)
{
    if (!strcmp(text, "stdlib") || !strcmp(text, "site-packages")) {
        *prefix = text[0] == 's' && text[1] == 't' ? -SET_STDLIB : -SET_SITE;
        if (f->stdlib_dirs == NULL && f->site_dirs == NULL) {
            resolve_sets(f);
        }
        return PTK_OK;
    }
    if (text[0] != '/' && text[0] != '<' && text[0] != '*') {
        /* relative to the directory the session was set up in */
        memmove(text + strlen(f->cwd) + 1, text, n + 1);
        memcpy(text, f->cwd, strlen(f->cwd));
        text[strlen(f->cwd)] = '/';
    }
    if (text[0] == '/') {
        path_tidy(text);
    }
    if (!brackets_ok(text)) {
        return ptk__err(errmsg, PTK_EINVAL,
                        "%s%sfilter %s='%.*s' has a '[' with no ']'",
                        PTK__LEAD(subject), list_keys(which), (int)n, item);
    }
    if (!has_glob(text)) {
        size_t tl = strlen(text);
        while (tl > 1 && text[tl - 1] == '/') {
            text[--tl] = '\0';
        }
        *prefix = 1; /* a directory (everything under it) or a file */
    }
    return PTK_OK;
}

/* The item checked for its key: the prefix kind it is matched as. */
static int
check_item(filter_impl *f, int which, char *text, const char *item, size_t n,
           int *prefix, const char *subject, char **errmsg)
{
    if (which == PTK__F_INCLUDE || which == PTK__F_EXCLUDE) {
        return file_item(f, which, text, item, n, prefix, subject, errmsg);
    }
    if (which == PTK__F_MODULES) {
        if (!module_name_ok(text)) {
            return ptk__err(errmsg, PTK_EINVAL,
                            "%s%sfilter modules='%.*s' is not a module name "
                            "(expected e.g. myapp or myapp.core)",
                            PTK__LEAD(subject), (int)n, item);
        }
        *prefix = 1;
        return PTK_OK;
    }
    if (!brackets_ok(text)) {
        return ptk__err(errmsg, PTK_EINVAL,
                        "%s%sfilter %s='%.*s' has a '[' with no ']'",
                        PTK__LEAD(subject), list_keys(which), (int)n, item);
    }
    return PTK_OK;
}

/* Appends one pattern to a list, which has room for 4, 8, 16, ... items:
 * grown when n reaches a power of two (one more each time made 20,000
 * items quadratic). The list takes text. */
static int
list_append(ptk__patlist *l, char *text, int neg, int prefix, char **errmsg)
{
    if (l->n == 0 || (l->n >= 4 && (l->n & (l->n - 1)) == 0)) {
        size_t want = l->n == 0 ? 4 : (size_t)l->n * 2;
        ptk__pat *nv = realloc(l->v, want * sizeof *nv);
        if (nv == NULL) {
            free(text);
            return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
        }
        l->v = nv;
    }
    l->v[l->n++] = (ptk__pat){text, neg, prefix};
    l->npos += !neg;
    return PTK_OK;
}

/* One item of a list value: the text up to the next ',' or ';' at *p,
 * blanks around it left out (*item, *n); *p moves past it and its
 * separator, to NULL after the last. */
static void
next_item(const char **p, const char **item, size_t *n)
{
    const char *e = *p + strcspn(*p, ",;");
    *item = *p;
    *n = (size_t)(e - *p);
    *p = *e ? e + 1 : NULL;
    while (*n > 0 && (**item == ' ' || **item == '\t')) {
        ++*item;
        --*n;
    }
    while (*n > 0 && ((*item)[*n - 1] == ' ' || (*item)[*n - 1] == '\t')) {
        --*n;
    }
}

static int
add_item(filter_impl *f, int which, const char *item, size_t n,
         const char *subject, char **errmsg)
{
    int neg = 0;
    if (n == 0) {
        return PTK_OK; /* "a;;b", a trailing separator */
    }
    if (*item == '!') {
        neg = 1;
        item++;
        n--;
        if (n == 0) {
            return ptk__err(errmsg, PTK_EINVAL,
                            "%s%sfilter '%s' has a '!' with nothing after it",
                            PTK__LEAD(subject), list_keys(which));
        }
    }
    char *text = malloc(n + PATH_MAX + 2);
    if (text == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    memcpy(text, item, n);
    text[n] = '\0';
    int prefix = 0;
    int rc = check_item(f, which, text, item, n, &prefix, subject, errmsg);
    if (rc < 0) {
        free(text);
        return rc;
    }
    return list_append(&f->pub.list[which], text, neg, prefix, errmsg);
}

static int
add_list(filter_impl *f, int which, const char *value, const char *subject,
         char **errmsg)
{
    const char *p = value, *item;
    size_t n;
    int before = f->pub.list[which].n;
    while (p != NULL) {
        next_item(&p, &item, &n);
        int rc = add_item(f, which, item, n, subject, errmsg);
        if (rc < 0) {
            return rc;
        }
    }
    if (f->pub.list[which].n == before) {
        return ptk__err(errmsg, PTK_EINVAL,
                        "%s%sfilter '%s' is empty (give at least one item)",
                        PTK__LEAD(subject), list_keys(which));
    }
    return PTK_OK;
}

/* The value of a hub key for this instance: its own, else the session's;
 * NULL if neither, or if the plugin declares an option of that name. */
static const ptk_option_value *
value_of(const ptk__options *own, const ptk__options *defaults,
         const char *key)
{
    const ptk_option_value *v = NULL;
    int declared_by_plugin = 1;
    for (size_t i = own ? own->nown : 0; own && i < own->n; i++) {
        if (!strcmp(own->values[i].name, key)) {
            declared_by_plugin = 0;
            v = own->values[i].is_set ? &own->values[i] : NULL;
        }
    }
    if (own != NULL && declared_by_plugin) {
        return NULL;
    }
    for (size_t i = 0; v == NULL && defaults && i < defaults->n; i++) {
        if (!strcmp(defaults->values[i].name, key) && defaults->values[i].is_set) {
            v = &defaults->values[i];
        }
    }
    return v;
}

static int
build_from(filter_impl *f, const char *subject, const ptk__options *own,
           const ptk__options *defaults, char **errmsg)
{
    for (int which = 0; which < PTK__F_NLISTS; which++) {
        const ptk_option_value *v = value_of(own, defaults, list_keys(which));
        if (v != NULL) {
            int rc = add_list(f, which, v->s, subject, errmsg);
            if (rc < 0) {
                return rc;
            }
        }
    }
    const ptk_option_value *d = value_of(own, defaults, "max_depth");
    if (d != NULL) {
        if (d->i < 1) {
            return ptk__err(errmsg, PTK_EINVAL,
                            "%s%sfilter max_depth=%lld: expected a depth of 1 "
                            "or more",
                            PTK__LEAD(subject), (long long)d->i);
        }
        if (f->pub.max_depth == 0) {
            f->pub.max_depth = d->i;
        }
    }
    return PTK_OK;
}

/* The canonical text, grown in place (doubling): rebuilt whole for each
 * item, 10,000 modules took seconds. */
typedef struct text_buf {
    char *s;
    size_t len, cap;
    int failed;
} text_buf;

static void
append_text(text_buf *t, const char *key, const char *value)
{
    size_t add = (t->len ? 1 : 0) + strlen(key) + 1 + strlen(value);
    if (t->failed) {
        return;
    }
    if (t->len + add + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + add + 1) {
            cap *= 2;
        }
        char *ns = realloc(t->s, cap);
        if (ns == NULL) {
            t->failed = 1; /* the text is only what the filter shows */
            return;
        }
        t->s = ns;
        t->cap = cap;
    }
    t->len += (size_t)sprintf(t->s + t->len, "%s%s=%s", t->len ? "," : "",
                              key, value);
}

int
ptk__filter_build(const char *subject, const ptk__options *own,
                  const ptk__options *defaults, const char *extra,
                  ptk__filter **out, char **errmsg)
{
    *out = NULL;
    filter_impl *f = calloc(1, sizeof *f);
    if (f == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    if (getcwd(f->cwd, sizeof f->cwd) == NULL) {
        strcpy(f->cwd, "/");
    }
    int rc = build_from(f, subject, own, defaults, errmsg);
    if (rc == PTK_OK && extra != NULL && *extra) {
        /* Conditions a plugin adds itself: parsed like the user's. */
        ptk__options x;
        rc = ptk__options_parse_ex(NULL, ptk__filter_specs, subject, extra, &x,
                                   errmsg);
        if (rc == PTK_OK) {
            rc = build_from(f, subject, &x, NULL, errmsg);
            ptk__options_free(&x);
        }
    }
    if (rc < 0) {
        ptk__filter_free(&f->pub);
        return rc;
    }
    int any = f->pub.max_depth > 0;
    for (int which = 0; which < PTK__F_NLISTS; which++) {
        any |= f->pub.list[which].n > 0;
        if (which != PTK__F_THREADS && f->pub.list[which].n > 0) {
            f->pub.code_level = 1;
        }
    }
    if (!any) {
        ptk__filter_free(&f->pub);
        return PTK_OK;
    }
    text_buf t = {NULL, 0, 0, 0};
    for (int which = 0; which < PTK__F_NLISTS; which++) {
        const ptk__patlist *l = &f->pub.list[which];
        for (int i = 0; i < l->n; i++) {
            char *item = ptk__asprintf("%s%s", l->v[i].neg ? "!" : "",
                                       l->v[i].prefix == -SET_STDLIB ? "stdlib"
                                       : l->v[i].prefix == -SET_SITE
                                           ? "site-packages"
                                           : l->v[i].text);
            if (item != NULL) {
                append_text(&t, list_keys(which), item);
            }
            free(item);
        }
    }
    if (f->pub.max_depth > 0) {
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)f->pub.max_depth);
        append_text(&t, "max_depth", num);
    }
    if (t.failed) {
        free(t.s);
        t.s = NULL;
    }
    f->pub.text = t.s;
    *out = &f->pub;
    return PTK_OK;
}

/* {keyword: value} of one parsed filter: a list key's items, split as
 * add_list splits them, or max_depth's int. */
static int
keyword_value(PyObject *d, const char *kw, const ptk_option_value *v)
{
    PyObject *val = NULL;
    if (v->type == PTK_OPT_INT) {
        val = PyLong_FromLongLong((long long)v->i);
    }
    else if ((val = PyList_New(0)) != NULL) {
        const char *p = v->s, *item;
        size_t n;
        while (p != NULL && val != NULL) {
            next_item(&p, &item, &n);
            PyObject *str = n ? PyUnicode_FromStringAndSize(item, (Py_ssize_t)n) : NULL;
            if (n && (str == NULL || PyList_Append(val, str) < 0)) {
                Py_CLEAR(val);
            }
            Py_XDECREF(str);
        }
    }
    int rc = val != NULL ? PyDict_SetItemString(d, kw, val) : -1;
    Py_XDECREF(val);
    return rc;
}

PyObject *
ptk__filter_keywords(const ptk__options *o)
{
#define KW_ROW(key, flag, kw, type, help) {key, kw},
    static const char *const kws[][2] = {PTK_FILTER_KEYS(KW_ROW)};
#undef KW_ROW
    PyObject *d = PyDict_New();
    for (size_t i = 0; d != NULL && o != NULL && i < o->n; i++) {
        const ptk_option_value *v = &o->values[i];
        for (int k = 0; v->is_set && k < PTK_FILTER_KEY_COUNT; k++) {
            if (!strcmp(v->name, kws[k][0]) && keyword_value(d, kws[k][1], v) < 0) {
                Py_CLEAR(d);
                break;
            }
        }
    }
    return d;
}

void
ptk__filter_free(ptk__filter *pub)
{
    if (pub == NULL) {
        return;
    }
    filter_impl *f = (filter_impl *)pub;
    for (int which = 0; which < PTK__F_NLISTS; which++) {
        for (int i = 0; i < pub->list[which].n; i++) {
            free(pub->list[which].v[i].text);
        }
        free(pub->list[which].v);
    }
    dirs_free(f->stdlib_dirs);
    dirs_free(f->site_dirs);
    for (int i = 0; i < FILE_MEMO; i++) {
        free(f->memo[i].path);
    }
    free(pub->text);
    free(f);
}

/* ---- judging ------------------------------------------------------------- */

static int
under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int
under_any(const char *path, char **dirs)
{
    for (size_t i = 0; dirs && dirs[i]; i++) {
        if (under(path, dirs[i])) {
            return 1;
        }
    }
    return 0;
}

/* Does the functions= item @p pat select the code @p qualname of module
 * @p module? The item is a glob over co_qualname, or MODULE.GLOB: the
 * module's full name, then a glob over its co_qualname. */
static int
function_matches(const char *pat, const char *qualname, const char *module)
{
    if (fnmatch(pat, qualname, 0) == 0) {
        return 1;
    }
    size_t n = module != NULL ? strlen(module) : 0;
    return n > 0 && strncmp(pat, module, n) == 0 && pat[n] == '.' &&
           fnmatch(pat + n + 1, qualname, 0) == 0;
}

static int
item_matches(const filter_impl *f, int which, const ptk__pat *p, const char *s,
             const char *module)
{
    if (which == PTK__F_INCLUDE || which == PTK__F_EXCLUDE) {
        if (p->prefix == -SET_STDLIB) {
            /* the standard library: under its directory, not in a
             * site-packages inside it (pyenv and venvs put them there), or
             * frozen (<frozen ...>) */
            return (under_any(s, f->stdlib_dirs) && !under_any(s, f->site_dirs)) ||
                   strncmp(s, "<frozen ", 8) == 0;
        }
        if (p->prefix == -SET_SITE) {
            return under_any(s, f->site_dirs);
        }
        if (p->prefix) {
            return under(s, p->text);
        }
        return fnmatch(p->text, s, 0) == 0;
    }
    if (which == PTK__F_MODULES) {
        return under(s, p->text) ||
               (strncmp(s, p->text, strlen(p->text)) == 0 &&
                s[strlen(p->text)] == '.');
    }
    if (which == PTK__F_FUNCTIONS) {
        return function_matches(p->text, s, module);
    }
    return fnmatch(p->text, s, 0) == 0;
}

/* Some plain item matches (or there is none) and no '!' item does.
 * @p module: the code's module, for functions= only (else NULL). */
static int
list_matches(const filter_impl *f, int which, const char *s, const char *module)
{
    const ptk__patlist *l = &f->pub.list[which];
    int pos = l->npos == 0;
    for (int i = 0; i < l->n; i++) {
        const ptk__pat *p = &l->v[i];
        if (p->neg ? 0 : pos) {
            continue; /* already selected by a plain item */
        }
        if (item_matches(f, which, p, s, module)) {
            if (p->neg) {
                return 0;
            }
            pos = 1;
        }
    }
    return pos;
}

/* Do include= and exclude= select the file? */
static int
file_selected(const filter_impl *f, const char *file)
{
    char abs[PATH_MAX + 256];
    if (file[0] != '/' && file[0] != '<') {
        snprintf(abs, sizeof abs, "%s/%s", f->cwd, file);
        file = abs;
    }
    const ptk__filter *pub = &f->pub;
    if (pub->list[PTK__F_INCLUDE].n && !list_matches(f, PTK__F_INCLUDE, file, NULL)) {
        return 0;
    }
    return !(pub->list[PTK__F_EXCLUDE].n && list_matches(f, PTK__F_EXCLUDE, file, NULL));
}

/* file_selected through the memo (entries are replaced, never lost: one
 * that cannot be kept only means judging that file again). */
static int
file_selected_memo(filter_impl *f, PyObject *name)
{
    const char *file = PyUnicode_AsUTF8(name);
    if (file == NULL) {
        /* a name that is not UTF-8 (os.fsdecode's U+DCNN for each byte
         * that is not): judged by its bytes on the file system, which is
         * what the patterns from the command line are */
        PyErr_Clear();
        PyObject *fs = PyUnicode_EncodeFSDefault(name);
        int ok = file_selected(f, fs != NULL ? PyBytes_AS_STRING(fs) : "");
        Py_XDECREF(fs);
        PyErr_Clear();
        return ok;
    }
    file_memo *m = &f->memo[((uintptr_t)name >> 4) % FILE_MEMO];
    if (m->name == name && m->path != NULL && strcmp(m->path, file) == 0) {
        return m->ok;
    }
    int ok = file_selected(f, file);
    char *copy = strdup(file);
    free(m->path);
    m->name = copy != NULL ? name : NULL;
    m->path = copy;
    m->ok = ok;
    return ok;
}

int
ptk__filter_code(const ptk__filter *pub, PyCodeObject *code,
                 const char *module)
{
    /* the memo is the filter's own cache, written under the GIL */
    filter_impl *f = (filter_impl *)pub;
    if (!pub->code_level) {
        return 1;
    }
    if (code == NULL) {
        return 0;
    }
    if ((pub->list[PTK__F_INCLUDE].n || pub->list[PTK__F_EXCLUDE].n) &&
        !file_selected_memo(f, code->co_filename)) {
        return 0;
    }
    if (pub->list[PTK__F_MODULES].n &&
        !list_matches(f, PTK__F_MODULES, module ? module : "", NULL)) {
        return 0;
    }
    if (pub->list[PTK__F_FUNCTIONS].n) {
        const char *q = PyUnicode_AsUTF8(code->co_qualname);
        if (q == NULL) {
            PyErr_Clear();
            q = "";
        }
        if (!list_matches(f, PTK__F_FUNCTIONS, q, module)) {
            return 0;
        }
    }
    return 1;
}

int
ptk__filter_thread(const ptk__filter *pub, const char *name)
{
    if (pub->list[PTK__F_THREADS].n == 0) {
        return 1;
    }
    return list_matches((const filter_impl *)pub, PTK__F_THREADS,
                        name ? name : "", NULL);
}

/* A thread's verdict is cached per slot once its name is known (or known
 * to be unknowable). */
static int
thread_rejected(ptk__thread *th, uint32_t slot, const ptk__filter *f)
{
    uint64_t bit = (uint64_t)1 << slot;
    if (th->thr_judged & bit) {
        return (th->thr_rejected & bit) != 0;
    }
    if (th->pub.name == NULL && th->name_retry && th->name_tries < 4096) {
        th->name_tries++; /* threading may know it by now */
        ptk__thread_set_name(th);
    }
    const char *name = th->pub.name;
    int ok = ptk__filter_thread(f, name);
    if (name != NULL || (th->name_tried && !th->name_retry)) {
        th->thr_judged |= bit;
        if (!ok) {
            th->thr_rejected |= bit;
        }
    }
    return !ok;
}

int
ptk__filter_skip(const ptk__sub *s, ptk__thread *th, const ptk_event *ev,
                 uint64_t rejected)
{
    const ptk__filter *f = s->filter;
    if (rejected & ((uint64_t)1 << s->slot)) {
        return 1;
    }
    if (f->list[PTK__F_THREADS].n && thread_rejected(th, s->slot, f)) {
        return 1;
    }
    if (f->max_depth > 0) {
        /* Depth counts the frames this filter selects on the thread's
         * stack: the outermost selected frame is 1. C calls are one level
         * below the frame that makes them. */
        int32_t *d = &th->hot->fdepth[s->slot];
        switch (ev->kind) {
        case PTK_EV_CALL:
            return ++*d > f->max_depth;
        case PTK_EV_RETURN: {
            int skip = *d > f->max_depth;
            if (*d > 0) {
                --*d;
            }
            return skip;
        }
        case PTK_EV_C_CALL:
        case PTK_EV_C_RETURN:
        case PTK_EV_C_EXCEPTION:
            return *d >= f->max_depth;
        default:
            return *d > f->max_depth;
        }
    }
    return 0;
}
