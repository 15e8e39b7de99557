"""What is measured: the default scope, include=, exclude=, source=, and
bad options.

    test_scope.py CASE
"""
import os
import sys

import ptk_coverage_util as u


def setup(name):
    wd = u.workdir(name)
    u.copy_corpus(wd, "app", "basic.py")
    return wd


def measured(data):
    return sorted(data["files"])


def case_default():
    """The program's own files; not the standard library, which also ran."""
    wd = setup("default")
    _, data = u.run_ptk(wd, [os.path.join(wd, "basic.py")])
    oracle = u.run_oracle(wd, [os.path.join(wd, "basic.py")])
    import json as _json
    jsondir = os.path.dirname(_json.__file__) if u.python() == sys.executable else None
    stdlib_ran = [f for f in oracle if not f.startswith(wd + os.sep)]
    if not stdlib_ran:
        u.fail("the oracle saw no library code run; the test proves nothing")
    if measured(data) != [os.path.join(wd, "basic.py")]:
        u.fail("measured %s" % measured(data))
    print("ok: measured only basic.py; %d library files ran unmeasured (e.g. %s)%s"
          % (len(stdlib_ran), stdlib_ran[0], "" if jsondir else ""))


def case_include():
    wd = setup("include")
    main = os.path.join(wd, "app", "main.py")
    _, data = u.run_ptk(wd, [main, "a"], spec="coverage:include=*util.py")
    if measured(data) != [os.path.join(wd, "app", "util.py")]:
        u.fail("include=*util.py measured %s" % measured(data))
    # ',' separates patterns (quoted for the option parser).
    _, data = u.run_ptk(wd, [main, "a"], outdir="out2",
                        spec="coverage:include='*unused.py,*app?__init__.py'")
    want = sorted(os.path.join(wd, "app", n) for n in ("__init__.py", "unused.py"))
    if measured(data) != want:
        u.fail("include='*unused.py,*app?__init__.py' measured %s" % measured(data))
    print("ok: include")


def case_slash_values():
    """Globs on absolute paths, relative globs and a source path: values with '/'."""
    wd = setup("slash-values")
    main = os.path.join(wd, "app", "main.py")
    _, data = u.run_ptk(wd, [main, "a"], spec="coverage:include=*/app/util.py")
    if measured(data) != [os.path.join(wd, "app", "util.py")]:
        u.fail("include=*/app/util.py measured %s" % measured(data))
    # Relative patterns are relative to the current directory.
    _, data = u.run_ptk(wd, [main, "a"], outdir="out2",
                        spec="coverage:include='app/u*.py,app/__init__.py'")
    want = sorted(os.path.join(wd, "app", n) for n in ("__init__.py", "unused.py", "util.py"))
    if measured(data) != want:
        u.fail("include='app/u*.py,app/__init__.py' measured %s" % measured(data))
    _, data = u.run_ptk(wd, [main, "a"], outdir="out3",
                        spec="coverage:include=%s/*,exclude=%s/app/main.py" % (wd, wd))
    want = sorted(os.path.join(wd, "app", n) for n in ("__init__.py", "unused.py", "util.py"))
    if measured(data) != want:
        u.fail("absolute include/exclude measured %s" % measured(data))
    _, data = u.run_ptk(wd, [main, "a"], outdir="out4",
                        spec="coverage:source=%s" % os.path.join(wd, "app"))
    if len(measured(data)) != 4:
        u.fail("source=%s/app measured %s" % (wd, measured(data)))
    p, _ = u.run_ptk(wd, [main], outdir="out5", spec="coverage:source=/nonexistent/dir",
                     expect=None)
    if p.returncode == 0 or "source" not in p.stderr or "not a directory" not in p.stderr:
        u.fail("source=/nonexistent/dir: exit %d, %r" % (p.returncode, p.stderr))
    print("ok: option values with '/'")


