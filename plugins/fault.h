/* Allocation-failure injection for the shipped plugins (a build with
 * -DPTK_FAULT_INJECTION=ON only; force-included into every plugin source).
 *
 * Each plugin's shared object counts its own malloc/calloc/realloc calls:
 * PYTRACEKIT_FAIL_ALLOC_PLUGIN=NAME:N makes the Nth of plugin NAME fail, and
 * PYTRACEKIT_FAIL_ALLOC_LOG=FILE gets "plugin-fail N FILE:LINE" when it
 * happens and "plugin-total N" at exit (beside the library's own "fail" and
 * "total" lines, lib/fault.c). tests/core/faults drives every N up to that total. */
#ifndef PTK_PLUGIN_FAULT_H
#define PTK_PLUGIN_FAULT_H

#include <stdlib.h>

void *ptkp__fi_malloc(size_t n, const char *file, int line);
void *ptkp__fi_calloc(size_t a, size_t b, const char *file, int line);
void *ptkp__fi_realloc(void *p, size_t n, const char *file, int line);

#define malloc(n) ptkp__fi_malloc((n), __FILE__, __LINE__)
#define calloc(a, b) ptkp__fi_calloc((a), (b), __FILE__, __LINE__)
#define realloc(p, n) ptkp__fi_realloc((p), (n), __FILE__, __LINE__)

#endif /* PTK_PLUGIN_FAULT_H */
