/* The plugin kit's growable array (grow.h). */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
ptk_kit_grow(void *items, size_t *cap, size_t want, size_t size, size_t min,
             int zero)
{
    size_t old = *cap;
    size_t n = old <= SIZE_MAX / 2 ? old * 2 : want;
    if (n < want) {
        n = want;
    }
    if (n < min) {
        n = min;
    }
    if (size != 0 && n > SIZE_MAX / size) {
        return -1;
    }
    void *p;
    memcpy(&p, items, sizeof(p)); /* any object pointer, without punning */
    void *grown = realloc(p, n * size);
    if (grown == NULL) {
        return -1;
    }
    if (zero) {
        memset((char *)grown + old * size, 0, (n - old) * size);
    }
    memcpy(items, &grown, sizeof(grown));
    *cap = n;
    return 0;
}
