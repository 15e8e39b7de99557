/*
 * timer: a deterministic profiler (the pstats data model).
 *
 * Private to the plugin. The hot path (timer.c) keeps, per thread, a stack of
 * running frames and a calling-context tree; every tree node points at the
 * per-thread figures of its function and of its caller->callee edge, so one
 * lookup (usually a one-entry cache hit) finds everything an event updates.
 * timer_report.c and the tm_*.c files beside it (tm_report.h) turn the
 * figures into timer.pstats, timer.json, timer.folded and the summary;
 * timer_table.c holds the arena.
 */
#ifndef PTK_TIMER_H
#define PTK_TIMER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first: it sets the feature macros */

#include "../common/grow.h"
#include "../common/pair_map.h"

#include <stddef.h>
#include <stdint.h>

#include <pytracekit/errors.h>
#include <pytracekit/plugin.h>

/* ---- timer_table.c: the arena; the pointer-pair map is the kit's ------- */

/** A bump allocator; everything it hands out lives until tm__arena_free. */
typedef struct tm_arena {
    struct tm_block *head;
    char *cur;
    size_t left;
} tm_arena;

void *tm__arena_alloc(tm_arena *a, size_t size); /* zeroed; NULL on ENOMEM */
void tm__arena_free(tm_arena *a);

/** The pointer-pair map of the plugin kit (plugins/common/pair_map.h). */
typedef ptk_kit_map tm_map;

/* ---- the figures -------------------------------------------------------- */

/** One profiled function, shared by every thread (one per key). */
typedef struct tm_func {
    const void *key;   /* Python: the record itself (one per code object, and
                          never freed before the instance: a new code object
                          at a dead one's address gets a new record); C: the
                          PyMethodDef, or the callable */
    const void *code;  /* Python: the code object (not a reference), NULL
                          once it is dead (tm_code_gone) */
    PyObject *filename, *name, *qualname; /* Python: its names (strong) */
    int line;          /* Python: co_firstlineno */
    PyObject *wr;      /* Python: a weak reference to the code object whose
                          callback says it died, or NULL */
    PyObject *pin;     /* Python: a strong reference, only when no weak one
                          could be made */
    PyObject *label;   /* C functions: cProfile's name for it (str) */
    PyObject *ref;     /* strong reference to a C callable keyed by itself */
    uint32_t id;       /* dense, in order of first sight */
    int is_c;
    int coro;          /* await=true: a coroutine function, whose inclusive
                          time runs from its start to its end, suspensions
                          included (its calls always take the slow path) */
} tm_func;

/** Entries of tm_state::fcache: 1 << TM_FCACHE_BITS. */
#define TM_FCACHE_BITS 10
#define TM_FCACHE (1 << TM_FCACHE_BITS)

/** code object -> its tm_func, direct-mapped: the call path's lookup. An
 *  entry goes when its code object dies (tm_code_gone), so a code object
 *  at the same address later never finds it. */
typedef struct tm_fcache {
    const void *code;
    struct tm_func *fn;
} tm_fcache;

/** The four pstats figures, and the recursion level that decides them. */
typedef struct tm_fig {
    uint64_t calls;    /* every call */
    uint64_t reccalls; /* calls made while the same function (edge) ran */
    uint64_t tt;       /* inclusive ns, outermost activations only */
    uint64_t it;       /* own ns */
    int64_t level;     /* activations running now */
    uint64_t await_tt; /* await=true, coroutines: inclusive ns from start to
                          end of the outermost activations (replaces tt at
                          the end) */
} tm_fig;

/** Per-thread figures of one function. */
typedef struct tm_stat {
    tm_func *fn;
    tm_fig fig;
} tm_stat;

/** Per-thread figures of one caller->callee edge. */
typedef struct tm_edge {
    tm_stat *caller;
    tm_stat *callee;
    tm_fig fig;
} tm_edge;

/** A calling-context tree node: one distinct stack. */
typedef struct tm_node {
    struct tm_node *parent;
    const void *key;            /* its function's tm_func::key */
    const void *match;          /* what its return event carries: the code
                                   object (while a frame of it runs, it is
                                   alive), or the C key */
    tm_stat *stat;              /* NULL for the root */
    tm_edge *edge;              /* NULL for the root; tm_thread::root_edge
                                   for its children */
    const void *scope;   /* what its children are found by: the node
                            itself, or its stat when merged (its children
                            are then the same under any node of the stat) */
    const void *pscope;  /* the parent's scope */
    struct tm_node *last_child; /* lookup cache: the first call made here */
    struct tm_node *after;      /* lookup cache: the sibling called after
                                   this one returned, last time (valid
                                   under any parent of scope pscope) */
    struct tm_node *first_child;  /* tree nodes only */
    struct tm_node *next_sibling;
    uint64_t self_ns;
    int merged;   /* not a context: one node per caller->callee edge, made
                     when contexts are off or over max_contexts; not linked
                     into the tree (its callees are merged nodes too) */
} tm_node;

