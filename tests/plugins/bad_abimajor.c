/* bad_abimajor: built for plugin ABI major 2 (rejected with PTK_EABIMAJOR). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    .struct_size = sizeof(ptk_plugin_desc),
    .abi_major = PTK_ABI_MAJOR + 1,
    .abi_minor = 0,
    .name = "bad_abimajor",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL),
    .on_event = on_event,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
