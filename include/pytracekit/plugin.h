/**
 * @file plugin.h
 * @brief The plugin ABI: the descriptor a plugin exports and the host
 * services it is given.
 *
 * A plugin is built with `pkg-config --cflags pytracekit` alone and links
 * nothing of libpytracekit: everything it needs from the host comes through
 * the ::ptk_host table passed to `init`.
 *
 * Lifecycle of one plugin instance (one per session that loads it):
 * 1. `init` — once, with the GIL held, before any event. Parse nothing:
 *    options arrive parsed and checked. Return #PTK_OK and set `*state`, or
 *    a negative code and a message in ptk_init_args::errbuf.
 * 2. `on_event` — for each subscribed event, on the thread it happened on,
 *    with the GIL held. Return #PTK_OK, #PTK_DISABLE ("never again at this
 *    code location"), or a negative code: the instance is then detached and
 *    the error (with any Python exception, and its traceback) is reported at
 *    stop. The hub saves and restores the traced program's pending exception
 *    around every callback.
 * 3. `on_ref` — for REF_CREATE / REF_DESTROY (CPython 3.13+), inside
 *    CPython's reference tracer. It MUST NOT create Python objects, set or
 *    clear an exception, or call into Python. The hub checks the exception
 *    state after each call and detaches an instance that changed it.
 * 4. `report` — once, at stop, with the GIL held and no more events coming.
 *    Write files through the host; print a short summary to
 *    ptk_report_args::summary.
 * 5. `fini` — once, last. Free everything.
 */
#ifndef PYTRACEKIT_PLUGIN_H
#define PYTRACEKIT_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "errors.h"
#include "event.h"
#include "options.h"
#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief ABI major of this header: must equal the host's. @since 0.1 */
#define PTK_ABI_MAJOR 1
/** @brief ABI minor of this header: may be older than the host's. @since 0.1 */
#define PTK_ABI_MINOR 7

/** @brief Plugin flags (ptk_plugin_desc::flags). @since 0.1 */
typedef enum ptk_plugin_flags {
    /** ptk_event::time_ns is filled in for this plugin's events. */
    PTK_FLAG_CLOCK = 1u << 0,
    /** The hub keeps ptk_thread::stack up to date (CALL/RETURN are then
     *  observed even if the plugin does not subscribe to them). */
    PTK_FLAG_STACK = 1u << 1,
    /** C events may carry an unbound method: with this flag the `arg` of a
     *  C_CALL, C_RETURN or C_EXCEPTION may be the method descriptor itself
     *  (`PyMethodDescr_Type`, as `list.append`) and ptk_event::c_self the
     *  object it is called on, where without it the host makes the bound
     *  built-in method (`[].append`) for each call, as the legacy hooks
     *  and cProfile do. Making and freeing that object is most of what a
     *  method call costs a profiler on 3.12+; the host skips it when every
     *  subscriber of the C event has this flag. Read the callable with
     *  ptk_event_c_def() and ptk_event_c_self(), which answer for both
     *  forms. A host older than ABI 1.3 ignores the flag.
     *  @since 0.3 (ABI 1.3) */
    PTK_FLAG_UNBOUND_C = 1u << 2,
    /** The plugin keeps its own stack of the calls it sees: it reads
     *  neither ptk_event::depth nor ptk_thread::depth / ptk_thread::stack,
     *  and pairs each C_RETURN / C_EXCEPTION with its C_CALL itself, as it
     *  pairs RETURN with CALL. When every instance attached has this flag
     *  (instances that take only reference events aside), none has
     *  #PTK_FLAG_STACK and no C event has to be delivered as a bound
     *  method (#PTK_FLAG_UNBOUND_C), the monitoring backend keeps no shadow
     *  stack and no stack of C calls in progress. Then ptk_event::depth is -1, ptk_thread::depth
     *  is 0, and a C_RETURN or C_EXCEPTION may come without a C_CALL before
     *  it (a C call that started before tracing, or one CPython reports
     *  unbalanced: gh-122029 on 3.12.0 to 3.12.4), the way a RETURN may,
     *  and is delivered at whatever depth it comes. Otherwise, and on the
     *  legacy backend, events are as without the flag, so a plugin with it
     *  handles both. A host older than ABI 1.3 ignores the flag.
     *  @since 0.3 (ABI 1.3) */
    PTK_FLAG_OWN_STACK = 1u << 3,
    /** The plugin keeps its figures per context (ptk_host::context): a
     *  location it answered #PTK_DISABLE for is off only until the context
     *  changes (ptk_context_set()); then the hub forgets its DISABLEs and
     *  the location fires again for it, as if never disabled. Only its
     *  own: what other instances disabled, and code no filter selects,
     *  stay off (on the monitoring backend the hub switches those code
     *  objects' locations back on for its own tool alone, never with
     *  sys.monitoring.restart_events()). A host older than ABI 1.4
     *  ignores the flag. @since 0.3 (ABI 1.4) */
    PTK_FLAG_PER_CONTEXT = 1u << 4,
    /** The plugin keeps its stacks per execution context: it reads
     *  ptk_thread::exec_id at each event and, when it changed, switches to
     *  the stack it keeps for that context. The hub tracks the contexts
     *  (greenlet switches, through greenlet's own trace hook, chained with
     *  any the program set, from when the greenlet module is imported)
     *  while some attached instance has this flag or reads the hub's own
     *  shadow stack (has no #PTK_FLAG_OWN_STACK); then the hub also keeps
     *  its shadow stack and its stack of C calls per context, so a switch
     *  never pairs a RETURN with another context's frame. Without greenlet
     *  imported it costs nothing. A host older than ABI 1.5 ignores the
     *  flag (and has no ptk_thread::exec_id: check ptk_thread::struct_size).
     *  @since 0.3 (ABI 1.5) */
    PTK_FLAG_EXEC_CONTEXT = 1u << 5
} ptk_plugin_flags;

