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

static int
parse_value(const char *plugin, const ptk_option_spec *spec, const char *text,
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
                            "option '%s' of plugin '%s' expects one of %s, "
                            "found '%s'",
                            spec->name, plugin,
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
    return ptk__err(errmsg, PTK_EOPTTYPE,
                    "option '%s' of plugin '%s' expects %s, found '%s'",
                    spec->name, plugin, type_name(spec->type), text);
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
    return ptk__options_parse_ex(desc, NULL, text, out, errmsg);
}

int
ptk__options_parse_ex(const ptk_plugin_desc *desc, const ptk_option_spec *extra,
                      const char *text, ptk__options *out, char **errmsg)
{
    const char *plugin = desc->name ? desc->name : "?";
    size_t nown = 0, nspec = 0;
    memset(out, 0, sizeof *out);
    for (const ptk_option_spec *s = desc->options; s && s->name; s++) {
        nown++;
    }
    /* The plugin's own options first, then the extra ones (the hub's
     * filter keys) whose names the plugin does not declare itself. */
    ptk_option_spec *specs = calloc(nown + 16, sizeof *specs);
    if (specs == NULL) {
        return ptk__err(errmsg, PTK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < nown; i++) {
        specs[nspec++] = desc->options[i];
    }
    for (const ptk_option_spec *x = extra; x && x->name && nspec < nown + 16; x++) {
        size_t i;
        for (i = 0; i < nown && strcmp(specs[i].name, x->name) != 0; i++) {
        }
        if (i == nown) {
            specs[nspec++] = *x;
        }
    }
    out->specs = specs;
    out->nown = nown;
    /* Storage: defaults and the user's text, unquoted, each NUL-terminated. */
    size_t cap = (text ? strlen(text) : 0) + 1;
    for (size_t i = 0; i < nspec; i++) {
        const char *d = specs[i].default_value;
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
    int rc;
    for (size_t i = 0; i < nspec; i++) {
        const ptk_option_spec *spec = &specs[i];
        ptk_option_value *v = &out->values[i];
        v->name = spec->name;
        v->type = spec->type;
        if (spec->default_value != NULL) {
            strcpy(w, spec->default_value);
            rc = parse_value(plugin, spec, w, v, errmsg);
            if (rc < 0) {
                ptk__options_free(out);
                return ptk__err(errmsg, rc,
                                "plugin '%s': default of option '%s' is "
                                "invalid ('%s')",
                                plugin, spec->name, spec->default_value);
            }
            w += strlen(w) + 1;
        }
    }
    const char *p = text;
    while (p != NULL && *p) {
        /* key */
        const char *k = p;
        while (*p && *p != '=' && *p != ',') {
            p++;
        }
        size_t klen = (size_t)(p - k);
        char *key = w;
        memcpy(w, k, klen);
        w[klen] = '\0';
        w += klen + 1;
        size_t i;
        for (i = 0; i < nspec; i++) {
            if (strcmp(specs[i].name, key) == 0) {
                break;
            }
        }
        if (klen == 0 && *p != '=') {
            if (*p == ',') {
                p++;
            }
            continue; /* stray comma */
        }
        if (i == nspec) {
            char *acc = accepted_list(specs, nspec);
            rc = ptk__err(errmsg, PTK_EOPTION,
                          "unknown option '%s' for plugin '%s' (it accepts: "
                          "%s)",
                          key, plugin, acc ? acc : "?");
            free(acc);
            ptk__options_free(out);
            return rc;
        }
        int is_list = specs[i].type == PTK_OPT_LIST;
        char *val = NULL;
        if (*p == '=') {
            p++;
            val = w;
            if (*p == '\'' || *p == '"') {
                char q = *p++;
                while (*p && *p != q) {
                    *w++ = *p++;
                }
                if (*p != q) {
                    rc = ptk__err(errmsg, PTK_EINVAL,
                                  "plugin '%s': option '%s' has an "
                                  "unterminated quote",
                                  plugin, key);
                    ptk__options_free(out); /* key lives in the storage */
                    return rc;
                }
                p++;
            }
            else {
                /* A list's value runs on across commas up to the next
                 * "key=" (events=call,line,top=3). */
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
        }
        if (*p == ',') {
            p++;
        }
        else if (*p) {
            rc = ptk__err(errmsg, PTK_EINVAL,
                          "plugin '%s': expected ',' after option '%s'",
                          plugin, key);
            ptk__options_free(out);
            return rc;
        }
        if (val == NULL) {
            if (specs[i].type != PTK_OPT_BOOL) {
                rc = ptk__err(errmsg, PTK_EOPTTYPE,
                              "option '%s' of plugin '%s' expects %s, found "
                              "no value",
                              key, plugin, type_name(specs[i].type));
                ptk__options_free(out);
                return rc;
            }
            val = (char *)"true";
        }
        rc = parse_value(plugin, &specs[i], val, &out->values[i],
                         errmsg);
        if (rc < 0) {
            ptk__options_free(out);
            return rc;
        }
    }
    return PTK_OK;
}

void
ptk__options_free(ptk__options *o)
{
    free(o->values);
    free(o->storage);
    free(o->specs);
    memset(o, 0, sizeof *o);
}
