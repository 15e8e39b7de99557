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
 * - C_CALL, C_RETURN, C_EXCEPTION: the C callable (a built-in function or
 *   method; for a plugin with #PTK_FLAG_UNBOUND_C possibly a method
 *   descriptor, its object in ptk_event::c_self).
 * - EXCEPTION: the `(type, value, traceback)` tuple.
 * - LINE, OPCODE: `Py_None`.
 * - REF_CREATE, REF_DESTROY: delivered through `on_ref`, not ptk_event.
 * - BRANCH, JUMP: `Py_None`; the instruction's offset is
 *   ptk_host::event_offset(), the destination's is ptk_event::target.
 *
 * Everything else about each kind (its name, its groups, which backends
 * feed it, whether PTK_DISABLE can switch one location of it off) is in
 * one table, #PTK_EVENT_TABLE.
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
    PTK_EV_BRANCH = 10,     /**< a conditional branch is taken or not (3.12+, monitoring; @since 0.3) */
    PTK_EV_JUMP = 11,       /**< an unconditional jump (3.12+, monitoring; @since 0.3) */
    PTK_EV_BRANCH_LEFT = 12,  /**< a conditional branch not taken: falls through
                                   (3.14+, monitoring; PTK_DISABLE switches off
                                   this direction only; @since 0.3) */
    PTK_EV_BRANCH_RIGHT = 13, /**< a conditional branch taken (3.14+, monitoring;
                                   PTK_DISABLE switches off this direction only;
                                   @since 0.3) */
    PTK_EV_COUNT = 14       /**< number of kinds; not an event (10 before 0.3) */
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

/** @brief The kinds of ABI 1.0 and 1.1: every kind both backends can
 *  deliver (not BRANCH / JUMP). @since 0.1 */
#define PTK_MASK_ALL (PTK_MASK_PROFILE | PTK_MASK_TRACE | PTK_MASK_REF)

/** @brief The branch events of `sys.monitoring` (3.12+; the two directions
 *  3.14+). @since 0.3 */
#define PTK_MASK_BRANCHES                                                  \
    (PTK_MASK(PTK_EV_BRANCH) | PTK_MASK(PTK_EV_JUMP) |                     \
     PTK_MASK(PTK_EV_BRANCH_LEFT) | PTK_MASK(PTK_EV_BRANCH_RIGHT))

/** @brief Every bit that names an event kind. @since 0.3 */
#define PTK_MASK_VALID (PTK_MASK_ALL | PTK_MASK_BRANCHES)

/** @brief Group bit of #PTK_EVENT_TABLE: the `profile` group. @since 0.3 */
#define PTK_GROUP_PROFILE 1u
/** @brief Group bit of #PTK_EVENT_TABLE: the `trace` group. @since 0.3 */
#define PTK_GROUP_TRACE 2u
/** @brief Group bit of #PTK_EVENT_TABLE: the `all` group. @since 0.3 */
#define PTK_GROUP_ALL 4u
/** @brief Group bit of #PTK_EVENT_TABLE: the `ref` group. @since 0.3 */
#define PTK_GROUP_REF 8u
/** @brief Group bit of #PTK_EVENT_TABLE: the `branches` group. @since 0.3 */
#define PTK_GROUP_BRANCHES 16u

/** @brief Backend bit of #PTK_EVENT_TABLE: the legacy hooks feed the kind. @since 0.3 */
#define PTK_FEED_LEGACY 1u
/** @brief Backend bit of #PTK_EVENT_TABLE: `sys.monitoring` feeds the kind. @since 0.3 */
#define PTK_FEED_MONITORING 2u
/** @brief Backend bit of #PTK_EVENT_TABLE: the reference tracer feeds it. @since 0.3 */
#define PTK_FEED_REFTRACER 4u

/**
 * @brief The one list of event kinds: `X(KIND, name, groups, feeds,
 * disable, source)` per kind, in ::ptk_event_kind order.
 *
 * - `KIND`: the suffix of the enumerator (`CALL` for #PTK_EV_CALL).
 * - `name`: what ptk_event_name() returns and event lists accept.
 * - `groups`: `PTK_GROUP_*` bits: the group names that include it.
 * - `feeds`: `PTK_FEED_*` bits: the backends that deliver it.
 * - `disable`: where PTK_DISABLE switches it off: `"code"` (the code
 *   object), `"line"`, `"instruction"`, or `""` (it cannot be).
 * - `source`: the CPython events it comes from (documentation).
 *
 * Everything that lists kinds — names, the event-list parser, the mask
 * checks, the documentation table — is made from this list, so a new kind
 * is one row here and one callback in the backend that feeds it.
 * @since 0.3
 */
