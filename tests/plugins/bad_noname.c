/* bad_noname: a descriptor without a name (rejected with PTK_EINVAL). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL),
    .on_event = on_event,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
