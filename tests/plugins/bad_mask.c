/* bad_mask: an event mask with a bit that names no event (rejected with PTK_EMASK). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "bad_mask",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL) | (1u << 20),
    .on_event = on_event,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
