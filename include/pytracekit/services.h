/**
 * @file services.h
 * @brief Services plugins offer each other within a session.
 *
 * A plugin instance publishes a service under a name with
 * ptk_host::publish (in `init`); another instance of the same session finds
 * it with ptk_host::lookup and calls it (GIL held, never from `on_ref`).
 * A service stays valid while its publisher is attached: look it up again
 * each time rather than keeping the pointer (lookup is cheap: a walk over
 * the session's instances). This header names the services the shipped
 * plugins publish.
 * @since 0.3 (ABI 1.2)
 */
#ifndef PYTRACEKIT_SERVICES_H
#define PYTRACEKIT_SERVICES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief The name under which reftrack publishes a ::ptk_live_objects.
 * @since 0.3
 */
#define PTK_SERVICE_LIVE_OBJECTS "pytracekit.live_objects"

/**
 * @brief One type and how many of its objects are alive.
 * @since 0.3
 */
typedef struct ptk_live_type {
    const char *type; /**< "module.QualName" ("int" for builtins); owned by the publisher, valid until its `fini` */
    uint64_t alive;   /**< objects of the program (not the tracer's own) alive now */
} ptk_live_type;

/**
 * @brief Live objects per type, as the reference tracer counts them
 * (reftrack; CPython 3.13+).
 *
 * The counts have reftrack's caveat: objects some CPython versions free
 * without telling the reference tracer (gh-130382) count as alive until
 * reftrack notices (docs/reference-tracer.md).
 * @since 0.3
 */
typedef struct ptk_live_objects {
    size_t struct_size; /**< `sizeof(ptk_live_objects)` as the publisher built it */
    void *state;        /**< the publisher's; pass it back */
    /** Fills @p out with up to @p max types, most alive objects first;
     *  returns how many. Calls no Python. */
    size_t (*types)(void *state, ptk_live_type *out, size_t max);
} ptk_live_objects;

#ifdef __cplusplus
}
#endif

#endif /* PYTRACEKIT_SERVICES_H */
