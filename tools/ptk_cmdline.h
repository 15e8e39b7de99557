/*
 * The pytracekit command's arguments, read in one place: compiled into the
 * command (tools/pytracekit.c) and into the Python extension, which hands
 * it to `python -m pytracekit` as _pytracekit._parse_command_line, so that
 * both accept the same arguments and say the same about bad ones. Not part
 * of the library's API.
 */
#ifndef PTK_CMDLINE_H
#define PTK_CMDLINE_H

#include <pytracekit/pytracekit.h>

#include "ptk_filter_keys.h"

/** What the command is asked to do. */
typedef enum {
    PTK_CMD_RUN,     /**< run the program */
    PTK_CMD_LIST,    /**< --list-plugins */
    PTK_CMD_VERSION, /**< --version */
    PTK_CMD_HELP,    /**< -h, --help */
} ptk_cmd_action;

/** The arguments, up to the program, as read. */
typedef struct ptk_cmdline {
    ptk_cmd_action action;    /**< what to do */
    const char **plugins;     /**< -p specs in order (counter if none) */
    int nplugins;             /**< how many */
    const char *outdir;       /**< -o (default pytracekit-out) */
    ptk_thread_scope threads; /**< --threads (default all) */
    ptk_backend backend;      /**< --backend (default auto) */
    char *plugin_path;        /**< the --plugin-path values ':'-joined, or NULL */
    /** The filter flags by key (ptk_filter_keys.h order): the values given,
     *  in order; a repeated list flag adds up, max_depth is the last one. */
    const char **filter[PTK_FILTER_KEY_COUNT];
    int nfilter[PTK_FILTER_KEY_COUNT]; /**< how many values of each */
    int follow;                        /**< --follow-children or PYTRACEKIT_FOLLOW_CHILDREN */
    int armed;                         /**< --armed: no session, armed for `pytracekit attach` */
    const char *mode;                  /**< NULL: a script; "-m" or "-c" */
    int program;                       /**< argv index of the script, module or code */
    char error[512];                   /**< after a usage error: what to say */
} ptk_cmdline;

/** Reads argv[1..argc) into @p o (its strings point into argv). Returns 0,
 *  or -1 after a usage error, with o->error the message (the command
 *  prints it after "pytracekit: "). Free with ptk_cmdline_free() either
 *  way. */
int ptk_cmdline_parse(int argc, char *const *argv, ptk_cmdline *o);

/** Frees what ptk_cmdline_parse() allocated. */
void ptk_cmdline_free(ptk_cmdline *o);

/** The session's filter text for the library ("include=A;B,max_depth=3"),
 *  newly allocated, or NULL if no filter flag was given (or out of memory:
 *  then *oom is set). */
char *ptk_cmdline_filter_text(const ptk_cmdline *o, int *oom);

#endif
