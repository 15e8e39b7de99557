/**
 * @file export.h
 * @brief Symbol visibility for the public API of libpytracekit.
 *
 * Every function of the library's public API is declared with #PTK_API.
 * The library is built with `-fvisibility=hidden`, so nothing else leaves it.
 */
#ifndef PYTRACEKIT_EXPORT_H
#define PYTRACEKIT_EXPORT_H

/**
 * @def PTK_API
 * @brief Marks a function exported by libpytracekit.
 *
 * When the library itself is being built (`PTK_BUILDING_LIBRARY` defined) it
 * gives the symbol default visibility; for users it expands to `extern`.
 * @since 0.1
 */
#if defined(PTK_BUILDING_LIBRARY) && defined(__GNUC__)
#define PTK_API __attribute__((visibility("default"))) extern
#else
#define PTK_API extern
#endif

#endif /* PYTRACEKIT_EXPORT_H */
