/*
 * Shared by the shipped plugins (timer, timeline): an open-addressing hash
 * map from a pair of pointers to a pointer, which never removes. Compiled
 * into each plugin (plugins/common/pair_map.c), hidden.
 */
#ifndef PTK_PLUGINS_PAIR_MAP_H
#define PTK_PLUGINS_PAIR_MAP_H

#include <stddef.h>
#include <stdint.h>

/** One slot: the key (a, b) and its value; an empty slot has value NULL. */
typedef struct ptk_kit_map_slot {
    const void *a; /**< first half of the key */
    const void *b; /**< second half (a pointer, or a small tag cast to one) */
    void *value;   /**< never NULL in a used slot */
} ptk_kit_map_slot;

/** The map; all zero is an empty map. */
typedef struct ptk_kit_map {
    ptk_kit_map_slot *slots; /**< NULL until the first put */
    size_t mask;             /**< capacity - 1, a power of two */
    size_t count;            /**< used slots */
} ptk_kit_map;

/** @brief The hash of (@p a, @p b); its low bits pick the slot. */
static inline size_t
ptk_kit_map_hash(const void *a, const void *b)
{
    uint64_t x = (uint64_t)(uintptr_t)a * UINT64_C(0x9E3779B97F4A7C15);
    x ^= (uint64_t)(uintptr_t)b * UINT64_C(0xC2B2AE3D27D4EB4F);
    x ^= x >> 29;
    return (size_t)x;
}

/** @brief The value of (@p a, @p b), or NULL. Inline: the plugins look up
 *  on their hot paths. */
static inline void *
ptk_kit_map_get(const ptk_kit_map *m, const void *a, const void *b)
{
    if (m->slots == NULL) {
        return NULL;
    }
    for (size_t i = ptk_kit_map_hash(a, b) & m->mask;; i = (i + 1) & m->mask) {
        const ptk_kit_map_slot *s = &m->slots[i];
        if (s->value == NULL) {
            return NULL;
        }
        if (s->a == a && s->b == b) {
            return s->value;
        }
    }
}

/** @brief Sets (@p a, @p b) to @p value (not NULL), replacing a value there.
 *  @return 0, or -1 when out of memory (the map unchanged) */
int ptk_kit_map_put(ptk_kit_map *m, const void *a, const void *b, void *value);

/** @brief Frees the slots; the map is empty again. */
void ptk_kit_map_free(ptk_kit_map *m);

#endif
