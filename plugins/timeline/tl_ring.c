/*
 * timeline: the flight recorder (ring=SECONDS).
 *
 * With ring=, the timeline writes nothing while the program runs: its
 * hot path is the same, but the format it writes to (tl__ring_format) is
 * a recorder. A BEGIN pushes (name, time) on the track's stack of open
 * spans; an END pops it and appends one fixed-size record (begin, end,
 * name, track, depth) to the ring. The ring is a list of chunks reused in
 * place: when the newest chunk is full, the oldest one is taken again if
 * everything in it ended before the window; else a new chunk is allocated,
 * up to ring_mb; at the cap the oldest chunk is taken anyway (its spans
 * are counted as lost from the window). So the memory follows the rate
 * of spans times the window, never the length of the run.
 *
 * A dump writes, in the timeline's format, every span that ended within
 * the window, and every span still open, as ending at the dump: records
 * sorted per track by (begin, depth) are nested with a stack, the
 * BEGIN/END events of all tracks are put in time order, and the format's
 * encoder writes them into a file opened through the host's report_open
 * (a temporary name renamed into place, so a dump is never seen half
 * written), without a writer thread: a dump is written at once.
 *
 * Dumps: the report (report() while running, or the end of the run),
 * an uncaught exception (sys.excepthook, threading.excepthook: wrapped,
 * the previous hook is called after), and a trigger= span ending longer
 * than its minimum (at most one trigger dump per window).
 */
#include "tl_private.h"
#include "tl_ring.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Records per chunk: 8192 x 32 bytes, 256 KiB. */
#define TL_RING_CHUNK_RECS 8192
/* At most this many dumps listed in the summary (the latest). */
#define TL_RING_MAX_LISTED 1000

enum { R_SPAN = 0,
       R_OPEN = 1,
       R_INSTANT = 2,
       R_INSTANT_G = 3,
       R_COUNTER = 4 };

/* One span, instant or counter sample: 32 bytes. */
typedef struct tl_rec {
    uint64_t t0;         /* span: its begin; counter: the value's bits */
    uint64_t t1;         /* span: its end; instant, counter: the time */
    const tl_name *name; /* NULL for a counter */
    uint32_t track;      /* index in tl_ring::tracks */
    uint16_t depth;      /* spans open below it on its track */
    uint16_t kind;       /* R_* */
} tl_rec;

typedef struct tl_chunk {
    uint64_t max_t1; /* the latest time of its records */
    size_t n;
    tl_rec rec[TL_RING_CHUNK_RECS];
} tl_chunk;

typedef struct tl_open {
    const tl_name *name;
    uint64_t t0;
} tl_open;

/** A track's part in the ring: its id, its spans begun and not ended. */
typedef struct tl_ring_track {
    uint32_t id;
    tl_open *open;
    size_t nopen, cap;
} tl_ring_track;

/* The box an excepthook wrapper holds: emptied when the instance goes. */
typedef struct tl_hook {
    tl_state *st;
    PyObject *prev; /* the hook it wraps (strong) */
    int threading;  /* threading.excepthook: one ExceptHookArgs argument */
} tl_hook;

typedef struct tl_ring {
    uint64_t window_ns;
    size_t max_chunks;
    tl_chunk **chunks; /* circular, max_chunks slots: oldest at head */
    size_t head, nchunks, allocated;
    tl_track **tracks; /* by tl_ring_track::id */
    size_t ntracks, tracks_cap;
    /* trigger= */
    char *trig_glob;
    uint64_t trig_ns;
    uint64_t last_trigger; /* time of the last trigger dump, or 0 */
    int pending;           /* a trigger fired in this event: dump after it */
    const tl_name *pending_name;
    uint64_t pending_t0, pending_t1;
    uint64_t triggers, triggers_suppressed;
    /* figures */
    uint64_t recorded;   /* records appended over the run */
    uint64_t lost;       /* records dropped within the window (cap) */
    uint64_t lost_until; /* latest time of the records dropped so */
    uint64_t seq;        /* dumps written */
    PyObject *dumps;     /* list of dicts: the dumps (the latest 1000) */
    /* excepthooks */
    tl_hook *sys_hook, *thr_hook;
    PyObject *sys_fn, *thr_fn;
} tl_ring;

/* ---- memory ---------------------------------------------------------------- */

/* The chunks and a dump's working arrays and buffer are mapped and unmapped
 * by themselves, not taken from malloc's heap: a dump's megabytes go back
 * to the system when it is written (malloc would keep them, and the heap
 * would grow in steps with the dumps of a long run). */
static void *
big_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p; /* zeroed */
}

static void
big_free(void *p, size_t n)
{
    if (p != NULL) {
        munmap(p, n ? n : 1);
    }
}

/* A merge sort into @p tmp (n * size bytes) and back: qsort(3) would take
 * its buffer from malloc — megabytes that, once freed, raise glibc's mmap
 * threshold and stay in the heap, so RSS would step up with the dumps. */
