/* Error codes: names and descriptions from the one table in errors.h. */
#include "ptk_internal.h"

#include <stdlib.h>
#include <string.h>

const char *
ptk_strerror(int code)
{
    switch (code) {
    case PTK_OK:
        return "success";
    case PTK_DISABLE:
        return "disable this event at this location";
#define PTK__ERR_TEXT(name, value, text) \
    case value:                          \
        return text;
        PTK_ERRNO_MAP(PTK__ERR_TEXT)
#undef PTK__ERR_TEXT
    default:
        return "unknown error";
    }
}

const char *
ptk_err_name(int code)
{
    switch (code) {
    case PTK_OK:
        return "PTK_OK";
    case PTK_DISABLE:
        return "PTK_DISABLE";
#define PTK__ERR_NAME(name, value, text) \
    case value:                          \
        return "PTK_" #name;
        PTK_ERRNO_MAP(PTK__ERR_NAME)
#undef PTK__ERR_NAME
    default:
        return "PTK_EUNKNOWN";
    }
}

void
ptk_free(void *p)
{
    free(p);
}

int
ptk_event_parse_mask(const char *list, unsigned int *mask)
{
    unsigned int m = 0;
    const char *p = list ? list : "";
    while (*p) {
        const char *e = p;
        while (*e && *e != ',') {
            e++;
        }
        size_t n = (size_t)(e - p);
        int found = 0;
        static const struct {
            const char *name;
            unsigned int mask;
        } groups[] = {{"profile", PTK_MASK_PROFILE},
                      {"trace", PTK_MASK_TRACE},
                      {"ref", PTK_MASK_REF},
                      {"all", PTK_MASK_ALL}};
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            if (strlen(groups[g].name) == n && !strncmp(p, groups[g].name, n)) {
                m |= groups[g].mask;
                found = 1;
            }
        }
        for (int k = 0; k < PTK_EV_COUNT && !found; k++) {
            const char *name = ptk_event_name(k);
            if (strlen(name) == n && !strncmp(p, name, n)) {
                m |= PTK_MASK(k);
                found = 1;
            }
        }
        if (!found && n > 0) {
            return PTK_EINVAL;
        }
        p = *e ? e + 1 : e;
    }
    if (mask != NULL) {
        *mask = m;
    }
    return PTK_OK;
}