/** Entries of tm_thread::seen: 1 << TM_SEEN_BITS. */
#define TM_SEEN_BITS 10
#define TM_SEEN (1 << TM_SEEN_BITS)

/** per_context=true: the figures of one context (all contexts of one
 *  name, ptk_context_set()), by function, not by thread. */
typedef struct tm_cset {
    PyObject *name;  /* str; "" for the time outside any context */
    tm_map figs;     /* (fn, NULL) -> tm_fig of a function; (caller fn,
                        callee fn) -> tm_fig of an edge (tm_func pointers) */
    tm_arena arena;  /* the tm_fig records */
    tm_fig sink;     /* the edge of a call whose caller started outside this
                        context (or of a call from no frame): not reported,
                        as cProfile enabled in the middle of a stack knows
                        no caller */
    size_t nfigs;
} tm_cset;

/** A frame running now. */
typedef struct tm_frame {
    tm_node *node;
    uint64_t t0;
    uint64_t subt; /* inclusive time of the callees so far */
    const tm_cset *cs; /* per_context: the context it started in */
    tm_fig *cstat, *cedge; /* per_context: its figures there; NULL
                              without per_context */
} tm_frame;

/** Per-thread state (one per live thread, plus the figures of the threads
 *  that ended, merged into tm_state::gone). */
typedef struct tm_thread {
    uint32_t index;
    uint64_t ident;
    char *name;
    tm_frame *stack;
    size_t sp, cap;
    struct tm_node *top; /* the node of stack[sp - 1], or &root when sp is 0:
                            what every event reads first, in one load */
    size_t max_depth;  /* of the calling-context tree, set by the report */
    uint64_t last_ns;  /* clock of the latest return on this thread (a
                          later call is the top frame's t0: tm_last_ns) */
    tm_node *last_left; /* the node whose frame returned last */
    tm_node root;
    tm_node *seen[TM_SEEN]; /* the second guess: nodes by (pscope, key),
                               direct-mapped (tm_seen_slot) */
    tm_edge root_edge; /* the edge of the root's children: not reported */
    tm_map stats;      /* (key, NULL) -> tm_stat */
    tm_map edges;      /* (caller stat, callee stat) -> tm_edge */
    tm_map nodes;      /* (parent node, key) -> tm_node */
    size_t nstats;
    size_t ncontexts;  /* tree nodes (not merged ones) */
    tm_arena arena;    /* stats, edges and nodes of this thread */
    uint64_t unmatched;  /* RETURN / C_RETURN with no frame of ours */
    uint64_t resynced;   /* frames closed because an outer frame returned */
    uint64_t exec_id;    /* the execution context whose frames `stack` holds
                            (ptk_thread::exec_id) */
    tm_map saved;        /* (exec_id + 1, NULL) -> tm_saved: the stacks of
                            the contexts switched away from */
    uint64_t switches;   /* context switches seen on this thread */
    tm_map awaits;       /* await=true: (coroutine object, NULL) -> tm_await */
} tm_thread;

/** await=true: an asyncio Task, by the steps of its coroutine. */
typedef struct tm_task {
    char *name;        /* Task.get_name() */
    const struct tm_func *coro; /* the coroutine its steps resume */
    uint64_t first_ns, last_ns, running_ns, steps;
} tm_task;

/** await=true: one coroutine object, from its start to its end. */
typedef struct tm_await {
    uint64_t t_first, t_last; /* its start; the end of its latest slice */
    uint64_t slice_t0;        /* the start of its current slice */
    tm_stat *stat;
    tm_edge *edge;
    tm_task *task;     /* the Task whose step resumed it, when it is the
                          step's coroutine */
    int live;          /* started and not ended (the address is reused) */
    int counted_stat;  /* its function / edge ran nowhere below it when it
                          started: its time is counted (outermost) */
    int counted_edge;
} tm_await;

/** The frames of an execution context while another runs on its thread:
 *  suspended (their levels given back, their clocks stopped at `at`). */