#define PTK_EVENT_TABLE(X)                                                    \
    X(CALL, "call", PTK_GROUP_PROFILE | PTK_GROUP_TRACE | PTK_GROUP_ALL,      \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "code",                          \
      "PyTrace_CALL; PY_START, PY_RESUME, PY_THROW")                          \
    X(EXCEPTION, "exception", PTK_GROUP_TRACE | PTK_GROUP_ALL,                \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "",                              \
      "PyTrace_EXCEPTION; RAISE, STOP_ITERATION")                             \
    X(LINE, "line", PTK_GROUP_TRACE | PTK_GROUP_ALL,                          \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "line",                          \
      "PyTrace_LINE; LINE, JUMP backwards within a line")                     \
    X(RETURN, "return", PTK_GROUP_PROFILE | PTK_GROUP_TRACE | PTK_GROUP_ALL,  \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "code",                          \
      "PyTrace_RETURN; PY_RETURN, PY_YIELD, PY_UNWIND")                       \
    X(C_CALL, "c_call", PTK_GROUP_PROFILE | PTK_GROUP_ALL,                    \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "instruction",                   \
      "PyTrace_C_CALL; CALL")                                                 \
    X(C_EXCEPTION, "c_exception", PTK_GROUP_PROFILE | PTK_GROUP_ALL,          \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "", "PyTrace_C_EXCEPTION; C_RAISE") \
    X(C_RETURN, "c_return", PTK_GROUP_PROFILE | PTK_GROUP_ALL,                \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "", "PyTrace_C_RETURN; C_RETURN") \
    X(OPCODE, "opcode", PTK_GROUP_TRACE | PTK_GROUP_ALL,                      \
      PTK_FEED_LEGACY | PTK_FEED_MONITORING, "instruction",                   \
      "PyTrace_OPCODE; INSTRUCTION")                                          \
    X(REF_CREATE, "ref_create", PTK_GROUP_REF, PTK_FEED_REFTRACER, "",        \
      "PyRefTracer_CREATE (3.13+)")                                           \
    X(REF_DESTROY, "ref_destroy", PTK_GROUP_REF, PTK_FEED_REFTRACER, "",      \
      "PyRefTracer_DESTROY (3.13+)")                                          \
    X(BRANCH, "branch", PTK_GROUP_BRANCHES, PTK_FEED_MONITORING,              \
      "instruction", "BRANCH (3.12+)")                                        \
    X(JUMP, "jump", PTK_GROUP_BRANCHES, PTK_FEED_MONITORING, "instruction",   \
      "JUMP (3.12+)")                                                         \
    X(BRANCH_LEFT, "branch_left", 0u, PTK_FEED_MONITORING, "instruction",     \
      "BRANCH_LEFT (3.14+)")                                                  \
    X(BRANCH_RIGHT, "branch_right", 0u, PTK_FEED_MONITORING, "instruction",   \
      "BRANCH_RIGHT (3.14+)")

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
    /** The execution context running on the thread now: 0 for the thread's
     *  own (its main greenlet, or no greenlet at all), else a number the
     *  hub gives each greenlet the thread switches to, never reused while
     *  the process runs. Kept while the hub tracks contexts (see
     *  #PTK_FLAG_EXEC_CONTEXT); 0 otherwise. When it changes between two
     *  events, the frames below the next event are the other context's:
     *  ptk_thread::stack and ptk_thread::depth are already the new
     *  context's, and a plugin keeping its own stack switches to the one it
     *  keeps for this id. @since 0.3 (ABI 1.5) */
    uint64_t exec_id;
    /** The object of that context (the greenlet, borrowed: alive while it
     *  runs), or NULL when ptk_thread::exec_id is 0. GIL held. @since 0.3
     *  (ABI 1.5) */
    PyObject *exec_object;
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
    uint64_t time_ns;     /**< CLOCK_MONOTONIC, ns (ptk_host::clock_ns); 0 unless asked for */
    /** @cond PTK_INTERNAL */
    PyFrameObject *frame_; /* use ptk_host::event_frame() */
    int32_t lasti_;        /* instruction offset (bytes), or -1: ask frame_ */
    /** @endcond */
    /* End of ABI 1.0. Check struct_size before reading fields added later. */
    /** BRANCH, JUMP: the offset (bytes) of the instruction control goes to;
     *  -1 for every other kind. @since 0.3 (ABI 1.2) */
    int32_t target;
    /** C_CALL, C_RETURN, C_EXCEPTION whose `arg` is a method descriptor
     *  (only for plugins with #PTK_FLAG_UNBOUND_C): the object the method is
     *  called on (borrowed); NULL otherwise. @since 0.3 (ABI 1.3) */
    PyObject *c_self;
} ptk_event;

