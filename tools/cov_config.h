/* The pytracekit command's reading of a project's coverage.py configuration
 * for the coverage plugin (tools/cov_config.c). */
#ifndef PTK_TOOLS_COV_CONFIG_H
#define PTK_TOOLS_COV_CONFIG_H

/**
 * @brief The coverage plugin's spec with the project's coverage.py `[run]`
 * settings added (source, source_pkgs, include, omit, branch, concurrency).
 *
 * For a spec that names the coverage plugin (`coverage` or
 * `coverage:OPTIONS`), reads the coverage.py configuration of the current
 * directory (or the spec's `rcfile=FILE`, or `$COVERAGE_RCFILE`) with the
 * report writer's code (tools/pytracekit-coverage.py, compiled in) and
 * adds the plugin options the spec does not give; warnings go to stderr.
 * Any other spec is left alone. Needs an initialised interpreter; whatever
 * the reading imported is taken out of `sys.modules` again, so the
 * program starts with the modules it would have without pytracekit.
 *
 * @param spec The plugin spec as given to `-p`.
 * @param[out] out_spec A new spec to use instead (free() it), or NULL to use
 *        @p spec as it is.
 * @param[in,out] follow Set to 1 when `[run] concurrency` names
 *        multiprocessing (children are followed); left alone otherwise.
 * @param[out] errmsg On failure, a message to free().
 * @return 0, or -1 when the configuration cannot be used.
 */
int ptk_cli_coverage_config(const char *spec, char **out_spec, int *follow,
                            char **errmsg);

/**
 * @brief Whether a coverage.py configuration is there for @p spec to read.
 *
 * No for a spec that does not name the coverage plugin (`coverage` or
 * `coverage:OPTIONS`); no when the spec has no `rcfile=`, `$COVERAGE_RCFILE` is unset or empty,
 * and none of the files coverage.py reads (the report writer's
 * `CONFIG_FILES`, compiled in) is in the current directory: the reader
 * would leave the spec as it is, and the command and `python -m
 * pytracekit` then run none of it (tools/cov_config_need.c; no Python).
 *
 * @param spec A plugin spec as given to `-p`.
 * @return 1 if the configuration is to be read, else 0.
 */
int ptk_cli_coverage_config_needed(const char *spec);

#endif