def case_include_stdlib():
    """include= overrides the default: library files can be measured."""
    wd = setup("include-stdlib")
    _, data = u.run_ptk(wd, [os.path.join(wd, "basic.py")], spec="coverage:include=*json*")
    files = measured(data)
    if not files or not all("/json/" in f for f in files):
        u.fail("include=*json* measured %s" % files)
    oracle = u.run_oracle(wd, [os.path.join(wd, "basic.py")])
    u.compare_sets("executed lines", u.executed(data), u.oracle_lines(oracle, files), "oracle")
    print("ok: %d json files measured" % len(files))


def case_exclude():
    wd = setup("exclude")
    main = os.path.join(wd, "app", "main.py")
    _, data = u.run_ptk(wd, [main, "b"],
                        spec="coverage:exclude='*unused.py;*__init__.py'")
    want = sorted(os.path.join(wd, "app", n) for n in ("main.py", "util.py"))
    if measured(data) != want:
        u.fail("exclude measured %s" % measured(data))
    # exclude wins over include
    _, data = u.run_ptk(wd, [main, "b"], outdir="out2",
                        spec="coverage:include=*app*,exclude=*main.py")
    want = sorted(os.path.join(wd, "app", n) for n in ("__init__.py", "unused.py", "util.py"))
    if measured(data) != want:
        u.fail("include+exclude measured %s" % measured(data))
    print("ok: exclude")


def case_source():
    """source=DIR: only files below DIR, and its unexecuted files as missed."""
    wd = u.workdir("source")
    lib = os.path.join(wd, "lib")
    os.makedirs(lib)
    u.copy_corpus(lib, "app", "never.py")
    runner = os.path.join(wd, "run.py")
    with open(runner, "w") as f:
        f.write("import runpy, sys\nsys.argv = ['main.py', 'a']\n"
                "runpy.run_path(%r, run_name='__main__')\n" % os.path.join(lib, "app", "main.py"))
    _, data = u.run_ptk(wd, [runner], spec="coverage:source=lib")
    want = sorted([os.path.join(lib, "never.py")] + [os.path.join(lib, "app", n) for n in
                  ("__init__.py", "main.py", "unused.py", "util.py")])
    if measured(data) != want:
        u.fail("source=lib measured %s, expected %s" % (measured(data), want))
    never = data["files"][os.path.join(lib, "never.py")]
    if never["hits"] or not never["lines"]:
        u.fail("never.py: hits %r, lines %r" % (never["hits"], never["lines"]))
    if [f for f in never["functions"] if f[0] == "nothing"] != [["nothing", 4, 0]]:
        u.fail("never.py functions %r" % never["functions"])
    oracle = u.run_oracle(wd, [runner])
    u.compare_sets("executed lines", u.executed(data), u.oracle_lines(oracle, want), "oracle")
    print("ok: source= measured %d files, never.py with %d lines all missed"
          % (len(want), len(never["lines"])))


def case_never_called():
    """Functions that never ran are in the report, with their lines missed."""
    wd = setup("never-called")
    _, data = u.run_ptk(wd, [os.path.join(wd, "app", "main.py"), "a"])
    util = data["files"][os.path.join(wd, "app", "util.py")]
    # Comprehensions are code objects of their own before 3.12: not compared.
    funcs = {(n, l): c for n, l, c in util["functions"] if "<listcomp>" not in n}
    want = {("<module>", 1): 1, ("parse", 1): 1, ("mode_a", 6): 1, ("mode_b", 13): 0,
            ("never_used", 19): 0}
    if funcs != want:
        u.fail("util.py functions %r, expected %r" % (funcs, want))
    hits = {n for n, c in util["hits"]}
    missed = sorted(set(util["lines"]) - hits)
    # mode_b's and never_used's bodies: lines 14-16 and 20.
    if missed != [14, 15, 16, 20]:
        u.fail("util.py missed lines %r" % missed)
    unused = data["files"][os.path.join(wd, "app", "unused.py")]
    if [f for f in unused["functions"] if f[0] != "<module>"] != [["imported_but_not_called", 1, 0]]:
        u.fail("unused.py functions %r" % unused["functions"])
    with open(os.path.join(wd, "out", "coverage.lcov")) as f:
        lcov = f.read()
    for rec in ("FN:13,mode_b", "FNDA:0,mode_b", "FNDA:0,never_used", "DA:20,0",
                "FNDA:1,mode_a"):
        if rec not in lcov.splitlines():
            u.fail("coverage.lcov lacks %r" % rec)
    print("ok: never-called functions reported as missed")


