/**
 * @file event.h
 * @brief Event kinds, masks, the per-thread record and the event record.
 *
 * Kinds keep CPython's `PyTrace_*` numbers, so translating a CPython event
 * costs nothing; the reference-tracer events follow them.
 */
#ifndef PYTRACEKIT_EVENT_H
#define PYTRACEKIT_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include <Python.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief The kinds of event a plugin can subscribe to.
 *
 * `PTK_EV_CALL` … `PTK_EV_OPCODE` are equal to `PyTrace_CALL` …
 * `PyTrace_OPCODE`. The meaning of ptk_event::arg per kind:
 * - CALL: `Py_None`.
 * - RETURN: the returned (or yielded) value, or NULL when an exception
 *   unwinds the frame (normalised: every supported Python gives NULL).
 * - C_CALL, C_RETURN, C_EXCEPTION: the C callable.
 * - EXCEPTION: the `(type, value, traceback)` tuple.
 * - LINE, OPCODE: `Py_None`.
 * - REF_CREATE, REF_DESTROY: delivered through `on_ref`, not ptk_event.
 * @since 0.1
 */
typedef enum ptk_event_kind {
    PTK_EV_CALL = 0,        /**< a Python frame starts or resumes */
    PTK_EV_EXCEPTION = 1,   /**< an exception passes through a frame (trace) */
    PTK_EV_LINE = 2,        /**< a new line is about to run (trace) */
    PTK_EV_RETURN = 3,      /**< a Python frame returns, yields or unwinds */
    PTK_EV_C_CALL = 4,      /**< a C function is about to be called */
    PTK_EV_C_EXCEPTION = 5, /**< a C function raised */
    PTK_EV_C_RETURN = 6,    /**< a C function returned */
    PTK_EV_OPCODE = 7,      /**< an opcode is about to run (trace) */
    PTK_EV_REF_CREATE = 8,  /**< an object was created (reference tracer) */
    PTK_EV_REF_DESTROY = 9, /**< an object is being destroyed (reference tracer) */
    PTK_EV_COUNT = 10       /**< number of kinds; not an event */
} ptk_event_kind;

/** @brief The mask bit of one event kind. @since 0.1 */
#define PTK_MASK(kind) (1u << (kind))

/** @brief The events a profile function receives. @since 0.1 */
#define PTK_MASK_PROFILE                                                   \
    (PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_RETURN) |                     \
     PTK_MASK(PTK_EV_C_CALL) | PTK_MASK(PTK_EV_C_RETURN) |                 \
     PTK_MASK(PTK_EV_C_EXCEPTION))

/** @brief The events only a trace function receives. @since 0.1 */
#define PTK_MASK_TRACE                                                     \
    (PTK_MASK(PTK_EV_LINE) | PTK_MASK(PTK_EV_EXCEPTION) |                  \
     PTK_MASK(PTK_EV_OPCODE))

/** @brief The reference-tracer events (CPython 3.13+). @since 0.1 */
#define PTK_MASK_REF (PTK_MASK(PTK_EV_REF_CREATE) | PTK_MASK(PTK_EV_REF_DESTROY))

/** @brief Every event kind. @since 0.1 */
#define PTK_MASK_ALL (PTK_MASK_PROFILE | PTK_MASK_TRACE | PTK_MASK_REF)

/**
 * @brief Where a CALL or RETURN came from, as far as the backend can tell.
 *
 * sys.monitoring tells these apart; the legacy hooks do not always, and then
 * the origin is #PTK_ORIGIN_UNKNOWN (CALL) or #PTK_ORIGIN_RETURN /
 * #PTK_ORIGIN_UNWIND (RETURN: an unwind is recognised on every version).
 * @since 0.1
 */
