/*
 * timeline: the Perfetto protobuf encoder (format=perfetto, the default).
 *
 * A hand-written encoder for the few messages of Perfetto's published
 * protos (protos/perfetto/trace/) that a timeline needs. The file is a
 * `Trace` — `repeated TracePacket packet = 1` — so it is a sequence of
 * length-delimited packets, and any prefix that ends between two packets is
 * itself a valid trace. Every packet goes on one sequence
 * (trusted_packet_sequence_id 1). The first packet clears the incremental
 * state and interns the annotation names "file" and "line"; a span's name
 * (and its file) is interned in the packet that first uses it, so the file
 * grows with the events, not with the length of names.
 *
 * Field numbers used (proto2, perfetto.protos):
 *   TracePacket: timestamp 8, trusted_packet_sequence_id 10, track_event 11,
 *     interned_data 12, sequence_flags 13 (1 = INCREMENTAL_STATE_CLEARED,
 *     2 = NEEDS_INCREMENTAL_STATE), track_descriptor 60
 *   TrackDescriptor: uuid 1, name 2, process 3, thread 4, parent_uuid 5,
 *     counter 8 (CounterDescriptor, empty)
 *   ProcessDescriptor: pid 1, process_name 6
 *   ThreadDescriptor: pid 1, tid 2, thread_name 5
 *   TrackEvent: debug_annotations 4, type 9 (1 SLICE_BEGIN, 2 SLICE_END,
 *     3 INSTANT, 4 COUNTER), name_iid 10, track_uuid 11,
 *     double_counter_value 44
 *   DebugAnnotation: name_iid 1, int_value 4, string_value_iid 17
 *   InternedData: event_names 2 (EventName: iid 1, name 2),
 *     debug_annotation_names 3 (DebugAnnotationName: iid 1, name 2),
 *     debug_annotation_string_values 29 (InternedString: iid 1, str 2)
 */
#include "timeline.h"

#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };
enum { TL_SEQ = 1, TL_AN_FILE = 1, TL_AN_LINE = 2 };

static inline char *
pb_varint(char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (char)v;
    return p;
}

static inline char *
pb_key(char *p, unsigned field, unsigned wt)
{
    return pb_varint(p, ((uint64_t)field << 3) | wt);
}

static inline char *
pb_uint(char *p, unsigned field, uint64_t v)
{
    return pb_varint(pb_key(p, field, WT_VARINT), v);
}

static char *
pb_bytes(char *p, unsigned field, const char *s, size_t n)
{
    p = pb_varint(pb_key(p, field, WT_LEN), n);
    memcpy(p, s, n);
    return p + n;
}

static char *
pb_str(char *p, unsigned field, const char *s)
{
    return pb_bytes(p, field, s, strlen(s));
}

static char *
pb_double(char *p, unsigned field, double v)
{
    p = pb_key(p, field, WT_I64);
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++) {
        *p++ = (char)(u >> (8 * i));
    }
    return p;
}

/* A length-delimited field whose length is known when it ends: one byte is
 * kept for the length; pb_close moves the body if the length needs more. */
static inline char *
pb_open(char *p, unsigned field, char **mark)
{
    p = pb_key(p, field, WT_LEN);
    *mark = p;
    return p + 1;
}

static char *
pb_close(char *p, char *mark)
{
    size_t n = (size_t)(p - (mark + 1));
    if (n < 0x80) {
        *mark = (char)n;
        return p;
    }
    char tmp[10];
    size_t k = (size_t)(pb_varint(tmp, n) - tmp);
    memmove(mark + k, mark + 1, n);
    memcpy(mark, tmp, k);
    return mark + k + n;
}

/* Room for a packet of at most @p n bytes (plus its framing). */
static char *
pb_room(tl_state *st, size_t n, uint64_t now, char **start)
{
    char *p = tl__reserve(st, n + 16, now);
    *start = p;
    return p;
}

