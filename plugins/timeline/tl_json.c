/*
 * timeline: the Chrome trace-event JSON encoder (format=json).
 *
 * The JSON Array Format: `[`, then one event object per record, each
 * record starting with ",\n" (the first one after `[` is the process-name
 * metadata event). The closing `]` is written at the end; Chrome's format
 * lets it be missing, so any prefix the writer left behind opens as it is.
 * Timestamps are microseconds since the session started, with ns decimals.
 */
#include "timeline.h"

#include <string.h>

#include "../common/json_quote.h"
#include "../common/put_decimal.h"

static char *
tl_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return ptk_put_u64(p, (uint64_t)0 - (uint64_t)v);
    }
    return ptk_put_u64(p, (uint64_t)v);
}

static char *
tl_cpy(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

#define TL_LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

/* µs with three decimals since the origin */
static char *
tl_ts(char *p, const tl_state *st, uint64_t ts)
{
    uint64_t rel = ts > st->t_origin ? ts - st->t_origin : 0;
    p = ptk_put_u64(p, rel / 1000);
    unsigned frac = (unsigned)(rel % 1000);
    *p++ = '.';
    *p++ = (char)('0' + frac / 100);
    *p++ = (char)('0' + frac / 10 % 10);
    *p++ = (char)('0' + frac % 10);
    return p;
}

static char *
tl_head(char *p, const tl_state *st, const tl_track *t, const char *ph,
        uint64_t ts)
{
    p = TL_LIT(p, ",\n{\"ph\":\"");
    p = tl_cpy(p, ph);
    p = TL_LIT(p, "\",\"pid\":");
    p = tl_i64(p, st->pid);
    p = TL_LIT(p, ",\"tid\":");
    p = tl_i64(p, t->tid);
    p = TL_LIT(p, ",\"ts\":");
    return tl_ts(p, st, ts);
}

/* Room for one record of at most @p n bytes, with the track's metadata in
 * front of it the first time the track is used. NULL: dropped. */
static char *
tl_room(tl_state *st, tl_track *t, size_t n, uint64_t now, char **start)
{
    size_t meta = 0;
    if (!t->described && t->kind != TL_TRACK_COUNTER) {
        meta = 96 + strlen(t->name) * 6 + 64;
    }
    char *p = tl__reserve(st, n + meta, now);
    if (p == NULL) {
        return NULL;
    }
    *start = p;
    if (meta) {
        char *q = ptk_kit_json_quote(t->name, strlen(t->name));
        if (q == NULL) {
            return NULL;
        }
        p = TL_LIT(p, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
        p = tl_i64(p, st->pid);
        p = TL_LIT(p, ",\"tid\":");
        p = tl_i64(p, t->tid);
        p = TL_LIT(p, ",\"args\":{\"name\":");
        p = tl_cpy(p, q);
        p = TL_LIT(p, "}}");
        p = TL_LIT(p, ",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":");
        p = tl_i64(p, st->pid);
        p = TL_LIT(p, ",\"tid\":");
        p = tl_i64(p, t->tid);
        p = TL_LIT(p, ",\"args\":{\"sort_index\":");
        p = tl_i64(p, t->tid);
        p = TL_LIT(p, "}}");
        free(q);
    }
    return p;
}

static void
tl_done(tl_state *st, tl_track *t, char *start, char *p, uint64_t ts)
{
    t->described = 1;
    t->last_ts = ts;
    tl__out_commit(&st->out, (size_t)(p - start));
}

static int
tl_json_start(tl_state *st, uint64_t now)
{
    const char *name = st->process_track.name;
    char *q = ptk_kit_json_quote(name, strlen(name));
    if (q == NULL) {
        return -1;
    }
    char *start = tl__reserve(st, 128 + strlen(q), now);
    if (start == NULL) {
        free(q);
        return -1;
    }
    char *p = start;
    p = TL_LIT(p, "[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    p = tl_i64(p, st->pid);
    p = TL_LIT(p, ",\"args\":{\"name\":");
    p = tl_cpy(p, q);
    p = TL_LIT(p, "}}");
    free(q);
    tl__out_commit(&st->out, (size_t)(p - start));
    return 0;
}

static int
tl_json_begin(tl_state *st, tl_track *t, tl_name *n, uint64_t ts)
{
    size_t need = 128 + strlen(n->json) + (n->file ? strlen(n->file->json) + 48 : 0);
    char *start;
    char *p = tl_room(st, t, need, ts, &start);
    if (p == NULL) {
        return -1;
    }
    p = tl_head(p, st, t, "B", ts);
    p = TL_LIT(p, ",\"name\":");
    p = tl_cpy(p, n->json);
    if (n->file != NULL) {
        p = TL_LIT(p, ",\"args\":{\"file\":");
        p = tl_cpy(p, n->file->json);
        p = TL_LIT(p, ",\"line\":");
        p = tl_i64(p, n->line);
        *p++ = '}';
    }
    *p++ = '}';
    tl_done(st, t, start, p, ts);
    return 0;
}

static int
tl_json_end(tl_state *st, tl_track *t, uint64_t ts)
{
    char *start;
    char *p = tl_room(st, t, 96, ts, &start);
    if (p == NULL) {
        return -1;
    }
    p = tl_head(p, st, t, "E", ts);
    *p++ = '}';
    tl_done(st, t, start, p, ts);
    return 0;
}

static int
tl_json_instant(tl_state *st, tl_track *t, tl_name *n, uint64_t ts, int global)
{
    char *start;
    char *p = tl_room(st, t, 128 + strlen(n->json), ts, &start);
    if (p == NULL) {
        return -1;
    }
    p = tl_head(p, st, t, "i", ts);
    p = global ? TL_LIT(p, ",\"s\":\"g\",\"name\":") : TL_LIT(p, ",\"s\":\"t\",\"name\":");
    p = tl_cpy(p, n->json);
    *p++ = '}';
    tl_done(st, t, start, p, ts);
    return 0;
}

static int
tl_json_counter(tl_state *st, tl_track *t, double v, uint64_t ts)
{
    char *start;
    char *p = tl_room(st, t, 160 + strlen(t->name) * 6, ts, &start);
    if (p == NULL) {
        return -1;
    }
    char *q = ptk_kit_json_quote(t->name, strlen(t->name));
    if (q == NULL) {
        return -1;
    }
    p = tl_head(p, st, t, "C", ts);
    p = TL_LIT(p, ",\"name\":");
    p = tl_cpy(p, q);
    free(q);
    p += sprintf(p, ",\"args\":{\"value\":%.17g}}", v);
    tl_done(st, t, start, p, ts);
    return 0;
}

static int
tl_json_rename(tl_state *st, tl_track *t, uint64_t now)
{
    if (!t->described) {
        return 0; /* the metadata goes with the first event */
    }
    t->described = 0;
    char *start;
    char *p = tl_room(st, t, 0, now, &start);
    if (p == NULL) {
        t->described = 1;
        return -1;
    }
    tl_done(st, t, start, p, t->last_ts);
    return 0;
}

static int
tl_json_finish(tl_state *st)
{
    char *p = tl__reserve(st, 4, st->out.last_handoff_ns);
    if (p == NULL) {
        return -1;
    }
    memcpy(p, "\n]\n", 3);
    tl__out_commit(&st->out, 3);
    return 0;
}

const tl_format tl__json_format = {
    .filename = "timeline.json",
    .start = tl_json_start,
    .begin = tl_json_begin,
    .end = tl_json_end,
    .instant = tl_json_instant,
    .counter = tl_json_counter,
    .finish = tl_json_finish,
    .rename = tl_json_rename,
};
