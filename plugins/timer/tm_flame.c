/* timer reports: calling contexts (timer.speedscope.json, timer.folded). */
#include "tm_report.h"

/* ---- calling contexts: timer.speedscope.json, timer.folded --------------- */

void
tm__rtree_clear(tm_rtree *r)
{
    free(r->v);
    ptk_kit_map_free(&r->map);
    memset(r, 0, sizeof(*r));
}

/* The child of @p parent for @p label; (uint32_t)-1 when out of memory. */
static uint32_t
tm_rtree_child(tm_rtree *r, uint32_t parent, uint32_t label)
{
    const void *ka = (const void *)(uintptr_t)(parent + 1);
    const void *kb = (const void *)(uintptr_t)(label + 1);
    uintptr_t at = (uintptr_t)ptk_kit_map_get(&r->map, ka, kb);
    if (at != 0) {
        return (uint32_t)at;
    }
    if (PTK_KIT_RESERVE(r->v, r->cap, r->n + 1, 1024) != 0) {
        return (uint32_t)-1;
    }
    uint32_t i = (uint32_t)r->n++;
    memset(&r->v[i], 0, sizeof(r->v[i]));
    r->v[i].parent = parent;
    r->v[i].label = label;
    r->v[i].next_sibling = r->v[parent].first_child;
    r->v[parent].first_child = i;
    if (ptk_kit_map_put(&r->map, ka, kb, (void *)(uintptr_t)i) != 0) {
        return (uint32_t)-1;
    }
    return i;
}

static int
tm_rtree_add_thread(tm_rtree *r, const tm_labels *L, const tm_thread *th,
                    int64_t max_depth)
{
    typedef struct {
        const tm_node *node;
        uint32_t rparent;
        int64_t depth;
    } item;
    size_t cap = 64, n = 0;
    item *todo = malloc(cap * sizeof(*todo));
    if (todo == NULL) {
        return -1;
    }
    for (const tm_node *c = th->root.first_child; c; c = c->next_sibling) {
        if (PTK_KIT_RESERVE(todo, cap, n + 1, 64) != 0) {
            free(todo);
            return -1;
        }
        todo[n++] = (item){c, 0, 1};
    }
    while (n > 0) {
        item it = todo[--n];
        uint32_t here = it.rparent; /* inside [deeper]: the parent's node */
        if (max_depth <= 0 || it.depth <= max_depth + 1) {
            uint32_t label = max_depth > 0 && it.depth == max_depth + 1
                                 ? r->deeper
                                 : L->canon[it.node->stat->fn->id];
            here = tm_rtree_child(r, it.rparent, label);
            if (here == (uint32_t)-1) {
                free(todo);
                return -1;
            }
        }
        r->v[here].self_ns += it.node->self_ns;
        for (const tm_node *c = it.node->first_child; c; c = c->next_sibling) {
            if (PTK_KIT_RESERVE(todo, cap, n + 1, 64) != 0) {
                free(todo);
                return -1;
            }
            todo[n++] = (item){c, here, it.depth + 1};
        }
    }
    free(todo);
    /* the calls merged by edge: their own time by function */
    for (size_t i = 0; th->nodes.slots && i <= th->nodes.mask; i++) {
        const tm_node *m = th->nodes.slots[i].value;
        if (m == NULL || !m->merged) {
            continue;
        }
        r->merged_edges++;
        r->merged_ns += m->self_ns;
        if (m->self_ns == 0) {
            continue;
        }
        uint32_t top = tm_rtree_child(r, 0, r->merged);
        uint32_t at = top == (uint32_t)-1
                          ? top
                          : tm_rtree_child(r, top, L->canon[m->stat->fn->id]);
        if (at == (uint32_t)-1) {
            return -1;
        }
        r->v[at].self_ns += m->self_ns;
    }
    return 0;
}

static void
tm_rtree_sum(tm_rtree *r)
{
    for (size_t i = 0; i < r->n; i++) {
        r->v[i].incl_ns = 0;
    }
    for (size_t i = r->n; i-- > 1;) {
        r->v[i].incl_ns += r->v[i].self_ns;
        r->v[r->v[i].parent].incl_ns += r->v[i].incl_ns;
    }
    r->v[0].incl_ns += r->v[0].self_ns;
}

/* The contexts of one thread (@p only >= 0) or of every thread, with the
 * inclusive time of each node. */
