/* Plugin options: "key=value,key='a,b'" checked against the declared specs. */
#include "core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *
type_name(ptk_option_type t)
{
    switch (t) {
    case PTK_OPT_BOOL: return "a boolean (true/false)";
    case PTK_OPT_INT: return "an integer";
    case PTK_OPT_DOUBLE: return "a number";
    case PTK_OPT_CHOICE: return "one of";
    case PTK_OPT_LIST: return "a list";
    default: return "text";
    }
}

/* Index of `word` in "a|b|c", or -1. */
static int
choice_index(const char *choices, const char *word)
{
    int i = 0;
    const char *p = choices;
    size_t wl = strlen(word);
    while (p != NULL && *p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == wl && strncmp(p, word, n) == 0) {
            return i;
        }
        i++;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

/* Messages name the subject the caller gives ("plugin 'counter'"), or,
 * with none, the session's own filter: "option 'k' of plugin 'counter'"
 * against "filter option 'k'", "plugin 'counter': ..." against "...". */
#define OPTION_OF(subject, key)                                              \
    (subject) ? "" : "filter ", (key), (subject) ? " of " : "",             \
        (subject) ? (subject) : ""


static int
parse_value(const char *subject, const ptk_option_spec *spec, const char *text,
            ptk_option_value *v, char **errmsg)
{
    char *end = NULL;
    v->s = text;
    v->is_set = 1;
    switch (spec->type) {
    case PTK_OPT_BOOL:
        if (!strcasecmp(text, "true") || !strcasecmp(text, "yes") ||
            !strcasecmp(text, "on") || !strcmp(text, "1")) {
            v->i = 1;
        }
        else if (!strcasecmp(text, "false") || !strcasecmp(text, "no") ||
                 !strcasecmp(text, "off") || !strcmp(text, "0")) {
            v->i = 0;
        }
        else {
            goto bad;
        }
        return PTK_OK;
    case PTK_OPT_INT:
        errno = 0;
        v->i = strtoll(text, &end, 10);
        if (*text == '\0' || *end != '\0' || errno != 0) {
            goto bad;
        }
        v->d = (double)v->i;
        return PTK_OK;
    case PTK_OPT_DOUBLE:
        errno = 0;
        v->d = strtod(text, &end);
        if (*text == '\0' || *end != '\0' || errno != 0) {
            goto bad;
        }
        return PTK_OK;
    case PTK_OPT_CHOICE: {
        int idx = choice_index(spec->choices, text);
        if (idx < 0) {
            return ptk__err(errmsg, PTK_EOPTTYPE,
                            "%soption '%s'%s%s expects one of %s, found '%s'",
                            OPTION_OF(subject, spec->name),
                            spec->choices ? spec->choices : "(none)", text);
        }
        v->i = idx;
        return PTK_OK;
    }
    case PTK_OPT_STRING:
    case PTK_OPT_LIST:
        return PTK_OK;
    }
bad:
    return ptk__err(errmsg, PTK_EOPTTYPE, "%soption '%s'%s%s expects %s, found '%s'",
                    OPTION_OF(subject, spec->name), type_name(spec->type), text);
}

static char *
accepted_list(const ptk_option_spec *specs, size_t nspec)
{
    size_t n = 1;
    for (size_t i = 0; i < nspec; i++) {
        n += strlen(specs[i].name) + 2;
    }
    char *buf = calloc(1, n + 8);
    if (buf == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < nspec; i++) {
        if (buf[0]) {
            strcat(buf, ", ");
        }
        strcat(buf, specs[i].name);
    }
    if (!buf[0]) {
        strcpy(buf, "none");
    }
    return buf;
}

int
ptk__options_parse(const ptk_plugin_desc *desc, const char *text,
                   ptk__options *out, char **errmsg)
{
    char *subject = ptk__asprintf("plugin '%s'", desc->name ? desc->name : "?");
    if (subject == NULL) {
        memset(out, 0, sizeof *out);
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    int rc = ptk__options_parse_ex(desc, NULL, subject, text, out, errmsg);
    free(subject);
    return rc;
}

/* The specs a text is read against: the plugin's own options first, then
 * the extra ones (the hub's filter keys) whose names the plugin does not
 * declare itself. Sets out->specs, out->nown; returns how many in all. */
static size_t
merge_specs(const ptk_plugin_desc *desc, const ptk_option_spec *extra,
            ptk__options *out)
{
    size_t nown = 0, nspec = 0, nextra = 0;
    for (const ptk_option_spec *s = desc ? desc->options : NULL; s && s->name; s++) {
        nown++;
    }
    for (const ptk_option_spec *x = extra; x && x->name; x++) {
        nextra++;
    }
    ptk_option_spec *specs = calloc(nown + nextra + 1, sizeof *specs);
    if (specs == NULL) {
        return 0;
    }
    for (size_t i = 0; i < nown; i++) {
        specs[nspec++] = desc->options[i];
    }
    for (const ptk_option_spec *x = extra; x && x->name; x++) {
        size_t i;
        for (i = 0; i < nown && strcmp(specs[i].name, x->name) != 0; i++) {
        }
        if (i == nown) {
            specs[nspec++] = *x;
        }
    }
    out->specs = specs;
    out->nown = nown;
    return nspec;
}

/* Every value at its default, the defaults copied into the storage (which
 * has room for them and the user's text); w moves past them. */
static int
fill_defaults(ptk__options *out, const char *subject, char **w, char **errmsg)
{
    for (size_t i = 0; i < out->n; i++) {
        const ptk_option_spec *spec = &out->specs[i];
        ptk_option_value *v = &out->values[i];
        v->name = spec->name;
        v->type = spec->type;
        if (spec->default_value != NULL) {
            strcpy(*w, spec->default_value);
            int rc = parse_value(subject, spec, *w, v, errmsg);
            if (rc < 0) {
                return ptk__err(errmsg, rc,
                                "%s%sdefault of option '%s' is invalid ('%s')",
                                PTK__LEAD(subject), spec->name, spec->default_value);
            }
            *w += strlen(*w) + 1;
        }
    }
    return PTK_OK;
}

/* The text of one value at *p (after its '='), unquoted, copied to *w and
 * NUL-terminated; *p and *w move past it. A list's unquoted value runs on
 * across commas up to the next "key=" (events=call,line,top=3). */
static int
read_value(const char **pp, char **wp, int is_list, const char *subject,
           const char *key, char **errmsg)
{
    const char *p = *pp;
    char *w = *wp;
    if (*p == '\'' || *p == '"') {
        char q = *p++;
        while (*p && *p != q) {
            *w++ = *p++;
        }
        if (*p != q) {
            return ptk__err(errmsg, PTK_EINVAL,
                            "%s%s%soption '%s' has an unterminated quote",
                            PTK__LEAD(subject), subject ? "" : "filter ", key);
        }
        p++;
    }
    else {
        for (;;) {
            while (*p && *p != ',') {
                *w++ = *p++;
            }
            if (!is_list || *p != ',') {
                break;
            }
            const char *q = p + 1;
            while (*q && *q != ',' && *q != '=') {
                q++;
            }
            if (*q == '=') {
                break;
            }
            *w++ = *p++;
        }
    }
    *w++ = '\0';
    *pp = p;
    *wp = w;
    return PTK_OK;
}

/* The accepted name closest to @p key, for "did you mean": the same but
 * for case, or at most two edits away (and not all of it); NULL if none. */
static const char *
nearest_name(const ptk_option_spec *specs, size_t n, const char *key)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = strcasecmp(specs[i].name, key) == 0
                       ? 0
                       : ptk__edit_distance(specs[i].name, key);
        if (d < best_d && d < strlen(specs[i].name)) {
            best = specs[i].name;
            best_d = d;
        }
    }
    return best;
}

