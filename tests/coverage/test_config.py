"""A project's coverage.py configuration, read by pytracekit, against coverage.py.

    test_config.py CASE

Each case writes a small project (a package, a program, and a configuration
file: .coveragerc, setup.cfg, tox.ini or pyproject.toml), runs the program
under coverage.py (`coverage run`, then its report command) and under
pytracekit (`pytracekit -p coverage`, then `pytracekit report`, `html`,
`xml`, `json` or `lcov`), each tool finding the configuration itself, and
requires the same table line for line, the same exit status (2 under
fail_under) and the files where the configuration puts them. The cases on
[run] also check that what the configuration leaves out was never measured:
it is not in the run's coverage.json at all (the plugin's file filter is the
bus filter). Skips (77) where coverage.py 7 is not importable
($PTK_COVERAGEPY_PYTHON: a virtual environment of the same Python that has it).
"""
import json
import os
import re
import sys

import ptk_coverage_util as u

A_PY = """\
import sys


def f(x):
    if x > 0:
        return 1
    elif x < 0:  # pragma: no branch
        return -1
    return 0


def g():
    raise NotImplementedError


def debug_only():
    if DEBUG:
        print("debugging")


DEBUG = False


def h(n):
    t = 0
    for i in range(n):
        if i % 2:
            t += i
    while t > 100:  # stops early
        t -= 1
    return t


class Shape:
    def area(self):
        raise NotImplementedError


if __name__ == "__main__":  # pragma: no cover
    print("main")
"""

B_PY = """\
def b():
    return 2


b()
"""

NEVER_PY = """\
def never():
    return 3


def twice():
    return 4
"""

C_PY = """\
def c(flag):
    if flag:
        return 1
    return 2


c(True)
"""

PROG = """\
import sys
sys.path.insert(0, %r)
import pkg.a
import pkg.b
import other.c
pkg.a.f(1)
pkg.a.f(0)
pkg.a.h(3)
pkg.a.debug_only()
open("ran", "w").close()
"""


def covpy_python():
    return os.environ.get("PTK_COVERAGEPY_PYTHON") or u.python()


