/* reftrack: objects created and destroyed, per type, and the objects still
 * alive at stop grouped by type and creation site. Private to the plugin.
 *
 * Everything reached from on_ref is plain C over malloc'd memory: no Python
 * object is created, no exception set or cleared, nothing called in Python.
 * Names (types, files, functions) are copied out of the live objects the
 * first time they are seen, so the report never touches an object that may
 * have died since. */
#ifndef PTK_REFTRACK_H
#define PTK_REFTRACK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "../common/fs_name.h"
#include "../common/grow.h"

#include <pytracekit/plugin.h>
#include <pytracekit/services.h>

/* Open addressing over 64-bit keys (0 = empty), linear probing, deletion by
 * backward shift (no tombstones). */
typedef struct rt_slot {
    uint64_t key;
    uint64_t val;
} rt_slot;

typedef struct rt_map {
    rt_slot *slots;
    uint64_t mask;   /* capacity - 1; capacity is a power of two */
    unsigned shift;  /* 64 - log2(capacity) */
    uint64_t n;
    uint64_t limit;  /* grow when n reaches this (70% of capacity) */
} rt_map;

/* Category of an object: made by the program, or only because tracing is
 * on (created while the thread runs a trace/profile callback: frame objects
 * the legacy hooks materialise, bound methods made for C_CALL, the hub's
 * and other tracers' own objects). */
enum { RT_PROGRAM = 0, RT_TRACING = 1 };

/* Bounds of the name tables, so that a program that makes types or code
 * objects without end (exec in a loop) cannot grow reftrack without end. */
#define RT_MAX_TYPES (UINT32_C(1) << 20)
#define RT_MAX_CODES (UINT32_C(1) << 20)
#define RT_MAX_SITES (UINT32_C(1) << 22)

typedef struct rt_stats {
    uint64_t created;   /* created while tracing */
    uint64_t destroyed; /* of those, destroyed while tracing */
    uint64_t alive;     /* of those, alive now (in the live table) */
    uint64_t peak;      /* highest `alive` */
    uint64_t untracked; /* created while the live table was full */
} rt_stats;

typedef struct rt_type {
    char *name;         /* module-qualified, copied at first sight */
    uintptr_t tp;       /* the type's address: compared, never followed */
    int verify;         /* instances always tracked by the GC (classes) */
    rt_stats s[2];      /* per category */
    uint64_t destroyed_untracked; /* DESTROY with no CREATE seen */
} rt_type;

typedef struct rt_code {
    char *file;
    char *function;
} rt_code;

typedef struct rt_site {
    uint32_t code;      /* index into codes */
    int32_t line;
} rt_site;

typedef struct rt_state {
    const ptk_host *host;
    ptk_plugin_ctx *ctx;
    int64_t top;
    uint64_t max_tracked;
    int sites;          /* record creation sites (needs the shadow stack) */

    rt_map live;        /* object -> type << 32 | site << 1 | category */
    uint64_t live_cap_max; /* capacity the live table may grow to */

    rt_map type_map;    /* PyTypeObject* -> index into types, while alive */
    rt_type *types;
    uint32_t ntypes;
    size_t types_cap;
    struct {
        PyTypeObject *tp;
        uint32_t ti;
    } tcache[64];       /* direct-mapped front of type_map */

    rt_map code_map;    /* PyCodeObject* -> index into codes, while alive */
    rt_code *codes;
    uint32_t ncodes;
    size_t codes_cap;
    PyCodeObject *last_code;
    uint32_t last_ci;

    rt_map addr_map;    /* (code + 1) << 32 | lasti -> site */
    rt_map line_map;    /* (code + 1) << 32 | line -> site */
    rt_site *site_tab;  /* site 0: unknown */
    uint32_t nsites;
    size_t sites_cap;

    uint64_t events;
    uint64_t overflow;          /* CREATEs not tracked: live table full */
    uint64_t missed_destroy;    /* address reused with no DESTROY seen */
    uint64_t missed_at_stop;    /* class instances the GC no longer has */
    uint64_t dropped;           /* not counted at all: out of memory, or
                                   more than RT_MAX_TYPES types */
    uint64_t sites_dropped;     /* no site recorded: out of memory, or more
                                   than RT_MAX_CODES / RT_MAX_SITES */
    uint64_t first_event_ns;
    uint64_t last_event_ns;     /* clock at every 1024th event */
    int chained;                /* the hub forwarded to an earlier tracer */
    int destroy_missed;         /* this CPython skips DESTROY sometimes */
    PyObject *s_module;         /* "__module__", made at init */
    ptk_live_objects live_service; /* published: live objects per type */
} rt_state;

static inline uint64_t
rt_hash(uint64_t key, unsigned shift)
{
    return (key * UINT64_C(0x9E3779B97F4A7C15)) >> shift;
}

/* The slot holding @p key, or the empty slot where it would go. */
static inline rt_slot *
rt_map_find(const rt_map *m, uint64_t key)
{
    uint64_t i = rt_hash(key, m->shift);
    for (;;) {
        rt_slot *s = &m->slots[i];
        if (s->key == key || s->key == 0) {
            return s;
        }
        i = (i + 1) & m->mask;
    }
}

/* Removes the slot @p s (holding a key); backward shift keeps every other
 * key reachable from its home slot. */
static inline void
rt_map_erase(rt_map *m, rt_slot *s)
{
    uint64_t i = (uint64_t)(s - m->slots);
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->slots[j].key == 0) {
            break;
        }
        uint64_t home = rt_hash(m->slots[j].key, m->shift);
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = 0;
    m->slots[i].val = 0;
    m->n--;
}

/* reftrack.c */
int rt_map_init(rt_map *m, unsigned bits);
void rt_map_free(rt_map *m);

/* report.c */
int rt_report(rt_state *st, const ptk_report_args *args);

#endif /* PTK_REFTRACK_H */
