/* The pytracekit command's usage text: printed by the command
 * (tools/pytracekit.c) and by `python -m pytracekit` (python/_pytracekit.c
 * exposes it), so that both say the same. */
#ifndef PTK_USAGE_H
#define PTK_USAGE_H

#define PTK_USAGE_TEXT \
    "usage: pytracekit [-p PLUGIN[:KEY=VALUE,...]]... [-o DIR]\n" \
    "                  [--threads current|all] [--plugin-path DIR]\n" \
    "                  [--backend auto|legacy|monitoring] [--follow-children]\n" \
    "                  [--include GLOBS] [--exclude GLOBS] [--modules NAMES]\n" \
    "                  [--functions GLOBS] [--thread-names GLOBS] [--max-depth N]\n" \
    "                  (SCRIPT | -m MODULE | -c CODE) [ARGS...]\n" \
    "       pytracekit --armed (SCRIPT | -m MODULE | -c CODE) [ARGS...]\n" \
    "       pytracekit attach PID [-p PLUGIN[:KEY=VALUE,...]]... [-o DIR]\n" \
    "                         [--duration SECONDS] [--timeout SECONDS] [...]\n" \
    "       pytracekit detach|dump PID [--timeout SECONDS]\n" \
    "       pytracekit --list-plugins [--plugin-path DIR]\n" \
    "       pytracekit combine [-o DIR] [--paths A=B]... DIR...\n" \
    "       pytracekit report|html|xml|json|lcov [OPTIONS] [DIR...]\n" \
    "       pytracekit --version | --help\n" \
    "\n" \
    "Runs a Python program with the given plugins attached to the\n" \
    "pytracekit hub and writes their reports into DIR.\n" \
    "\n" \
    "  -p, --plugin SPEC   load a plugin by name (searched in --plugin-path,\n" \
    "                      $PYTRACEKIT_PLUGIN_PATH, then the plugin directory)\n" \
    "                      or by path (containing '/'), with options;\n" \
    "                      repeatable; default: counter\n" \
    "  -o, --output DIR    report directory (default: pytracekit-out)\n" \
    "  --threads SCOPE     current: the main thread only; all (default):\n" \
    "                      every thread, including ones started later\n" \
    "  --plugin-path DIR   search DIR for plugins first (repeatable)\n" \
    "  --include GLOBS     every plugin: only code in files matching GLOBS\n" \
    "                      (absolute-path globs or directories, ';'-separated;\n" \
    "                      named sets stdlib, site-packages; !negates)\n" \
    "  --exclude GLOBS     every plugin: not code in files matching GLOBS\n" \
    "  --modules NAMES     every plugin: only these modules and submodules\n" \
    "  --functions GLOBS   every plugin: only functions whose qualified\n" \
    "                      name matches\n" \
    "  --thread-names GLOBS every plugin: only threads whose name matches\n" \
    "  --max-depth N       every plugin: only N selected frames deep\n" \
    "                      (a plugin's own KEY=VALUE replaces any of these;\n" \
    "                      see docs/filters.md)\n" \
    "  --backend NAME      where events come from: legacy (PyEval_SetProfile/\n" \
    "                      SetTrace), monitoring (sys.monitoring, 3.12+) or\n" \
    "                      auto (default: $PYTRACEKIT_BACKEND if set, else\n" \
    "                      monitoring on 3.12+)\n" \
    "  --follow-children   trace child processes too (fork, multiprocessing,\n" \
    "                      Python subprocesses, exec) with the same plugins,\n" \
    "                      each reporting into DIR/pid-N/ (also:\n" \
    "                      PYTRACEKIT_FOLLOW_CHILDREN=1)\n" \
    "  --armed             run the program with no session, armed for\n" \
    "                      `pytracekit attach PID` (on any Python; see\n" \
    "                      docs/attach.md)\n" \
    "  --list-plugins      list the plugins found, their events and options\n" \
    "  --version           print the version\n" \
    "\n" \
    "Exit status: the program's own; 2 for a usage error or a plugin\n" \
    "that fails to load (before the program starts); 3 when the program\n" \
    "ended with 0 but a report could not be written (or a plugin failed\n" \
    "and was detached). SIGTERM and SIGHUP write the reports, then\n" \
    "end the program by that signal.\n"

#endif
