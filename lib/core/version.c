/* Version of the library as built. */

#include "core/core.h"

unsigned int
ptk_version(void)
{
    return PTK_VERSION_HEX;
}

const char *
ptk_version_string(void)
{
    return PTK_VERSION_STRING;
}
