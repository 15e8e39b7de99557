/* Error codes: names and descriptions from the one table in errors.h. */
#include "core/core.h"

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
