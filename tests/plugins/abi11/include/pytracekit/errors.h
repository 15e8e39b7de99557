/**
 * @file errors.h
 * @brief Error codes: negative, named, never renumbered.
 *
 * Functions of the library return #PTK_OK (0) on success and one of the
 * negative codes below on failure. Where a human-readable explanation helps,
 * the function also takes a `char **errmsg` out-parameter (free it with
 * ptk_free()).
 */
#ifndef PYTRACEKIT_ERRORS_H
#define PYTRACEKIT_ERRORS_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief The table of error codes: `X(NAME, value, "description")`.
 *
 * Values are part of the ABI: a code is never renumbered or reused.
 * @since 0.1
 */
#define PTK_ERRNO_MAP(X)                                                     \
    X(ENOMEM, -1, "out of memory")                                           \
    X(EINVAL, -2, "invalid argument")                                        \
    X(ENOENT, -3, "no such file")                                            \
    X(ENOTSO, -4, "not a loadable shared object")                            \
    X(ENOENTRY, -5, "no ptk_plugin_entry symbol")                            \
    X(EABIMAJOR, -6, "plugin ABI major version mismatch")                    \
    X(EABIMINOR, -7, "plugin ABI minor version newer than the host")         \
    X(ESIZE, -8, "plugin descriptor struct_size too small")                  \
    X(EMASK, -9, "event mask bit without a callback")                        \
    X(EOPTION, -10, "unknown option")                                        \
    X(EOPTTYPE, -11, "option value of the wrong type")                       \
    X(EUNSUPPORTED, -12, "not supported by this Python")                     \
    X(EPYTHON, -13, "a Python exception was raised")                         \
    X(ESTATE, -14, "operation not valid in the current state")               \
    X(EIO, -15, "input/output error")                                        \
    X(EPLUGIN, -16, "plugin callback failed")                                \
    X(ELIMIT, -17, "too many subscribers")                                   \
    X(EBUSY, -18, "no free slot")

/** @brief Success. @since 0.1 */
#define PTK_OK 0

/**
 * @brief Returned by a plugin's `on_event`: "never send me this event at this
 * code location again". Positive, so it is never mistaken for an error.
 * @since 0.1
 */
#define PTK_DISABLE 1

/** @brief The negative error codes, generated from #PTK_ERRNO_MAP. @since 0.1 */
typedef enum ptk_errno {
#define PTK__ERR_ENUM(name, value, text) PTK_##name = (value),
    PTK_ERRNO_MAP(PTK__ERR_ENUM)
#undef PTK__ERR_ENUM
    PTK__ERR_LAST_ = -1000 /**< not a code; keeps the enum signed */
} ptk_errno;

/**
 * @brief A description of a status code.
 * @param code #PTK_OK, #PTK_DISABLE or a negative ::ptk_errno.
 * @return A static string; "unknown error" for a code not in the table.
 * @since 0.1
 */
PTK_API const char *ptk_strerror(int code);

/**
 * @brief The symbolic name of a status code, e.g. `"PTK_ENOENT"`.
 * @param code #PTK_OK, #PTK_DISABLE or a negative ::ptk_errno.
 * @return A static string; `"PTK_EUNKNOWN"` for a code not in the table.
 * @since 0.1
 */
PTK_API const char *ptk_err_name(int code);

/**
 * @brief Frees a message or buffer the library handed out (an `errmsg`).
 * @param p The pointer; NULL is allowed.
 * @since 0.1
 */
PTK_API void ptk_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_ERRORS_H */