static int
tm_rtree_build(tm_state *st, const tm_labels *L, long only, tm_rtree *r)
{
    memset(r, 0, sizeof(*r));
    r->deeper = (uint32_t)L->n;
    r->merged = (uint32_t)L->n + 1;
    r->cap = 1024;
    r->v = calloc(r->cap, sizeof(*r->v));
    if (r->v == NULL) {
        return -1;
    }
    r->n = 1; /* the root */
    int bad = 0;
    for (size_t i = 0; !bad && i < st->nthreads; i++) {
        if (st->threads[i] != NULL && (only < 0 || (size_t)only == i)) {
            bad = tm_rtree_add_thread(r, L, st->threads[i], st->folded_depth);
        }
    }
    if (!bad && only < 0) {
        bad = tm_rtree_add_thread(r, L, &st->gone, st->folded_depth);
    }
    if (bad) {
        tm__rtree_clear(r);
        PyErr_NoMemory();
        return -1;
    }
    tm_rtree_sum(r);
    return 0;
}

typedef struct {
    uint64_t incl;
    uint32_t node;
} tm_rweight;

static int
tm_rweight_cmp(const void *a, const void *b)
{
    const tm_rweight *x = a, *y = b;
    if (x->incl != y->incl) {
        return x->incl < y->incl ? 1 : -1;
    }
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Which nodes to keep: the @p max heaviest by inclusive time (a parent
 * weighs at least what its child does and comes first among equals, so
 * the set holds every kept node's callers). NULL when out of memory. */
static char *
tm_rtree_heaviest(const tm_rtree *r, size_t max)
{
    size_t nw = r->n > 1 ? r->n - 1 : 1;
    tm_rweight *w = malloc(nw * sizeof(*w));
    char *keep = calloc(r->n, 1);
    if (w == NULL || keep == NULL) {
        free(w);
        free(keep);
        return NULL;
    }
    for (size_t i = 1; i < r->n; i++) {
        w[i - 1] = (tm_rweight){r->v[i].incl_ns, (uint32_t)i};
    }
    qsort(w, r->n - 1, sizeof(*w), tm_rweight_cmp);
    keep[0] = 1;
    for (size_t k = 0; k < max; k++) {
        keep[w[k].node] = 1;
    }
    free(w);
    for (size_t i = 1; i < r->n; i++) {
        keep[i] = keep[i] && keep[r->v[i].parent];
    }
    return keep;
}

/* Keeps the @p max heaviest contexts of @p r (by inclusive time); the
 * lighter ones become one "[merged contexts]" frame under their nearest kept
 * caller, so every kept frame keeps its width and the file at most about
 * twice @p max nodes. 0, or -1 when out of memory (@p r unchanged). */
static int
tm_rtree_cap(tm_rtree *r, int64_t max)
{
    if (max <= 0 || r->n < 2 || r->n - 1 <= (size_t)max) {
        return 0;
    }
    char *keep = tm_rtree_heaviest(r, (size_t)max);
    uint32_t *to = malloc(r->n * sizeof(*to));  /* node in the new tree */
    uint32_t *anc = malloc(r->n * sizeof(*anc)); /* its kept caller's */
    tm_rtree nr;
    memset(&nr, 0, sizeof(nr));
    nr.deeper = r->deeper;
    nr.merged = r->merged;
    nr.merged_edges = r->merged_edges;
    nr.merged_ns = r->merged_ns;
    nr.cap = (size_t)max + 1024;
    nr.v = calloc(nr.cap, sizeof(*nr.v));
    int bad = keep == NULL || to == NULL || anc == NULL || nr.v == NULL;
    nr.n = 1;
    to[0] = anc[0] = 0;
    for (size_t i = 1; !bad && i < r->n; i++) {
        uint32_t p = r->v[i].parent;
        if (keep[i]) {
            to[i] = anc[i] = tm_rtree_child(&nr, to[p], r->v[i].label);
        }
        else {
            anc[i] = keep[p] ? to[p] : anc[p];
            to[i] = tm_rtree_child(&nr, anc[i], nr.merged);
            nr.pruned++;
            nr.pruned_ns += r->v[i].self_ns;
        }
        bad = to[i] == (uint32_t)-1;
        if (!bad) {
            nr.v[to[i]].self_ns += r->v[i].self_ns;
        }
    }
    free(keep);
    free(to);
    free(anc);
    if (bad) {
        tm__rtree_clear(&nr);
        return -1;
    }
    tm_rtree_sum(&nr);
    tm__rtree_clear(r);
    *r = nr;
    return 0;
}

static const char *
tm_rname(const tm_labels *L, const tm_rtree *r, uint32_t label)
{
    if (label == r->deeper) {
        return "[deeper]";
    }
    if (label == r->merged) {
        return "[merged contexts]";
    }
    return L->snames[label];
}

/* Depth-first over the nodes with time (contexts whose inclusive time is 0
 * are left out), calling @p visit on the way in (@p in = 1) and out. */
typedef int (*tm_rvisit)(void *arg, const tm_rtree *r, uint32_t node,
                         int in, size_t depth);

static int
tm_rtree_walk(const tm_rtree *r, tm_rvisit visit, void *arg)
{
    size_t cap = 64, n = 0;
    uint32_t *stack = malloc(cap * sizeof(*stack)); /* nodes entered */
    uint32_t *next = malloc(cap * sizeof(*next));   /* their next child */
    int rc = 0;
    if (stack == NULL || next == NULL) {
        free(stack);
        free(next);
        return -1;
    }
    stack[0] = 0;
    next[0] = r->v[0].first_child;
    n = 1;
    while (n > 0 && rc == 0) {
        uint32_t c = next[n - 1];
        if (c == 0) {
            if (n > 1) {
                rc = visit(arg, r, stack[n - 1], 0, n - 1);
            }
            n--;
            continue;
        }
        next[n - 1] = r->v[c].next_sibling;
        if (r->v[c].incl_ns == 0) {
            continue;
        }
        if (n == cap) {
            /* two arrays of one length: the second grows to the first's */
            size_t ncap = cap;
            if (PTK_KIT_RESERVE(stack, ncap, n + 1, 64) != 0 ||
                PTK_KIT_RESERVE(next, cap, ncap, 64) != 0) {
                rc = -1;
                break;
            }
        }
        stack[n] = c;
        next[n] = r->v[c].first_child;
        n++;
        rc = visit(arg, r, c, 1, n - 1);
    }
    free(stack);
    free(next);
    return rc;
}

/* timer.folded: one "frame;frame;... microseconds" line per context with
 * own time. Values are rounded so that they add up to floor(total ns /
 * 1000) exactly: each line is within 1 us of its own time. */
typedef struct tm_folded_ctx {
    FILE *f;
    const tm_labels *L;
    uint32_t *path; /* labels of the nodes entered */
    size_t cap;
    unsigned long long cum_ns, cum_us;
} tm_folded_ctx;

static int
tm_folded_visit(void *arg, const tm_rtree *r, uint32_t node, int in,
                size_t depth)
{
    tm_folded_ctx *c = arg;
    if (!in) {
        return 0;
    }
    if (PTK_KIT_RESERVE(c->path, c->cap, depth, 64) != 0) {
        return -1;
    }
    c->path[depth - 1] = r->v[node].label;
    if (r->v[node].self_ns == 0) {
        return 0;
    }
    c->cum_ns += r->v[node].self_ns;
    unsigned long long us = c->cum_ns / 1000 - c->cum_us;
    c->cum_us += us;
    for (size_t i = 0; i < depth; i++) {
        if ((i > 0 && fputc(';', c->f) == EOF) ||
            ptk_kit_name_write(c->f, tm_rname(c->L, r, c->path[i])) < 0) {
            return -1;
        }
    }
    return fprintf(c->f, " %llu\n", us) < 0 ? -1 : 0;
}

static int
tm_write_folded(tm_state *st, const tm_labels *L, const tm_rtree *r,
                const char *filename)
{
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, filename, &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    tm_folded_ctx c = {f, L, NULL, 0, 0, 0};
    int ok = tm_rtree_walk(r, tm_folded_visit, &c) == 0;
    free(c.path);
    if (st->host->report_commit(token, ok) != PTK_OK || !ok) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write %s", filename);
    }
    return PTK_OK;
}

/* timer.speedscope.json: speedscope's own format
 * (https://www.speedscope.app/file-format-schema.json): one shared frame
 * table and one "evented" profile whose open/close events lay the contexts
 * out side by side, each as wide as its inclusive time: two events per
 * context, whatever its depth. */
typedef struct tm_ss_ctx {
    FILE *f;
    uint64_t *start; /* by depth: where the node entered at that depth began */
    size_t cap;
    uint64_t at;
    int first;
} tm_ss_ctx;

static int
tm_ss_visit(void *arg, const tm_rtree *r, uint32_t node, int in, size_t depth)
{
    tm_ss_ctx *c = arg;
    if (PTK_KIT_RESERVE(c->start, c->cap, depth + 1, 64) != 0) {
        return -1;
    }
    if (in) {
        c->start[depth] = c->at;
    }
    else {
        /* the node's own time comes after its callees */
        c->at = c->start[depth] + r->v[node].incl_ns;
    }
    int rc = fprintf(c->f, "%s\n{\"type\":\"%c\",\"frame\":%u,\"at\":%llu}",
                     c->first ? "" : ",", in ? 'O' : 'C', r->v[node].label,
                     (unsigned long long)c->at);
    c->first = 0;
    return rc < 0 ? -1 : 0;
}

static int
tm_write_speedscope(tm_state *st, const tm_labels *L, const tm_rtree *r,
                    const char *filename, const char *title)
{
    void *token = NULL;
    FILE *f = st->host->report_open(st->ctx, filename, &token);
    if (f == NULL) {
        return PTK_EIO;
    }
    int ok = fputs("{\"$schema\":\"https://www.speedscope.app/"
                   "file-format-schema.json\",\n\"exporter\":\"pytracekit timer\",\n"
                   "\"name\":",
                   f) != EOF &&
             ptk_kit_json_write(f, title) == 0 &&
             fputs(",\n\"shared\":{\"frames\":[", f) != EOF;
    for (size_t i = 0; ok && i < L->n + 2; i++) {
        ok = fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f) != EOF &&
             ptk_kit_json_write(f, tm_rname(L, r, (uint32_t)i)) == 0;
        if (ok && i < L->n) {
            PyObject *key = PyList_GET_ITEM(L->keys, i);
            PyObject *hold;
            const char *file = ptk_kit_name_bytes(PyTuple_GET_ITEM(key, 0), NULL, &hold);
            long line = PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
            if (file == NULL) {
                PyErr_Clear();
            }
            else if (strcmp(file, "~") != 0) {
                ok = fputs(",\"file\":", f) != EOF && ptk_kit_json_write(f, file) == 0 &&
                     fprintf(f, ",\"line\":%ld", line) >= 0;
            }
            Py_XDECREF(hold);
        }
        ok = ok && fputc('}', f) != EOF;
    }
    ok = ok && fprintf(f, "]},\n\"profiles\":[{\"type\":\"evented\",\"name\":") >= 0 &&
         ptk_kit_json_write(f, title) == 0 &&
         fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%llu,"
                    "\n\"events\":[",
                 (unsigned long long)r->v[0].incl_ns) >= 0;
    tm_ss_ctx c = {f, NULL, 0, 0, 1};
    ok = ok && tm_rtree_walk(r, tm_ss_visit, &c) == 0;
    free(c.start);
    ok = ok && fputs("]}]}\n", f) != EOF;
    if (st->host->report_commit(token, ok) != PTK_OK || !ok) {
        return st->host->fail(st->ctx, PTK_EIO, "cannot write %s", filename);
    }
    return PTK_OK;
}

