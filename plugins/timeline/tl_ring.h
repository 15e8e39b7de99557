/*
 * timeline: the flight recorder, ring=SECONDS (tl_ring.c). Private to
 * plugins/timeline: what the rest of the plugin calls.
 */
#ifndef PTK_TIMELINE_RING_H
#define PTK_TIMELINE_RING_H

#include "timeline.h"

/* The recorder the hot path writes to in ring mode (tl_state::fmt). */
extern const tl_format tl__ring_format;

/* "GLOB:MS" (MS may have a fraction) -> the glob (malloc'd, if @p glob)
 * and the minimum in ns. 0, or -1 if malformed. */
int tl__ring_parse_trigger(const char *spec, char **glob, uint64_t *ns);
/* Makes st->ring (a window of @p seconds, at most @p mb MiB of records,
 * @p trigger "GLOB:MS" or NULL/"") and makes the ring the recorder.
 * 0, or -1 (out of memory). */
int tl__ring_new(tl_state *st, double seconds, int64_t mb, const char *trigger);
/* At the first event: wraps sys.excepthook (and threading.excepthook,
 * once threading is imported). */
int tl__ring_start(tl_state *st, uint64_t now);
/* A thread's first event: threading may be imported now. */
void tl__ring_thread_seen(tl_state *st);
/* After each event: the trigger dump, if a trigger= span ended in it. */
void tl__ring_after_event(tl_state *st);
/* The report: the ring into the format's file, and the ring's part of the
 * summary in *ring_info (new reference, or NULL). PTK_OK or an error. */
int tl__ring_report(tl_state *st, const ptk_report_args *args, PyObject **ring_info);
/* The ring's figures and its dumps (new reference). */
PyObject *tl__ring_summary(tl_state *st);
/* A track's open spans (tl_track::ring). */
void tl__ring_track_free(tl_track *t);
/* Unhooks (with @p py: Python is there, GIL held) and frees the ring. */
void tl__ring_free(tl_state *st, int py);

#endif
