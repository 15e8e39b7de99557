/* bad_nocb: subscribes to call and line but has no on_event (rejected with PTK_EMASK). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "bad_nocb",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL) | PTK_MASK(PTK_EV_LINE),
    .on_event = NULL,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
