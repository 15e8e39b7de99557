/*
 * lib/core: the hub's room. Private to libpytracekit, nothing here is API;
 * prefix ptk__ / PTK__ for everything internal (never exported).
 *
 * What every room of lib/ may use: strings and messages, the clock,
 * options, the event table, filters, thread records, code records, the
 * dispatch table and the hub's calls, the backend table type, and the
 * plugin instances and sessions as the hub reads them. The rooms above
 * (lib/backends, lib/ref, lib/session) include this header; nothing here
 * includes theirs (tests/core/structure checks it).
 */
#ifndef PTK_CORE_H
#define PTK_CORE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdatomic.h>
#include <time.h>

#include "ptk_config.h"
#if PTK_HAVE_RDTSC
#include <x86intrin.h>
#endif
#include "pytracekit/pytracekit.h"

/* Everything declared here is internal to the library: hidden, so that the
 * compiler reaches the hot-path globals directly, not through the GOT. */
#pragma GCC visibility push(hidden)

#define PTK__MAX_SLOTS 64

/* ---- strings and messages (util.c) ---------------------------------- */

char *ptk__strdup(const char *s);
/* Levenshtein distance of @p a and @p b (their first 63 bytes): for "did
 * you mean" (a plugin's name, an option's). */
size_t ptk__edit_distance(const char *a, const char *b);
char *ptk__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Sets *errmsg (if errmsg) to a formatted message; returns code. */
int ptk__err(char **errmsg, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "3.11.7" for the running interpreter. */
const char *ptk__python_version(void);
/* ---- the clock (clock.c) ----------------------------------------------- */

/* The line that turns a TSC reading into CLOCK_MONOTONIC ns (clock.c),
 * read under the sequence number seq (odd while it changes). */
typedef struct ptk__tsc_line {
    _Atomic unsigned int seq;
    _Atomic uint64_t base_tsc; /* the line holds from this reading */
    _Atomic uint64_t span;     /* for this many ticks (0: no line) */
    _Atomic uint64_t base_ns;  /* its value at base_tsc */
    _Atomic uint64_t mult;     /* ns per tick << 32 */
} ptk__tsc_line;
extern ptk__tsc_line ptk__tsc;
/* clock_gettime(CLOCK_MONOTONIC) in ns. */
uint64_t ptk__clock_mono(void);
/* ptk__clock_ns off the line: calibrates, or reads clock_gettime. */
uint64_t ptk__clock_slow(void);
/* "tsc" or "monotonic": what ptk__clock_ns reads (deciding, if need be). */
const char *ptk__clock_source(void);
/* In a forked child (process.c). */
void ptk__clock_after_fork(void);

#if PTK_HAVE_RDTSC
static inline uint64_t
ptk__rdtsc(void)
{
    return __rdtsc();
}

/* The line's value at tsc, if the line holds there (1), else 0. */
static inline int
ptk__clock_line(uint64_t tsc, uint64_t *ns)
{
    unsigned int s = atomic_load_explicit(&ptk__tsc.seq, memory_order_acquire);
    uint64_t d = tsc - atomic_load_explicit(&ptk__tsc.base_tsc, memory_order_relaxed);
    uint64_t span = atomic_load_explicit(&ptk__tsc.span, memory_order_relaxed);
    uint64_t b = atomic_load_explicit(&ptk__tsc.base_ns, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&ptk__tsc.mult, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (d >= span || (s & 1u) ||
        atomic_load_explicit(&ptk__tsc.seq, memory_order_relaxed) != s) {
        return 0;
    }
    *ns = b + ((d * m) >> 32); /* d < span: no overflow (clock.c) */
    return 1;
}
#endif

/* The hub's clock: CLOCK_MONOTONIC in ns, through the TSC where that is
 * cheaper (clock.c). Inline: read once per event that asks for time. */
static inline uint64_t
ptk__clock_ns(void)
{
#if PTK_HAVE_RDTSC
    uint64_t ns;
    if (__builtin_expect(ptk__clock_line(ptk__rdtsc(), &ns), 1)) {
        return ns;
    }
    return ptk__clock_slow();
#else
    return ptk__clock_mono();
#endif
}
/* Runs a few lines of Python in a fresh namespace (with `name` bound to
 * `value` first, if name is not NULL). Returns the namespace (a new
 * reference), or NULL if the code raised; errors are cleared. Whatever
 * the lines import is taken out of sys.modules again (as by
 * ptk__import_quietly). */
PyObject *ptk__run_snippet(const char *src, const char *name, PyObject *value);

/* Imports module `name` for the hub's own use and takes everything the
 * import added out of sys.modules again: the traced program starts with
 * the modules it would have without pytracekit, and imports (and runs, and
 * is measured in) them itself. New reference, or NULL with an exception. */
PyObject *ptk__import_quietly(const char *name);

/* Writes @p value to @p f as json.dumps writes it (ensure_ascii, dict keys
 * that are int, float, bool or None turned into strings as json turns
 * them), byte for byte: @p indent PTK_JSON_COMPACT is separators=(",",
 * ":"), PTK_JSON_SPACED json.dumps's defaults, N >= 0 indent=N. Takes
 * dict, list, tuple, str, int, float, bool, None and their subclasses
 * (RecursionError where json raises it); imports nothing (json.c). Returns 0; -1 with a
 * Python error set (a value json refuses, too deep, out of memory); -2
 * when writing failed. The host's json_write. */
int ptk__json_write(FILE *f, PyObject *value, int indent);

/* The same into a string: a malloc'd NUL-terminated text, or NULL with a
 * Python error set. */
char *ptk__json_text(PyObject *value, int indent);

/* The opcodes the library reads bytecode for, as this CPython's public
 * opcode.h numbers them (the library is built for one minor version, whose
 * bytecode they are); -1 where this version has no such instruction. */
typedef struct ptk__opcodes {
    int cache, resume, return_generator, pop_top, make_cell, copy_free_vars, extended_arg,
        return_value, return_const, yield_value;
} ptk__opcodes;
extern const ptk__opcodes ptk__ops;

/* ---- options (options.c) -------------------------------------------- */

typedef struct ptk__options {
    ptk_option_value *values;
    size_t n;
    size_t nown;   /* values[0..nown) are the plugin's own options, the rest
                      the extra (hub) keys the plugin does not declare */
    ptk_option_spec *specs; /* what each value was parsed as */
    char *storage; /* one buffer holding every string value */
} ptk__options;

int ptk__options_parse(const ptk_plugin_desc *desc, const char *text,
                       ptk__options *out, char **errmsg);
/* Also accepts the keys of `extra` (NULL-name terminated) that the plugin
 * does not declare (desc may be NULL: only those). The messages name
 * `subject`, given by the caller ("plugin 'counter'": "option 'top' of
 * plugin 'counter' expects ..."); NULL is the session's own filter
 * ("filter option 'max_depth' expects ..."). ptk__filter_build takes the
 * same subject; PTK__LEAD(subject) is "plugin 'counter': " or "". */
int ptk__options_parse_ex(const ptk_plugin_desc *desc,
                          const ptk_option_spec *extra, const char *subject,
                          const char *text, ptk__options *out, char **errmsg);
#define PTK__LEAD(subject) (subject) ? (subject) : "", (subject) ? ": " : ""

/* ---- the filter handed to a followed child (filter.c) ------------------- */

/* The session's filter (its parsed defaults) as Python Session keywords,
 * {"include": [items], ..., "max_depth": N}: what a followed child gets.
 * A new dict, or NULL with an exception. */
PyObject *ptk__filter_keywords(const ptk__options *defaults);

/* ---- the event table (events.c) -------------------------------------- */

/* Mask of the kinds in a PTK_GROUP_* group / fed by a PTK_FEED_* backend. */
unsigned int ptk__group_mask(unsigned group_bit);
unsigned int ptk__fed_mask(unsigned feed_bit);

/* ---- filters (filter.c) ---------------------------------------------- */

/* One item of a condition: a glob (or a directory prefix, or a module
 * prefix), possibly negated with '!'. */
typedef struct ptk__pat {
    char *text;
    int neg;
    int prefix; /* a directory (include/exclude) or module prefix */
} ptk__pat;

typedef struct ptk__patlist {
    ptk__pat *v;
    int n, npos; /* items, and items that are not negated */
} ptk__patlist;

enum { PTK__F_INCLUDE, PTK__F_EXCLUDE, PTK__F_MODULES, PTK__F_FUNCTIONS,
       PTK__F_THREADS, PTK__F_NLISTS };

typedef struct ptk__filter {
    ptk__patlist list[PTK__F_NLISTS];
    int64_t max_depth;  /* 0: no limit */
    int code_level;     /* include, exclude, modules or functions given */
    char *text;         /* the filter as given, for messages and reports */
} ptk__filter;

/* The option keys the hub accepts for every plugin (NULL-terminated). */
extern const ptk_option_spec ptk__filter_specs[];
/* Builds a filter from the hub keys of parsed options (falling back to the
 * session's `defaults`, may be NULL), plus `extra` text from
 * host->subscribe_filter (may be NULL). *out is NULL when no condition is
 * given. Needs the GIL (named sets read sys.path). */
int ptk__filter_build(const char *subject, const ptk__options *own,
                      const ptk__options *defaults, const char *extra,
                      ptk__filter **out, char **errmsg);
void ptk__filter_free(ptk__filter *f);
/* Does f's code-level condition select this code object? Needs the GIL;
 * module is the `__name__` of the code's globals (may be NULL). */
int ptk__filter_code(const ptk__filter *f, PyCodeObject *code,
                     const char *module);
int ptk__filter_thread(const ptk__filter *f, const char *name);
void ptk__options_free(ptk__options *o);

/* ---- threads (thread.c) ---------------------------------------------- */

/* ptk_event::lasti_ of an event made as a ptk__event_at: the offset is
 * ptk__event_at::offset, decoded when asked for. */
#define PTK__LASTI_AT (-2)

/* An event whose instruction offset is an int object (sys.monitoring's
 * argument), decoded only if someone asks: most events are never asked. */
typedef struct ptk__event_at {
    ptk_event ev;     /* first: plugins get &ev */
    PyObject *offset; /* borrowed, for the event's lifetime */
} ptk__event_at;

/* An event as a backend starts it: the fields its kind does not set. */
static inline void
ptk__event_blank(ptk_event *ev, const ptk_thread *thread, int kind)
{
    ev->struct_size = sizeof *ev;
    ev->kind = (ptk_event_kind)kind;
    ev->origin = PTK_ORIGIN_UNKNOWN;
    ev->code = NULL;
    ev->arg = NULL;
    ev->thread = thread;
    ev->depth = -1;
    ev->line = -1;
    ev->time_ns = 0;
    ev->frame_ = NULL;
    ev->lasti_ = -1;
    ev->target = -1;
    ev->c_self = NULL;
}

typedef struct ptk__cframe {
    /* What identifies the C function: a bound builtin method is made anew
     * for each event on 3.12+, so (method def, self) and not the object. */
    const void *fn;     /* PyMethodDef* of a PyCFunction, else the callable */
    const void *self;   /* its m_self (compared by identity only) */
    int32_t depth;      /* Python depth when the C call started */
    PyObject *made;     /* monitoring: the bound method made for the C_CALL
                           event (strong), passed again with its C_RETURN */
} ptk__cframe;

/* A backend's private part of a record of the hub's: bytes the backend
 * lays its own struct over, `PTK__PRIVATE(area, type)` (checking the size
 * with _Static_assert), so that nothing of a backend is named here. */
#define ptk__private_area(size)                                              \
    union {                                                                  \
        max_align_t align_;                                                  \
        unsigned char bytes[size];                                           \
    }
#define PTK__PRIVATE(area, type) ((type *)(void *)(area).bytes)
/* Sizes of the private parts of a thread record: the running part
 * (ptk__thread_hot::be: room for three events and four pointers) and the
 * lasting part (ptk__thread::be). */
#define PTK__THREAD_HOT_PRIVATE (3 * sizeof(ptk_event) + 4 * sizeof(void *))
#define PTK__THREAD_PRIVATE 64

/* The parts of a thread record only a thread that runs needs (528 of its
 * 752 bytes): made with the record, freed when its thread ends
 * (ptk__thread_end), made again if the same OS thread calls Python again
 * (ptk__thread_get). A process that starts 20,000 short threads keeps
 * 20,000 records, each without these. */
typedef struct ptk__thread_hot {
    /* Filters: per subscriber slot, the number of frames its code
     * condition selects on this thread's stack (for max_depth). */
    int32_t fdepth[PTK__MAX_SLOTS];
    /* The running backend's part (ptk__backend_ops::thread_hot_init sets
     * it up), which the hub never reads: the backend lays its own struct
     * over it (PTK__PRIVATE). */
    ptk__private_area(PTK__THREAD_HOT_PRIVATE) be;
} ptk__thread_hot;

typedef struct ptk__thread {
    ptk_thread pub;            /* first: plugins see this */
    ptk__thread_hot *hot;      /* NULL once its thread has ended */
    ptk_stack_entry *stack;    /* pub.stack points here */
    int32_t stack_cap;
    ptk__cframe *cstack;       /* C calls in progress (balances C events) */
    int32_t cdepth, ccap;
    PyThreadState *tstate;
    PyObject *tstate_watch;    /* the watch in tstate's dict (thread.c): set
                                  while tstate is known valid */
    /* One event delivered through the hub object (a Python-level hook)
     * that the C hook installed meanwhile may deliver again. */
    PyFrameObject *skip_frame;
    int slow;                  /* skip_frame set, or the name not looked up yet */
    /* slow, or tstate_watch NULL: one test per event, not two, for a
     * backend that wants it. Whatever sets slow or clears the watch sets it
     * too (ptk__thread_mark_slow); only a backend clears it. */
    int check;
    char *name_storage;
    int name_tried;
    int name_retry; /* try again (at report time): threading was not known */
    int name_tries; /* lookups so far (the monitoring backend retries) */
    uint32_t ended; /* times its thread state was cleared (thread end) */
    /* Filters: per subscriber slot, whether its `threads=` condition has
     * judged this thread and rejected it (the depths: hot->fdepth). */
    uint64_t thr_judged, thr_rejected;
    /* The running backend's lasting part, which the hub never reads: zero
     * when the record is made, kept when its thread ends; a backend chosen
     * after another finds what that one left (PTK__PRIVATE). */
    ptk__private_area(PTK__THREAD_PRIVATE) be;
} ptk__thread;

/* The thread needs its slow path at its next event (both backends). */
static inline void
ptk__thread_mark_slow(ptk__thread *th)
{
    th->slow = 1;
    th->check = 1;
}

/* initial-exec: no __tls_get_addr call per event (8 bytes of static TLS,
 * which glibc reserves for libraries loaded with dlopen). */
extern _Thread_local ptk__thread *ptk__tls __attribute__((tls_model("initial-exec")));
ptk__thread *ptk__thread_get_slow(void);
static inline ptk__thread *
ptk__thread_get(void)
{
    ptk__thread *t = ptk__tls;
    return t != NULL && t->hot != NULL ? t : ptk__thread_get_slow();
}
size_t ptk__thread_count(void);
ptk__thread *ptk__thread_at(size_t index);
void ptk__thread_set_name(ptk__thread *t); /* needs the GIL, may call Python */
void ptk__thread_names_refresh(void);     /* retries the names still unknown */
int ptk__stack_grow(ptk__thread *t);
/* Puts a watch in the calling thread's state dict (and reads th->tstate):
 * when CPython clears that thread state, th->tstate is forgotten and
 * ptk__thread_end runs. Needs the GIL; not from the reference tracer. */
void ptk__thread_watch(ptk__thread *th);
/* The thread state of th was cleared: tells the plugins, frees the stacks. */
void ptk__thread_end(ptk__thread *th);
/* C calls in progress, so that each C_RETURN / C_EXCEPTION is delivered
 * only after its C_CALL (both backends). */
int ptk__cstack_push_slow(ptk__thread *th, const void *fn, const void *self);
/* What identifies the C function: a bound builtin method is made anew for
 * each event on 3.12+, so (method def, self) and not the object. */
static inline void
ptk__c_identity(PyObject *callable, const void **fn, const void **self)
{
    if (PyCFunction_Check(callable)) {
        *fn = ((PyCFunctionObject *)callable)->m_ml;
        *self = ((PyCFunctionObject *)callable)->m_self;
    }
    else {
        *fn = callable;
        *self = NULL;
    }
}
/* Pushes the C call (fn, self) as ptk__c_identity names it; -1 when out
 * of memory. Inline: once per C call. */
static inline int
ptk__cstack_push(ptk__thread *th, const void *fn, const void *self)
{
    if (th->cdepth == th->ccap) {
        return ptk__cstack_push_slow(th, fn, self);
    }
    ptk__cframe *f = &th->cstack[th->cdepth++];
    f->fn = fn;
    f->self = self;
    f->depth = th->pub.depth;
    f->made = NULL;
    return 0;
}
/* Index of the C call that a C_RETURN / C_EXCEPTION of callable closes, at
 * the current depth; -1 if none (it started before tracing). */
int ptk__cstack_match(ptk__thread *th, PyObject *callable);
/* Index of the C call (fn, self) at the current depth; -1 if none. */
int ptk__cstack_find_slow(ptk__thread *th, const void *fn, const void *self);
/* Inline: the call that ends is nearly always the innermost one. */
static inline int
ptk__cstack_find(ptk__thread *th, const void *fn, const void *self)
{
    int32_t top = th->cdepth - 1;
    if (top >= 0 && th->cstack[top].fn == fn && th->cstack[top].self == self &&
        th->cstack[top].depth == th->pub.depth) {
        return top;
    }
    return ptk__cstack_find_slow(th, fn, self);
}
/* Drops the C calls from index n up. */
static inline void
ptk__cstack_truncate(ptk__thread *th, int32_t n)
{
    while (th->cdepth > n) {
        PyObject *made = th->cstack[--th->cdepth].made;
        Py_XDECREF(made);
    }
}
/* Drops C calls started at depth >= depth (their frame has gone). */
static inline void
ptk__cstack_pop_stale(ptk__thread *th, int32_t depth)
{
    while (th->cdepth > 0 && th->cstack[th->cdepth - 1].depth >= depth) {
        ptk__cstack_truncate(th, th->cdepth - 1);
    }
}
static inline int
ptk__stack_push(ptk__thread *t, PyCodeObject *code, PyFrameObject *frame)
{
    if (t->pub.depth >= t->stack_cap && ptk__stack_grow(t) < 0) {
        return PTK_ENOMEM;
    }
    t->stack[t->pub.depth].code = code;
    t->stack[t->pub.depth].frame = frame;
    t->pub.depth++;
    return PTK_OK;
}

/* Is an exception set on this thread? A field read, no call. */
static inline int
ptk__exc_pending(PyThreadState *ts)
{
#if PTK_HAVE_TSTATE_CURRENT_EXCEPTION
    return ts->current_exception != NULL;
#else
    return ts->curexc_type != NULL;
#endif
}

/* The instruction offset of an event (bytes), -1 if it has none. */
static inline int
ptk__event_lasti(const ptk_event *ev)
{
    if (ev->lasti_ == PTK__LASTI_AT) {
        long v = PyLong_AsLong(((const ptk__event_at *)ev)->offset);
        return v >= 0 && v <= INT32_MAX ? (int)v : -1;
    }
    if (ev->lasti_ >= 0 || ev->frame_ == NULL) {
        return ev->lasti_;
    }
    return PyFrame_GetLasti(ev->frame_);
}

/* ---- dispatch (hub.c) ------------------------------------------------ */

typedef struct ptk__sub {
    /* NULL for an entry that only counts depth for a max_depth filter
     * (the instance does not subscribe to CALL / RETURN itself) */
    int (*on_event)(void *state, const ptk_event *ev);
    void *state;
    struct ptk_plugin_ctx *ctx;
    const ptk_thread *only_thread; /* NULL: every thread */
    uint32_t slot;
    uint32_t flags;
    const ptk__filter *filter;     /* NULL: everything */
    /* the filter has conditions beyond the code object's verdict (threads,
     * max_depth): ptk__filter_skip must see each event */
    int filter_call;
} ptk__sub;

typedef struct ptk__refsub {
    void (*on_ref)(void *state, PyObject *obj, ptk_event_kind kind);
    void *state;
    struct ptk_plugin_ctx *ctx;
} ptk__refsub;

/* Immutable once published; rebuilt on every attach/detach. The hub fills
 * it from the subscriptions; the fields marked (plan) are filled by the
 * running backend's plan (ptk__backend_ops::plan), which alone reads them. */
typedef struct ptk__table {
    unsigned int mask;        /* kinds with at least one subscriber */
    unsigned int clock_mask;  /* kinds where some subscriber wants the clock */
    int need_stack;           /* some subscriber wants the shadow stack */
    int need_profile;         /* (plan) legacy: the profile function must be
                                 installed */
    int need_trace;           /* (plan) legacy: the trace function must be
                                 installed */
    int all_threads;          /* some session observes every thread */
    int track_stack;          /* (plan) monitoring: keep the shadow stack (someone
                                 wants RETURN, C events or the stack) */
    int shadow;               /* (plan) monitoring: with track_stack, keep the
                                 shadow stack and the C-call stack too;
                                 0 when every subscriber is
                                 PTK_FLAG_OWN_STACK (none PTK_FLAG_STACK,
                                 no descriptor to bind): then depth is -1
                                 and C returns are not paired */
    int c_bind;               /* (plan) monitoring: some subscriber of a C event
                                 lacks PTK_FLAG_UNBOUND_C: method
                                 descriptors are delivered bound */
    int nsub[PTK_EV_COUNT];
    ptk__sub *subs[PTK_EV_COUNT];
    /* The subscriber of a kind when it is the only one and takes every
     * event of it (no filter, every thread): ptk__deliver_solo, no loop
     * (core/deliver.h). */
    ptk__sub *solo[PTK_EV_COUNT];
    /* (plan) solo[k] for CALL, RETURN and the C kinds when the monitoring
     * callbacks have nothing else to do: no stacks kept (!shadow) and no
     * code to judge dead. Their first test: a straight path to it. */
    ptk__sub *lean[PTK_EV_COUNT];
    /* (plan) LINE's subscriber when it is the only one, on every thread, with no
     * filter beyond the code object's verdict: the legacy trace function
     * hands it a LINE with no dispatch loop (its LINE lane: the verdict
     * tested, then ptk__deliver_solo). Under line coverage with branches,
     * LINE is nearly every event, and one plugin takes it. */
    ptk__sub *line_one;
    /* Filters (filter.c), by subscriber slot. */
    int filtered;             /* some subscriber has a filter: every event
                                 takes the general dispatch path */
    int depth_filtered;       /* some subscriber's filter counts frames
                                 (max_depth) */
    uint64_t slots;           /* slots of the subscribers of on_event kinds */
    uint64_t code_filtered;   /* slots whose filter judges code objects */
    int dead_possible;        /* every subscriber judges code: code that all
                                 of them reject can be switched off */
    int per_context;          /* some subscriber has PTK_FLAG_PER_CONTEXT: its
                                 DISABLEd locations come back at a context
                                 change, which the monitoring backend can
                                 only do where it set the events per code */
    const ptk__filter *filters[PTK__MAX_SLOTS];
    int nref;
    ptk__refsub *refs;
    struct ptk__table *retired_next;
} ptk__table;

/* Slots of t's code-filtered subscribers that reject code (judged once per
 * code object and cached in its record), its module read from globals, or
 * from the running frame's when NULL. *kept: 1 if the code object has a
 * record (whose end clears the verdict cache), else 0. */
uint64_t ptk__code_rejects_in(const ptk__table *t, PyCodeObject *code,
                              PyObject *globals, int *kept);
/* The running backend's word in code's record, which the hub never reads
 * (the monitoring backend: the generation of the per-code events it set on
 * code): 0 if it set none or code has no record; setting it makes the
 * record (-1 if it cannot). */
uint32_t ptk__code_backend_word(PyCodeObject *code);
int ptk__code_set_backend_word(PyCodeObject *code, uint32_t word);
/* Calls fn for every code object whose backend word is not 0, in no order;
 * fn may set the word. */
void ptk__code_each_backend_word(void (*fn)(PyCodeObject *code, void *arg),
                                 void *arg);
/* Verdicts of the current table's filters, direct-mapped by code object
 * address: every event of filtered subscribers asks, and the legacy hooks
 * ask at every call of excluded code, so the answer must cost a few
 * instructions. An entry is valid for one table (ptk__table_gen changes
 * with every table) and is cleared when its code object dies. */
typedef struct ptk__verdict {
    PyCodeObject *code;
    uint64_t gen;
    uint64_t rejected; /* slots of the table that reject the code */
} ptk__verdict;
#define PTK__VERDICTS 1024
extern ptk__verdict ptk__verdicts[PTK__VERDICTS];
extern uint64_t ptk__table_gen;
static inline ptk__verdict *
ptk__verdict_slot(PyCodeObject *code)
{
    return &ptk__verdicts[((uintptr_t)code >> 5) & (PTK__VERDICTS - 1)];
}

/* ptk__code_rejects_in through the cache (inlined: it is on every event
 * of a filtered table, and its hit is four loads and two compares). */
static inline __attribute__((always_inline)) uint64_t
ptk__code_rejected_in(const ptk__table *t, PyCodeObject *code, PyObject *globals)
{
    ptk__verdict *v = ptk__verdict_slot(code);
    if (v->code == code && v->gen == ptk__table_gen) {
        return v->rejected;
    }
    int kept = 0;
    uint64_t r = ptk__code_rejects_in(t, code, globals, &kept);
    if (kept) {
        v->code = code;
        v->gen = ptk__table_gen;
        v->rejected = r;
    }
    return r;
}

/* The same for code running now (its module from the running frame). */
static inline __attribute__((always_inline)) uint64_t
ptk__code_rejected(const ptk__table *t, PyCodeObject *code)
{
    return ptk__code_rejected_in(t, code, NULL);
}

/* ptk__code_dead for a code object whose verdicts (rejected, as
 * ptk__code_rejected gives them) the caller has looked up already. */
static inline int
ptk__rejected_by_all(const ptk__table *t, uint64_t rejected)
{
    return t->dead_possible && (rejected & t->slots) == t->slots;
}

/* Does no subscriber of t want anything of code, run with globals (NULL:
 * the running frame's)? Then every event location in it can be switched
 * off (monitoring) or skipped (legacy). */
static inline int
ptk__code_dead_in(const ptk__table *t, PyCodeObject *code, PyObject *globals)
{
    return t->dead_possible &&
           ptk__rejected_by_all(t, ptk__code_rejected_in(t, code, globals));
}

static inline int
ptk__code_dead(const ptk__table *t, PyCodeObject *code)
{
    return ptk__code_dead_in(t, code, NULL);
}

/* Should subscriber s skip ev (its filter)? Counts max_depth frames. */
int ptk__filter_skip(const ptk__sub *s, ptk__thread *th, const ptk_event *ev,
                     uint64_t rejected);
/* host->code_slot */
void **ptk__code_slot(PyCodeObject *code, uint32_t slot);

/* The published table; never NULL (an empty table when nobody runs). */
extern ptk__table *ptk__current;

/* Recompute from the active sessions and swap in; installs/removes hooks. */
int ptk__hub_rebuild(int install_here, char **errmsg);
/* Has s's instance failed (its events are no longer delivered)? */
int ptk__sub_failed(const ptk__sub *s);
/* Calls on_thread_end of every attached instance that has it (GIL held). */
void ptk__hub_thread_ended(const ptk_thread *thread);


/* An instance leaves the hub (stop, remove, failure): frees its slot and
 * its DISABLE records. */
void ptk__hub_forget(struct ptk_plugin_ctx *c);
/* Out of memory where events would come out unbalanced or missing (the
 * shadow stack, the C-call stack, a thread record, the dispatch table):
 * every subscriber fails with PTK_ENOMEM and is detached; the caller then
 * drops the event. */
void ptk__hub_out_of_memory(const char *what);
/* Detach after a failure (does the rebuild lazily, outside dispatch). */
void ptk__plugin_fail(struct ptk_plugin_ctx *ctx, int code, int py_error);
extern int ptk__disable_records; /* PTK_MASK of the kinds some subscriber
                                    returned DISABLE for (0: none yet) */
/* Grows with every DISABLE recorded and every event a subscriber did not
 * get because it had disabled the location: a delivery that leaves it
 * unchanged cannot have made its location disabled for every subscriber. */
extern uint64_t ptk__disable_marks;
/* lasti: the instruction offset, for kinds located by instruction. */
int ptk__code_is_disabled(PyCodeObject *code, uint32_t slot, ptk_event_kind kind,
                          int line, int lasti);
int ptk__code_disable(PyCodeObject *code, uint32_t slot, ptk_event_kind kind,
                      int line, int lasti);
/* Has every subscriber of ev's kind in t disabled ev's location? */
int ptk__code_all_disabled(const ptk__table *t, const ptk_event *ev);
/* For a LINE event: PTK__LINE_DELIVER, PTK__LINE_SKIP (every LINE
 * subscriber disabled this line) or PTK__LINE_OFF (... every line). */
enum { PTK__LINE_DELIVER = 0, PTK__LINE_SKIP = 1, PTK__LINE_OFF = 2 };
/* The head of code.c's record of a code object: what the answer needs. */
typedef struct ptk__coderec_head {
    int first, span;  /* line range seen in co_lines() */
    int lines_off;    /* every LINE subscriber disabled every line */
    uint8_t *all_off; /* bit per line: every LINE subscriber disabled it */
} ptk__coderec_head;
/* code.c's one-entry cache of records (the last code object asked for). */
extern PyCodeObject *ptk__last_code;
extern ptk__coderec_head *ptk__last_rec;
int ptk__code_line_state_slow(PyCodeObject *code, int line);
/* Does the line of the RESUME at @p offset (bytes), @p line, go on after
 * it: is the next instruction (after the RESUME's cache entries) on the
 * same line? So it is in a one-line function, a class body, a loop resumed
 * after a yield; not on the `def` line of a function of several lines. 1
 * or 0; -1 when that cannot be known. Keeps the program's exception. */
int ptk__code_resume_line_goes_on(PyCodeObject *code, int offset, int line);
static inline int
ptk__rec_line_state(const ptk__coderec_head *r, int line)
{
    if (r->lines_off) {
        return PTK__LINE_OFF;
    }
    int b = line - r->first;
    if (r->all_off && b >= 0 && b < r->span &&
        (r->all_off[b >> 3] & (1u << (b & 7)))) {
        return PTK__LINE_SKIP;
    }
    return PTK__LINE_DELIVER;
}
/* Inline: the legacy backend asks at every LINE under line coverage, and
 * nearly always of the code object it asked of last. */
static inline int
ptk__code_line_state(PyCodeObject *code, int line)
{
    if (code == ptk__last_code && code != NULL) {
        return ptk__rec_line_state(ptk__last_rec, line);
    }
    return ptk__code_line_state_slow(code, line);
}

void ptk__code_forget_slot(uint32_t slot);
/* The slots of attached instances with PTK_FLAG_PER_CONTEXT (set by each
 * table rebuild): a code object one of them disables something in goes on
 * the list ptk__code_rearm works through. */
extern uint64_t ptk__context_slots;
/* Forgets the DISABLE records of the slots in the mask in every code
 * object one of them disabled something in since the last call, and
 * calls rearm (if not NULL) on each of those code objects. Returns how
 * many code objects had some. */
size_t ptk__code_rearm(uint64_t slots, void (*rearm)(PyCodeObject *code));
/* The context changed (context.c): the per-context subscribers get the
 * locations they disabled back (hub.c). */
void ptk__hub_context_changed(void);
/* Execution contexts (exec_ctx.c): hooks greenlet's switches while what is
 * attached needs them (after each table rebuild), forgets everything after
 * Py_FinalizeEx; the switches seen so far. */
void ptk__exec_sync(void);
void ptk__exec_reset(void);
extern uint64_t ptk__exec_switches;
/* The asyncio Task running on the calling thread: its number (0: none)
 * and the Task, borrowed, in *task (ptk_host::running_task). */
uint64_t ptk__running_task(PyObject **task);
/* Code objects re-armed at context changes, and the changes that re-armed
 * something (for the cost figures, bench/README.md). */
extern uint64_t ptk__rearm_codes, ptk__rearm_switches;

/* The current context (context.c): its id (0: none) and name (NULL: none). */
extern uint64_t ptk__context_id;
extern char *ptk__context_name;
int ptk__context_set(const char *name);
const char *ptk__context_get(uint64_t *id);
void ptk__code_reset_lines_off(void);

/* ---- backends: the table the hub calls them through -------------------- */

/* Which backend the hub runs while sessions are active (PTK_BACKEND_AUTO:
 * none yet), and its table (NULL: none). Chosen by the first session that
 * starts (lib/session/backends.c). */
extern ptk_backend ptk__hub_backend;
extern const struct ptk__backend_ops *ptk__hub_ops;
/* Is some active session running? */
int ptk__any_running(void);
/* Seeds the calling thread's shadow stack with the frames already running
 * (outermost first); `with_frames`: keep the frame pointers too. */
void ptk__seed_stack(int with_frames);
/* Drops the entries of th's shadow stack whose frames no longer run on the
 * calling thread (th's): frames that ended while the hub's functions were
 * taken away, their RETURN unseen. Left in place, an entry would lend its
 * code object to a later frame made at the same address. */
void ptk__stack_prune(ptk__thread *th);

/* A backend: where events come from. One table per backend, in its own
 * file (lib/backends); the hub calls only these, through ptk__hub_ops, and
 * lib/session/backends.c lists them. Everything else of a backend is
 * static in its file. */
typedef struct ptk__backend_ops {
    ptk_backend id;
    const char *name; /* also the name users give it (ptk_backend_parse) */
    /* PTK_OK if this interpreter has it; else an error saying what is
     * missing (errmsg may be NULL). Claims nothing. */
    int (*available)(char **errmsg);
    /* Takes what the backend needs (a tool id, probes); PTK_OK or an error
     * (errmsg may be NULL). Called when the first session starts on it. */
    int (*claim)(char **errmsg);
    /* Lets go of it all; called when the last session stops. */
    void (*release)(void);
    /* Fills the table's fields that only this backend reads, from the rest
     * of the table, before it is published (NULL: none). */
    void (*plan)(ptk__table *t);
    /* Makes the installed hooks deliver exactly what the table needs. */
    int (*sync)(const ptk__table *t, int install_here, char **errmsg);
    /* Before a running session stops: lines for its report notes (NULL:
     * nothing to say). */
    void (*before_stop)(struct ptk_session *s);
    /* After Py_FinalizeEx: forgets what pointed into the interpreter. */
    void (*reset)(void);
    /* Sets up its part of a thread's running record (th->hot->be), whatever
     * that held: when th->hot is made, when the backend is chosen (for
     * every thread, ptk__threads_hot_init) and after Py_FinalizeEx. NULL:
     * it has none. */
    void (*thread_hot_init)(ptk__thread *th);
    /* The kinds it delivers (PTK_MASK bits, from the event table). */
    unsigned int (*events)(void);
    /* The context changed and the hub forgot the DISABLE records of its
     * per-context subscribers (PTK_FLAG_PER_CONTEXT) in code: the
     * locations of code that the backend switched off in CPython fire
     * again (NULL: it switches nothing off there; it asks the hub's
     * records at each event). GIL held; may call Python. */
    void (*rearm)(PyCodeObject *code);
    /* The execution context on the calling thread changed (a greenlet
     * switch, exec_ctx.c): what the backend turned off on the thread for
     * the frames of the context left is turned on again, since the frames
     * of the one entered resume with no frame start to see (legacy: the
     * trace function unparked and unsuspended; the next quiet frame
     * parks it again). NULL: nothing to do. GIL held. */
    void (*exec_switched)(ptk__thread *th);
} ptk__backend_ops;

/* The reference tracer's sync (lib/ref), called after every table swap;
 * set by the room above when a session first chooses a backend
 * (lib/session/backends.c), like ptk__hub_ops. NULL: not yet. */
extern int (*ptk__ref_sync_hook)(const ptk__table *t, char **errmsg);

/* ---- plugin instances and sessions, as the hub reads them (lib/session) -- */

struct ptk_plugin_ctx {
    struct ptk_session *session;
    const ptk_plugin_desc *desc; /* &desc_copy */
    const ptk_plugin_desc *desc_orig; /* as the plugin exported it */
    ptk_plugin_desc desc_copy;   /* zero-extended to the current size */
    void *dl;                 /* dlopen handle, NULL for static plugins */
    char *path;               /* file it was loaded from, or NULL */
    char *name;
    void *state;
    unsigned int events;      /* effective mask after init */
    unsigned int events_asked; /* the mask init asked for (optional kinds included) */
    unsigned int flags;       /* effective ptk_plugin_flags after init */
    ptk_subscription sub;     /* what init saw and may change (ABI 1.2) */
    ptk__filter *filter;      /* NULL: no filter */
    char *filter_extra;       /* conditions added by host->subscribe_filter */
    char *identity_json;      /* host->run_identity, made once */
    ptk__options opts;
    int initialised;
    int attached;             /* in the published table */
    int slot;                 /* subscriber slot, -1 when not attached */
    uint64_t serial;          /* increases with every slot given out */
    int failed;               /* detached after an error */
    int removed;              /* detached by ptk_session_remove_plugin */
    int fail_code;
    char *fail_msg;           /* recorded message (host->fail or Python exc) */
    int fail_asked;           /* host->fail's code since the hub last looked */
    char *service_name;       /* host->publish */
    const void *service;
    uint64_t id;              /* unique in the process (report file owners) */
    char *spec;               /* NAME[:OPTIONS] as given (children get it) */
    struct ptk_plugin_ctx *next;
};

struct ptk_session {
    char *output_dir;
    ptk__options filter_defaults; /* ptk_session_config::filter, parsed */
    ptk_thread_scope threads;
    ptk_backend backend;      /* in use once started, else as requested */
    ptk_backend requested;    /* resolved at creation: legacy or monitoring */
    int backend_explicit;     /* asked for by name (or PYTRACEKIT_BACKEND) */
    char *plugin_path;
    FILE *summary;
    struct ptk_plugin_ctx *plugins;
    int running;
    const ptk_thread *owner;
    uint64_t t_start, t_stop;
    struct ptk_session *next_active;
    uint64_t gen;             /* ptk__interp_gen when it was made */
    char *notes;              /* lines printed with the report */
    /* processes (process.c) */
    long pid;                 /* the process it reports in (0: not started) */
    long ppid;                /* its parent when the session started */
    int follow;               /* follows child processes */
    int flushed;              /* reported early (exec, _exit, a signal) */
    int in_report;            /* ptk_session_report is running */
    int free_pending;         /* ptk_session_free came meanwhile */
    struct ptk_session *next_unreported; /* started, not reported since */
    int unreported;           /* on that list */
    char *follow_root;        /* followed children report in pid-N/ here */
    PyObject *follow_run;     /* "PID:START" in PYTRACEKIT_FOLLOW it set */
    PyObject *follow_restore; /* the environment before it set it */
    FILE *summary_file;       /* a followed child's summary.txt (owned) */
    double started_wall, ended_wall; /* seconds since the epoch */
    char **written;           /* report files of this run (names) */
    size_t nwritten;
    int written_lost;         /* a name could not be kept (out of memory) */
    int children_failed;      /* followed processes whose plugins failed */
    char *attached_at;        /* ptk_session_mark_attached: ISO time, or NULL */
    long attached_by;         /* the attaching process's pid */
};

extern struct ptk_session *ptk__active_sessions;

/* After Py_FinalizeEx: forget everything that pointed into the interpreter
 * (no Python calls; C memory of the records is kept or freed). */
void ptk__hub_reset(void);
void ptk__code_reset(void);
void ptk__thread_reset(void);
/* The running backend (ptk__hub_ops) has just been chosen: it sets up its
 * part of every running thread record (thread_hot_init). */
void ptk__threads_hot_init(void);
/* Saves the Python exception (with traceback) as text; clears it. */
char *ptk__format_exception(void);
/* Records a failure of ctx (code, and the formatted message) for the hub
 * to act on at its next look, as host->fail does; returns code. */
int ptk__fail_note(struct ptk_plugin_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ptk__fail_notev(struct ptk_plugin_ctx *ctx, int code, const char *fmt,
                    va_list ap);

/* ---- allocation-failure injection (lib/fault.c) -------------------------- */

#include "ptk_fault.h" /* internal/, shared with the plugins */

#pragma GCC visibility pop

#endif /* PTK_CORE_H */
