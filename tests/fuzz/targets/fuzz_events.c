/* libFuzzer target: the event-list parser (ptk_event_parse_mask). On
 * success the mask names only events that exist, and parsing the list of
 * the names in it gives the same mask. */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

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
    unsigned int mask = 0xdeadbeef;
    int rc = ptk_event_parse_mask(text, &mask);
    if (rc == PTK_OK) {
        if (mask & ~(unsigned)PTK_MASK_VALID) {
            abort();
        }
        /* round trip through the names */
        char again[1024] = "";
        for (int k = 0; k < PTK_EV_COUNT; k++) {
            if (mask & PTK_MASK(k)) {
                if (again[0]) {
                    strcat(again, ",");
                }
                strcat(again, ptk_event_name(k));
            }
        }
        unsigned int mask2 = 0;
        if (ptk_event_parse_mask(again, &mask2) != PTK_OK || mask2 != mask) {
            abort();
        }
    }
    else if (rc != PTK_EINVAL || mask != 0xdeadbeef) {
        abort(); /* refused: the mask is left alone */
    }
    free(text);
    return 0;
}