/**
 * @brief State of the hub's reference tracer (CPython 3.13+), for reports.
 * @since 0.1
 */
typedef struct ptk_ref_status {
    size_t struct_size;     /**< `sizeof(ptk_ref_status)`; set by the caller */
    int available;          /**< 1 if this Python has PyRefTracer */
    int installed;          /**< 1 while the hub's tracer is in the slot */
    int chained;            /**< 1 if a tracer found in the slot is being forwarded to */
    int evicted;            /**< 1 if someone replaced the hub's tracer while it ran */
    uint64_t evicted_at_ns; /**< ptk_host::clock_ns() when the eviction was noticed */
    uint64_t events;        /**< reference events the hub received */
    /* End of ABI 1.0. */
} ptk_ref_status;

/**
 * @brief What one plugin instance subscribes to: a record the hub owns, one
 * per instance, handed to `init` through ptk_init_args::subscription.
 *
 * It starts as the descriptor's `events` and `flags` (and the filter the
 * user gave in the instance's options); `init` may change both fields — for
 * this instance only: the descriptor, shared by every instance of the
 * plugin, is never written. The filter itself is the hub's (see
 * docs/filters.md); a plugin adds to it with ptk_host::subscribe_filter.
 * @since 0.3 (ABI 1.2)
 */
typedef struct ptk_subscription {
    size_t struct_size;  /**< `sizeof(ptk_subscription)` as the host built it */
    unsigned int events; /**< event mask; the same storage as init's `*events` */
    unsigned int flags;  /**< ::ptk_plugin_flags for this instance */
    /** Kinds of `events` the instance takes only where the session's backend
     *  delivers them: on a backend that does not (BRANCH and JUMP on the
     *  legacy hooks), the session starts without them and clears them from
     *  `events` here, instead of refusing to start. Read `events` again in
     *  `on_event` to learn what is delivered. Check
     *  ptk_subscription::struct_size before using it. @since 0.3 (ABI 1.2) */
    unsigned int optional;
    /** Kinds the instance needs only where an optional kind is not
     *  delivered: not in `events`, they are added to it when the session
     *  leaves out some kind of `optional` (and stay out otherwise). The
     *  coverage plugin measures branches from BRANCH events where they come
     *  and needs every call and return only where they do not. Check
     *  ptk_subscription::struct_size before using it. @since 0.3 (ABI 1.2) */
    unsigned int fallback;
} ptk_subscription;

