/* libFuzzer target: the option parser (ptk__options_parse), with one
 * option of every type. The input is the text after "plugin:". On success
 * every value must have the declared type; either way nothing may leak. */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

static const ptk_option_spec specs[] = {
    {"flag", PTK_OPT_BOOL, "false", "a bool", NULL},
    {"top", PTK_OPT_INT, "10", "an int", NULL},
    {"ratio", PTK_OPT_DOUBLE, NULL, "a double", NULL},
    {"file", PTK_OPT_STRING, "a,b", "a string", NULL},
    {"clock", PTK_OPT_CHOICE, "wall", "a choice", "wall|cpu|both"},
    {"events", PTK_OPT_LIST, "call;return", "a list", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "fuzz",
    .options = specs,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    ptk__options o = {0};
    char *err = NULL;
    int rc = ptk__options_parse(&desc, text, &o, &err);
    if (rc == PTK_OK) {
        if (err != NULL || o.n != 6) {
            abort();
        }
        for (size_t i = 0; i < o.n; i++) {
            const ptk_option_value *v = &o.values[i];
            if (v->type != specs[i].type || strcmp(v->name, specs[i].name)) {
                abort();
            }
            if (v->type == PTK_OPT_BOOL && v->is_set && v->i != 0 && v->i != 1) {
                abort();
            }
            if (v->type == PTK_OPT_CHOICE && v->is_set && (v->i < 0 || v->i > 2)) {
                abort();
            }
            if (v->is_set && v->s == NULL) {
                abort();
            }
        }
        ptk__options_free(&o);
    }
    else if (err == NULL || err[0] == '\0') {
        abort(); /* a rejection always says why */
    }
    free(err);
    free(text);
    return 0;
}
