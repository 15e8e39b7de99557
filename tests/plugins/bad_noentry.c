/* bad_noentry: a valid shared object that exports no ptk_plugin_entry
 * (the loader must reject it with PTK_ENOENTRY). */
#include <pytracekit/plugin.h>

__attribute__((visibility("default"))) int bad_noentry_something(void);
__attribute__((visibility("default"))) int
bad_noentry_something(void)
{
    return 42;
}
