/*
 * coverage: the plugin's types, and what its files share (private to
 * plugins/coverage):
 *
 *   coverage.c     the small tables and the events (the per-line path)
 *   cov_code.c     first sight of a code object (may call Python)
 *   cov_life.c     init and fini
 *   cov_report.c   the report
 *
 * Executed lines come from LINE events; the lines that could run come from
 * the code objects themselves (co_lines(), walking nested code objects
 * through co_consts from the module's code object), so a function that never
 * ran still counts as missed. A code object is analysed when it is first
 * seen and the result recorded (cov_rec): the report replays the records,
 * and no code object is kept alive. See docs/coverage.md.
 */
#ifndef PTK_COVERAGE_PRIVATE_H
#define PTK_COVERAGE_PRIVATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <marshal.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../common/fs_name.h"
#include "../common/grow.h"
#include "../common/pair_map.h"
#include "pytracekit/errors.h"
#include "pytracekit/plugin.h"

#include "analyze.h"
#include "match.h"

#define COV_VERSION "0.1"

/* ---- data ----------------------------------------------------------- */

typedef struct cov_func {
    char *qualname;
    int32_t line;
    uint64_t calls;
    int32_t *own; /* the code object's own lines (for calls=false) */
    int32_t nown;
} cov_func;

typedef struct cov_arc {
    uint64_t key; /* (from << 32) | to, as uint32 each */
    uint64_t count;
} cov_arc;

typedef struct cov_branch {
    int32_t line;
    int32_t ndest;
    int32_t *dest; /* ndest destinations and a 0 */
    size_t capdest;
} cov_branch;

/* contexts=: the lines a file ran in one context (a bit per line). */
typedef struct cov_fctx {
    int32_t ctx;    /* index in cov_state::ctx_names */
    int32_t nbytes; /* of bits */
    uint8_t *bits;
} cov_fctx;

/* contexts= with branch=: one arc taken in one context (a set of them per
 * file, open addressing; ctx -1 is an empty slot). */
typedef struct cov_carc {
    uint64_t key; /* as cov_arc's */
    int32_t ctx;  /* index in cov_state::ctx_names, or -1 */
} cov_carc;

typedef struct cov_file {
    char *path;        /* absolute */
    int32_t maxline;   /* possible[] and hits[] have maxline + 1 entries */
    uint8_t *possible; /* 1: the line could run */
    uint64_t *hits;    /* times the line ran (1 at most without branch=) */
    cov_func *funcs;
    size_t nfuncs, capfuncs;
    cov_arc *arcs; /* in the order first seen */
    size_t narcs, caparcs;
    uint32_t *arcidx; /* open addressing on the key: 1 + index in arcs,
                         0 = empty; capacity a power of two */
    size_t capidx;
    cov_branch *branches;
    size_t nbranches, capbranches;
    cov_fctx *fctx; /* contexts=: per context it ran in, in the order seen
                       (a context seen again later has a second entry) */
    size_t nfctx, capfctx;
    cov_carc *carcs;         /* contexts= and branch=: the arcs of each context */
    size_t ncarcs, capcarcs; /* capcarcs a power of two, at most half full */
    int seen;                /* some of its code ran (else: found under source=) */
    int analysed;            /* analysed from its module's code or its source */
    int unparsed;            /* its source does not compile */
} cov_file;

/* Branch events: one conditional jump of a code object and the directions
 * of it seen so far (the location is switched off once both are). */
typedef struct cov_br {
    int32_t src;     /* byte offset of the jump */
    int32_t dest[2]; /* byte offsets it went to */
    int32_t n;       /* how many of dest[] are set */
} cov_br;

/* What an analysis of a tree of code objects found (cov_analyze's sink
 * calls, in order), recorded when its root is first seen and replayed into
 * the file by the report: the code objects need not live until then. */
typedef struct cov_rec_item {
    char *qualname; /* a code object: its co_qualname; NULL: a branch */
    int32_t line;   /* co_firstlineno, or the branch's line */
    int32_t n;      /* own lines, or destinations */
    int32_t *v;
} cov_rec_item;

typedef struct cov_rec {
    cov_file *file;
    int module;   /* the root is a module's code (report: analysed first) */
    int replayed; /* by an earlier report (of a session started again):
                     its file has it */
    cov_rec_item *items;
    size_t nitems, capitems;
} cov_rec;