/* The descriptor packet of a track, the first time it is used. */
static char *
pb_describe(char *p, tl_state *st, tl_track *t)
{
    char *pk, *td, *sub;
    p = pb_open(p, 1, &pk);
    p = pb_uint(p, 10, TL_SEQ);
    p = pb_open(p, 60, &td);
    p = pb_uint(p, 1, t->uuid);
    if (t->kind != TL_TRACK_PROCESS) {
        p = pb_uint(p, 5, st->process_track.uuid);
    }
    switch (t->kind) {
    case TL_TRACK_PROCESS:
        p = pb_open(p, 3, &sub);
        p = pb_uint(p, 1, (uint64_t)st->pid);
        p = pb_str(p, 6, t->name);
        p = pb_close(p, sub);
        break;
    case TL_TRACK_THREAD:
        p = pb_open(p, 4, &sub);
        p = pb_uint(p, 1, (uint64_t)st->pid);
        p = pb_uint(p, 2, (uint64_t)t->tid);
        p = pb_str(p, 5, t->name);
        p = pb_close(p, sub);
        break;
    case TL_TRACK_COUNTER:
        p = pb_str(p, 2, t->name);
        p = pb_open(p, 8, &sub);
        p = pb_close(p, sub);
        break;
    default:
        p = pb_str(p, 2, t->name);
        break;
    }
    p = pb_close(p, td);
    p = pb_close(p, pk);
    t->described = 1;
    t->pb_uuid_len = (uint8_t)(pb_uint((char *)t->pb_uuid, 11, t->uuid) -
                               (char *)t->pb_uuid);
    return p;
}

static size_t
pb_describe_size(const tl_track *t)
{
    return t->described ? 0 : 64 + strlen(t->name);
}

/* TracePacket header: timestamp and sequence. */
static char *
pb_packet(char *p, uint64_t ts, int needs_state, char **pk)
{
    p = pb_open(p, 1, pk);
    p = pb_uint(p, 8, ts);
    p = pb_uint(p, 10, TL_SEQ);
    if (needs_state) {
        p = pb_uint(p, 13, 2);
    }
    return p;
}

static int
pb_start(tl_state *st, uint64_t now)
{
    char *start, *pk, *id, *e;
    char *p = pb_room(st, 128 + pb_describe_size(&st->process_track), now,
                      &start);
    if (p == NULL) {
        return -1;
    }
    p = pb_open(p, 1, &pk);
    p = pb_uint(p, 8, now);
    p = pb_uint(p, 10, TL_SEQ);
    p = pb_uint(p, 13, 1);
    p = pb_open(p, 12, &id);
    p = pb_open(p, 3, &e);
    p = pb_uint(p, 1, TL_AN_FILE);
    p = pb_str(p, 2, "file");
    p = pb_close(p, e);
    p = pb_open(p, 3, &e);
    p = pb_uint(p, 1, TL_AN_LINE);
    p = pb_str(p, 2, "line");
    p = pb_close(p, e);
    p = pb_close(p, id);
    p = pb_close(p, pk);
    p = pb_describe(p, st, &st->process_track);
    tl__out_commit(&st->out, (size_t)(p - start));
    st->pb_next_iid = 1;
    st->pb_next_file_iid = 1;
    return 0;
}

/* The BEGIN of a known name on a described track: the packet from
 * precomputed pieces (both lengths fit in one byte). */
