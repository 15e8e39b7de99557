/*
 * lib/ref: the reference tracer (PyRefTracer, 3.13+), the source of the
 * REF events. The hub reaches it through ptk__ref_sync_hook only.
 */
#ifndef PTK_REF_H
#define PTK_REF_H

#include "core/core.h"

#pragma GCC visibility push(hidden)

/* Called after every table swap: installs the hub's PyRefTracer when
 * t->nref > 0, removes it (restoring a chained tracer) when 0. */
int ptk__ref_sync(const ptk__table *t, char **errmsg);
int ptk__ref_status(ptk_ref_status *out);
/* Reference events need PyRefTracer (3.13+): PTK_OK or PTK_EUNSUPPORTED. */
int ptk__ref_check_available(const char *plugin, char **errmsg);

#pragma GCC visibility pop

#endif /* PTK_REF_H */
