/* bad_ref: a well-formed plugin that asks for reference events: rejected with PTK_EUNSUPPORTED before CPython 3.13, accepted on 3.13+. */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    PTK_PLUGIN_HEADER,
    .name = "bad_ref",
    .version = "1",
    .events = PTK_MASK(PTK_EV_REF_DESTROY),
    .on_event = on_event,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