/* The key of an entry whose code object died (cov__code_gone): never a code
 * object's address, and not an empty slot. */
extern char cov__gone_marker;
#define COV_GONE ((PyCodeObject *)(void *)&cov__gone_marker)

typedef struct cov_code {
    PyCodeObject *code; /* the key (not a reference): NULL = empty slot,
                           COV_GONE = its code object died */
    PyObject *wr;       /* a weak reference to it, whose callback
                           (cov__code_gone) empties the entry */
    PyObject *pin;      /* a strong reference, only when no weak one could be
                           made, or for the Python analysis at report time */
    cov_file *file;     /* NULL: not measured */
    int32_t func;       /* index in file->funcs */
    int32_t firstline;
    int32_t start;      /* byte offset of the first RESUME */
    int generator;      /* generator, coroutine or async generator */
    PyObject *bytecode; /* co_code (generators, and code with branch events) */
    int recorded;       /* its analysis is in st->recs */
    int32_t *bridx;     /* branch events: per code unit, 1 + index in brs, or 0 */
    cov_br *brs;
    int32_t nbrs, capbrs;
    /* Arcs from LINE events: per line of the code (its index x: line -
     * firstline + 1, 0 for the entry), in succ[2x] and succ[2x + 1], 1 +
     * the index in the file's arcs of two arcs taken from it, or 0. Nearly
     * every line leads to one or two lines: their arcs are counted without
     * a hash lookup. nsucc counts lines. */
    uint32_t *succ;
    int32_t nsucc;
} cov_code;

/* Branch mode: what each frame on a thread's stack last ran. */
typedef struct cov_slot {
    PyCodeObject *code; /* borrowed, compared only */
    int32_t last;
} cov_slot;

/* The slots of an execution context switched away from. */
typedef struct cov_saved {
    uint64_t id;
    cov_slot *slots;
    int32_t cap;
} cov_saved;

typedef struct cov_tstack {
    cov_slot *slots;
    int32_t cap;
    uint64_t exec_id; /* the context `slots` are of (ptk_thread::exec_id) */
    cov_saved *saved; /* the other contexts' slots, by id */
    size_t nsaved, capsaved;
} cov_tstack;

typedef struct cov_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    int branch;
    int counts;                  /* count every execution (every LINE event) */
    const ptk_subscription *sub; /* what the session delivers (BRANCH or not) */
    int calls;                   /* count calls (CALL events); else ran = a line ran */
    cov_match *match;
    char *include; /* the options, for the "no data" hint */
    char *source;
    int coveragepy;       /* COVPY_* */
    int html;             /* write DIR/html */
    int deferred;         /* reports=false: write only what ran; no analysis */
    int contexts;         /* record lines (and arcs) per context (host->context) */
    uint64_t ctx_id;      /* the context of the last LINE recorded */
    int ctx_seen;         /* ... once there was one */
    int32_t ctx_cur;      /* its index in ctx_names */
    PyObject *ctx_names;  /* list: each context's name ("" for none) */
    PyObject *ctx_index;  /* dict: name -> index in ctx_names */
    int found_coveragepy; /* coverage.py is importable (looked for unless COVPY_NO) */

    cov_code *codes;         /* open addressing on the code pointer */
    size_t ncodes, capcodes; /* ncodes counts COV_GONE entries too */
    cov_code *last;          /* one-entry cache */
    ptk_kit_map wrs;         /* (weak reference, NULL) -> the code object (its key) */
    PyObject *gone_cb;       /* the weak references' callback */
    void **gone_box;         /* what its capsule holds: this state, NULL once fini
                                ran (a weak reference that outlives the instance,
                                when fini runs after the interpreter began to
                                finalize, then calls back into nothing) */
    PyObject **dead;         /* weak references whose code object died: released at
                                the next first sight (not in their callback) */
    size_t ndead, capdead;
    cov_rec **recs; /* the analyses, in the order their roots were seen */
    size_t nrecs, caprecs;

    cov_file **files;
    size_t nfiles, capfiles;
    PyObject *file_index; /* dict: co_filename -> index in files, or -1 */

    int arcs_fast; /* branch && cov__arcs_from_lines(): cov__on_event's
                      short way is open (set by cov_on_event_full) */
    cov_tstack *threads;
    size_t nthreads;

    uint64_t line_events;   /* LINE events received for measured code */
    uint64_t call_events;   /* CALL events received for measured code */
    uint64_t branch_events; /* BRANCH events received for measured code */

    PyObject *analysis; /* module dict of analysis.py */
    PyObject *format;   /* module dict of pytracekit-coverage.py */
    int op_resume, op_yield;
    uint8_t opclass[256]; /* OPC_*: what a branch trail does at each opcode */
    cov_optable an_ops;   /* the opcodes, for the static analysis (and its
                             inline cache sizes for the branch trails) */
    int py_analysis;      /* analyse with analysis.py (the reference) instead */
} cov_state;