/**
 * @brief The `PyMethodDef` of a C event's callable, whichever form it has.
 *
 * For a built-in function or method in ptk_event::arg, its `m_ml`; for a
 * method descriptor (#PTK_FLAG_UNBOUND_C), its `d_method`: the same pointer
 * the bound method would have, so a plugin keys C functions by it alike.
 * Inline, so that plugins can use it without linking the library.
 * @param ev A C_CALL, C_RETURN or C_EXCEPTION event.
 * @return The method definition, or NULL for any other callable.
 * @since 0.3 (ABI 1.3)
 */
static inline PyMethodDef *
ptk_event_c_def(const ptk_event *ev)
{
    PyObject *fn = ev->arg;
    if (fn == NULL) {
        return NULL;
    }
    if (Py_IS_TYPE(fn, &PyMethodDescr_Type)) {
        /* first: PyCFunction_Check walks the type's bases for the rest */
        return ((PyMethodDescrObject *)fn)->d_method;
    }
    if (PyCFunction_Check(fn)) {
        return ((PyCFunctionObject *)fn)->m_ml;
    }
    return NULL;
}

/**
 * @brief The object a C event's callable is bound to, whichever form it has.
 *
 * `m_self` of a built-in method (NULL or the module for a function), or
 * ptk_event::c_self when `arg` is a method descriptor.
 * @param ev A C_CALL, C_RETURN or C_EXCEPTION event.
 * @return The object (borrowed), or NULL.
 * @since 0.3 (ABI 1.3)
 */
static inline PyObject *
ptk_event_c_self(const ptk_event *ev)
{
    PyObject *fn = ev->arg;
    if (fn == NULL) {
        return NULL;
    }
    if (Py_IS_TYPE(fn, &PyMethodDescr_Type)) {
        return ev->struct_size > offsetof(ptk_event, c_self) ? ev->c_self
                                                             : NULL;
    }
    if (PyCFunction_Check(fn)) {
        return ((PyCFunctionObject *)fn)->m_self;
    }
    return NULL;
}

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
#define PTK__EV_NAME(K, name, groups, feeds, disable, source) name,
    static const char *const names[PTK_EV_COUNT] = {
        PTK_EVENT_TABLE(PTK__EV_NAME)};
#undef PTK__EV_NAME
    return (kind >= 0 && kind < PTK_EV_COUNT) ? names[kind] : NULL;
}

/**
 * @brief Parses a comma-separated list of event names into a mask.
 *
 * Accepts the names ptk_event_name() gives and the groups of
 * #PTK_EVENT_TABLE: `profile` (call, return, c_call, c_return,
 * c_exception), `trace` (call, return, line, exception, opcode: what a
 * trace function receives), `all` (every kind both backends deliver:
 * profile and trace), `ref` (ref_create, ref_destroy) and `branches`
 * (branch, jump). Items are separated by `,`, `;`, `+` or spaces.
 * Plugins reach it as ptk_host::event_parse_mask, without linking.
 * @param list e.g. `"call,return,line"`.
 * @param[out] mask The mask on success.
 * @return #PTK_OK, or `PTK_EINVAL` for an unknown name (since 0.3 also
 *         for an empty list).
 * @since 0.1
 */
PTK_API int ptk_event_parse_mask(const char *list, unsigned int *mask);

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_EVENT_H */