static void
ring_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *),
          void *tmp)
{
    char *src = base, *dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                if (cmp(src + j * size, src + i * size) < 0) {
                    memcpy(dst + k++ * size, src + j++ * size, size);
                }
                else {
                    memcpy(dst + k++ * size, src + i++ * size, size);
                }
            }
            memcpy(dst + k * size, src + i * size, (mid - i) * size);
            k += mid - i;
            memcpy(dst + k * size, src + j * size, (hi - j) * size);
        }
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != base) {
        memcpy(base, src, n * size);
    }
}

/* ---- recording ------------------------------------------------------------ */

static tl_ring_track *
ring_track(tl_state *st, tl_track *t)
{
    if (t->ring != NULL) {
        return t->ring;
    }
    tl_ring *r = st->ring;
    if (PTK_KIT_RESERVE(r->tracks, r->tracks_cap, r->ntracks + 1, 32) != 0) {
        return NULL;
    }
    tl_ring_track *rt = calloc(1, sizeof(*rt));
    if (rt == NULL) {
        return NULL;
    }
    rt->id = (uint32_t)r->ntracks;
    r->tracks[r->ntracks++] = t;
    t->ring = rt;
    return rt;
}

/* Room for one more record: in the newest chunk, or in a chunk taken
 * again (the oldest, expired or — at the cap — not), or a new one. */
static tl_rec *
ring_slot(tl_ring *r, uint64_t now)
{
    if (r->nchunks > 0) {
        tl_chunk *c = r->chunks[(r->head + r->nchunks - 1) % r->max_chunks];
        if (c->n < TL_RING_CHUNK_RECS) {
            return &c->rec[c->n++];
        }
    }
    tl_chunk *c = NULL;
    tl_chunk *old = r->nchunks > 0 ? r->chunks[r->head] : NULL;
    if (old != NULL && old->max_t1 + r->window_ns < now) {
        c = old; /* everything in it ended before the window */
    }
    else if (r->allocated < r->max_chunks) {
        c = big_alloc(sizeof(*c));
        if (c == NULL && old == NULL) {
            return NULL;
        }
        r->allocated += c != NULL;
    }
    if (c == NULL) {
        /* at the cap (or out of memory): the oldest spans go, though in
         * the window */
        c = old;
        r->lost += c->n;
        r->lost_until = c->max_t1;
    }
    if (c == old) {
        r->head = (r->head + 1) % r->max_chunks;
        r->nchunks--;
    }
    c->n = 0;
    c->max_t1 = 0;
    r->chunks[(r->head + r->nchunks) % r->max_chunks] = c;
    r->nchunks++;
    c->n = 1;
    return &c->rec[0];
}

static int
ring_add(tl_state *st, uint32_t track, const tl_name *name, uint64_t t0,
         uint64_t t1, size_t depth, int kind)
{
    tl_ring *r = st->ring;
    tl_rec *rec = ring_slot(r, t1);
    if (rec == NULL) {
        return -1;
    }
    rec->t0 = t0;
    rec->t1 = t1;
    rec->name = name;
    rec->track = track;
    rec->depth = (uint16_t)(depth < UINT16_MAX ? depth : UINT16_MAX);
    rec->kind = (uint16_t)kind;
    tl_chunk *c = r->chunks[(r->head + r->nchunks - 1) % r->max_chunks];
    if (t1 > c->max_t1) {
        c->max_t1 = t1;
    }
    r->recorded++;
    return 0;
}

/* Is @p n a trigger= function? Its function name (in the parentheses of
 * `file:line(func)`) or its whole name matches the glob. Looked at once. */
static int
ring_is_trigger(tl_ring *r, const tl_name *cn)
{
    tl_name *n = (tl_name *)cn;
    if (n->ring_trig == 0) {
        int yes = fnmatch(r->trig_glob, n->text, 0) == 0;
        const char *open = strrchr(n->text, '(');
        size_t len = strlen(n->text);
        if (!yes && n->kind == TL_NAME_PY && open != NULL && len > 0 &&
            n->text[len - 1] == ')') {
            char func[256];
            size_t k = (size_t)(n->text + len - 1 - (open + 1));
            if (k < sizeof(func)) {
                memcpy(func, open + 1, k);
                func[k] = '\0';
                yes = fnmatch(r->trig_glob, func, 0) == 0;
            }
        }
        n->ring_trig = yes ? 2 : 1;
    }
    return n->ring_trig == 2;
}

static int
rf_start(tl_state *st, uint64_t now)
{
    (void)st;
    (void)now;
    return 0;
}

static int
rf_begin(tl_state *st, tl_track *t, tl_name *n, uint64_t ts)
{
    tl_ring_track *rt = ring_track(st, t);
    if (rt == NULL ||
        PTK_KIT_RESERVE(rt->open, rt->cap, rt->nopen + 1, 64) != 0) {
        return -1;
    }
    rt->open[rt->nopen].name = n;
    rt->open[rt->nopen].t0 = ts;
    rt->nopen++;
    return 0;
}

