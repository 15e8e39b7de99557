/*
 * timeline: the process's contexts (ptk_context_set(); under pytest -p
 * pytracekit, each phase of each test) as spans on a track of their own,
 * "contexts", beside the threads: one span per context, named by it, from
 * the first event in it to the first event after it (or the end of the
 * trace). Not on a thread's track: a context starts inside one frame and
 * ends inside another, and a thread track's spans must nest.
 */
#include "tl_private.h"

#include <stdlib.h>
#include <string.h>

/* The contexts track's identity: beside the counter tracks (uuids 2-4, the
 * live-object ones above them) and below the threads' (0x100 + index). */
#define TL_CTX_UUID 0xF0
#define TL_CTX_TID 999999999

/* Ends the open context span at @p now (owed while dropping). */
static void
tl_ctx_end(tl_state *st, uint64_t now)
{
    if (!st->ctx_open) {
        return;
    }
    st->ctx_open = 0;
    if (!tl__can_write(st, now) || st->fmt->end(st, &st->ctx_track, now) != 0) {
        tl__drop(st);
        if (PTK_KIT_RESERVE(st->ctx_track.owed, st->ctx_track.owed_cap,
                            st->ctx_track.nowed + 1, 16) != 0) {
            st->host->log(st->ctx, "out of memory: a context span is left open");
            return;
        }
        st->ctx_track.owed[st->ctx_track.nowed++] = now;
    }
}

int
tl__ctx_switch(tl_state *st, uint64_t id, uint64_t now)
{
    uint64_t again;
    const char *name = st->host->context(&again);
    tl_ctx_end(st, now);
    st->ctx_id = id;
    if (name == NULL) {
        return PTK_OK;
    }
    if (st->ctx_track.name == NULL) {
        if (tl__track_init(&st->ctx_track, TL_TRACK_TASK, TL_CTX_UUID, "contexts") != 0) {
            return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory naming a context");
        }
        st->ctx_track.tid = TL_CTX_TID;
        st->ctx_track.named = 1;
    }
    /* a name of its own for each span: the Perfetto encoder interns it */
    tl_name *n = calloc(1, sizeof(*n));
    if (n == NULL || PTK_KIT_RESERVE(st->ctx_names, st->ctx_names_cap, st->nctx_names + 1, 64) != 0 ||
        tl__name_label(n, name) != 0) {
        if (n != NULL) {
            free(n->text);
            free(n->json);
            free(n);
        }
        return st->host->fail(st->ctx, PTK_ENOMEM, "out of memory naming a context");
    }
    st->ctx_names[st->nctx_names++] = n;
    if (!tl__can_write(st, now) || st->fmt->begin(st, &st->ctx_track, n, now) != 0) {
        tl__drop(st);
        return PTK_OK;
    }
    st->ctx_open = 1;
    st->spans++;
    return PTK_OK;
}

void
tl__ctx_finish(tl_state *st, uint64_t now)
{
    tl_ctx_end(st, now);
}

void
tl__ctx_free(tl_state *st)
{
    for (size_t i = 0; i < st->nctx_names; i++) {
        free(st->ctx_names[i]->text);
        free(st->ctx_names[i]->json);
        free(st->ctx_names[i]);
    }
    free(st->ctx_names);
    free(st->ctx_track.name);
    free(st->ctx_track.owed);
}
