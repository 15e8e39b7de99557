/*
 * lines: line-level timing of the code the filter selects (docs/lines.md).
 * What lines.c (events) and lines_report.c (reports) share.
 */
#ifndef PTK_PLUGIN_LINES_H
#define PTK_PLUGIN_LINES_H

#define PY_SSIZE_T_CLEAN
#include <pytracekit/plugin.h>

#include <stdint.h>
#include <stdio.h>

#include "../common/grow.h"

/* One line of one code object: LINE events and the time until the frame's
 * next LINE or RETURN. */
typedef struct ln_line {
    uint64_t hits;
    uint64_t time_ns;
} ln_line;

/* One code object the plugin has seen an event of. Lines are kept from
 * `base` (co_firstlineno, lowered if a line before it ever runs). */
typedef struct ln_func {
    PyObject *file;     /* co_filename (str, strong) */
    PyObject *qualname; /* co_qualname (str, strong) */
    int32_t first;      /* co_firstlineno */
    int32_t base;       /* line of lines[0] */
    size_t nlines;      /* lines[0 .. nlines) */
    ln_line *lines;
    uint64_t calls;       /* frames started (CALL events that are no resume) */
    uint32_t thread;      /* per_thread=true: the thread's index, else 0 */
    uint32_t context;     /* per_context=true: the context's index in
                             ln_state::ctx_names, else 0 */
    struct ln_func *next; /* the same code on other threads or in other
                             contexts (per_thread, per_context) */
} ln_func;

/* A running frame of selected code: the line it runs since when. */
typedef struct ln_frame {
    PyCodeObject *code; /* identity only (borrowed), NULL: no frame here */
    ln_func *fn;
    int32_t line;      /* the line being timed, 0: none yet */
    uint32_t paused;   /* calls in progress (calls=false) */
    uint64_t since;    /* when the line (or its unpaused part) started */
    uint64_t pause_at; /* when the outermost call in progress started */
} ln_frame;

/* One thread's frames, by the hub's depth. */
typedef struct ln_thread {
    ln_frame *frames;
    size_t cap;
} ln_thread;

/* Plugin state. */
typedef struct ln_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    int calls;       /* time of calls made by a line counted in it */
    int html;        /* write lines.html */
    int per_thread;  /* keep each thread's figures apart too (lines.json's threads) */
    int per_context; /* keep each context's figures apart too (lines.json's contexts) */
    int64_t top;     /* lines in the summary */
    ln_func **funcs; /* every code object seen, in order of first sight */
    size_t nfuncs, capfuncs;
    ln_thread *threads; /* by ptk_thread::index */
    size_t nthreads;
    uint64_t line_events;
    /* per_context: the context names in order of first sight (a list of
     * str; contexts of one name are one), their indexes by name (a dict),
     * (made at the first context), the current one's index and the host's
     * id of the context it was found for */
    PyObject *ctx_names;
    PyObject *ctx_index;
    uint32_t cur_ctx;
    int ctx_fresh; /* the current context is new: its records are all at
                      the front of their code's chain */
    int ctx_seen;
    uint64_t ctx_id;
} ln_state;

/* Writes lines.json, lines.txt (and lines.html), prints the summary. */
int ln__report(ln_state *st, const ptk_report_args *args);

#endif