static int
rf_end(tl_state *st, tl_track *t, uint64_t ts)
{
    tl_ring_track *rt = t->ring;
    if (rt == NULL || rt->nopen == 0) {
        return 0; /* its BEGIN was not recorded (out of memory) */
    }
    tl_open o = rt->open[--rt->nopen];
    if (ring_add(st, rt->id, o.name, o.t0, ts, rt->nopen, R_SPAN) != 0) {
        return -1;
    }
    tl_ring *r = st->ring;
    if (r->trig_glob != NULL && ts - o.t0 >= r->trig_ns &&
        ring_is_trigger(r, o.name)) {
        if (r->last_trigger != 0 && ts - r->last_trigger < r->window_ns) {
            r->triggers_suppressed++;
        }
        else if (!r->pending) {
            r->pending = 1;
            r->pending_name = o.name;
            r->pending_t0 = o.t0;
            r->pending_t1 = ts;
            r->last_trigger = ts;
        }
    }
    return 0;
}

static int
rf_instant(tl_state *st, tl_track *t, tl_name *n, uint64_t ts, int global)
{
    tl_ring_track *rt = ring_track(st, global ? &st->process_track : t);
    if (rt == NULL) {
        return -1;
    }
    return ring_add(st, rt->id, n, ts, ts, rt->nopen,
                    global ? R_INSTANT_G : R_INSTANT);
}

static int
rf_counter(tl_state *st, tl_track *t, double v, uint64_t ts)
{
    tl_ring_track *rt = ring_track(st, t);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return rt == NULL ? -1 : ring_add(st, rt->id, NULL, bits, ts, 0, R_COUNTER);
}

static int
rf_finish(tl_state *st)
{
    (void)st;
    return 0;
}

static int
rf_rename(tl_state *st, tl_track *t, uint64_t now)
{
    (void)st;
    (void)t;
    (void)now;
    return 0; /* a dump describes the track with the name it has then */
}

const tl_format tl__ring_format = {
    .filename = NULL,
    .start = rf_start,
    .begin = rf_begin,
    .end = rf_end,
    .instant = rf_instant,
    .counter = rf_counter,
    .finish = rf_finish,
    .rename = rf_rename,
};

/* ---- dumping -------------------------------------------------------------- */

enum { EV_B = 0,
       EV_E = 1,
       EV_I = 2,
       EV_C = 3 };

static uint64_t
rec_key(const tl_rec *r)
{
    return r->kind == R_SPAN || r->kind == R_OPEN ? r->t0 : r->t1;
}

static int
rec_cmp(const void *a, const void *b)
{
    const tl_rec *x = *(const tl_rec *const *)a;
    const tl_rec *y = *(const tl_rec *const *)b;
    if (x->track != y->track) {
        return x->track < y->track ? -1 : 1;
    }
    uint64_t kx = rec_key(x), ky = rec_key(y);
    if (kx != ky) {
        return kx < ky ? -1 : 1;
    }
    if (x->depth != y->depth) {
        return x->depth < y->depth ? -1 : 1;
    }
    return (x->kind > R_OPEN) - (y->kind > R_OPEN); /* a span before an instant */
}

/* One track's records in the dump, sorted: its next event. */
typedef struct tl_cur {
    size_t i, end; /* its records: list[i..end) */
    size_t id;     /* ties between tracks: the lower id first */
    size_t *stack; /* its spans begun and not ended yet (list indices) */
    size_t sp, cap;
    uint64_t ts; /* its next event: time, type, record */
    size_t rec;
    int type; /* EV_*, or -1: none left */
} tl_cur;

/* The cursor's next event: the END of the innermost open span if the
 * next record is not inside it, else the next record's BEGIN (instant,
 * counter sample). */
static void
cur_next(const tl_rec **list, tl_cur *c)
{
    const tl_rec *x = c->i < c->end ? list[c->i] : NULL;
    if (c->sp > 0) {
        const tl_rec *top = list[c->stack[c->sp - 1]];
        int inside = x != NULL && x->kind != R_COUNTER && top->t1 >= x->t1 &&
                     (x->kind > R_OPEN || top->depth < x->depth);
        if (!inside) {
            c->type = EV_E;
            c->ts = top->t1;
            c->rec = c->stack[c->sp - 1];
            return;
        }
    }
    if (x == NULL) {
        c->type = -1;
        return;
    }
    c->rec = c->i;
    c->ts = rec_key(x);
    c->type = x->kind == R_COUNTER ? EV_C : x->kind > R_OPEN ? EV_I
                                                             : EV_B;
}

/* The event cur_next found is written: move past it. 0, or -1 (memory). */
static int
cur_take(tl_cur *c)
{
    if (c->type == EV_E) {
        c->sp--;
        return 0;
    }
    if (c->type == EV_B) {
        if (PTK_KIT_RESERVE(c->stack, c->cap, c->sp + 1, 64) != 0) {
            return -1;
        }
        c->stack[c->sp++] = c->rec;
    }
    c->i++;
    return 0;
}