/* How a branch trail (the instructions a branch direction runs until the
 * next line) treats an opcode. */
enum { OPC_PLAIN,
       OPC_EXTENDED,
       OPC_EXIT,
       OPC_STOP,
       OPC_COND,
       OPC_FWD,
       OPC_BACK };

enum { COVPY_NO,
       COVPY_YES,
       COVPY_AUTO };

/* ---- coverage.c ---- */

int cov__ctx_line(cov_state *st, cov_file *f, int32_t line);
/* contexts= and branch=: the arc @p from -> @p to taken in the current
 * context; 0, or -1 when out of memory. */
int cov__ctx_arc(cov_state *st, cov_file *f, int32_t from, int32_t to);

cov_code *cov__code_add(cov_state *st, PyCodeObject *code);
/* Frees what an entry of the code table owns besides its references. */
void cov__code_free(cov_code *c);
int cov__file_reserve(cov_file *f, int32_t line);
void cov__file_free(cov_file *f);
int32_t cov__file_func(cov_file *f, const char *qualname, int32_t line);
int cov__fail_python(cov_state *st, const char *what);
int cov__on_event(void *state, const ptk_event *ev);

/* ---- cov_code.c ---- */

PyObject *cov__load_module(const char *name, const char *source, const unsigned char *code_bytes,
                           size_t code_len);
int cov__file_analyze(cov_state *st, cov_file *f, PyObject *root);
/* The analysis of a measured entry's code object, recorded (first sight). */
int cov__code_record(cov_state *st, cov_code *c, PyCodeObject *code);
/* A record replayed into its file (report time). */
int cov__rec_replay(cov_state *st, const cov_rec *r);
void cov__rec_free(cov_rec *r);
cov_file *cov__file_new(cov_state *st, const char *path);

/* ---- cov_report.c ---- */

int cov__report(void *state, const ptk_report_args *args);

/* ---- the per-event look-ups, inline on the hot path ---- */

static inline size_t
ptr_hash(const void *p, size_t mask)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 17;
    h *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> 29) & mask;
}

static inline cov_code *
cov__code_find(cov_state *st, PyCodeObject *code)
{
    if (st->capcodes == 0) {
        return NULL;
    }
    size_t mask = st->capcodes - 1;
    for (size_t i = ptr_hash(code, mask);; i = (i + 1) & mask) {
        cov_code *c = &st->codes[i];
        if (c->code == code) {
            return c;
        }
        if (c->code == NULL) {
            return NULL;
        }
    }
}

/* The entry of a code object other than the last event's (cov_code.c). */
cov_code *cov__code_get_other(cov_state *st, PyCodeObject *code);

/* The entry of @p code, made (and the file analysed) at first sight. */
static inline cov_code *
cov__code_get(cov_state *st, PyCodeObject *code)
{
    cov_code *c = st->last;
    if (c && c->code == code) {
        return c;
    }
    return cov__code_get_other(st, code);
}

#define COV_BRANCH_KINDS                                      \
    (PTK_MASK(PTK_EV_BRANCH) | PTK_MASK(PTK_EV_BRANCH_LEFT) | \
     PTK_MASK(PTK_EV_BRANCH_RIGHT))

/* 1 if arcs come from the LINE events (every LINE is delivered), 0 if
 * from branch events (sys.monitoring's BRANCH, or its two directions on
 * 3.14+; lines are switched off). */
static inline int
cov__arcs_from_lines(const cov_state *st)
{
    return !st->sub || !(st->sub->events & COV_BRANCH_KINDS);
}

#endif
