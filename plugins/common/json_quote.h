/*
 * Shared by the shipped plugins that write JSON themselves (timer,
 * timeline): one way to write a JSON string literal. Compiled into each
 * plugin (plugins/common/json_quote.c), hidden.
 */
#ifndef PTK_PLUGINS_JSON_QUOTE_H
#define PTK_PLUGINS_JSON_QUOTE_H

#include <stddef.h>
#include <stdio.h>

/**
 * @brief The JSON string literal of the @p n bytes at @p s: in double
 * quotes, with '"', '\\' and the control characters escaped; other bytes
 * (UTF-8) as they are.
 *
 * @return a malloc'd, NUL-terminated string, or NULL when out of memory
 */
char *ptk_kit_json_quote(const char *s, size_t n);

/**
 * @brief Writes the JSON string literal of the NUL-terminated @p s to
 * @p f, as ptk_kit_json_quote() makes it, without a copy.
 *
 * @return 0, or -1 when the write failed
 */
int ptk_kit_json_write(FILE *f, const char *s);

#endif