static int
cur_before(const tl_cur *a, const tl_cur *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->id < b->id);
}

static void
heap_down(tl_cur **h, size_t n, size_t k)
{
    for (;;) {
        size_t l = 2 * k + 1, r = l + 1, min = k;
        if (l < n && cur_before(h[l], h[min])) {
            min = l;
        }
        if (r < n && cur_before(h[r], h[min])) {
            min = r;
        }
        if (min == k) {
            return;
        }
        tl_cur *t = h[k];
        h[k] = h[min];
        h[min] = t;
        k = min;
    }
}

/* Everything the track-reading part of the timeline must forget before a
 * new file: which tracks are described, which names are interned. */
static void
ring_reset_format(tl_state *st)
{
    tl_ring *r = st->ring;
    for (size_t i = 0; i < r->ntracks; i++) {
        r->tracks[i]->described = 0;
        r->tracks[i]->last_ts = 0;
    }
    st->process_track.described = 0;
    for (size_t i = 0; i < st->nnames; i++) {
        st->name_list[i]->iid = 0;
        st->name_list[i]->pb_tail_len = 0;
    }
    for (size_t i = 0; i < st->ntasks; i++) {
        st->task_list[i]->label.iid = 0;
        st->task_list[i]->label.pb_tail_len = 0;
    }
    st->gc_name.iid = 0;
    st->gc_name.pb_tail_len = 0;
    for (size_t i = 0; i < st->nfiles; i++) {
        st->file_list[i]->iid = 0;
    }
}

typedef struct tl_dump_figures {
    uint64_t spans, open, instants;
    int complete; /* nothing in the window was lost to the cap */
} tl_dump_figures;

/* The records of the window [from, now] (a GC that ran inside the
 * triggering event ends after it, and is left out) into @p list when it is
 * not NULL; returns how many there are. */
static size_t
ring_window(tl_ring *r, uint64_t from, uint64_t now, const tl_rec **list)
{
    size_t m = 0;
    for (size_t k = 0; k < r->nchunks; k++) {
        tl_chunk *c = r->chunks[(r->head + k) % r->max_chunks];
        for (size_t i = 0; c->max_t1 >= from && i < c->n; i++) {
            if (c->rec[i].t1 >= from && c->rec[i].t1 <= now) {
                if (list != NULL) {
                    list[m] = &c->rec[i];
                }
                m++;
            }
        }
    }
    return m;
}

/* The spans still open, ending at now, as records in @p opens, appended to
 * @p list from @p m on; returns the new length of the list. */
static size_t
ring_opens(tl_ring *r, uint64_t now, tl_rec *opens, const tl_rec **list, size_t m)
{
    size_t o = 0;
    for (size_t i = 0; i < r->ntracks; i++) {
        tl_ring_track *rt = r->tracks[i]->ring;
        for (size_t d = 0; d < rt->nopen; d++) {
            tl_rec *x = &opens[o++];
            x->t0 = rt->open[d].t0;
            x->t1 = now > x->t0 ? now : x->t0;
            x->name = rt->open[d].name;
            x->track = rt->id;
            x->depth = (uint16_t)(d < UINT16_MAX ? d : UINT16_MAX);
            x->kind = R_OPEN;
            list[m++] = x;
        }
    }
    return m;
}

/* Per track of the sorted @p list, a cursor nesting its records with a
 * stack (@p cur, ended by one whose end is 0), their next events in a heap
 * (@p heap); returns the heap's size. */
static size_t
ring_cursors(const tl_rec **list, size_t m, tl_cur *cur, tl_cur **heap)
{
    size_t ngroups = 0, nh = 0;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || list[i]->track != list[i - 1]->track) {
            cur[ngroups].i = i;
            cur[ngroups].id = ngroups;
            if (ngroups > 0) {
                cur[ngroups - 1].end = i;
            }
            ngroups++;
        }
    }
    if (ngroups > 0) {
        cur[ngroups - 1].end = m;
    }
    for (size_t g = 0; g < ngroups; g++) {
        cur_next(list, &cur[g]);
        heap[nh++] = &cur[g];
    }
    for (size_t k = nh / 2; k-- > 0;) {
        heap_down(heap, nh, k);
    }
    return nh;
}

/* The cursors' events in time order through the output format, its status
 * in @p *wrote (0: written, -1: an event could not be); -1 when out of
 * memory, else 0. */
