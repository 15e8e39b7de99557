/*
 * timeline: every call as a span on a per-thread (and per-asyncio-task)
 * track, streamed to a Perfetto protobuf trace or a Chrome trace-event JSON
 * array while the program runs, through a bounded pair of buffers.
 *
 * Private to the plugin. timeline.c is the hot path (per-thread frame
 * stacks, lazy span emission for min_duration, tasks, counters) and the
 * lifecycle; tl_out.c the bounded buffers and the writer thread; tl_json.c
 * and tl_pb.c the two encoders behind one table (tl_format); tl_names.c the
 * name table (one record per function, shared by both encoders).
 */
#ifndef PTK_TIMELINE_H
#define PTK_TIMELINE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first: it sets the feature macros */

#include "../common/grow.h"
#include "../common/pair_map.h"

#include <pthread.h>
#include <sys/types.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <pytracekit/errors.h>
#include <pytracekit/plugin.h>
#include <pytracekit/services.h>

/* ---- tl_out.c: two buffers, one writer thread --------------------------- */

/*
 * The hot path appends to the current buffer. A full buffer is handed to the
 * writer thread and the other one becomes current — unless the writer is
 * still busy with it (the disk is slower than the program): then nothing is
 * written and the caller drops the event and counts it. The program is never
 * blocked, except by tl__out_close at the end.
 */
typedef struct tl_out {
    int fd;
    int sync;            /* no writer thread: a full buffer is written at
                            once by the caller (the ring's dumps) */
    char *buf[2];
    size_t cap;          /* bytes per buffer */
    size_t len;          /* bytes in the current buffer */
    int cur;             /* index of the current buffer */
    atomic_int busy;     /* 1 while the writer owns the other buffer */
    size_t pending_len;  /* length of the buffer handed over */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int started;
    pid_t owner;         /* the process whose writer thread this is */
    int werrno;          /* first write error (the writer's), or 0 */
    uint64_t written;    /* bytes on disk */
    uint64_t handoffs;   /* buffers handed to the writer */
    uint64_t last_handoff_ns;
} tl_out;

/* Starts writing to @p fd (taken over) or, if it is negative, to @p path
 * (O_NOFOLLOW: a symlink there is not followed). */
int tl__out_open(tl_out *o, const char *path, int fd, size_t cap, char *err,
                 size_t errlen);
/* Room for @p n bytes in the current buffer (after a hand-over if it is
 * full), or NULL: the writer is busy (drop), or n > cap. */
char *tl__out_reserve_slow(tl_out *o, size_t n, uint64_t now);
static inline char *
tl__out_reserve(tl_out *o, size_t n, uint64_t now)
{
    if (o->len + n <= o->cap) {
        return o->buf[o->cur] + o->len;
    }
    return tl__out_reserve_slow(o, n, now);
}
/* Keeps @p n bytes of what tl__out_reserve gave (n <= what was asked). */
static inline void
tl__out_commit(tl_out *o, size_t n)
{
    o->len += n;
}
/* Hands the current buffer over if it is not empty and the writer is idle. */
void tl__out_kick(tl_out *o, uint64_t now);
/* Writes everything (waits for the writer), stops it, closes the file.
 * Returns 0 or an errno. */
int tl__out_close(tl_out *o);
/* With `sync`: writes the current buffer to the file now. 0 or an errno. */
int tl__out_sync_flush(tl_out *o);

/* ---- tl_names.c: functions ---------------------------------------------- */

enum { TL_NAME_PY = 0, TL_NAME_C = 1, TL_NAME_OTHER = 2 };

/** One span or instant name: a Python function, a C function, or a label. */
typedef struct tl_name {
    const void *key;   /* code object, PyMethodDef, type, or a label's id */
    PyObject *ref;     /* strong reference keeping key alive, or NULL */
    char *text;        /* UTF-8, pstats style: file:line(func), or the label */
    char *json;        /* `text` JSON-escaped, with quotes */
    const struct tl_file *file; /* Python functions: their file */
    int32_t line;      /* co_firstlineno, or 0 */
    int kind;          /* TL_NAME_* */
    int coro;          /* a coroutine, iterable coroutine or async generator */
    uint64_t iid;      /* Perfetto interning id once emitted, else 0 */
    /* Perfetto: the TrackEvent fields after type and track (name_iid and
     * the annotations) of a BEGIN, once everything in them is interned */
    uint8_t pb_tail[40];
    uint8_t pb_tail_len;
    uint8_t ring_trig; /* ring=: 0 not looked at yet, 1 no, 2 a trigger=
                          function (tl_ring.c) */
} tl_name;

