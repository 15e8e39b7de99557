/* The process's current context (ptk_context_set, host->context): a name
 * that a program running tests gives each test and phase, and an id that
 * changes with every ptk_context_set(), so that a plugin keeping data per
 * context tells a new context from the last one with one comparison. */
#include "core/core.h"

#include <stdlib.h>

uint64_t ptk__context_id;
char *ptk__context_name;
static uint64_t context_serial;

int
ptk__context_set(const char *name)
{
    char *copy = NULL;
    if (name != NULL && name[0] != '\0') {
        copy = ptk__strdup(name);
        if (copy == NULL) {
            return PTK_ENOMEM;
        }
    }
    free(ptk__context_name);
    ptk__context_name = copy;
    ptk__context_id = copy != NULL ? ++context_serial : 0;
    ptk__hub_context_changed();
    return PTK_OK;
}

const char *
ptk__context_get(uint64_t *id)
{
    if (id != NULL) {
        *id = ptk__context_id;
    }
    return ptk__context_name;
}