static int
ring_emit(tl_state *st, const tl_rec **list, tl_cur **heap, size_t nh, uint64_t now,
          tl_dump_figures *fig, int *wrote)
{
    const tl_format *f = st->out_fmt;
    int w = f->start(st, now);
    while (w == 0 && nh > 0) {
        tl_cur *c = heap[0];
        const tl_rec *x = list[c->rec];
        tl_track *t = st->ring->tracks[x->track];
        tl_name *nm = (tl_name *)x->name;
        switch (c->type) {
        case EV_B:
            w = f->begin(st, t, nm, x->t0);
            fig->spans += x->kind == R_SPAN;
            fig->open += x->kind == R_OPEN;
            break;
        case EV_E:
            w = f->end(st, t, x->t1);
            break;
        case EV_I:
            w = f->instant(st, t, nm, x->t1, x->kind == R_INSTANT_G);
            fig->instants++;
            break;
        default: {
            double v;
            memcpy(&v, &x->t0, sizeof v);
            w = f->counter(st, t, v, x->t1);
            break;
        }
        }
        if (cur_take(c) != 0) {
            return -1;
        }
        cur_next(list, c);
        if (c->type < 0) {
            heap[0] = heap[--nh];
        }
        heap_down(heap, nh, 0);
    }
    *wrote = w == 0 ? f->finish(st) : w;
    return 0;
}

/* The ring's records of the window [from, now] and the open spans (ending
 * at now) as BEGIN/END/instant/counter events in time order, written by
 * the output format into @p fd. Returns 0, an errno, or -1 (memory). */
static int
ring_write(tl_state *st, int fd, uint64_t from, uint64_t now, tl_dump_figures *fig)
{
    tl_ring *r = st->ring;
    size_t nopen = 0;
    for (size_t i = 0; i < r->ntracks; i++) {
        nopen += r->tracks[i]->ring->nopen;
    }
    size_t n = ring_window(r, from, now, NULL) + nopen;
    size_t opens_size = (nopen + 1) * sizeof(tl_rec);
    size_t list_size = (n + 1) * sizeof(tl_rec *);
    tl_rec *opens = big_alloc(opens_size);
    const tl_rec **list = big_alloc(list_size);
    void *tmp = big_alloc(list_size); /* the sort's other half */
    tl_cur *cur = NULL;
    tl_cur **heap = NULL;
    int rc = -1;
    tl_out saved = st->out;
    memset(&st->out, 0, sizeof(st->out));
    if (opens == NULL || list == NULL || tmp == NULL) {
        goto done;
    }
    size_t m = ring_opens(r, now, opens, list, ring_window(r, from, now, list));
    ring_sort(list, m, sizeof(*list), rec_cmp, tmp);
    size_t ngroups = 0;
    for (size_t i = 0; i < m; i++) {
        ngroups += i == 0 || list[i]->track != list[i - 1]->track;
    }
    cur = calloc(ngroups + 1, sizeof(*cur));
    heap = calloc(ngroups + 1, sizeof(*heap));
    if (cur == NULL || heap == NULL) {
        goto done;
    }
    size_t nh = ring_cursors(list, m, cur, heap);
    /* the output format, into the file, with one buffer and no writer */
    st->out.fd = fd;
    st->out.sync = 1;
    st->out.cap = st->buffer_size;
    st->out.buf[0] = big_alloc(st->out.cap);
    if (st->out.buf[0] == NULL) {
        goto done;
    }
    ring_reset_format(st);
    int w = 0;
    if (ring_emit(st, list, heap, nh, now, fig, &w) != 0) {
        goto done;
    }
    int werr = tl__out_sync_flush(&st->out);
    rc = werr != 0 ? werr : (w != 0 ? EIO : 0);
    fig->complete = r->lost_until < from;
done:
    big_free(st->out.buf[0], st->out.cap);
    st->out = saved;
    for (size_t g = 0; cur != NULL && cur[g].end > 0; g++) {
        free(cur[g].stack);
    }
    free(cur);
    free(heap);
    big_free(tmp, list_size);
    big_free(list, list_size);
    big_free(opens, opens_size);
    return rc;
}

/* Writes a dump named @p name; adds its entry (with @p extra's items) to
 * the list. 0, or a PTK_ error (the host was told). */