/** A source file, interned once (Perfetto debug annotation value). */
typedef struct tl_file {
    char *text;
    char *json;
    uint64_t iid;
} tl_file;

/** The pointer-pair map of the plugin kit (plugins/common/pair_map.h):
 *  keys (pointer, tag), the tag cast to a pointer. */
typedef ptk_kit_map tl_map;


/* ---- tracks, frames, threads, tasks ------------------------------------- */

enum { TL_TRACK_THREAD = 0, TL_TRACK_TASK = 1, TL_TRACK_COUNTER = 2,
       TL_TRACK_PROCESS = 3 };

/* At most this many "live objects: TYPE" counter tracks. */
#define TL_OBJ_TRACKS 32

typedef struct tl_track {
    uint64_t uuid;     /* Perfetto track uuid */
    int64_t tid;       /* JSON tid (native thread id, or a task's pseudo id) */
    int kind;
    char *name;
    int described;     /* descriptor / metadata written */
    int named;         /* `name` is the real name, not a placeholder */
    uint64_t last_ts;  /* latest timestamp written on this track */
    uint8_t pb_uuid[12]; /* Perfetto: TrackEvent.track_uuid, encoded */
    uint8_t pb_uuid_len;
    /* ENDs that could not be written while dropping, oldest first */
    uint64_t *owed;
    size_t nowed, owed_cap;
    struct tl_ring_track *ring; /* ring=: its spans begun, not ended */
} tl_track;

/** One running frame (or a task step, or a GC pause). */
typedef struct tl_frame {
    const void *key;   /* what RETURN matches: code object or C key */
    tl_name *name;
    tl_track *track;   /* where its span goes */
    uint64_t t0;
    uint8_t emitted;   /* its BEGIN is in the output */
    uint8_t skip;      /* never emitted */
    uint8_t coro;      /* a coroutine frame */
    uint8_t step;      /* a task-step span on the thread track */
    struct tl_task *task; /* for a task's root coroutine: the task */
} tl_frame;

typedef struct tl_task {
    tl_track track;
    tl_name label;     /* the step span's name on the thread track */
    uint64_t id;
    uint64_t first_ns, last_ns, running_ns;
    uint64_t steps;
    int done;
    int greenlet;      /* a greenlet's track (ptk_thread::exec_id), not a Task's:
                          steps are the times it was switched to */
    uint64_t in_ns;    /* greenlet: when it was last switched to */
} tl_task;

/* The frames kept of the slowest call of a blocking step. */
#define TL_BLOCK_STACK 24

/* The frames of an execution context (a greenlet) while another runs on
 * its thread. */
typedef struct tl_gsaved {
    uint64_t id;
    struct tl_frame *stack;
    size_t sp, cap;
    int gap;
    tl_task *g;        /* its track, NULL for the thread's own */
} tl_gsaved;

typedef struct tl_thread {
    uint32_t index;
    const ptk_thread *pt; /* the hub's record (its name may come later) */
    tl_track track;
    tl_frame *stack;
    size_t sp, cap;
    uint64_t last_ns;
    uint64_t unmatched;
    int gap;           /* a BEGIN was dropped: write ancestors first */
    uint64_t exec_id;  /* the execution context `stack` is of */
    tl_task *g;        /* its greenlet track, NULL for the thread's own */
    tl_gsaved *saved;  /* the other contexts' frames */
    size_t nsaved, capsaved;
    /* blocking=: the Task step running (index + 1 of its coroutine's frame
     * in `stack`, 0 if none) and the slowest call in it so far, with the
     * frames from the step's coroutine down to it */
    size_t step_at1;
    uint64_t worst_ns;
    struct tl_name *worst[TL_BLOCK_STACK];
    int nworst;
} tl_thread;

/* blocking=: one Task step that held its loop at least that long. */
typedef struct tl_block {
    char *task;        /* the Task's name */
    uint64_t t0, ns;   /* when the step began, how long it ran */
    uint64_t worst_ns; /* its slowest call, and that call's stack from the
                          step's coroutine down */
    struct tl_name *worst[TL_BLOCK_STACK];
    int nworst;
} tl_block;

/* ---- the encoders ------------------------------------------------------- */

struct tl_state;

