/*
 * lib/backends: where events come from. Each backend is one file ending
 * with its table (ptk__backend_ops, lib/core/core.h); the rooms below see
 * none of it, and the room above only the tables declared here.
 */
#ifndef PTK_BACKENDS_H
#define PTK_BACKENDS_H

#include "core/core.h"

#pragma GCC visibility push(hidden)

extern const ptk__backend_ops ptk__legacy_ops;     /* legacy.c */
extern const ptk__backend_ops ptk__monitoring_ops; /* monitoring.c */

/* ---- legacy backend (legacy.c) ----------------------------------------- */

int ptk__legacy_init(char **errmsg);
/* Make the installed hooks match the table. `owner` is the thread whose
 * session just started (installs there even for PTK_THREADS_CURRENT). */
int ptk__legacy_sync(const ptk__table *t, int install_here, char **errmsg);
/* Before a running session stops: for each thread where the program's own
 * sys.setprofile/settrace (or the AllThreads forms) replaced the hub's
 * function, a line for the session's report (appended to s->notes). */
void ptk__legacy_check_displaced(struct ptk_session *s);

/* ---- sys.monitoring backend (monitoring.c; 3.12+) ----------------------- */

/* Claims tool id 3 (else 4) and registers the callbacks. PTK_EBUSY with a
 * message naming the holders if neither id is free; PTK_EUNSUPPORTED
 * before 3.12. */
int ptk__mon_claim(char **errmsg);
/* Switches events off, unregisters, frees the tool id. */
void ptk__mon_release(void);
/* Enables exactly the events the table needs. */
int ptk__mon_sync(const ptk__table *t, int install_here, char **errmsg);

void ptk__legacy_reset(void);
void ptk__mon_reset(void);

#pragma GCC visibility pop

#endif /* PTK_BACKENDS_H */
