/**
 * @file report.h
 * @brief What a plugin's `report` callback receives, and report formats.
 *
 * Reports are written into the session's output directory through the host
 * services (ptk_host::report_open / ptk_host::report_commit or
 * ptk_host::report_write_object), which write to a temporary name and rename
 * it when complete, so a crash never leaves half a report.
 */
#ifndef PYTRACEKIT_REPORT_H
#define PYTRACEKIT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ptk_host;
struct ptk_plugin_ctx;

/** @brief Formats ptk_host::report_write_object can write. @since 0.1 */
typedef enum ptk_report_format {
    PTK_FMT_JSON = 1,   /**< `json.dump(obj, indent=1, sort_keys=False)` */
    PTK_FMT_MARSHAL = 2 /**< `marshal.dump(obj)` (the pstats file format) */
} ptk_report_format;

/**
 * @brief Arguments of a plugin's `report` callback.
 * @since 0.1
 */
typedef struct ptk_report_args {
    size_t struct_size;            /**< `sizeof(ptk_report_args)` as built */
    const struct ptk_host *host;   /**< host services */
    struct ptk_plugin_ctx *ctx;    /**< this plugin instance, for host calls */
    const char *output_dir;        /**< absolute path; exists and is writable */
    FILE *summary;                 /**< where the human summary goes (stderr) */
    double elapsed_s;              /**< wall seconds the session was running */
    /* End of ABI 1.0. */
} ptk_report_args;

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_REPORT_H */
