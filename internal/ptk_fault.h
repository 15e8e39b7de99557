/* Allocation-failure injection (a build with -DPTK_FAULT_INJECTION=ON only):
 * malloc/calloc/realloc go through lib/fault.c. Shared by the library and
 * the shipped plugins, which is why it lives in internal/ (private headers
 * of this source tree, never installed) and not in lib/: included by
 * lib/ptk_internal.h for the library, and force-included into every source
 * of each shipped plugin, which links its own hidden copy of lib/fault.c
 * (built with PTK_FAULT_PLUGIN="NAME") and so counts its own allocations.
 * The plugins include nothing of lib/. */
#ifndef PTK_FAULT_H
#define PTK_FAULT_H

#ifdef PTK_FAULT_INJECTION
#include <stdlib.h> /* declared before the macros below */

#define PTK_FI_HIDDEN __attribute__((visibility("hidden")))
PTK_FI_HIDDEN void *ptk__fi_malloc(size_t n, const char *file, int line);
PTK_FI_HIDDEN void *ptk__fi_calloc(size_t a, size_t b, const char *file, int line);
PTK_FI_HIDDEN void *ptk__fi_realloc(void *p, size_t n, const char *file, int line);
#define malloc(n) ptk__fi_malloc((n), __FILE__, __LINE__)
#define calloc(a, b) ptk__fi_calloc((a), (b), __FILE__, __LINE__)
#define realloc(p, n) ptk__fi_realloc((p), (n), __FILE__, __LINE__)
#endif

#endif /* PTK_FAULT_H */