static int
pb_begin_fast(tl_state *st, tl_track *t, tl_name *n, uint64_t ts)
{
    char *p = tl__reserve(st, 96, ts);
    if (p == NULL) {
        return -1;
    }
    char *q = p + 2;
    *q++ = (char)(8 << 3);               /* timestamp */
    q = pb_varint(q, ts);
    *q++ = (char)(10 << 3);              /* trusted_packet_sequence_id */
    *q++ = TL_SEQ;
    *q++ = (char)(13 << 3);              /* sequence_flags */
    *q++ = 2;
    *q++ = (char)(11 << 3 | WT_LEN);     /* track_event */
    char *len = q++;
    *q++ = (char)(9 << 3);               /* type */
    *q++ = 1;
    /* fixed-size copies (inlined; the room is there): then advance */
    memcpy(q, t->pb_uuid, sizeof(t->pb_uuid));
    q += t->pb_uuid_len;
    memcpy(q, n->pb_tail, sizeof(n->pb_tail));
    q += n->pb_tail_len;
    *len = (char)(q - len - 1);
    p[0] = (char)(1 << 3 | WT_LEN);
    p[1] = (char)(q - p - 2);
    t->last_ts = ts;
    tl__out_commit(&st->out, (size_t)(q - p));
    return 0;
}

/* Precomputes a name's BEGIN tail once its name and file are interned. */
static void
pb_make_tail(tl_name *n)
{
    char buf[96];
    char *e, *p = pb_uint(buf, 10, n->iid);
    if (n->file != NULL) {
        p = pb_open(p, 4, &e);
        p = pb_uint(p, 1, TL_AN_FILE);
        p = pb_uint(p, 17, n->file->iid);
        p = pb_close(p, e);
        p = pb_open(p, 4, &e);
        p = pb_uint(p, 1, TL_AN_LINE);
        p = pb_uint(p, 4, (uint64_t)(int64_t)n->line);
        p = pb_close(p, e);
    }
    size_t len = (size_t)(p - buf);
    if (len <= sizeof(n->pb_tail)) {
        memcpy(n->pb_tail, buf, len);
        n->pb_tail_len = (uint8_t)len;
    }
}

/* A BEGIN or INSTANT with an interned name (interned here if new). */
static int
pb_named(tl_state *st, tl_track *t, tl_name *n, uint64_t ts, unsigned type)
{
    tl_file *f = type == 1 ? (tl_file *)n->file : NULL;
    size_t need = 96 + pb_describe_size(t) + pb_describe_size(&st->process_track);
    if (n->iid == 0) {
        need += 32 + strlen(n->text);
    }
    if (f != NULL && f->iid == 0) {
        need += 32 + strlen(f->text);
    }
    char *start, *pk, *te, *id, *e;
    char *p = pb_room(st, need, ts, &start);
    if (p == NULL) {
        return -1;
    }
    if (!t->described) {
        p = pb_describe(p, st, t);
    }
    p = pb_packet(p, ts, 1, &pk);
    uint64_t niid = n->iid, fiid = f ? f->iid : 0;
    if (niid == 0 || (f != NULL && fiid == 0)) {
        p = pb_open(p, 12, &id);
        if (niid == 0) {
            niid = st->pb_next_iid++;
            p = pb_open(p, 2, &e);
            p = pb_uint(p, 1, niid);
            p = pb_str(p, 2, n->text);
            p = pb_close(p, e);
        }
        if (f != NULL && fiid == 0) {
            fiid = st->pb_next_file_iid++;
            p = pb_open(p, 29, &e);
            p = pb_uint(p, 1, fiid);
            p = pb_str(p, 2, f->text);
            p = pb_close(p, e);
        }
        p = pb_close(p, id);
    }
    p = pb_open(p, 11, &te);
    p = pb_uint(p, 9, type);
    p = pb_uint(p, 11, t->uuid);
    p = pb_uint(p, 10, niid);
    if (f != NULL) {
        p = pb_open(p, 4, &e);
        p = pb_uint(p, 1, TL_AN_FILE);
        p = pb_uint(p, 17, fiid);
        p = pb_close(p, e);
        p = pb_open(p, 4, &e);
        p = pb_uint(p, 1, TL_AN_LINE);
        p = pb_uint(p, 4, (uint64_t)(int64_t)n->line);
        p = pb_close(p, e);
    }
    p = pb_close(p, te);
    p = pb_close(p, pk);
    /* Only now is the packet in the output: the interned entries count. */
    n->iid = niid;
    if (f != NULL) {
        f->iid = fiid;
    }
    t->last_ts = ts;
    tl__out_commit(&st->out, (size_t)(p - start));
    return 0;
}