static int
ring_dump(tl_state *st, const char *name, const char *reason, uint64_t now,
          uint64_t from, PyObject *extra)
{
    tl_ring *r = st->ring;
    void *token = NULL;
    tl__rename_threads(st, now); /* names the hub learnt since */
    FILE *fp = st->host->report_open(st->ctx, name, &token);
    if (fp == NULL) {
        return PTK_EIO;
    }
    /* the name the host gives it (timeline-2.json for a second timeline) */
    char path[4096];
    const ptk_host *h = st->host;
    const char *file = name;
    if (h->struct_size >= offsetof(ptk_host, report_claim) + sizeof h->report_claim &&
        h->report_claim(st->ctx, name, path, sizeof path) == PTK_OK &&
        strrchr(path, '/') != NULL) {
        file = strrchr(path, '/') + 1;
    }
    tl_dump_figures fig = {0};
    uint64_t w0 = h->clock_ns();
    int rc = ring_write(st, fileno(fp), from, now, &fig);
    int crc = st->host->report_commit(token, rc == 0);
    uint64_t took = h->clock_ns() - w0;
    if (rc != 0) {
        return st->host->fail(st->ctx, rc < 0 ? PTK_ENOMEM : PTK_EIO,
                              "cannot write the ring's dump %s: %s", name,
                              rc < 0 ? "out of memory" : strerror(rc));
    }
    if (crc != PTK_OK) {
        return crc;
    }
    r->seq++;
    PyObject *d = Py_BuildValue(
        "{s:K,s:s,s:s,s:K,s:K,s:K,s:K,s:K,s:O,s:K}", "seq", (unsigned long long)r->seq,
        "file", file, "reason", reason,
        "at_ns", (unsigned long long)(now - st->t_origin),
        "from_ns", (unsigned long long)(from > st->t_origin ? from - st->t_origin : 0),
        "spans", (unsigned long long)fig.spans,
        "open_spans", (unsigned long long)fig.open,
        "instants", (unsigned long long)fig.instants,
        "complete", fig.complete ? Py_True : Py_False,
        "write_ns", (unsigned long long)took);
    if (d != NULL && extra != NULL) {
        PyDict_Update(d, extra);
    }
    if (d == NULL || PyList_Append(r->dumps, d) != 0 ||
        (PyList_GET_SIZE(r->dumps) > TL_RING_MAX_LISTED &&
         PySequence_DelItem(r->dumps, 0) != 0)) {
        PyErr_Clear();
    }
    Py_XDECREF(d);
    return PTK_OK;
}

/* timeline.REASON-SEQ.EXT: timeline.trigger-3.perfetto-trace */
static void
ring_dump_name(tl_state *st, const char *reason, char *buf, size_t size)
{
    const char *ext = strchr(st->out_fmt->filename, '.');
    snprintf(buf, size, "timeline.%s-%llu%s", reason,
             (unsigned long long)st->ring->seq + 1, ext ? ext : "");
}

static uint64_t
ring_from(tl_ring *r, uint64_t now)
{
    return now > r->window_ns ? now - r->window_ns : 0;
}

void
tl__ring_after_event(tl_state *st)
{
    tl_ring *r = st->ring;
    if (!r->pending) {
        return;
    }
    r->pending = 0;
    r->triggers++;
    char name[256];
    ring_dump_name(st, "trigger", name, sizeof name);
    uint64_t now = r->pending_t1;
    uint64_t from = ring_from(r, now);
    /* the triggering span's whole tree, even if it began before the window */
    if (r->pending_t0 < from) {
        from = r->pending_t0;
    }
    PyObject *extra = Py_BuildValue(
        "{s:s,s:K,s:K}", "function", r->pending_name->text,
        "duration_ns", (unsigned long long)(r->pending_t1 - r->pending_t0),
        "span_begin_ns", (unsigned long long)(r->pending_t0 - st->t_origin));
    PyErr_Clear();
    ring_dump(st, name, "trigger", now, from, extra);
    Py_XDECREF(extra);
}

/* ---- the uncaught-exception hooks ------------------------------------------ */

static void
hook_free(PyObject *capsule)
{
    tl_hook *h = PyCapsule_GetPointer(capsule, "pytracekit.timeline.ring");
    if (h != NULL) {
        Py_XDECREF(h->prev);
        free(h);
    }
}

static void
ring_dump_exception(tl_state *st, PyObject *type)
{
    uint64_t now = st->host->clock_ns();
    char name[256];
    ring_dump_name(st, "exception", name, sizeof name);
    const char *tn = type != NULL && PyType_Check(type) ? ((PyTypeObject *)type)->tp_name : "?";
    PyObject *extra = Py_BuildValue("{s:s}", "exception", tn);
    PyErr_Clear();
    ring_dump(st, name, "exception", now, ring_from(st->ring, now), extra);
    Py_XDECREF(extra);
}

/* sys.excepthook(type, value, tb) / threading.excepthook(args): the ring
 * is written, then the hook it replaced is called. */
static PyObject *
ring_excepthook(PyObject *self, PyObject *args)
{
    tl_hook *h = PyCapsule_GetPointer(self, "pytracekit.timeline.ring");
    if (h == NULL) {
        return NULL;
    }
    if (h->st != NULL && h->st->started && PyTuple_Check(args) &&
        PyTuple_GET_SIZE(args) >= 1) {
        PyObject *type = NULL;
        if (h->threading) {
            type = PyObject_GetAttrString(PyTuple_GET_ITEM(args, 0), "exc_type");
            PyErr_Clear();
        }
        else {
            type = Py_NewRef(PyTuple_GET_ITEM(args, 0));
        }
        /* SystemExit ends a thread quietly: not an uncaught error */
        if (type != PyExc_SystemExit) {
            ring_dump_exception(h->st, type);
        }
        Py_XDECREF(type);
    }
    if (h->prev != NULL && h->prev != Py_None) {
        return PyObject_Call(h->prev, args, NULL);
    }
    Py_RETURN_NONE;
}

