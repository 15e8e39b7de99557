/**
 * @file options.h
 * @brief Plugin options: declared by the plugin, parsed and checked by the hub.
 *
 * A plugin lists the options it accepts (name, type, default). Users give
 * `key=value` pairs (`-p timer:clock=cpu,top=20`); the hub rejects an unknown
 * key (`PTK_EOPTION`) or a value of the wrong type (`PTK_EOPTTYPE`) before the
 * plugin's `init` runs, and hands `init` one parsed value per declared option.
 */
#ifndef PYTRACEKIT_OPTIONS_H
#define PYTRACEKIT_OPTIONS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The type of an option's value. @since 0.1 */
typedef enum ptk_option_type {
    PTK_OPT_BOOL = 1,   /**< `true/false`, `yes/no`, `on/off`, `1/0` */
    PTK_OPT_INT = 2,    /**< a decimal integer (64-bit) */
    PTK_OPT_DOUBLE = 3, /**< a floating-point number */
    PTK_OPT_STRING = 4, /**< any text */
    PTK_OPT_CHOICE = 5, /**< one of the words in ptk_option_spec::choices */
    PTK_OPT_LIST = 6    /**< text; by convention `;`-separated items */
} ptk_option_type;

/**
 * @brief One option a plugin accepts. A plugin's list ends with an entry
 * whose `name` is NULL.
 * @since 0.1
 */
typedef struct ptk_option_spec {
    const char *name;          /**< key, e.g. `"top"` */
    ptk_option_type type;      /**< how the value is parsed */
    const char *default_value; /**< text of the default, parsed like user input; NULL = unset */
    const char *help;          /**< one line for `--list-plugins` */
    const char *choices;       /**< for #PTK_OPT_CHOICE: `"wall|cpu"` */
} ptk_option_spec;

/**
 * @brief A parsed option value. Strings are owned by the hub and live until
 * the plugin's `fini` returns.
 * @since 0.1
 */
typedef struct ptk_option_value {
    const char *name; /**< the key, as declared */
    ptk_option_type type; /**< as declared */
    int is_set;       /**< 1 if the user gave it or a default exists, else 0 */
    int64_t i;        /**< #PTK_OPT_INT, #PTK_OPT_BOOL (0/1), #PTK_OPT_CHOICE (index) */
    double d;         /**< #PTK_OPT_DOUBLE */
    const char *s;    /**< text as given (every type), or NULL when unset */
} ptk_option_value;

#ifdef __cplusplus
}
#endif
#endif /* PYTRACEKIT_OPTIONS_H */