typedef enum ptk_event_origin {
    PTK_ORIGIN_UNKNOWN = 0, /**< not known, or not a CALL/RETURN */
    PTK_ORIGIN_START = 1,   /**< a frame starts (PY_START) */
    PTK_ORIGIN_RESUME = 2,  /**< a generator or coroutine resumes (PY_RESUME) */
    PTK_ORIGIN_THROW = 3,   /**< resumed by throw() (PY_THROW) */
    PTK_ORIGIN_RETURN = 4,  /**< a frame returns (PY_RETURN) */
    PTK_ORIGIN_YIELD = 5,   /**< a frame yields (PY_YIELD) */
    PTK_ORIGIN_UNWIND = 6   /**< an exception leaves the frame (PY_UNWIND) */
} ptk_event_origin;

/**
 * @brief One entry of a thread's shadow stack: a Python frame being run.
 * @since 0.1
 */
typedef struct ptk_stack_entry {
    PyCodeObject *code;   /**< borrowed; alive while the entry is */
    PyFrameObject *frame; /**< borrowed; may be NULL on some backends */
} ptk_stack_entry;

/**
 * @brief The hub's record of one thread, shared by every plugin.
 *
 * Read-only for plugins. ptk_thread::index is small and dense (0, 1, 2, … in
 * the order threads were first seen), so a plugin can keep per-thread state
 * in an array indexed by it. Records live until the hub is finalised, so a
 * pointer to one stays valid across sessions.
 * @since 0.1
 */
typedef struct ptk_thread {
    size_t struct_size;   /**< `sizeof(ptk_thread)` as the host built it */
    uint64_t ident;       /**< `threading.get_ident()` of the thread */
    uint32_t index;       /**< dense index, 0 for the first thread seen */
    int32_t depth;        /**< Python call depth as the hub tracks it */
    const ptk_stack_entry *stack; /**< shadow stack, `stack[0..depth)` */
    const char *name;     /**< thread name when first seen, or NULL */
    /* End of ABI 1.0. Check struct_size before reading fields added later. */
} ptk_thread;

/**
 * @brief One event, as every subscriber of it sees it.
 *
 * Valid only during the `on_event` call that receives it.
 * @since 0.1
 */
typedef struct ptk_event {
    size_t struct_size;   /**< `sizeof(ptk_event)` as the host built it */
    ptk_event_kind kind;  /**< what happened */
    ptk_event_origin origin; /**< for CALL/RETURN: start, resume, unwind… */
    PyCodeObject *code;   /**< code object of the frame (borrowed) */
    PyObject *arg;        /**< per kind, see ::ptk_event_kind (borrowed) */
    const ptk_thread *thread; /**< the thread the event happened on */
    int32_t depth;        /**< call depth after CALL, before RETURN */
    int32_t line;         /**< current line for LINE, else -1 */
    uint64_t time_ns;     /**< monotonic clock, ns; 0 unless asked for */
    /** @cond PTK_INTERNAL */
    PyFrameObject *frame_; /* use ptk_host::event_frame() */
    int32_t lasti_;        /* instruction offset (bytes), or -1: ask frame_ */
    /** @endcond */
    /* End of ABI 1.0. Check struct_size before reading fields added later. */
} ptk_event;

/**
 * @brief Names of the event kinds: `"call"`, `"exception"`, `"line"`, …
 *
 * Inline, so that plugins can use it without linking the library.
 * @param kind A ::ptk_event_kind.
 * @return A static lowercase name, or NULL if @p kind is out of range.
 * @since 0.1
 */
static inline const char *
ptk_event_name(int kind)
{
    static const char *const names[PTK_EV_COUNT] = {
        "call", "exception", "line", "return", "c_call",
        "c_exception", "c_return", "opcode", "ref_create", "ref_destroy"};
    return (kind >= 0 && kind < PTK_EV_COUNT) ? names[kind] : NULL;
}

/**
 * @brief Parses a comma-separated list of event names into a mask.
 *
 * Accepts the names ptk_event_name() gives, plus `profile`, `trace`, `ref`
 * and `all` for the groups.
 * @param list e.g. `"call,return,line"`.
 * @param[out] mask The mask on success.
 * @return #PTK_OK, or `PTK_EINVAL` for an unknown name.
 * @since 0.1
 */
PTK_API int ptk_event_parse_mask(const char *list, unsigned int *mask);

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_EVENT_H */
