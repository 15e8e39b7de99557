/* bad_size: struct_size smaller than the ABI 1.0 descriptor (rejected with PTK_ESIZE). */
#include "bad_common.h"

static const ptk_plugin_desc desc = {
    .struct_size = offsetof(ptk_plugin_desc, fini), /* one pointer short of 1.0 */
    .abi_major = PTK_ABI_MAJOR,
    .abi_minor = PTK_ABI_MINOR,
    .name = "bad_size",
    .version = "1",
    .events = PTK_MASK(PTK_EV_CALL),
    .on_event = on_event,
    .on_ref = on_ref,
};

PTK_PLUGIN_DEFINE(desc)