static PyMethodDef ring_hook_def = {"timeline_ring_excepthook", ring_excepthook,
                                    METH_VARARGS,
                                    "pytracekit timeline: writes the ring, then "
                                    "calls the hook it replaced"};

/* The wrapper of @p prev (stolen), or NULL. */
static PyObject *
hook_make(tl_state *st, PyObject *prev, int threading, tl_hook **out)
{
    tl_hook *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        Py_XDECREF(prev);
        return NULL;
    }
    h->st = st;
    h->prev = prev;
    h->threading = threading;
    PyObject *cap = PyCapsule_New(h, "pytracekit.timeline.ring", hook_free);
    if (cap == NULL) {
        Py_XDECREF(prev);
        free(h);
        return NULL;
    }
    PyObject *fn = PyCFunction_New(&ring_hook_def, cap);
    Py_DECREF(cap);
    if (fn != NULL) {
        *out = h;
    }
    return fn;
}

static void
ring_hook_sys(tl_state *st)
{
    tl_ring *r = st->ring;
    PyObject *prev = PySys_GetObject("excepthook"); /* borrowed */
    PyObject *fn = hook_make(st, Py_XNewRef(prev), 0, &r->sys_hook);
    if (fn == NULL || PySys_SetObject("excepthook", fn) != 0) {
        if (r->sys_hook != NULL) {
            r->sys_hook->st = NULL;
            r->sys_hook = NULL;
        }
        Py_XDECREF(fn);
        PyErr_Clear();
        st->host->log(st->ctx, "sys.excepthook cannot be wrapped: no dump on an "
                               "uncaught exception");
        return;
    }
    r->sys_fn = fn;
}

/* threading.excepthook, once threading is imported (never imported here). */
static void
ring_hook_threading(tl_state *st)
{
    tl_ring *r = st->ring;
    if (r->thr_fn != NULL) {
        return;
    }
    PyObject *name = PyUnicode_FromString("threading");
    PyObject *mod = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    PyObject *prev = mod ? PyObject_GetAttrString(mod, "excepthook") : NULL;
    PyObject *fn = prev ? hook_make(st, prev, 1, &r->thr_hook) : NULL;
    if (fn != NULL && PyObject_SetAttrString(mod, "excepthook", fn) == 0) {
        r->thr_fn = fn;
    }
    else {
        if (r->thr_hook != NULL) {
            r->thr_hook->st = NULL;
            r->thr_hook = NULL;
        }
        Py_XDECREF(fn);
    }
    Py_XDECREF(mod);
    PyErr_Clear();
}

/* Puts the replaced hook back where ours still is; ours calls nothing of
 * the instance any more wherever it stays. */
static void
ring_unhook(tl_ring *r)
{
    if (r->sys_fn != NULL) {
        r->sys_hook->st = NULL;
        if (PySys_GetObject("excepthook") == r->sys_fn) {
            PySys_SetObject("excepthook", r->sys_hook->prev);
        }
        Py_CLEAR(r->sys_fn);
    }
    if (r->thr_fn != NULL) {
        r->thr_hook->st = NULL;
        PyObject *name = PyUnicode_FromString("threading");
        PyObject *mod = name ? PyImport_GetModule(name) : NULL;
        PyObject *cur = mod ? PyObject_GetAttrString(mod, "excepthook") : NULL;
        if (cur == r->thr_fn) {
            PyObject_SetAttrString(mod, "excepthook", r->thr_hook->prev);
        }
        Py_XDECREF(cur);
        Py_XDECREF(mod);
        Py_XDECREF(name);
        Py_CLEAR(r->thr_fn);
    }
    PyErr_Clear();
}

/* ---- the plugin's side ------------------------------------------------------- */

int
tl__ring_parse_trigger(const char *spec, char **glob, uint64_t *ns)
{
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    if (colon == NULL || colon == spec) {
        return -1;
    }
    char *end;
    errno = 0;
    double ms = strtod(colon + 1, &end);
    if (end == colon + 1 || *end != '\0' || errno != 0 || !(ms >= 0) || ms > 9e9) {
        return -1;
    }
    if (glob != NULL) {
        *glob = strndup(spec, (size_t)(colon - spec));
        if (*glob == NULL) {
            return -1;
        }
    }
    if (ns != NULL) {
        *ns = (uint64_t)(ms * 1e6 + 0.5);
    }
    return 0;
}

int
tl__ring_new(tl_state *st, double seconds, int64_t mb, const char *trigger)
{
    tl_ring *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return -1;
    }
    st->ring = r;
    r->window_ns = (uint64_t)(seconds * 1e9 + 0.5);
    r->max_chunks = (size_t)((uint64_t)mb * 1024 * 1024 / sizeof(tl_chunk));
    if (r->max_chunks < 2) {
        r->max_chunks = 2;
    }
    r->chunks = calloc(r->max_chunks, sizeof(*r->chunks));
    r->dumps = PyList_New(0);
    if (r->chunks == NULL || r->dumps == NULL ||
        (trigger != NULL && trigger[0] != '\0' &&
         tl__ring_parse_trigger(trigger, &r->trig_glob, &r->trig_ns) != 0)) {
        PyErr_Clear();
        return -1;
    }
    st->fmt = &tl__ring_format;
    return 0;
}

