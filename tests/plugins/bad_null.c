/* bad_null: ptk_plugin_entry returns NULL (rejected with PTK_ENOENTRY). */
#include <stddef.h>

#include <pytracekit/plugin.h>

PTK_PLUGIN_EXPORT const ptk_plugin_desc *ptk_plugin_entry(void);
PTK_PLUGIN_EXPORT const ptk_plugin_desc *
ptk_plugin_entry(void)
{
    return NULL;
}
