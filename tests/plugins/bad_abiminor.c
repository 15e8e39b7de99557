/* bad_abiminor: needs a newer ABI minor than the host (rejected with PTK_EABIMINOR). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    .struct_size = sizeof(ptk_plugin_desc),
    .abi_major = PTK_ABI_MAJOR,
    .abi_minor = PTK_ABI_MINOR + 1,
    .name = "bad_abiminor",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL),
    .on_event = on_event,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
