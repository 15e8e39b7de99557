/*
 * Shared by the shipped plugins: one way to grow an array, with the
 * capacity doubled and the size checked for overflow. Compiled into each
 * plugin (plugins/common/grow.c), hidden.
 *
 *     if (PTK_KIT_RESERVE(st->items, st->cap, st->n + 1, 64) != 0) {
 *         return -1; // out of memory: st->items and st->cap unchanged
 *     }
 *     st->items[st->n++] = item;
 */
#ifndef PTK_PLUGINS_GROW_H
#define PTK_PLUGINS_GROW_H

#include <stddef.h>

/**
 * @brief Makes the array at *@p items (a pointer to any object type, of
 * *@p cap elements of @p size bytes) hold at least @p want elements:
 * reallocates it to the largest of @p want, twice *@p cap and @p min
 * elements, and updates *@p cap. With @p zero, the new elements are
 * zeroed. The fast case (enough room) is PTK_KIT_RESERVE()'s test.
 *
 * @param items the address of the array pointer (NULL: no array yet)
 * @return 0, or -1 when out of memory or when the size would overflow
 *         (the array and *@p cap unchanged)
 */
int ptk_kit_grow(void *items, size_t *cap, size_t want, size_t size, size_t min,
                 int zero);

/** @brief Room for @p want elements in the array @p arr of capacity @p cap
 *  (a size_t lvalue), at least @p min once grown; 0 or -1 (ptk_kit_grow()). */
#define PTK_KIT_RESERVE(arr, cap, want, min) \
    ((size_t)(want) <= (cap)                 \
         ? 0                                 \
         : ptk_kit_grow(&(arr), &(cap), (want), sizeof(*(arr)), (min), 0))

/** @brief PTK_KIT_RESERVE(), the new elements zeroed: for arrays indexed
 *  by an id (a thread's index), where an unused element reads as empty. */
#define PTK_KIT_RESERVE_ZERO(arr, cap, want, min) \
    ((size_t)(want) <= (cap)                      \
         ? 0                                      \
         : ptk_kit_grow(&(arr), &(cap), (want), sizeof(*(arr)), (min), 1))

#endif
