/* timeline: counters, GC spans, time-based flushing (tl__tick). */
#include "tl_private.h"
#include "../common/py_import.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- counters, GC, time-based flushing ----------------------------------- */

/* Threads the hub has named since their track was described (the
 * monitoring backend may learn a thread's name after its first event). */
void
tl__rename_threads(tl_state *st, uint64_t now)
{
    for (size_t i = 0; i < st->nthreads; i++) {
        tl_thread *th = st->threads[i];
        if (th == NULL || th->track.named || th->pt->name == NULL) {
            continue;
        }
        char *name = strdup(th->pt->name);
        if (name == NULL) {
            continue;
        }
        free(th->track.name);
        th->track.name = name;
        th->track.named = 1;
        if (st->fmt->rename(st, &th->track, now) != 0) {
            tl__drop(st);
        }
    }
}

/* Live objects per type from reftrack's service (services.h): the types
 * with the most objects get a counter track each, the first time they are
 * among the top `objects`; every such track gets a sample at each tick
 * (0 once the type is below the TL_OBJ_SCAN types with the most). */
#define TL_OBJ_SCAN 256

static void
tl_sample_objects(tl_state *st, uint64_t now)
{
    const ptk_host *h = st->host;
    if (h->struct_size < offsetof(ptk_host, lookup) + sizeof h->lookup) {
        return;
    }
    const ptk_live_objects *svc = h->lookup(st->ctx, PTK_SERVICE_LIVE_OBJECTS);
    if (svc == NULL || svc->struct_size < sizeof *svc) {
        return;
    }
    ptk_live_type top[TL_OBJ_SCAN];
    size_t n = svc->types(svc->state, top, TL_OBJ_SCAN);
    for (size_t i = 0; i < n && i < (size_t)st->objects; i++) {
        char label[300];
        snprintf(label, sizeof label, "live objects: %s", top[i].type);
        size_t k = 0;
        while (k < st->nobj && strcmp(st->obj_track[k].name, label) != 0) {
            k++;
        }
        if (k == st->nobj && st->nobj < TL_OBJ_TRACKS) {
            if (tl__track_init(&st->obj_track[k], TL_TRACK_COUNTER,
                               (UINT64_C(2) << 32) + k, label) != 0) {
                tl__drop(st); /* out of memory: the track's samples are lost */
                continue;
            }
            st->obj_track[k].tid = st->pid;
            st->nobj++;
        }
    }
    for (size_t k = 0; k < st->nobj; k++) {
        const char *type = st->obj_track[k].name + strlen("live objects: ");
        uint64_t alive = 0; /* a type made twice (at two addresses): summed */
        for (size_t i = 0; i < n; i++) {
            alive += strcmp(top[i].type, type) == 0 ? top[i].alive : 0;
        }
        if (st->fmt->counter(st, &st->obj_track[k], (double)alive, now) != 0) {
            tl__drop(st);
        }
    }
}

void
tl__tick(tl_state *st, uint64_t now)
{
    if (st->flush_ns > 0 && now - st->out.last_handoff_ns >= (uint64_t)st->flush_ns &&
        !st->dropping) {
        tl__out_kick(&st->out, now);
    }
    if (now >= st->next_counter) {
        if (!st->dropping) {
            tl__rename_threads(st, now);
        }
        uint64_t span = now - st->last_counter;
        if (st->counters && span > 0 && tl__can_write(st, now)) {
            double rate = (double)st->tick_events * 1e9 / (double)span;
            if (st->fmt->counter(st, &st->events_track, rate, now) != 0) {
                tl__drop(st);
            }
        }
        if (st->objects > 0 && tl__can_write(st, now)) {
            tl_sample_objects(st, now);
        }
        if (st->gc_cb != NULL && tl__can_write(st, now)) {
            double ms = (double)st->tick_gc_ns / 1e6;
            if (st->fmt->counter(st, &st->gc_track, ms, now) != 0) {
                tl__drop(st);
            }
        }
        st->tick_events = 0;
        st->tick_gc_ns = 0;
        st->last_counter = now;
        st->next_counter = now + TL_TICK_NS;
    }
    uint64_t next = st->next_counter;
    if (st->flush_ns > 0 && st->out.last_handoff_ns + (uint64_t)st->flush_ns < next) {
        next = st->out.last_handoff_ns + (uint64_t)st->flush_ns;
        if (next <= now) {
            next = now + (uint64_t)st->flush_ns / 4 + 1;
        }
    }
    st->next_tick = next;
}