typedef struct tl_format {
    const char *filename;
    /* Each returns 0, or -1 when the event could not be written (dropped). */
    int (*start)(struct tl_state *st, uint64_t now);
    int (*begin)(struct tl_state *st, tl_track *t, tl_name *n, uint64_t ts);
    int (*end)(struct tl_state *st, tl_track *t, uint64_t ts);
    int (*instant)(struct tl_state *st, tl_track *t, tl_name *n, uint64_t ts,
                   int global);
    int (*counter)(struct tl_state *st, tl_track *t, double v, uint64_t ts);
    int (*finish)(struct tl_state *st); /* the closing bytes, if any */
    /* The track's name again, after a placeholder (a thread named late). */
    int (*rename)(struct tl_state *st, tl_track *t, uint64_t now);
} tl_format;

extern const tl_format tl__json_format;
extern const tl_format tl__pb_format;

/* ---- the instance ------------------------------------------------------- */

typedef struct tl_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    const tl_format *fmt;
    tl_out out;
    char *path;
    long pid;
    uint64_t t_origin;      /* JSON timestamps count from here */
    int64_t min_duration_ns;
    int64_t flush_ns;
    int builtins, exceptions, tasks, gc, counters;
    tl_map names;           /* (key, kind) -> tl_name */
    const void *last_key;   /* the function named last (loops, recursion) */
    tl_name *last_name;
    tl_map files;           /* (filename object, 0) -> tl_file */
    tl_name **name_list;
    size_t nnames, names_cap;
    tl_file **file_list;
    size_t nfiles, files_cap;
    tl_thread **threads;    /* by ptk_thread::index */
    size_t nthreads;
    tl_map task_map;        /* (the hub's Task number, 0) -> tl_task, and greenlets */
    tl_task **task_list;
    size_t ntasks, tasks_cap;
    tl_track process_track;
    tl_track events_track;  /* events/s counter */
    tl_track gc_track;      /* GC pause counter (ms per second) */
    tl_track drop_track;    /* dropped events, cumulative */
    tl_track block_track;   /* blocking=: the steps that held the loop (ms) */
    int64_t blocking_ns;    /* blocking=: the threshold, 0: off */
    tl_block *blocks;       /* the steps at or over it */
    size_t nblocks, capblocks;
    int objects;            /* live-object tracks to show (reftrack's) */
    tl_track obj_track[TL_OBJ_TRACKS]; /* "live objects: TYPE" */
    size_t nobj;
    uint64_t next_tick;     /* the next counter sample or time-based flush */
    uint64_t next_counter, last_counter, tick_events, tick_gc_ns;
    /* GC */
    PyObject *gc_cb;        /* our callable in gc.callbacks, or NULL */
    uint64_t gc_t0;
    uint64_t gc_pending[8][2]; /* GCs inside our on_event: (start, stop) */
    int gc_npending;
    int in_event;
    uint64_t gc_count, gc_total_ns;
    tl_name gc_name;
    /* dropping */
    int dropping;
    uint64_t dropped, dropped_total, drop_episodes;
    /* figures */
    uint64_t events, spans, instants;
    uint64_t pb_next_iid, pb_next_file_iid;
    size_t buffer_size;
    int started;            /* tl_start ran (at the first event) */
    int finished;
    uint64_t after_finish;  /* events after the trace was finished */
    /* contexts (tl_ctx.c) */
    int ctx_host;           /* the host has ptk_host::context */
    int ctx_open;           /* a context's span is open */
    uint64_t ctx_id;        /* the context of the latest event (0: none) */
    tl_track ctx_track;     /* "contexts", made at the first context */
    tl_name **ctx_names;    /* each span's name */
    size_t nctx_names, ctx_names_cap;
    /* ring= (tl_ring.c): spans go to the ring (fmt is its recorder) and
     * the output format writes only the ring's dumps */
    struct tl_ring *ring;
    const tl_format *out_fmt; /* the format of the files (== fmt without ring) */
} tl_state;

/* tl_names.c */
tl_name *tl__name_code(tl_state *st, PyCodeObject *code);
tl_name *tl__name_c(tl_state *st, PyObject *callable, PyObject *cself,
                    const void *key);
tl_name *tl__name_exc(tl_state *st, PyObject *type);
int tl__name_label(tl_name *n, const char *text);
void tl__names_free(tl_state *st);

/* tl_json.c / tl_pb.c: room for @p n bytes of output, or NULL (drop) */
static inline char *
tl__reserve(tl_state *st, size_t n, uint64_t now)
{
    return tl__out_reserve(&st->out, n, now);
}

#endif /* PTK_TIMELINE_H */