def coveragepy_7():
    p = u.run([covpy_python(), "-c", "import sys, coverage; print(coverage.__version__, "
               "'%d.%d' % sys.version_info[:2])"], os.getcwd(), expect=None)
    q = u.run([u.python(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
              os.getcwd())
    if p.returncode != 0:
        u.skip("coverage.py is not importable by %s (set PTK_COVERAGEPY_PYTHON to a "
               "virtual environment of %s that has coverage.py 7)" % (covpy_python(),
                                                                       u.python()))
    version, pyver = p.stdout.split()
    if pyver != q.stdout.strip():
        u.skip("%s is Python %s, not the build's %s" % (covpy_python(), pyver,
                                                        q.stdout.strip()))
    if int(version.split(".")[0]) < 7:
        u.skip("coverage.py %s is not 7.x, whose model and options pytracekit follows"
               % version)
    return version


class Project:
    """A project directory with pkg/ (a, b, never, __init__), other/c.py
    and prog.py, and a configuration file."""

    def __init__(self, name, config=None, files=None):
        self.wd = u.workdir("config-" + name)
        base = {"pkg/__init__.py": "", "pkg/a.py": A_PY, "pkg/b.py": B_PY,
                "pkg/never.py": NEVER_PY, "other/__init__.py": "", "other/c.py": C_PY,
                "prog.py": PROG % "."}
        if config:
            base[config[0]] = config[1]
        base.update(files or {})
        for path, text in base.items():
            full = os.path.join(self.wd, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)

    def env(self, extra=None):
        e = {"COVERAGE_RCFILE": ""}
        e.update(extra or {})
        return e

    def covpy(self, *args, expect=None, env=None):
        return u.run([covpy_python(), "-m", "coverage"] + list(args), self.wd, expect=expect,
                     env_extra=self.env(env))

    def ptk(self, *args, expect=None, env=None):
        return u.run([u.env("PTK_CLI")] + list(args), self.wd, expect=expect,
                     env_extra=self.env(env))

    def run_both(self, spec="coverage", covargs=(), prog=("prog.py",), env=None):
        """Runs the program under both tools (each must succeed)."""
        self.covpy("run", *(list(covargs) + list(prog)), expect=0, env=env)
        p = self.ptk("--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", spec, *prog,
                     expect=0, env=env)
        return p

    def data(self):
        with open(os.path.join(self.wd, "pytracekit-out", "coverage.json")) as f:
            return json.load(f)

    def measured(self):
        """The files the run recorded, relative to the project."""
        return sorted(os.path.relpath(f, self.wd) for f in self.data()["files"])

    def compare(self, cmd="report", args=(), covargs=None, env=None):
        """Both tools' report command: same stdout, same exit status."""
        t = self.covpy(cmd, *(args if covargs is None else covargs), env=env)
        o = self.ptk(cmd, *args, env=env)
        if o.stdout != t.stdout or o.returncode != t.returncode:
            u.fail("`%s %s` differs from coverage.py's:\n--- coverage.py (exit %d):\n%s"
                   "--- pytracekit (exit %d):\n%s--- pytracekit's stderr:\n%s"
                   % (cmd, " ".join(args), t.returncode, t.stdout, o.returncode, o.stdout,
                      o.stderr))
        print("$ pytracekit %s %s  (exit %d, as coverage.py)\n%s"
              % (cmd, " ".join(args), o.returncode, o.stdout))
        return o, t


def ini(section_prefix, body):
    """An ini file's text with each [section] given the prefix."""
    return re.sub(r"^\[(\w+)\]", lambda m: "[%s%s]" % (section_prefix, m.group(1)), body,
                  flags=re.M)


def expect_measured(p, files):
    got = p.measured()
    if got != sorted(files):
        u.fail("the run measured %s, expected %s (left out by the configuration: never "
               "recorded)" % (got, sorted(files)))


def expect_in(text, needle, what):
    if needle not in text:
        u.fail("%s: %r not in:\n%s" % (what, needle, text))


# ---- [run] ------------------------------------------------------------------


def case_run_source():
    # a package directory: its file that never ran is listed, 0%; other/ is
    # not measured at all
    p = Project("source", (".coveragerc", "[run]\nsource = pkg\n"))
    p.run_both()
    expect_measured(p, ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/never.py"])
    p.compare("report", ["-m"])


def case_run_source_pkgs():
    p = Project("source-pkgs", ("setup.cfg", "[coverage:run]\nsource_pkgs = pkg\n"))
    p.run_both()
    expect_measured(p, ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/never.py"])
    p.compare("report")


def case_run_include():
    p = Project("include", ("tox.ini", "[tox]\nenvlist = py\n[coverage:run]\n"
                            "include =\n    */pkg/a.py\n    other/*\n"))
    p.run_both()
    expect_measured(p, ["other/__init__.py", "other/c.py", "pkg/a.py"])
    p.compare("report", ["--show-missing"])


def case_run_omit():
    # */pkg/b.py is left out on the bus; pkg/a* (a wildcard within a file
    # name) is applied when the report is made
    p = Project("omit", ("pyproject.toml", "[tool.coverage.run]\nomit = [\"*/pkg/b.py\", "
                         "\"pkg/a*\", \"prog.py\"]\n"))
    p.run_both()
    got = p.measured()
    if "pkg/b.py" in got or "prog.py" in got:
        u.fail("omitted files were measured: %s" % got)
    p.compare("report")


def case_run_branch():
    p = Project("branch", (".coveragerc", "[run]\nbranch = True\nsource = pkg\n"))
    p.run_both()
    if not p.data()["meta"]["branch"]:
        u.fail("[run] branch = True did not make the run measure branches")
    p.compare("report", ["-m"])


def case_run_plugins():
    # coverage.py plugins are not loaded here: a warning, and the run goes on
    p = Project("plugins", (".coveragerc", "[run]\nsource = pkg\nplugins = no_such_plugin\n"))
    o = p.ptk("--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", "coverage", "prog.py", expect=0)
    expect_in(o.stderr, "pytracekit coverage: warning: Option '[run] plugins=' in config "
              "file .coveragerc is ignored: coverage.py plugins are not loaded", "stderr")
    expect_measured(p, ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/never.py"])


def case_run_concurrency():
    # multiprocessing: children are followed, as --follow-children
    prog = ("import sys, multiprocessing\nsys.path.insert(0, '.')\nimport pkg.a\n"
            "if __name__ == '__main__':\n"
            "    p = multiprocessing.get_context('fork').Process(target=pkg.a.h, args=(5,))\n"
            "    p.start()\n    p.join()\n    pkg.a.f(1)\n")
    p = Project("concurrency", (".coveragerc", "[run]\nsource = pkg\nbranch = true\n"
                                "concurrency = multiprocessing\nparallel = true\n"),
                {"fork.py": prog})
    o = p.run_both(prog=("fork.py",))
    expect_in(o.stderr, "Option '[run] parallel=' in config file .coveragerc is ignored",
              "stderr")
    kids = [d for d in os.listdir(os.path.join(p.wd, "pytracekit-out"))
            if d.startswith("pid-")]
    if len(kids) != 1:
        u.fail("expected one followed child's directory, found %s" % kids)
    p.covpy("combine", expect=0)
    p.ptk("combine", "-o", "combined", "pytracekit-out", expect=0)
    p.compare("report", ["-m", "combined"], covargs=["-m"])


def case_run_imports():
    # reading the configuration (configparser, tomllib, the package lookup)
    # leaves sys.modules as the program would find it bare
    prog = ("import sys; first = sorted(sys.modules)\nimport json\n"
            "open(sys.argv[1], 'w').write(json.dumps(first))\n")
    p = Project("imports", ("pyproject.toml", "[tool.coverage.run]\nsource_pkgs = "
                            "[\"pkg\"]\nbranch = true\nomit = [\"*/b.py\"]\n"
                            "[tool.coverage.report]\nfail_under = 50\n"),
                {"mods.py": prog})
    u.run([u.python(), "mods.py", "bare.json"], p.wd, expect=0)
    p.ptk("--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", "coverage", "mods.py", "ptk.json",
          expect=0)
    bare = json.load(open(os.path.join(p.wd, "bare.json")))
    ours = json.load(open(os.path.join(p.wd, "ptk.json")))
    if bare != ours:
        u.fail("sys.modules at the program's first line differs from the bare run's: "
               "more %s, fewer %s" % (sorted(set(ours) - set(bare)),
                                      sorted(set(bare) - set(ours))))
    print("sys.modules at the first line: %d modules, as bare" % len(ours))


# ---- [report] -----------------------------------------------------------------


def case_report_fail_under():
    for fu, want in (("70", 0), ("71", 0), ("72", 2), ("100", 2)):
        p = Project("fail-under-" + fu, (".coveragerc", "[run]\nsource = pkg\n"
                                         "[report]\nfail_under = %s\n" % fu))
        p.run_both()
        o, t = p.compare("report")
        if o.returncode != want:
            u.fail("fail_under=%s: exit %d, expected %d" % (fu, o.returncode, want))
        if want:
            expect_in(o.stdout, "Coverage failure: total of", "stdout")
        # the other report commands gate too
        p.compare("xml", ["-o", "x.xml"])


def case_report_precision():
    p = Project("precision", (".coveragerc", "[run]\nsource = pkg\nbranch = true\n"
                              "[report]\nprecision = 2\nfail_under = 84.62\n"))
    p.run_both()
    o, _ = p.compare("report")
    expect_in(o.stdout, ".", "a precision of 2")


def case_report_show_missing():
    p = Project("show-missing", ("setup.cfg", "[coverage:run]\nsource = pkg\nbranch = 1\n"
                                 "[coverage:report]\nshow_missing = true\n"))
    p.run_both()
    o, _ = p.compare("report")
    expect_in(o.stdout, "Missing", "the Missing column")


def case_report_skip_covered():
    p = Project("skip-covered", (".coveragerc", "[run]\nsource = pkg\n"
                                 "[report]\nskip_covered = True\n"))
    p.run_both()
    o, _ = p.compare("report")
    expect_in(o.stdout, "skipped due to complete coverage", "stdout")
    p.compare("report", ["--no-skip-covered"])


def case_report_skip_empty():
    p = Project("skip-empty", (".coveragerc", "[run]\nsource = pkg\n"
                               "[report]\nskip_empty = True\n"))
    p.run_both()
    o, _ = p.compare("report")
    expect_in(o.stdout, "1 empty file skipped.", "stdout")


def case_report_sort():
    for key in ("cover", "-miss", "Stmts", "name", "-name"):
        p = Project("sort", (".coveragerc", "[run]\nsource = pkg\n[report]\nsort = %s\n"
                             % key), {"pkg/z10.py": "x = 1\n", "pkg/z9.py": "y = 1\n",
                                      "sorts.py": "import sys\nsys.path.insert(0, '.')\n"
                                      "import pkg.a, pkg.z10, pkg.z9\npkg.a.f(1)\n"})
        p.run_both(prog=("sorts.py",))
        p.compare("report")
    # a bad value: coverage.py's words; exit 2 as for any configuration error
    # (coverage.py exits 1)
    o = p.ptk("report", "--sort=bogus", expect=2)
    t = p.covpy("report", "--sort=bogus", expect=1)
    expect_in(o.stderr, "pytracekit report: " + t.stdout.strip(), "stderr")


def case_report_include_omit():
    p = Project("report-include", ("pyproject.toml", "[tool.coverage.report]\n"
                                   "include = [\"*/pkg/*\"]\nomit = [\"*/never.py\"]\n"))
    p.run_both()
    p.compare("report")
    # the command line's wins over the file's
    p.compare("report", ["--include=*/other/*,prog.py"])


def case_report_exclude_lines():
    # exclude_lines replaces coverage.py's defaults ("pragma: no cover" no longer counts)
    p = Project("exclude-lines", (".coveragerc", "[run]\nsource = pkg\n[report]\n"
                                  "exclude_lines =\n    raise NotImplementedError\n"))
    p.run_both()
    p.compare("report", ["-m"])


def case_report_exclude_also():
    p = Project("exclude-also", ("pyproject.toml", "[tool.coverage.run]\nsource = "
                                 "[\"pkg\"]\n[tool.coverage.report]\nexclude_also = "
                                 "[\"raise NotImplementedError\", \"if DEBUG:\"]\n"))
    p.run_both()
    p.compare("report", ["-m"])


MULTI_PY = """DEBUG = False


def f(v):
    if DEBUG:
        log(v)
        log(v)
    if (v and
            v > 1):  # pragma: no branch
        return 1
    return 2


def log(v):
    print(v)
"""


def case_report_exclude_multiline():
    # an exclusion pattern over two lines (coverage.py searches the whole
    # text), and a "no branch" pragma on the second line of a condition
    # (it is the statement's)
    p = Project("exclude-multiline", ("pyproject.toml", "[tool.coverage.run]\nsource = "
                                      "[\"pkg\"]\nbranch = true\n[tool.coverage.report]\n"
                                      "exclude_also = ['if DEBUG:\\n\\s+log\\(v\\)']\n"),
                {"pkg/multi.py": MULTI_PY,
                 "multi.py": "import sys\nsys.path.insert(0, '.')\nimport pkg.multi\n"
                             "pkg.multi.f(2)\npkg.multi.f(0)\n"})
    p.run_both(prog=("multi.py",))
    o, _ = p.compare("report", ["-m", "--include=*/multi.py"])
    expect_in(o.stdout, "pkg/multi.py", "stdout")


def case_report_partial_branches():
    # partial_branches replaces the default (the "no branch" pragma counts again)
    p = Project("partial-branches", (".coveragerc", "[run]\nsource = pkg\nbranch = True\n"
                                     "[report]\npartial_branches =\n    stops early\n"))
    p.run_both()
    p.compare("report", ["-m"])


def case_report_partial_also():
    p = Project("partial-also", ("setup.cfg", "[coverage:run]\nsource = pkg\nbranch = on\n"
                                 "[coverage:report]\npartial_also =\n    stops early\n"))
    p.run_both()
    p.compare("report", ["-m"])


# ---- [html], [xml], [json], [lcov] ------------------------------------------------


def case_output_html():
    p = Project("html", (".coveragerc", "[run]\nsource = pkg\nbranch = true\n[html]\n"
                         "directory = reports/cov\ntitle = My project's coverage\n"))
    p.run_both()
    o, t = p.compare("html")
    # a file's page: the source highlighted (tokenize), the excluded lines
    # and the branches a pragma excludes shown as such
    # (coverage.py's pages are in the same directory: ours is pkg_a_py.html)
    pages = ["pkg_a_py.html"]
    with open(os.path.join(p.wd, "reports", "cov", pages[0]), encoding="utf-8") as f:
        page = f.read()
    for needle in ('<p id="t4" class="run"><span class="n">4</span><span class="k">def</span>'
                   ' f(x):</p>',
                   '<p id="t39" class="exc">',  # if __name__ == ...:  # pragma: no cover
                   '<span class="c"># pragma: no branch</span><span class="xb">branches '
                   'excluded</span>',
                   '<span class="s">&quot;main&quot;</span>'):
        expect_in(page, needle, pages[0])
    with open(os.path.join(p.wd, "reports", "cov", "index.html"), encoding="utf-8") as f:
        text = f.read()
    expect_in(text, "<title>My project&#x27;s coverage</title>"
              if "&#x27;" in text else "<title>My project's coverage</title>", "index.html")
    p.compare("html", ["-d", "other-dir", "--title", "T"])
    if not os.path.exists(os.path.join(p.wd, "other-dir", "index.html")):
        u.fail("-d did not win over [html] directory")


def _lcov_totals(path):
    with open(path) as f:
        text = f.read()
    return (sum(int(x) for x in re.findall(r"^LF:(\d+)", text, re.M)),
            sum(int(x) for x in re.findall(r"^LH:(\d+)", text, re.M)))


def case_output_xml_json_lcov():
    p = Project("outputs", (".coveragerc", "[run]\nsource = pkg\n[xml]\noutput = out/c.xml\n"
                            "[json]\noutput = out/c.json\n[lcov]\noutput = out/c.lcov\n"),
                {"theirs/.keep": ""})
    p.run_both()
    got = {}
    for cmd, name in (("xml", "c.xml"), ("json", "c.json"), ("lcov", "c.lcov")):
        p.compare(cmd)
        path = os.path.join(p.wd, "out", name)
        if not os.path.exists(path):
            u.fail("[%s] output: %s not written" % (cmd, path))
        os.replace(path, path + ".ours")
        p.covpy(cmd, expect=0)
        got[cmd] = (path + ".ours", path)
    ours, theirs = got["xml"]
    a = re.search(r'lines-valid="(\d+)" lines-covered="(\d+)"', open(ours).read()).groups()
    b = re.search(r'lines-valid="(\d+)" lines-covered="(\d+)"', open(theirs).read()).groups()
    if a != b:
        u.fail("Cobertura lines-valid/covered %s, coverage.py's %s" % (a, b))
    ours, theirs = got["json"]
    a, b = json.load(open(ours))["totals"], json.load(open(theirs))["totals"]
    for k in ("num_statements", "covered_lines", "missing_lines"):
        if a[k] != b[k]:
            u.fail("JSON totals %s: ours %s, coverage.py's %s" % (k, a[k], b[k]))
    ours, theirs = got["lcov"]
    if _lcov_totals(ours) != _lcov_totals(theirs):
        u.fail("lcov LF/LH %s, coverage.py's %s" % (_lcov_totals(ours), _lcov_totals(theirs)))
    print("xml, json, lcov: same totals as coverage.py's, at the configured paths")


# ---- [paths] ------------------------------------------------------------------------


def case_paths():
    # a run recorded under another checkout's path, combined onto this one
    p = Project("paths", (".coveragerc", "[run]\nsource = pkg\n[paths]\nsource =\n"
                          "    pkg/\n    /elsewhere/*/pkg/\n"))
    p.run_both()
    data = p.data()
    here = os.path.join(p.wd, "pkg")
    data["files"] = {f.replace(here, "/elsewhere/ci-42/pkg"): r
                     for f, r in data["files"].items()}
    os.makedirs(os.path.join(p.wd, "moved"))
    with open(os.path.join(p.wd, "moved", "coverage.json"), "w") as f:
        json.dump(data, f)
    p.ptk("combine", "-o", "combined", "moved", expect=0)
    with open(os.path.join(p.wd, "combined", "coverage.json")) as f:
        files = sorted(json.load(f)["files"])
    want = sorted(os.path.join(p.wd, "pkg", n) for n in
                  ("__init__.py", "a.py", "b.py", "never.py"))
    if files != want:
        u.fail("[paths] did not map the recorded paths: %s, expected %s" % (files, want))
    o = p.ptk("report", "combined", expect=0)
    t = p.covpy("report", expect=0)
    if o.stdout != t.stdout:
        u.fail("combined report:\n%s\ncoverage.py's:\n%s" % (o.stdout, t.stdout))
    print(o.stdout)


# ---- which file, and errors -----------------------------------------------------


def case_precedence():
    # .coveragerc wins over setup.cfg, tox.ini and pyproject.toml; then the
    # first of those that has coverage settings; $COVERAGE_RCFILE and
    # --rcfile name the file; the command line wins over the file
    body = "[run]\nsource = pkg\n[report]\nprecision = %d\n"
    files = {".coveragerc": body % 1,
             "setup.cfg": ini("coverage:", body % 2) + "[metadata]\nname = x\n",
             "tox.ini": "[tox]\nenvlist = py\n" + ini("coverage:", body % 3),
             "pyproject.toml": "[tool.coverage.run]\nsource = [\"pkg\"]\n"
                               "[tool.coverage.report]\nprecision = 4\n",
             "alt.cfg": body % 5}
    p = Project("precedence", None, files)
    p.run_both()
    steps = [(".coveragerc", None), ("setup.cfg", None), ("tox.ini", None),
             ("pyproject.toml", None)]
    for name, _ in steps:
        o, _ = p.compare("report")
        os.rename(os.path.join(p.wd, name), os.path.join(p.wd, name + ".off"))
    for name, _ in steps:
        os.rename(os.path.join(p.wd, name + ".off"), os.path.join(p.wd, name))
    p.compare("report", env={"COVERAGE_RCFILE": "alt.cfg"})
    p.compare("report", ["--rcfile=alt.cfg"])
    p.compare("report", ["--rcfile=alt.cfg", "--precision=0"])
    # a setup.cfg without coverage settings is passed over
    with open(os.path.join(p.wd, "setup.cfg"), "w") as f:
        f.write("[metadata]\nname = x\n")
    os.rename(os.path.join(p.wd, ".coveragerc"), os.path.join(p.wd, "rc.off"))
    p.compare("report")
    # the plugin's own options win over [run]: branch and source
    os.rename(os.path.join(p.wd, "rc.off"), os.path.join(p.wd, ".coveragerc"))
    p.ptk("--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p",
          "coverage:source=other,rcfile=alt.cfg", "prog.py", expect=0)
    if p.measured() != ["other/__init__.py", "other/c.py"]:
        u.fail("source= of the spec did not win over [run] source: %s" % p.measured())


def case_unknown_option():
    conf = ("[run]\nsource = pkg\nbranchh = true\n[report]\nshow_mising = 1\n"
            "[htm]\ndirectory = x\n")
    p = Project("unknown", (".coveragerc", conf))
    t = p.covpy("run", "prog.py", expect=0)
    o = p.ptk("--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", "coverage", "prog.py",
              expect=0)
    for opt in ("[run] branchh=", "[report] show_mising="):
        msg = "Unrecognized option '%s' in config file .coveragerc" % opt
        expect_in(t.stderr, msg, "coverage.py's warning")
        expect_in(o.stderr, "pytracekit coverage: warning: " + msg, "the run's warning")
    expect_in(o.stderr, "pytracekit coverage: warning: Unrecognized section '[htm]' in "
              "config file .coveragerc", "the run's warning")
    r = p.ptk("report", expect=0)
    expect_in(r.stderr, "pytracekit coverage: warning: Unrecognized option '[run] branchh='",
              "the report's warning")
    p.compare("report")


def case_bad_config():
    cases = [
        (".coveragerc", "[run]\nsource = pkg\nbranch\n", "Couldn't read config file "
         ".coveragerc: "),
        ("pyproject.toml", "[tool.coverage.run]\nsource = pkg\"\n",
         "Couldn't read config file pyproject.toml: "),
        (".coveragerc", "[report]\nfail_under = lots\n", "Couldn't read config file "
         ".coveragerc: "),
        ("setup.cfg", "[coverage:report]\nexclude_lines =\n    (unclosed\n",
         "Invalid [report].exclude_lines value '(unclosed'"),
    ]
    if sys.version_info < (3, 11):
        cases = [c for c in cases if c[0] != "pyproject.toml"]
    for name, text, msg in cases:
        p = Project("bad", (name, text))
        t = p.covpy("run", "prog.py")
        o = p.ptk("--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", "coverage", "prog.py")
        if t.returncode == 0:
            u.fail("coverage.py accepted %s:\n%s" % (name, text))
        if o.returncode != 2 or os.path.exists(os.path.join(p.wd, "ran")):
            u.fail("bad %s: exit %d (expected 2, before the program ran)\n%s"
                   % (name, o.returncode, o.stderr))
        expect_in(o.stderr, "pytracekit: coverage: " + msg, "the run's error")
        expect_in(t.stdout + t.stderr, msg, "coverage.py's error (same words)")
        print("bad %s: exit 2 before the program ran: %s" % (name, o.stderr.strip()))
    # the report command: exit 2, the data untouched
    p = Project("bad-report", (".coveragerc", "[run]\nsource = pkg\n"))
    p.run_both()
    before = open(os.path.join(p.wd, "pytracekit-out", "coverage.json")).read()
    with open(os.path.join(p.wd, ".coveragerc"), "w") as f:
        f.write("[report]\nprecision = x\n")
    for cmd in ("report", "html", "xml"):
        o = p.ptk(cmd, expect=2)
        expect_in(o.stderr, "pytracekit %s: Couldn't read config file .coveragerc" % cmd,
                  "stderr")
    if open(os.path.join(p.wd, "pytracekit-out", "coverage.json")).read() != before:
        u.fail("a bad configuration changed the run's data")
    o = p.ptk("report", "--rcfile=missing.cfg", expect=2)
    expect_in(o.stderr, "Couldn't read 'missing.cfg' as a config file", "stderr")
    o = p.ptk("--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", "coverage", "prog.py",
              env={"COVERAGE_RCFILE": "missing.cfg"}, expect=2)
    expect_in(o.stderr, "pytracekit: coverage: Couldn't read 'missing.cfg' as a config file",
              "stderr")


def case_module_entry():
    # python -m pytracekit reads the configuration as the command does
    p = Project("module", (".coveragerc", "[run]\nsource = pkg\nbranch = true\n"))
    p.covpy("run", "prog.py", expect=0)
    u.run([u.python(), "-m", "pytracekit", "-p", "coverage", "prog.py"], p.wd, expect=0,
          env_extra=p.env())
    expect_measured(p, ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/never.py"])
    p.compare("report", ["-m"])


CASES = {name[5:].replace("_", "-"): fn for name, fn in dict(globals()).items()
         if name.startswith("case_")}


def main():
    version = coveragepy_7()
    case = sys.argv[1]
    if case not in CASES:
        u.fail("unknown case %r (cases: %s)" % (case, ", ".join(sorted(CASES))))
    print("coverage.py %s (%s), pytracekit %s" % (version, covpy_python(), u.python()))
    CASES[case]()
    print("ok")


if __name__ == "__main__":
    main()