def case_bad_options():
    wd = setup("bad-options")
    script = os.path.join(wd, "basic.py")
    for spec, needle in (("coverage:source=nonexistent-dir", "not a directory"),
                         ("coverage:bogus=1", "bogus"),
                         ("coverage:branch=maybe", "branch")):
        p, data = u.run_ptk(wd, [script], spec=spec, expect=None)
        if p.returncode == 0 or needle not in p.stderr:
            u.fail("%s: exit %d, stderr %r (wanted a message about %r)"
                   % (spec, p.returncode, p.stderr, needle))
        print("%s -> exit %d: %s" % (spec, p.returncode, p.stderr.strip().splitlines()[-1]))
    print("ok: bad options are refused")


def case_no_data():
    """A run that measured nothing says so, and why (the hint names the option)."""
    wd = u.workdir("no-data")
    prog = os.path.join(wd, "stdlib_only.py")
    with open(prog, "w") as f:
        f.write("import json\n")
    hints = [
        ("coverage:include=*/nothing_like_this.py",
         "no data was collected: no file that ran matched include=*/nothing_like_this.py"),
        ("coverage:include=*/json/*,exclude=*/json/*",
         "no data was collected: no file that ran matched include=*/json/*"),
    ]
    for n, (spec, want) in enumerate(hints):
        p, data = u.run_ptk(wd, [prog], spec=spec, outdir="out%d" % n)
        if data["files"] or want not in p.stderr:
            u.fail("-p %s: files %s, stderr:\n%s" % (spec, sorted(data["files"]), p.stderr))
    # The default scope: a program that is all standard library (-m).
    p, data = u.run_ptk(wd, ["-m", "json.tool", "--help"], outdir="out-default")
    want = ("no data was collected: no file that ran is measured (the standard library "
            "and installed packages are not, by default); choose files with include= "
            "or source=")
    if data["files"] or want not in p.stderr:
        u.fail("default scope, stdlib only: files %s, stderr:\n%s"
               % (sorted(data["files"]), p.stderr))
    print("ok: the no-data warning with its hint:\n" + p.stderr)


def case_unparseable():
    """A source= file with a syntax error is named in a warning, not reported
    as 100% of nothing; coverage.py also cannot report it."""
    wd = u.workdir("unparseable")
    lib = os.path.join(wd, "lib")
    os.makedirs(lib)
    with open(os.path.join(lib, "good.py"), "w") as f:
        f.write("x = 1\n")
    bad = os.path.join(lib, "bad.py")
    with open(bad, "w") as f:
        f.write("def broken(:\n    pass\n")
    prog = os.path.join(wd, "run.py")
    with open(prog, "w") as f:
        f.write("import sys\nsys.path.insert(0, %r)\nimport good\n" % lib)
    p, data = u.run_ptk(wd, [prog], spec="coverage:source=lib")
    want = "warning: couldn't parse '%s' as Python: " % bad
    if want not in p.stderr or "(never ran; not reported)" not in p.stderr:
        u.fail("no warning for %s:\n%s" % (bad, p.stderr))
    if measured(data) != [os.path.join(lib, "good.py")]:
        u.fail("measured %s" % measured(data))
    if "bad.py" in p.stderr.split("warning")[-1].split("\n", 1)[1]:
        u.fail("bad.py is in the summary table:\n" + p.stderr)
    print("ok:\n" + p.stderr)


CASES = {n[5:].replace("_", "-"): f for n, f in globals().items() if n.startswith("case_")}
CASES[sys.argv[1]]()
