/* bad_refnocb: subscribes to ref_create but has no on_ref (rejected with PTK_EMASK on every Python: the callback check comes before the availability check). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "bad_refnocb",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_REF_CREATE),
    .on_event = on_event,
    .on_ref = NULL,
};

PTK_PLUGIN_DEFINE(desc)