int
tl__ring_start(tl_state *st, uint64_t now)
{
    (void)now;
    ring_hook_sys(st);
    ring_hook_threading(st);
    return PTK_OK;
}

void
tl__ring_thread_seen(tl_state *st)
{
    if (st->ring->thr_fn == NULL && st->started) {
        ring_hook_threading(st);
    }
}

PyObject *
tl__ring_summary(tl_state *st)
{
    tl_ring *r = st->ring;
    size_t records = 0;
    for (size_t k = 0; k < r->nchunks; k++) {
        records += r->chunks[(r->head + k) % r->max_chunks]->n;
    }
    PyObject *dumps = PyList_GetSlice(r->dumps, 0, PY_SSIZE_T_MAX);
    if (dumps == NULL) {
        return NULL;
    }
    return Py_BuildValue(
        "{s:d,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:s,s:d,s:K,s:K,s:N}",
        "window_s", (double)r->window_ns / 1e9,
        "origin_ns", (unsigned long long)st->t_origin,
        "cap_bytes", (unsigned long long)(r->max_chunks * sizeof(tl_chunk)),
        "bytes", (unsigned long long)(r->allocated * sizeof(tl_chunk)),
        "chunk_bytes", (unsigned long long)sizeof(tl_chunk),
        "record_bytes", (unsigned long long)sizeof(tl_rec),
        "records", (unsigned long long)records,
        "recorded", (unsigned long long)r->recorded,
        "lost_in_window", (unsigned long long)r->lost,
        "trigger", r->trig_glob ? r->trig_glob : "",
        "trigger_ms", (double)r->trig_ns / 1e6,
        "triggers", (unsigned long long)r->triggers,
        "triggers_suppressed", (unsigned long long)r->triggers_suppressed,
        "dumps", dumps);
}

int
tl__ring_report(tl_state *st, const ptk_report_args *args, PyObject **ring_info)
{
    tl_ring *r = st->ring;
    *ring_info = NULL;
    if (!st->started) {
        /* no event yet: started now (the hooks too, for what comes after
         * a report while the session runs); an empty dump */
        int src = tl__start(st, st->host->clock_ns());
        if (src != PTK_OK) {
            return src;
        }
    }
    uint64_t now = st->host->clock_ns();
    if (r->pending) {
        tl__ring_after_event(st);
    }
    int rc = ring_dump(st, st->out_fmt->filename, "report", now, ring_from(r, now), NULL);
    if (rc == PTK_OK) {
        PyObject *last = PyList_GET_SIZE(r->dumps) > 0
                             ? PyList_GET_ITEM(r->dumps, PyList_GET_SIZE(r->dumps) - 1)
                             : NULL;
        PyObject *spans = last ? PyDict_GetItemString(last, "spans") : NULL;
        PyObject *open = last ? PyDict_GetItemString(last, "open_spans") : NULL;
        PyObject *file = last ? PyDict_GetItemString(last, "file") : NULL;
        const char *fname = file ? PyUnicode_AsUTF8(file) : NULL;
        fprintf(args->summary,
                "timeline: ring of the last %g s: %s: %llu spans, %llu still "
                "running; %zu KiB of ring (cap %zu KiB), %llu dumps\n",
                (double)r->window_ns / 1e9, fname ? fname : st->out_fmt->filename,
                spans ? PyLong_AsUnsignedLongLong(spans) : 0ULL,
                open ? PyLong_AsUnsignedLongLong(open) : 0ULL,
                r->allocated * sizeof(tl_chunk) / 1024,
                r->max_chunks * sizeof(tl_chunk) / 1024, (unsigned long long)r->seq);
        PyErr_Clear();
        if (r->lost > 0) {
            fprintf(args->summary,
                    "timeline: %llu spans of the window were dropped at the "
                    "ring's cap (ring_mb): the dumps begin later than %g s back\n",
                    (unsigned long long)r->lost, (double)r->window_ns / 1e9);
        }
    }
    *ring_info = tl__ring_summary(st);
    return rc;
}

void
tl__ring_track_free(tl_track *t)
{
    if (t->ring != NULL) {
        free(t->ring->open);
        free(t->ring);
        t->ring = NULL;
    }
}

void
tl__ring_free(tl_state *st, int py)
{
    tl_ring *r = st->ring;
    if (r == NULL) {
        return;
    }
    if (py) {
        ring_unhook(r);
        Py_CLEAR(r->dumps);
    }
    for (size_t k = 0; k < r->nchunks; k++) {
        big_free(r->chunks[(r->head + k) % r->max_chunks], sizeof(tl_chunk));
    }
    free(r->chunks);
    free(r->tracks);
    free(r->trig_glob);
    free(r);
    st->ring = NULL;
}