typedef struct tm_saved {
    tm_frame *stack;
    size_t sp, cap;
    uint64_t at;       /* when it was switched away from */
} tm_saved;

/** What the report says of a thread that ended (its figures are merged). */
typedef struct tm_done {
    uint64_t ident;
    char *name;
    size_t max_depth;
    uint64_t unmatched, resynced;
    uint64_t own_ns;   /* its total own time */
    int ended;         /* 1 once set */
} tm_done;

/** What each sort= choice means, in the declared order. */
enum { TM_SORT_TOTTIME = 0, TM_SORT_CUMTIME = 1, TM_SORT_CALLS = 2 };

/** The plugin instance. */
/** How many more contexts than max_contexts are recorded (and at least
 *  TM_RECORD_MIN): the files keep the max_contexts heaviest of them, chosen
 *  when they are written; calls in newer contexts are merged by caller. */
#define TM_RECORD_FACTOR 20
#define TM_RECORD_MIN 1000000

/** The contexts recorded before newer ones are merged by caller. */
static inline size_t
tm_record_limit(int64_t max_contexts)
{
    if ((uint64_t)max_contexts > SIZE_MAX / TM_RECORD_FACTOR) {
        return SIZE_MAX;
    }
    size_t n = (size_t)max_contexts * TM_RECORD_FACTOR;
    return n > TM_RECORD_MIN ? n : TM_RECORD_MIN;
}

typedef struct tm_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    int cpu_clock;
    int builtins;
    int per_thread;
    int sort;
    int64_t top;
    int64_t folded_depth; /* 0: unlimited */
    int contexts;         /* keep calling contexts */
    int speedscope;       /* write timer.speedscope.json */
    int folded;           /* write timer.folded */
    int64_t max_contexts; /* contexts in the flame graph files; 0: unlimited */
    size_t ncontexts;     /* context nodes of every tm_thread, gone included */
    size_t flame_kept;    /* written contexts of the all-threads files */
    size_t flame_merged;  /* contexts of theirs merged as too light */
    uint64_t flame_merged_ns; /* the own time of those */
    tm_arena arena;       /* tm_func records */
    tm_map funcs;       /* C functions: (key, NULL) -> tm_func */
    tm_map codes;       /* (code object, NULL) -> its latest tm_func (check
                           tm_func::code: the old one's when the address
                           was reused) */
    tm_map wrs;         /* (weak reference, NULL) -> tm_func */
    PyObject *gone_cb;  /* the weak references' callback (tm_code_gone) */
    void **gone_box;    /* what the callback's capsule holds: this state,
                           NULL once fini ran (a weak reference that outlives
                           the instance, when fini runs after the interpreter
                           began to finalize, then calls back into nothing);
                           freed with the capsule */
    PyObject **dead;    /* weak references whose code object died: released
                           at the next first sight (not in their callback) */
    size_t ndead, capdead;
    tm_fcache fcache[TM_FCACHE];
    tm_func **func_list;
    size_t nfuncs, funcs_cap;
    tm_thread **threads; /* by ptk_thread::index; NULL once ended */
    const ptk_thread *hot_thread; /* the thread of the latest event, when
                                     the fast path may take it (wall clock) */
    tm_thread *hot;      /* its figures */
    size_t nthreads;
    tm_done *done;       /* by ptk_thread::index, [nthreads] */
    tm_thread gone;      /* the figures of the threads that ended */
    size_t ngone;        /* threads merged into gone */
    int flushed;
    int await_mode;       /* await=true */
    int op_yield, op_resume; /* YIELD_VALUE and RESUME: is a RETURN a yield */
    tm_map tasks;         /* (the hub's Task number, NULL) -> tm_task */
    tm_task **task_list;
    size_t ntasks, tasks_cap;
    int per_context;     /* also keep figures per context (tm_cset) */
    tm_cset **csets;     /* in the order first seen */
    size_t ncsets, capcsets;
    PyObject *cset_index; /* name -> index in csets */
    tm_cset *cur_cs;      /* the context at cs_id */
    uint64_t cs_id;
    int cs_seen;
} tm_state;

/* ---- timer.c / timer_report.c ------------------------------------------ */

uint64_t tm__cpu_now(void);
int tm__flush(tm_state *st);
int tm__report(tm_state *st, const ptk_report_args *args);
size_t tm__tree_depth(const tm_thread *th);

#endif /* PTK_TIMER_H */
