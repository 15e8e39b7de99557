/* The plugins' pointer-pair hash map (see pair_map.h). */
#include "pair_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
ptk_kit_map_put(ptk_kit_map *m, const void *a, const void *b, void *value)
{
    if (m->slots == NULL || (m->count + 1) * 2 > m->mask + 1) {
        size_t cap = m->slots == NULL ? 64 : (m->mask + 1) * 2;
        ptk_kit_map_slot *slots = calloc(cap, sizeof(*slots));
        if (slots == NULL) {
            return -1;
        }
        for (size_t i = 0; m->slots != NULL && i <= m->mask; i++) {
            const ptk_kit_map_slot *s = &m->slots[i];
            if (s->value == NULL) {
                continue;
            }
            size_t j = ptk_kit_map_hash(s->a, s->b) & (cap - 1);
            while (slots[j].value != NULL) {
                j = (j + 1) & (cap - 1);
            }
            slots[j] = *s;
        }
        free(m->slots);
        m->slots = slots;
        m->mask = cap - 1;
    }
    size_t i = ptk_kit_map_hash(a, b) & m->mask;
    while (m->slots[i].value != NULL) {
        if (m->slots[i].a == a && m->slots[i].b == b) {
            m->slots[i].value = value;
            return 0;
        }
        i = (i + 1) & m->mask;
    }
    m->slots[i].a = a;
    m->slots[i].b = b;
    m->slots[i].value = value;
    m->count++;
    return 0;
}

void
ptk_kit_map_free(ptk_kit_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}
