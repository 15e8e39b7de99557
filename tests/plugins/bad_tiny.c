/* bad_tiny: struct_size too small to even hold the ABI fields (rejected with PTK_ESIZE before the ABI is read). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    .struct_size = 2,
    .abi_major = PTK_ABI_MAJOR,
    .abi_minor = PTK_ABI_MINOR,
    .name = "bad_tiny",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL),
    .on_event = on_event,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
