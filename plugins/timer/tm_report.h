/*
 * timer: what the report writers share (private to plugins/timer). The
 * reports are timer.pstats (marshal, what pstats.Stats loads), timer.json,
 * timer.folded and timer.speedscope.json (calling contexts) and the stderr
 * summary; with per_thread=true, the same files once per thread as
 * timer.thread-N.*.
 *
 * Functions are merged by their pstats label (file, line, name): two code
 * objects with the same label are one pstats entry.
 *
 *   tm_labels.c   the labels, their names and short names
 *   tm_views.c    the figures of some threads by label; timer.pstats
 *   tm_flame.c    calling contexts: timer.speedscope.json, timer.folded
 *   tm_json.c     timer.json
 *   timer_report.c the summary, and all of it (tm__report)
 */
#ifndef PTK_TIMER_REPORT_H
#define PTK_TIMER_REPORT_H

#include "timer.h"

#include "../common/c_label.h"
#include "../common/fs_name.h"
#include "../common/json_quote.h"
#include "../common/put_decimal.h"

#include <stdlib.h>
#include <string.h>

/* Summed figures of one label or one edge. */
typedef struct tm_acc {
    uint64_t calls, reccalls, tt, it;
} tm_acc;

typedef struct tm_vedge {
    uint32_t caller, callee; /* label ids */
    tm_acc acc;
} tm_vedge;

/* The figures of some threads, by label. */
typedef struct tm_view {
    tm_acc *fn; /* [nlabels] */
    tm_vedge *edges;
    size_t nedges, edges_cap;
    tm_map edge_map;   /* (caller+1, callee+1) -> index+1 into edges */
    uint64_t total_ns; /* sum of own times */
    uint64_t calls, primitive;
} tm_view;

/* What every view shares: labels and names, by label id. */
typedef struct tm_labels {
    size_t n;
    uint32_t *canon;      /* [nfuncs]: label id of each function */
    PyObject *keys;       /* list of pstats keys (file, line, name) */
    PyObject *names;      /* list of display names (str) */
    const char **cnames;  /* UTF-8 of names, folded-safe */
    const char **snames;  /* UTF-8 of short names, folded-safe */
    PyObject *shorts;     /* list of short names (str): flame graph frames */
    PyObject *cname_objs; /* list keeping the bytes of cnames alive */
    uint32_t *first;      /* [n]: a function of each label */
} tm_labels;

/* The calling contexts of some threads merged by label path: node 0 is the
 * root, every parent comes before its children. Frames deeper than
 * folded_depth become one "[deeper]" node; the calls merged by edge (over
 * max_contexts, or with contexts off) hang under one "[merged contexts]"
 * node by function. */
typedef struct tm_rnode {
    uint32_t parent, label;
    uint32_t first_child, next_sibling; /* 0: none */
    uint64_t self_ns, incl_ns;
} tm_rnode;

typedef struct tm_rtree {
    tm_rnode *v;
    size_t n, cap;
    tm_map map;              /* (parent+1, label+1) -> index */
    uint32_t deeper, merged; /* the labels of the two pseudo frames */
    uint64_t merged_edges, merged_ns;
    size_t pruned;      /* contexts merged by tm_rtree_cap */
    uint64_t pruned_ns; /* their own time */
} tm_rtree;

/* per_context: what timer.json says of one context (tm_views.c). */
typedef struct tm_cinfo {
    PyObject *name; /* borrowed: the tm_cset's */
    char file[48];  /* its pstats file */
    uint64_t total_ns, calls, primitive;
    uint32_t *top;   /* [ntop] labels, most own time first */
    tm_acc *top_acc; /* [ntop] their figures */
    size_t ntop;
} tm_cinfo;

/* ---- tm_labels.c ---- */

void tm__acc_add(tm_acc *a, const tm_fig *f);
void tm__labels_clear(tm_labels *L);
int tm__labels_build(tm_state *st, tm_labels *L);

/* ---- tm_views.c ---- */

void tm__view_clear(tm_view *v);
int tm__view_build(tm_state *st, const tm_labels *L, long only, tm_view *v);
PyObject *tm__pstats_dict(const tm_labels *L, const tm_view *v);
PyObject *tm__cset_pstats(const tm_labels *L, const tm_cset *cs, size_t top,
                          tm_cinfo *info);

/* ---- tm_flame.c ---- */

void tm__rtree_clear(tm_rtree *r);
int tm__write_flame(tm_state *st, const tm_labels *L, long only, const char *prefix,
                    tm_rtree *keep);
void tm__thread_prefix(tm_state *st, char *buf, size_t size, const tm_thread *th);

/* ---- tm_json.c ---- */

void tm__merged_counts(const tm_state *st, uint64_t *edges, uint64_t *ns);
int tm__write_json(tm_state *st, const tm_labels *L, const tm_view *all,
                   const ptk_report_args *args, uint64_t max_depth,
                   uint64_t unmatched, uint64_t resynced, size_t written,
                   const tm_cinfo *cinfo, size_t ncinfo);

#endif
