/*
 * Shared by the shipped plugins (timer, timeline): an open-addressing hash
 * map from a pair of pointers to a pointer, which never removes. Compiled
 * into each plugin (plugins/common/pair_map.c), hidden.
 */
#ifndef PTK_PLUGINS_PAIR_MAP_H
#define PTK_PLUGINS_PAIR_MAP_H

#include <stddef.h>

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

/** @brief The value of (@p a, @p b), or NULL. */
void *ptk_kit_map_get(const ptk_kit_map *m, const void *a, const void *b);

/** @brief Sets (@p a, @p b) to @p value (not NULL), replacing a value there.
 *  @return 0, or -1 when out of memory (the map unchanged) */
int ptk_kit_map_put(ptk_kit_map *m, const void *a, const void *b, void *value);

/** @brief Frees the slots; the map is empty again. */
void ptk_kit_map_free(ptk_kit_map *m);

#endif
