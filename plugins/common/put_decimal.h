/*
 * Shared by the shipped plugins' report writers: an unsigned integer
 * written in decimal into a buffer the caller has sized (at most 20
 * digits), without printf's format parsing -- the writers put out one or
 * more figures for every function, edge and event.
 */
#ifndef PTK_PLUGINS_PUT_DECIMAL_H
#define PTK_PLUGINS_PUT_DECIMAL_H

#include <stdint.h>

/* Writes @p v in decimal at @p p (no terminator); returns the end. */
static inline char *
ptk_put_u64(char *p, uint64_t v)
{
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        *p++ = digits[--n];
    }
    return p;
}

#endif