/* The calling-context files of one thread (@p only >= 0) or of all. */
int
tm__write_flame(tm_state *st, const tm_labels *L, long only, const char *prefix,
               tm_rtree *keep)
{
    if (!st->contexts || (!st->speedscope && !st->folded)) {
        return PTK_OK;
    }
    tm_rtree r;
    char name[96];
    if (tm_rtree_build(st, L, only, &r) != 0) {
        return PTK_EPYTHON;
    }
    size_t recorded = r.n - 1;
    if (tm_rtree_cap(&r, st->max_contexts) != 0) {
        tm__rtree_clear(&r);
        PyErr_NoMemory();
        return PTK_EPYTHON;
    }
    if (only < 0) {
        st->flame_kept = recorded - r.pruned;
        st->flame_merged = r.pruned;
        st->flame_merged_ns = r.pruned_ns;
    }
    int rc = PTK_OK;
    if (st->speedscope) {
        snprintf(name, sizeof(name), "%s.speedscope.json", prefix);
        rc = tm_write_speedscope(st, L, &r, name, prefix);
    }
    if (rc == PTK_OK && st->folded) {
        snprintf(name, sizeof(name), "%s.folded", prefix);
        rc = tm_write_folded(st, L, &r, name);
    }
    if (keep != NULL) {
        *keep = r;
    }
    else {
        tm__rtree_clear(&r);
    }
    return rc;
}

/* "timer.thread-N-NAME": the thread's index (unique) and its name, cut to
 * 32 bytes, with what a file name should not hold as '_'. */
void
tm__thread_prefix(tm_state *st, char *buf, size_t size, const tm_thread *th)
{
    /* the name the thread has now: it may have had none when first seen */
    const ptk_thread *t = st->host->thread_at(th->index);
    const char *tname = t != NULL && t->name != NULL && t->name[0] ? t->name : th->name;
    char name[33];
    size_t n = 0;
    for (const char *p = tname ? tname : ""; *p && n < 32; p++) {
        unsigned char c = (unsigned char)*p;
        name[n++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
                        ? (char)c
                        : '_';
    }
    name[n] = '\0';
    snprintf(buf, size, n ? "timer.thread-%u-%s" : "timer.thread-%u%s", th->index, name);
}