static int
pb_begin(tl_state *st, tl_track *t, tl_name *n, uint64_t ts)
{
    if (n->pb_tail_len != 0 && t->described) {
        return pb_begin_fast(st, t, n, ts);
    }
    if (pb_named(st, t, n, ts, 1) != 0) {
        return -1;
    }
    pb_make_tail(n);
    return 0;
}

static int
pb_instant(tl_state *st, tl_track *t, tl_name *n, uint64_t ts, int global)
{
    return pb_named(st, global ? &st->process_track : t, n, ts, 3);
}

static int
pb_end(tl_state *st, tl_track *t, uint64_t ts)
{
    if (t->described) {
        char *p = tl__reserve(st, 48, ts);
        if (p == NULL) {
            return -1;
        }
        char *q = p + 2;
        *q++ = (char)(8 << 3);
        q = pb_varint(q, ts);
        *q++ = (char)(10 << 3);
        *q++ = TL_SEQ;
        *q++ = (char)(11 << 3 | WT_LEN);
        *q++ = (char)(2 + t->pb_uuid_len);
        *q++ = (char)(9 << 3);
        *q++ = 2;
        memcpy(q, t->pb_uuid, sizeof(t->pb_uuid));
        q += t->pb_uuid_len;
        p[0] = (char)(1 << 3 | WT_LEN);
        p[1] = (char)(q - p - 2);
        t->last_ts = ts;
        tl__out_commit(&st->out, (size_t)(q - p));
        return 0;
    }
    char *start, *pk, *te;
    char *p = pb_room(st, 48 + pb_describe_size(t), ts, &start);
    if (p == NULL) {
        return -1;
    }
    if (!t->described) {
        p = pb_describe(p, st, t);
    }
    p = pb_packet(p, ts, 0, &pk);
    p = pb_open(p, 11, &te);
    p = pb_uint(p, 9, 2);
    p = pb_uint(p, 11, t->uuid);
    p = pb_close(p, te);
    p = pb_close(p, pk);
    t->last_ts = ts;
    tl__out_commit(&st->out, (size_t)(p - start));
    return 0;
}

static int
pb_counter(tl_state *st, tl_track *t, double v, uint64_t ts)
{
    char *start, *pk, *te;
    char *p = pb_room(st, 64 + pb_describe_size(t), ts, &start);
    if (p == NULL) {
        return -1;
    }
    if (!t->described) {
        p = pb_describe(p, st, t);
    }
    p = pb_packet(p, ts, 0, &pk);
    p = pb_open(p, 11, &te);
    p = pb_uint(p, 9, 4);
    p = pb_uint(p, 11, t->uuid);
    p = pb_double(p, 44, v);
    p = pb_close(p, te);
    p = pb_close(p, pk);
    t->last_ts = ts;
    tl__out_commit(&st->out, (size_t)(p - start));
    return 0;
}

/* TrackDescriptors may be emitted again; the new one carries the name. */
static int
pb_rename(tl_state *st, tl_track *t, uint64_t now)
{
    if (!t->described) {
        return 0;
    }
    char *start;
    char *p = pb_room(st, 64 + strlen(t->name), now, &start);
    if (p == NULL) {
        return -1;
    }
    p = pb_describe(p, st, t);
    tl__out_commit(&st->out, (size_t)(p - start));
    return 0;
}

static int
pb_finish(tl_state *st)
{
    (void)st;
    return 0; /* a Trace has no closing bytes */
}

const tl_format tl__pb_format = {
    .filename = "timeline.perfetto-trace",
    .start = pb_start,
    .begin = pb_begin,
    .end = pb_end,
    .instant = pb_instant,
    .counter = pb_counter,
    .finish = pb_finish,
    .rename = pb_rename,
};
