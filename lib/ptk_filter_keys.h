/* The hub's filter keys, the one list: each row is the key (KEY=VALUE in
 * a plugin's options and in the session's filter), the command's flag,
 * the Python Session keyword, the value's type and its help. The
 * library's option specs (filter.c), the command's flags
 * (tools/pytracekit.c), the Python module's keywords (python/_pytracekit.c,
 * and through _pytracekit._filter_keys python -m pytracekit) are made from
 * it; tests/api/test_docs.py checks the usage text, the type stub and
 * docs/ against it. The list keys come first, in PTK__F_* order;
 * max_depth (an integer) last. */
#ifndef PTK_FILTER_KEYS_H
#define PTK_FILTER_KEYS_H

#define PTK_FILTER_KEYS(X)                                                \
    X("include", "--include", "include", PTK_OPT_LIST,                    \
      "filter: only code in files matching these globs (or directories; " \
      "named sets stdlib, site-packages; !negates)")                      \
    X("exclude", "--exclude", "exclude", PTK_OPT_LIST,                    \
      "filter: not code in files matching these globs (same forms as "    \
      "include)")                                                         \
    X("modules", "--modules", "modules", PTK_OPT_LIST,                    \
      "filter: only code of these modules and their submodules (myapp, "  \
      "myapp.core; !negates)")                                            \
    X("functions", "--functions", "functions", PTK_OPT_LIST,              \
      "filter: only functions whose qualified name matches these globs")  \
    X("threads", "--thread-names", "thread_names", PTK_OPT_LIST,          \
      "filter: only threads whose name matches these globs")              \
    X("max_depth", "--max-depth", "max_depth", PTK_OPT_INT,               \
      "filter: only this many selected frames deep, counted from the "    \
      "outermost selected frame")

/* How many rows PTK_FILTER_KEYS has. */
#define PTK__FILTER_KEY_COUNT_1(key, flag, kw, type, help) +1
#define PTK_FILTER_KEY_COUNT (0 PTK_FILTER_KEYS(PTK__FILTER_KEY_COUNT_1))

#endif
