/**
 * @file version.h
 * @brief Version of pytracekit, at compile time and at run time.
 */
#ifndef PYTRACEKIT_VERSION_H
#define PYTRACEKIT_VERSION_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Major version: changes break the C API or the plugin ABI. @since 0.1 */
#define PTK_VERSION_MAJOR 0
/** @brief Minor version: additions that keep compatibility. @since 0.1 */
#define PTK_VERSION_MINOR 2
/** @brief Patch version: fixes only. @since 0.1 */
#define PTK_VERSION_PATCH 0

/** @brief The version as one number, `0xMMmmpp`, for `#if` comparisons. @since 0.1 */
#define PTK_VERSION_HEX \
    ((PTK_VERSION_MAJOR << 16) | (PTK_VERSION_MINOR << 8) | PTK_VERSION_PATCH)

/** @cond PTK_INTERNAL */
#define PTK__STR2(x) #x
#define PTK__STR(x) PTK__STR2(x)
/** @endcond */

/** @brief The version as a string, `"MAJOR.MINOR.PATCH"`. @since 0.1 */
#define PTK_VERSION_STRING \
    PTK__STR(PTK_VERSION_MAJOR) "." PTK__STR(PTK_VERSION_MINOR) "." \
    PTK__STR(PTK_VERSION_PATCH)

/**
 * @brief The version of the library loaded at run time.
 * @return #PTK_VERSION_HEX as the library was built.
 * @since 0.1
 */
PTK_API unsigned int ptk_version(void);

/**
 * @brief The version of the library loaded at run time, as a string.
 * @return A static string such as `"0.1.0"`; never NULL.
 * @since 0.1
 */
PTK_API const char *ptk_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_VERSION_H */