/* gc.callbacks entry: a GC pause as a span on the collecting thread. */
static PyObject *
tl_gc_callback(PyObject *self, PyObject *args)
{
    tl_state *st = PyCapsule_GetPointer(self, "pytracekit.timeline");
    PyObject *phase, *info;
    if (st == NULL || !PyArg_ParseTuple(args, "OO", &phase, &info)) {
        return NULL;
    }
    uint64_t now = st->host->clock_ns();
    if (st->finished) {
        Py_RETURN_NONE;
    }
    if (PyUnicode_CompareWithASCIIString(phase, "start") == 0) {
        st->gc_t0 = now;
        Py_RETURN_NONE;
    }
    if (st->gc_t0 == 0) {
        Py_RETURN_NONE;
    }
    st->gc_count++;
    st->gc_total_ns += now - st->gc_t0;
    st->tick_gc_ns += now - st->gc_t0;
    if (st->in_event && st->gc_npending < 8) {
        st->gc_pending[st->gc_npending][0] = st->gc_t0;
        st->gc_pending[st->gc_npending][1] = now;
        st->gc_npending++;
    }
    else {
        tl__gc_span(st, st->gc_t0, now);
    }
    st->gc_t0 = 0;
    Py_RETURN_NONE;
}

/* A GC pause as a span on the collecting thread's current track. */
void
tl__gc_span(tl_state *st, uint64_t t0, uint64_t t1)
{
    const ptk_thread *pt = st->host->current_thread();
    tl_thread *th = pt ? tl__thread_of(st, pt) : NULL;
    if (th != NULL) {
        tl_frame f = {0};
        f.name = &st->gc_name;
        f.track = th->sp ? th->stack[th->sp - 1].track : &th->track;
        f.t0 = t0 > th->last_ns ? t0 : th->last_ns;
        f.skip = th->sp && th->stack[th->sp - 1].skip;
        tl__frame_end(st, th, &f, t1 > f.t0 ? t1 : f.t0);
    }
}

static PyMethodDef tl_gc_def = {"timeline_gc", tl_gc_callback, METH_VARARGS,
                                "pytracekit timeline: GC pauses"};

int
tl__gc_install(tl_state *st)
{
    PyObject *gc = ptk_kit_import("gc"); /* built in: imports nothing */
    PyObject *cbs = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    PyObject *cap = cbs ? PyCapsule_New(st, "pytracekit.timeline", NULL) : NULL;
    PyObject *fn = cap ? PyCFunction_New(&tl_gc_def, cap) : NULL;
    int rc = -1;
    if (fn != NULL && PyList_Check(cbs) && PyList_Append(cbs, fn) == 0) {
        st->gc_cb = Py_NewRef(fn);
        rc = 0;
    }
    Py_XDECREF(fn);
    Py_XDECREF(cap);
    Py_XDECREF(cbs);
    Py_XDECREF(gc);
    PyErr_Clear();
    return rc;
}

void
tl__gc_remove(tl_state *st)
{
    if (st->gc_cb == NULL) {
        return;
    }
    PyObject *gc = ptk_kit_import("gc");
    PyObject *cbs = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    if (cbs != NULL && PyList_Check(cbs)) {
        for (Py_ssize_t i = PyList_GET_SIZE(cbs) - 1; i >= 0; i--) {
            if (PyList_GET_ITEM(cbs, i) == st->gc_cb) {
                PySequence_DelItem(cbs, i);
                break;
            }
        }
    }
    Py_XDECREF(cbs);
    Py_XDECREF(gc);
    PyErr_Clear();
    Py_CLEAR(st->gc_cb);
}
