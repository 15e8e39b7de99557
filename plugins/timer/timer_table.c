/* timer: the arena and the pointer-pair hash map. */
#include "timer.h"

#include <stdlib.h>
#include <string.h>

/* ---- arena -------------------------------------------------------------- */

struct tm_block {
    struct tm_block *next;
    /* data follows, aligned like max_align_t */
};

#define TM_BLOCK_SIZE ((size_t)64 * 1024)
#define TM_ALIGN ((size_t)16)

void *
tm__arena_alloc(tm_arena *a, size_t size)
{
    size = (size + TM_ALIGN - 1) & ~(TM_ALIGN - 1);
    if (size > a->left) {
        size_t want = size > TM_BLOCK_SIZE ? size : TM_BLOCK_SIZE;
        size_t head = (sizeof(struct tm_block) + TM_ALIGN - 1) & ~(TM_ALIGN - 1);
        struct tm_block *b = calloc(1, head + want);
        if (b == NULL) {
            return NULL;
        }
        b->next = a->head;
        a->head = b;
        a->cur = (char *)b + head;
        a->left = want;
    }
    void *p = a->cur;
    a->cur += size;
    a->left -= size;
    return p;
}

void
tm__arena_free(tm_arena *a)
{
    struct tm_block *b = a->head;
    while (b != NULL) {
        struct tm_block *next = b->next;
        free(b);
        b = next;
    }
    memset(a, 0, sizeof(*a));
}

/* ---- map ---------------------------------------------------------------- */

static inline size_t
tm_hash(const void *a, const void *b)
{
    uint64_t x = (uint64_t)(uintptr_t)a * UINT64_C(0x9E3779B97F4A7C15);
    x ^= (uint64_t)(uintptr_t)b * UINT64_C(0xC2B2AE3D27D4EB4F);
    x ^= x >> 29;
    return (size_t)x;
}

void *
tm__map_get(const tm_map *m, const void *a, const void *b)
{
    if (m->slots == NULL) {
        return NULL;
    }
    size_t i = tm_hash(a, b) & m->mask;
    for (;;) {
        const tm_map_slot *s = &m->slots[i];
        if (s->value == NULL) {
            return NULL;
        }
        if (s->a == a && s->b == b) {
            return s->value;
        }
        i = (i + 1) & m->mask;
    }
}

static void
tm_map_insert(tm_map_slot *slots, size_t mask, const void *a, const void *b,
              void *value)
{
    size_t i = tm_hash(a, b) & mask;
    while (slots[i].value != NULL) {
        i = (i + 1) & mask;
    }
    slots[i].a = a;
    slots[i].b = b;
    slots[i].value = value;
}

int
tm__map_put(tm_map *m, const void *a, const void *b, void *value)
{
    if (m->slots == NULL || (m->count + 1) * 2 > m->mask + 1) {
        size_t cap = m->slots == NULL ? 64 : (m->mask + 1) * 2;
        tm_map_slot *slots = calloc(cap, sizeof(*slots));
        if (slots == NULL) {
            return -1;
        }
        if (m->slots != NULL) {
            for (size_t i = 0; i <= m->mask; i++) {
                if (m->slots[i].value != NULL) {
                    tm_map_insert(slots, cap - 1, m->slots[i].a, m->slots[i].b,
                                  m->slots[i].value);
                }
            }
            free(m->slots);
        }
        m->slots = slots;
        m->mask = cap - 1;
    }
    tm_map_insert(m->slots, m->mask, a, b, value);
    m->count++;
    return 0;
}

void
tm__map_free(tm_map *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}
