"""A plugin must not change what the program imports.

    test_imports.py PLUGIN_SPEC | import-time-lines

PLUGIN_SPEC: `sys.modules` at the program's first line is the same under
that plugin as in the bare interpreter, and as under the hub alone (the
recorder test plugin, on the same events: what the hub needs depends on
them, e.g. opcode for its code records, threading's hook for the legacy
slots). Whatever the hub and the plugins import for themselves leaves
sys.modules again, and the threading hook waits for the program's own
import of threading: the program imports, runs and is measured in every
module as it would be without pytracekit.

exec/PLUGIN_SPEC: the same, with the command run by the interpreter's
executable (PYTRACEKIT_LAUNCH=exec).
import-time-lines: a standard-library module the program imports (calendar,
which no part of pytracekit imports) is measured from its first line: the
coverage plugin (include= selecting it) records the same executed lines as
the settrace oracle, the module-level ones included.
"""
import json
import os
import sys
import tempfile

import ptk_testlib as t
import ptk_coverage_util as u

PROGRAM = """import sys; _first = sorted(sys.modules)
import json
with open(sys.argv[1], "w") as f:
    json.dump(_first, f)
"""
# The recorder options that make the hub do what it does for each plugin
# (with those options): the same events, and PTK_DISABLE where the plugin
# returns it (the hub's first code record imports opcode).
EVENTS = {
    "counter": "events='call,return,c_call,c_exception,c_return'",
    "timer": "events='call,return,c_call,c_exception,c_return'",
    "reftrack": "events='call,return'",  # its shadow stack
    "coverage": "events='call,line',disable='line'",
    "coverage:branch=true": "events='call,line,return',disable='call'",  # library code
}


def modules_at_start(wd, spec, tag):
    """sorted(sys.modules) at the program's first line; spec None: bare."""
    prog = os.path.join(wd, "prog.py")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    out = os.path.join(wd, "modules-%s.json" % tag)
    if spec is None:
        u.run([u.python(), prog, out], wd)
    else:
        u.run([t.CLI, "--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", spec,
               "-o", os.path.join(wd, "out-" + tag), prog, out], wd)
    with open(out) as f:
        return set(json.load(f))


def case_plugin(spec):
    if spec.startswith("reftrack"):
        v = u.run([u.python(), "-c", "import sys; print(sys.version_info >= (3, 13))"], ".")
        if v.stdout.strip() != "True":
            t.skip("reftrack needs CPython 3.13+ (PyRefTracer); this is %s"
                   % u.python_version())
    wd = u.workdir("imports")
    bare = modules_at_start(wd, None, "bare")
    hub = modules_at_start(wd, t.test_plugin("recorder") + ":" + EVENTS[spec], "hub")
    if hub != bare:
        t.fail("the hub alone (recorder %s) changes the bare interpreter's modules:\n"
               "  added: %s\n  missing: %s"
               % (EVENTS[spec], sorted(hub - bare), sorted(bare - hub)))
    got = modules_at_start(wd, spec, "plugin")
    if got != bare:
        t.fail("-p %s: sys.modules at the first line differs from the bare interpreter's:\n"
               "  added: %s\n  missing: %s" % (spec, sorted(got - bare), sorted(bare - got)))
    print("ok: -p %s: the program starts with the bare interpreter's %d modules, as under "
          "the hub alone" % (spec, len(got)))


def case_import_time_lines():
    wd = u.workdir("import-time")
    prog = os.path.join(wd, "prog.py")
    with open(prog, "w") as f:
        f.write("import calendar\nprint(calendar.isleap(2024))\n")
    _, data = u.run_ptk(wd, [prog], spec="coverage:include=*/calendar.py")
    files = sorted(data["files"])
    if len(files) != 1 or os.path.basename(files[0]) != "calendar.py":
        t.fail("include=*/calendar.py measured %s" % files)
    path = files[0]
    ours = u.executed(data)[path]
    oracle = u.oracle_lines(u.run_oracle(wd, [prog]), files)
    u.compare_sets("executed lines", {path: ours}, oracle, "oracle")
    # The module's own top-level lines: every one that is not in a function
    # or class body and not under an `if`/`try` (those depend on the run).
    import ast
    with open(path) as f:
        tree = ast.parse(f.read())
    top = {n.lineno for n in tree.body
           if isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef,
                             ast.ClassDef))}
    missed = sorted(top - ours)
    if not top or missed:
        t.fail("import-time lines of calendar.py not covered: %s" % missed)
    print("ok: %d executed lines of calendar.py equal the oracle's, all %d top-level "
          "statements among them" % (len(ours), len(top)))


def main():
    arg = sys.argv[1]
    if arg.startswith("exec/"):
        # the command run by the interpreter's own executable, as it is by
        # default on a statically linked one (its start-up hook, and no
        # sitecustomize of the interpreter's: the hook must not stay one)
        os.environ["PYTRACEKIT_LAUNCH"] = "exec"
        arg = arg[len("exec/"):]
    if arg == "import-time-lines":
        case_import_time_lines()
    else:
        case_plugin(arg)


main()