/** @brief One plugin instance, as the host knows it (opaque). @since 0.1 */
typedef struct ptk_plugin_ctx ptk_plugin_ctx;

struct ptk_host;

/**
 * @brief Arguments of a plugin's `init` callback.
 * @since 0.1
 */
typedef struct ptk_init_args {
    size_t struct_size;             /**< `sizeof(ptk_init_args)` as built */
    const struct ptk_host *host;    /**< host services; valid until `fini` returns */
    ptk_plugin_ctx *ctx;            /**< this instance, for host calls */
    const ptk_option_value *options; /**< one per declared option, in order */
    size_t noptions;                /**< number of entries in `options` */
    const char *output_dir;         /**< the session's output directory */
    char *errbuf;                   /**< write a reason here on failure */
    size_t errbuf_size;             /**< size of `errbuf` */
    /* End of ABI 1.0. */
    /** This instance's subscription, to read or change during `init`.
     *  Check ptk_init_args::struct_size before using it. @since 0.3 (ABI 1.2) */
    ptk_subscription *subscription;
} ptk_init_args;

/**
 * @brief Services the host offers plugins. The table only grows at the end:
 * check ptk_host::struct_size before using a member added after 1.0.
 * @since 0.1
 */
typedef struct ptk_host {
    size_t struct_size;       /**< `sizeof(ptk_host)` as the host built it */
    uint16_t abi_major;       /**< the host's #PTK_ABI_MAJOR */
    uint16_t abi_minor;       /**< the host's #PTK_ABI_MINOR */
    const char *version;      /**< the host library's version string */

    /** The frame of an event (borrowed), made on demand by backends that
     *  have none; NULL for events without a Python frame. */
    PyFrameObject *(*event_frame)(const ptk_event *ev);
    /** Looks an option up by name; NULL if the plugin did not declare it. */
    const ptk_option_value *(*option)(const ptk_init_args *args,
                                      const char *name);
    /** The calling thread's record (creates it; touches no Python object). */
    const ptk_thread *(*current_thread)(void);
    /** Number of thread records so far. */
    size_t (*thread_count)(void);
    /** Thread record by ptk_thread::index, or NULL. */
    const ptk_thread *(*thread_at)(size_t index);
    /** The hub's clock (what ptk_event::time_ns uses): CLOCK_MONOTONIC in
     * nanoseconds, read through the processor's invariant time-stamp counter
     * where that is cheaper (docs/events.md, "The clock"). Any thread. */
    uint64_t (*clock_ns)(void);
    /** Writes one line to stderr prefixed with `pytracekit: NAME: `. */
    void (*log)(ptk_plugin_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /** Records why the instance is failing, shown at stop with its error code.
     *  Returns @p code so that `return host->fail(ctx, PTK_EIO, "…")` reads well
     *  (a callback fails by returning it; called from on_thread_end, which
     *  returns nothing, it fails the instance by itself). */
    int (*fail)(ptk_plugin_ctx *ctx, int code, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;
    /** Opens `output_dir/filename` for writing, through a temporary file.
     *  Returns NULL (and records why) on failure; `*token` is for report_commit. */
    FILE *(*report_open)(ptk_plugin_ctx *ctx, const char *filename, void **token);
    /** Closes the file; with @p keep != 0 renames it into place, else removes
     *  it. Returns #PTK_OK or `PTK_EIO` (then nothing is left behind). */
    int (*report_commit)(void *token, int keep);
    /** Writes a Python object to `output_dir/filename` atomically in a
     *  ::ptk_report_format. Needs the GIL. Returns #PTK_OK or an error
     *  (the Python exception, if any, is recorded and cleared). */
    int (*report_write_object)(ptk_plugin_ctx *ctx, const char *filename,
                               PyObject *obj, int format);
    /** ptk_strerror(). */
    const char *(*strerror)(int code);
    /** Fills @p out (set its struct_size first). Returns #PTK_OK. */
    int (*ref_status)(ptk_ref_status *out);
    /* End of ABI 1.0. */
    /** The instruction offset (bytes, as PyFrame_GetLasti() gives) of the
     *  innermost Python frame of the calling thread if it runs @p code, else
     *  -1. Reads the interpreter's frame without creating any object, so it
     *  may be used in `on_ref`. For a ::ptk_stack_entry whose `frame` is NULL
     *  (the monitoring backend makes no frame objects). ABI 1.1. */
    int (*current_lasti)(PyCodeObject *code);
    /* End of ABI 1.1. */
    /** A pointer-sized slot of this instance's own for @p code, kept in the
     *  hub's record of the code object: NULL (nothing stored yet) until the
     *  plugin stores something. Replaces a hash table keyed by code
     *  pointers, and cannot be confused by a freed code object's address
     *  being reused: the slot goes when the code object goes, and when the
     *  instance leaves the hub. The hub never frees what it points to.
     *  Returns NULL if there is no slot (the instance is not attached, or
     *  out of memory). GIL held; in `on_event` only. @since 0.3 (ABI 1.2) */
    void **(*code_slot)(ptk_plugin_ctx *ctx, PyCodeObject *code);
    /** ptk_event_parse_mask(): the one event-list parser. @since 0.3 (ABI 1.2) */
    int (*event_parse_mask)(const char *list, unsigned int *mask);
    /** The instruction offset (bytes) of an event located at an
     *  instruction (C_CALL, C_RETURN, C_EXCEPTION, OPCODE, BRANCH, JUMP), or
     *  -1. @since 0.3 (ABI 1.2) */
    int (*event_offset)(const ptk_event *ev);
    /** Adds filter conditions to this instance's subscription, in the
     *  option syntax (`"include=src,modules=myapp"`; docs/filters.md),
     *  as if the user had given them. Only during `init`. Returns #PTK_OK,
     *  or `PTK_EINVAL` with the reason in the init's errbuf-style message
     *  recorded by host->fail. @since 0.3 (ABI 1.2) */
    int (*subscribe_filter)(ptk_plugin_ctx *ctx, const char *spec);
    /** The run's identity (pid, ppid, start time, argv, host) as a JSON
     *  object's text, for a plugin that writes JSON itself through
     *  report_open: put it in as a `"run"` member, as report_write_object
     *  does (docs/reports.md). Owned by the host, valid until `fini`; NULL
     *  if it cannot be made. GIL held; in `report`. @since 0.3 (ABI 1.2) */
    const char *(*run_identity)(ptk_plugin_ctx *ctx);
    /** Publishes @p service under @p name for the other instances of this
     *  session (services.h names the shipped ones); a second call replaces
     *  the first, NULL withdraws it. The host keeps the pointer, not a copy:
     *  it must stay valid until `fini`. Returns #PTK_OK or `PTK_ENOMEM`.
     *  @since 0.3 (ABI 1.2) */
    int (*publish)(ptk_plugin_ctx *ctx, const char *name, const void *service);
    /** The service another initialised (not failed) instance of this session
     *  published under @p name, or NULL. GIL held. @since 0.3 (ABI 1.2) */
    const void *(*lookup)(ptk_plugin_ctx *ctx, const char *name);
    /* End of ABI 1.2. */
    /** Claims `output_dir/name` for this instance, for a file or directory
     *  the plugin writes itself (report_open claims its own names): if
     *  another instance of the process has the name, this one gets
     *  `BASE-N.EXT` (said on the summary). Writes the claimed absolute path
     *  (NUL-terminated) into @p buf. Returns #PTK_OK, or `PTK_EINVAL` (a
     *  name with '/', or @p size too small). Create what it names as a
     *  new directory (mkdir, then check it is one) or through report_create:
     *  never open an existing path there for writing (a planted symlink).
     *  @since 0.3 (ABI 1.3) */
    int (*report_claim)(ptk_plugin_ctx *ctx, const char *name, char *buf,
                        size_t size);
    /** Claims `name` as report_claim does and creates that file new: a
     *  temporary file made with `O_EXCL` in the output directory (never
     *  through a symlink), renamed into place at once, so it is readable
     *  while it grows. Returns the file descriptor (open for writing,
     *  close-on-exec; the caller closes it) and the path in @p buf, or a
     *  negative error. For files written while the program runs; a report
     *  written at the end goes through report_open. @since 0.3 (ABI 1.3) */
    int (*report_create)(ptk_plugin_ctx *ctx, const char *name, char *buf,
                         size_t size);
    /* End of ABI 1.3. */
    /** The process's current context (ptk_context_set()): its name, or NULL
     *  when there is none, and its id in @p id (may be NULL; 0 when there
     *  is none). Every ptk_context_set() makes a new id, so comparing the
     *  id with the last one seen tells a plugin the context changed. The
     *  name is valid until the context changes: copy it to keep it. GIL
     *  held; any callback. @since 0.3 (ABI 1.4) */
    const char *(*context)(uint64_t *id);
    /* End of ABI 1.4. */
    /** The asyncio Task running on the calling thread now, as asyncio
     *  itself says (`asyncio.current_task()`, so any loop that registers
     *  its Tasks with asyncio, uvloop's included): returns the hub's
     *  number for it, 1, 2, … in the order the hub first saw each Task,
     *  never reused while the process runs (a Task gone and a new one at
     *  its address get different numbers), and the Task itself in
     *  @p task (may be NULL; borrowed: alive while it runs). Returns 0
     *  (and NULL) when no Task runs: no loop running on the thread, or
     *  asyncio not imported, which the hub never does itself. One number
     *  per Task for every plugin of the process: the timer's per-Task
     *  totals and the timeline's Task tracks name the same Tasks. Costs a
     *  call of `current_task()` and a dictionary lookup: ask at a Task's
     *  step (a coroutine resumed by a caller that is not a coroutine), not
     *  at every event. GIL held; `on_event`, `report` (not `on_ref`).
     *  @since 0.3 (ABI 1.6) */
    uint64_t (*running_task)(PyObject **task);
    /* End of ABI 1.6. */
    /** Writes @p value to @p f as Python's `json.dumps` writes it, byte for
     *  byte, without importing the json package (whose import, with `re`'s,
     *  costs more than a short program's own start): `ensure_ascii`
     *  escapes, dict keys that are int, float, bool or None written as the
     *  strings json makes of them. @p indent is #PTK_JSON_COMPACT
     *  (`separators=(",", ":")`), #PTK_JSON_SPACED (json's default
     *  separators, one line) or N >= 0 (`indent=N`). Takes dict, list,
     *  tuple, str, int, float (NaN and the infinities as json writes them),
     *  bool and None, and their subclasses. Returns 0; -1 with a Python
     *  exception set for a value json would refuse (TypeError;
     *  RecursionError nested too deep) or when out of memory;
     *  -2 when writing to @p f failed. Part of the text may have been
     *  written on failure: write into a file from report_open and commit it
     *  only on success. GIL held. @since 0.3 (ABI 1.7) */
    int (*json_write)(FILE *f, PyObject *value, int indent);
    /* End of ABI 1.7. */
} ptk_host;

/** @brief ptk_host::json_write's @p indent for `separators=(",", ":")`.
 *  @since 0.3 (ABI 1.7) */
#define PTK_JSON_COMPACT (-1)
/** @brief ptk_host::json_write's @p indent for json.dumps's default
 *  separators (`", "` and `": "`), on one line. @since 0.3 (ABI 1.7) */
#define PTK_JSON_SPACED (-2)

/**
 * @brief What a plugin is: exported through ptk_plugin_entry() for shared
 * objects, or passed to ptk_session_add_static() for plugins linked in.
 *
 * Start it with #PTK_PLUGIN_HEADER. Every bit of `events` needs its
 * callback: `on_event` for the trace and profile events, `on_ref` for the
 * reference events.
 * @since 0.1
 */
typedef struct ptk_plugin_desc {
    size_t struct_size;    /**< `sizeof(ptk_plugin_desc)` the plugin was built with */
    uint16_t abi_major;    /**< #PTK_ABI_MAJOR the plugin was built with */
    uint16_t abi_minor;    /**< #PTK_ABI_MINOR the plugin was built with */
    const char *name;      /**< short name, `[a-z0-9_-]+`; also the report prefix */
    const char *version;   /**< the plugin's own version */
    const char *description; /**< one line for `--list-plugins` */
    unsigned int events;   /**< default subscription mask (PTK_MASK(...)) */
    unsigned int flags;    /**< ::ptk_plugin_flags */
    const ptk_option_spec *options; /**< accepted options, NULL-name terminated; may be NULL */
    /** Creates the instance. May change the mask through `*events` (e.g.
     *  from an option); the new mask is checked like the declared one. */
    int (*init)(const ptk_init_args *args, void **state, unsigned int *events);
    /** One event. Returns #PTK_OK, #PTK_DISABLE or a negative error. */
    int (*on_event)(void *state, const ptk_event *ev);
    /** One reference event (REF_CREATE / REF_DESTROY); see the rules above. */
    void (*on_ref)(void *state, PyObject *obj, ptk_event_kind kind);
    /** Writes the reports. Returns #PTK_OK or a negative error. */
    int (*report)(void *state, const ptk_report_args *args);
    /** Frees the instance. */
    void (*fini)(void *state);
    /* End of ABI 1.0 and 1.1. */
    /**
     * A thread's state was cleared: the thread finished, or a C thread gave
     * its Python thread state up (PyGILState_Release). Called for every
     * attached instance, with the GIL held, possibly on another thread than
     * @p thread's (at finalization, in a forked child); it MUST NOT call into
     * Python. Free what the instance keeps per thread (keep what the report
     * needs). The record stays readable (ident, index, name) with an empty
     * stack, and its index is never reused; if the same OS thread calls
     * Python again under a new thread state, events come again with the same
     * record. To fail (out of memory, say), call ptk_host::fail from here:
     * the instance is then detached and reported as failed. May be NULL.
     * Read by the host only when #struct_size covers it.
     * @since 0.3
     */
    void (*on_thread_end)(void *state, const ptk_thread *thread);
    /* End of ABI 1.2. */
} ptk_plugin_desc;

/**
 * @brief The first three members of every ::ptk_plugin_desc initialiser.
 * @since 0.1
 */
#define PTK_PLUGIN_HEADER                                                   \
    .struct_size = sizeof(ptk_plugin_desc), .abi_major = PTK_ABI_MAJOR,     \
    .abi_minor = PTK_ABI_MINOR

/** @brief Signature of the entry point a shared-object plugin exports. @since 0.1 */
typedef const ptk_plugin_desc *(*ptk_plugin_entry_fn)(void);

/**
 * @def PTK_PLUGIN_EXPORT
 * @brief Default visibility, for the entry point of a plugin built with
 * `-fvisibility=hidden`.
 * @since 0.1
 */
#if defined(__GNUC__)
#define PTK_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define PTK_PLUGIN_EXPORT
#endif

/**
 * @brief Writes the exported `ptk_plugin_entry` function of a shared-object
 * plugin, returning the address of @p desc (a static ::ptk_plugin_desc).
 * @since 0.1
 */
#define PTK_PLUGIN_DEFINE(desc)                                             \
    PTK_PLUGIN_EXPORT const ptk_plugin_desc *ptk_plugin_entry(void);        \
    PTK_PLUGIN_EXPORT const ptk_plugin_desc *ptk_plugin_entry(void)         \
    {                                                                       \
        return &(desc);                                                     \
    }

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_PLUGIN_H */