/* One "key[=value]" at *p: looked up, read and parsed into its value;
 * *p moves past it and its ','. A stray comma is skipped. */
static int
parse_pair(ptk__options *out, const char *subject, const char **pp, char **wp,
           char **errmsg)
{
    const char *p = *pp, *k = p;
    while (*p && *p != '=' && *p != ',') {
        p++;
    }
    size_t klen = (size_t)(p - k), i;
    char *key = *wp;
    memcpy(key, k, klen);
    key[klen] = '\0';
    *wp += klen + 1;
    for (i = 0; i < out->n && strcmp(out->specs[i].name, key) != 0; i++) {
    }
    if (klen == 0 && *p != '=') {
        *pp = *p == ',' ? p + 1 : p; /* stray comma */
        return PTK_OK;
    }
    if (i == out->n) {
        char *acc = accepted_list(out->specs, out->n);
        const char *near = nearest_name(out->specs, out->n, key);
        int rc = ptk__err(errmsg, PTK_EOPTION,
                          "unknown %soption '%s'%s%s (it accepts: %s)%s%s%s",
                          subject ? "" : "filter ", key, subject ? " for " : "",
                          subject ? subject : "", acc ? acc : "?",
                          near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        free(acc);
        return rc;
    }
    const ptk_option_spec *spec = &out->specs[i];
    char *val = NULL;
    if (*p == '=') {
        p++;
        val = *wp;
        int rc = read_value(&p, wp, spec->type == PTK_OPT_LIST, subject, key,
                            errmsg);
        if (rc < 0) {
            return rc;
        }
    }
    if (*p == ',') {
        p++;
    }
    else if (*p) {
        return ptk__err(errmsg, PTK_EINVAL, "%s%sexpected ',' after %soption '%s'",
                        PTK__LEAD(subject), subject ? "" : "filter ", key);
    }
    *pp = p;
    if (val == NULL) {
        if (spec->type != PTK_OPT_BOOL) {
            return ptk__err(errmsg, PTK_EOPTTYPE,
                            "%soption '%s'%s%s expects %s, found no value",
                            OPTION_OF(subject, key), type_name(spec->type));
        }
        val = (char *)"true";
    }
    return parse_value(subject, spec, val, &out->values[i], errmsg);
}

int
ptk__options_parse_ex(const ptk_plugin_desc *desc, const ptk_option_spec *extra,
                      const char *subject, const char *text, ptk__options *out,
                      char **errmsg)
{
    memset(out, 0, sizeof *out);
    size_t nspec = merge_specs(desc, extra, out);
    if (out->specs == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    /* Storage: defaults and the user's text, unquoted, each NUL-terminated. */
    size_t cap = (text ? strlen(text) : 0) + 1;
    for (size_t i = 0; i < nspec; i++) {
        const char *d = out->specs[i].default_value;
        cap += (d ? strlen(d) : 0) + 1;
    }
    out->storage = malloc(cap);
    out->values = calloc(nspec ? nspec : 1, sizeof *out->values);
    out->n = nspec;
    if (out->storage == NULL || out->values == NULL) {
        ptk__options_free(out);
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    char *w = out->storage;
    int rc = fill_defaults(out, subject, &w, errmsg);
    for (const char *p = text; rc == PTK_OK && p != NULL && *p;) {
        rc = parse_pair(out, subject, &p, &w, errmsg);
    }
    if (rc < 0) {
        ptk__options_free(out); /* keys and values live in the storage */
    }
    return rc;
}

void
ptk__options_free(ptk__options *o)
{
    free(o->values);
    free(o->storage);
    free(o->specs);
    memset(o, 0, sizeof *o);
}
