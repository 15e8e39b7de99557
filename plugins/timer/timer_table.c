/* timer: the arena (the pointer-pair map is the kit's, plugins/common). */
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
