/* Whether there is a coverage.py configuration to read (cov_config.h):
 * in C, with no interpreter, for the command and the Python module alike. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cov_config.h"
#include "cov_config_files.h"

int
ptk_cli_coverage_config_needed(const char *spec)
{
    if (strncmp(spec, "coverage", 8) != 0 || (spec[8] != '\0' && spec[8] != ':')) {
        return 0; /* not the coverage plugin: its spec is left alone */
    }
    const char *env = getenv("COVERAGE_RCFILE");
    if (strstr(spec, "rcfile") != NULL || (env != NULL && *env != '\0')) {
        return 1;
    }
    for (size_t i = 0; cov_config_files[i] != NULL; i++) {
        struct stat sb;
        if (stat(cov_config_files[i], &sb) == 0) {
            return 1;
        }
    }
    return 0;
}
