/*
 * lib/backends: where events come from. Each backend is one file ending
 * with its table (ptk__backend_ops, lib/core/core.h); the rooms below see
 * none of it, and the room above only the tables declared here (in
 * lib/session/backends.c alone). frame_hook.h is what legacy.c shares with
 * frame_hook.c, the file built with CPython's internal headers.
 */
#ifndef PTK_BACKENDS_H
#define PTK_BACKENDS_H

#include "core/core.h"

#pragma GCC visibility push(hidden)

extern const ptk__backend_ops ptk__legacy_ops;     /* legacy.c */
extern const ptk__backend_ops ptk__monitoring_ops; /* monitoring.c */

#pragma GCC visibility pop

#endif /* PTK_BACKENDS_H */
