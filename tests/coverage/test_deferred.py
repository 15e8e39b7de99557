"""reports=false: the run writes only what ran; the report commands complete
it from the sources. The oracle is the immediate run (reports=true) of the
same program.

    test_deferred.py CASE

same         for line and branch, with and without contexts=, calls= and counts=: a
             deferred run completed (load(), by the C analysis through the
             pytracekit module and by analysis.py) gives the immediate run's
             coverage.json byte for byte; `pytracekit-coverage combine` of
             it, of two runs, and `pytracekit combine` of a run with a
             followed child give the immediate ones' coverage.json,
             coverage.lcov, coverage.xml (but its timestamp) and summary;
             `pytracekit report` prints the same table. The deferred data
             has no statement model and is marked so (format version 2: a
             reader that knows only version 1 refuses it). The deferred
             coverage.json, which the plugin writes in C, is the report
             writer's deferred_text() of its data byte for byte.
changed      a source changed after the run (text added; or the same size,
             other bytes, and the modification time put back) is refused by
             every reader, exit 1, naming the file; a source only touched
             (the same bytes, a newer modification time: a checkout
             elsewhere) is completed, to the untouched run's reports
missing      a source removed after the run: likewise
names        names outside ASCII, not UTF-8, with quotes, backslashes and control
             characters: the deferred coverage.json (written by the plugin in
             C) is the report writer's deferred_text() byte for byte (as in
             `same`)
bad-options  reports=maybe and reports=false with html=true are refused
             (exit 2)
"""
import json
import os
import re
import shutil
import sys
import time

import ptk_coverage_util as u

MAIN = """\
import subprocess, sys
import pytracekit
import helper

def branchy(n):
    if n > 1:
        return [k for k in range(n) if k % 2]
    return None

for name in ("t1", "t2"):
    if CONTEXTS:
        pytracekit.set_context(name)
    helper.work(name == "t1")
    branchy(3 if name == "t1" else 0)
if CONTEXTS:
    pytracekit.set_context(None)
if len(sys.argv) < 2:
    subprocess.run([sys.executable, __file__, "child"], check=True)
else:
    helper.work(False)
    g = (x for x in range(2))
    list(g)
"""

HELPER = """\
def work(flag):
    total = 0
    for i in range(3):
        if flag and i:
            total += i
        elif i == 2:  # pragma: no branch
            total -= 1
    return total


def unused(a):
    if a:
        return 1
    return 2


class K:
    def m(self):
        return lambda y: y + 1
"""

NEVER = """\
def never_imported():
    return 0
"""


def fmt():
    return u.format_module()


def project(name, contexts):
    wd = u.workdir("deferred-" + name)
    src = os.path.join(wd, "src")
    os.mkdir(src)
    for n, text in (("main.py", "CONTEXTS = %r\n" % contexts + MAIN), ("helper.py", HELPER),
                    ("never.py", NEVER), ("broken.py", "def broken(:\n    pass\n")):
        with open(os.path.join(src, n), "w") as f:
            f.write(text)
    return wd, src


def ptk_run(wd, src, opts, out, expect=0):
    cmd = [u.env("PTK_CLI"), "--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p",
           "coverage:source=%s%s" % (src, opts), "--follow-children", "-o", out,
           os.path.join(src, "main.py")]
    return u.run(cmd, wd, expect=expect)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def children(out):
    return sorted(os.path.join(out, d) for d in os.listdir(out) if d.startswith("pid-"))


def writer(args, cwd, expect=0):
    return u.run([u.python(), u.COMBINE] + args, cwd, expect=expect)


def module(args, cwd, expect=0):
    return u.run([u.python(), "-m", "pytracekit"] + args, cwd, expect=expect)


def same_files(what, a, b):
    for name in ("coverage.json", "coverage.lcov", "coverage.xml"):
        x, y = read(os.path.join(a, name)), read(os.path.join(b, name))
        if name == "coverage.xml":
            x, y = (re.sub(r'timestamp="\d+"', "", t) for t in (x, y))
        if x != y:
            u.fail("%s: %s differs\nimmediate:\n%s\ndeferred:\n%s"
                   % (what, name, x[:3000], y[:3000]))


def same_as_reference(what, path, m):
    """The deferred coverage.json at `path` (written by the plugin in C) is,
    byte for byte, what the report writer's deferred_text() (json.dumps,
    importlib.util.source_hash) makes of the same data: the data read
    back without its source stamps, which deferred_text computes again."""
    text = read(path)
    data = json.loads(text)
    for rec in data["files"].values():
        rec.pop("source")
    want = m.deferred_text(data)
    if text != want:
        at = next((i for i, (a, b) in enumerate(zip(text, want)) if a != b),
                  min(len(text), len(want)))
        u.fail("%s: %s is not deferred_text()'s; from character %d:\nplugin:    %r\n"
               "reference: %r" % (what, path, at, text[at - 40:at + 80], want[at - 40:at + 80]))


def case_same():
    m = fmt()
    if m._c_analyze(m._analysis()) is None:
        u.fail("the build's pytracekit module has no _coverage_analyze (PYTHONPATH: %s)"
               % os.environ.get("PYTHONPATH"))
    compared = 0
    # every kind of data (lines, arcs, calls, counts, contexts with lines
    # and with arcs) is completed and compared; the writers that read the
    # completed data (combine, the module's report and lcov) are the same
    # for every kind, and run on three of them
    for opts, contexts, readers in (("", False, True),
                                    (",calls=true,counts=true", False, False),
                                    (",branch=true,calls=true,counts=true", False, True),
                                    (",contexts=true", True, False),
                                    (",branch=true,contexts=true", True, True)):
        wd, src = project("same", contexts)
        os.chdir(wd)  # the summary names files relative to the directory
        ptk_run(wd, src, opts, "imm")
        p = ptk_run(wd, src, opts + ",reports=false", "def")
        if "reports deferred (reports=false)" not in p.stderr:
            u.fail("%s: no word of the deferred reports:\n%s" % (opts, p.stderr))
        for d in ["def"] + children(os.path.join(wd, "def")):
            d = os.path.join(wd, d)
            have = sorted(n for n in os.listdir(d) if n.startswith("coverage"))
            if have != ["coverage.json"]:
                u.fail("%s: reports=false wrote %s in %s" % (opts, have, d))
            same_as_reference(opts, os.path.join(d, "coverage.json"), m)
            raw = json.loads(read(os.path.join(d, "coverage.json")))
            if raw["meta"].get("deferred") is not True or raw["meta"]["version"] != 2:
                u.fail("%s: %s not marked deferred: %s" % (opts, d, raw["meta"]))
            for path, rec in raw["files"].items():
                if "lines" in rec or "branches" in rec or "summary" in rec:
                    u.fail("%s: deferred data of %s has a statement model: %s"
                           % (opts, path, sorted(rec)))
                st = os.stat(path)
                if rec.get("source") != [st.st_size, m._source_hash(path)]:
                    u.fail("%s: %s: source stamp %r" % (opts, path, rec.get("source")))
            if os.path.join(src, "never.py") not in raw["files"]:
                u.fail("%s: source='s unexecuted file is not in the deferred data" % opts)
        # is_deferred (what pytest's summary asks) reads the file's head:
        # also when "meta" is not first, or longer than the head read
        for d in ["def", "imm"]:
            d = os.path.join(wd, d)
            if m.is_deferred(d) != d.endswith("def"):
                u.fail("%s: is_deferred(%s) is %s" % (opts, d, m.is_deferred(d)))
        raw = json.loads(read(os.path.join(wd, "def", "coverage.json")))
        for what, doc in (("meta last", {"files": raw["files"], "meta": raw["meta"]}),
                          ("a long meta", {"meta": dict(raw["meta"], pad="x" * 100000),
                                           "files": raw["files"]})):
            d = os.path.join(wd, "odd")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "coverage.json"), "w") as f:
                json.dump(doc, f)
            if m.is_deferred(d) is not True:
                u.fail("%s: is_deferred with %s: %s" % (opts, what, m.is_deferred(d)))
            shutil.rmtree(d)
        # a reader that knows nothing of deferred data (version 1 only)
        # refuses it: the same data without its mark, read by this one
        raw = json.loads(read(os.path.join(wd, "def", "coverage.json")))
        del raw["meta"]["deferred"]
        os.mkdir(os.path.join(wd, "old"))
        with open(os.path.join(wd, "old", "coverage.json"), "w") as f:
            json.dump(raw, f)
        p = writer(["report", "old"], wd, expect=1)
        if "format version 2, expected 1" not in p.stderr:
            u.fail("%s: deferred data unmarked:\n%s" % (opts, p.stderr))
        # 1. completed: the immediate run's own coverage.json, byte for byte
        imm_dirs = [os.path.join(wd, "imm")] + children(os.path.join(wd, "imm"))
        def_dirs = [os.path.join(wd, "def")] + children(os.path.join(wd, "def"))
        if len(imm_dirs) != 2 or len(def_dirs) != 2:
            u.fail("%s: the child was not followed: %s %s" % (opts, imm_dirs, def_dirs))
        for a, b in zip(imm_dirs, def_dirs):
            x = read(os.path.join(a, "coverage.json"))
            # completed by the C analysis (the build's pytracekit module),
            # and by its reference in Python, analysis.py
            for how in ("c", "python"):
                os.environ["PYTRACEKIT_COVERAGE_ANALYSIS"] = how
                y = m.json_text(m.load(b))
                if x != y:
                    u.fail("%s: completed coverage.json (%s analysis) differs from the "
                           "immediate run's\nimmediate:\n%s\ndeferred:\n%s"
                           % (opts, how, x[:3000], y[:3000]))
            os.environ.pop("PYTRACEKIT_COVERAGE_ANALYSIS")
            if "pid-" not in a:
                x = read(os.path.join(a, "coverage.txt"))
                y = m.summary_text(m.load(b))
                if x != y:
                    u.fail("%s: summary differs\n%s\n%s" % (opts, x, y))
            compared += 1
        if not readers:
            continue
        # 2. pytracekit-coverage combine: one run, and two runs
        ptk_run(wd, src, opts, "imm2")
        ptk_run(wd, src, opts + ",reports=false", "def2")
        for label, ins in (("one run", ["{}"]), ("two runs", ["{}", "{}2"])):
            outs = []
            for kind in ("imm", "def"):
                o = "c-%s-%d" % (kind, len(ins))
                p = writer(["combine", "-o", o] + [i.format(kind) for i in ins], wd)
                outs.append((o, p.stderr))
            same_files("%s: pytracekit-coverage combine of %s" % (opts, label),
                       os.path.join(wd, outs[0][0]), os.path.join(wd, outs[1][0]))
            # source='s broken.py: the immediate run warned at its end, the
            # deferred data is warned about where it is completed
            warning = "couldn't parse '%s' as Python" % os.path.join(src, "broken.py")
            if warning not in outs[1][1]:
                u.fail("%s: no warning of broken.py when completing:\n%s" % (opts, outs[1][1]))
            tables = [[ln for ln in e.splitlines() if "warning:" not in ln] for _, e in outs]
            if tables[0] != tables[1]:
                u.fail("%s: combine's summary differs\n%s\n%s" % (opts, outs[0][1], outs[1][1]))
        # 3. pytracekit combine of the run and its followed child
        for kind in ("imm", "def"):
            module(["combine", "-o", "pc-" + kind, kind], wd)
        same_files("%s: pytracekit combine with the followed child" % opts,
                   os.path.join(wd, "pc-imm"), os.path.join(wd, "pc-def"))
        # 4. pytracekit report (and lcov) of the run: its followed child
        # is part of it (as in `pytracekit combine`'s result)
        for cmd in (["report", "-m"], ["lcov", "-o", "-"]):
            x = module(cmd + ["imm"], wd).stdout
            y = module(cmd + ["def"], wd).stdout
            z = module(cmd + ["pc-imm"], wd).stdout
            if x != y or x != z or not x:
                u.fail("%s: pytracekit %s of the immediate run, of the deferred run, of the "
                       "run combined with its child:\n%s\n%s\n%s" % (opts, cmd[0], x, y, z))
        compared += 1
    print("ok: %d deferred data sets completed to the immediate runs' reports" % compared)


NAMES = """\
import pytracekit
import runpy, sys

def f\u00e9(n):
    if n:
        return "\u00e9t\u00e9"
    return None

for name in ("plain", 'quote " and \\\\ backslash', "tab\\tnew\\nline\\x7f\\x01",
             "\u00e9t\u00e9 \u65e5\u672c", "\U0001f600 beyond the BMP"):
    pytracekit.set_context(name)
    f\u00e9(name == "plain")
pytracekit.set_context(None)
runpy.run_path(sys.argv[1])
"""


def case_names():
    """Names the JSON writer must escape as json.dumps does: a file and a
    function named outside ASCII, contexts with quotes, backslashes,
    control characters and a character beyond the BMP, and a file whose
    name is not UTF-8 (a str with os.fsdecode's U+DCNN; measured: the hub's
    filter judges it by its bytes), with lines, branches and calls."""
    m = fmt()
    wd = u.workdir("deferred-names")
    src = os.path.join(wd, "src")
    os.mkdir(src)
    main = os.path.join(src, "m\u00f6d\u00fcl\u00e9_\u65e5\u672c.py")
    with open(main, "w", encoding="utf-8") as f:
        f.write(NAMES)
    odd = os.path.join(os.fsencode(src), b"caf\xe9.py")
    with open(odd, "wb") as f:
        f.write(b"def g():\n    return 1\n\ng()\n")
    n = 0
    for opts in (",contexts=true", ",branch=true,calls=true,counts=true,contexts=true"):
        out = "out%d" % n
        n += 1
        cmd = [u.env("PTK_CLI"), "--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p",
               "coverage:source=%s,reports=false%s" % (src, opts), "-o", out, main,
               os.fsdecode(odd)]
        u.run(cmd, wd)
        path = os.path.join(wd, out, "coverage.json")
        same_as_reference(opts, path, m)
        data = json.loads(read(path))
        names = set()
        for rec in data["files"].values():
            for ctx in rec["contexts"].values():
                names.update(ctx)
        want = {"plain", 'quote " and \\ backslash', "tab\tnew\nline\x7f\x01",
                "\u00e9t\u00e9 \u65e5\u672c", "\U0001f600 beyond the BMP", ""}
        if names != want or sorted(data["files"]) != sorted([main, os.fsdecode(odd)]):
            u.fail("%s: read back: contexts %r, files %r" % (opts, names, sorted(data["files"])))
        # the file not named in UTF-8 is measured: the hub's filter (which
        # source= sets) judged it by its bytes, not as a file without a name
        hits = data["files"][os.fsdecode(odd)]["hits"]
        if hits != [[1, 1], [2, 1], [4, 1]]:
            u.fail("%s: %r: hits %r" % (opts, os.fsdecode(odd), hits))
    print("ok: deferred data with names outside ASCII and not UTF-8 written as json.dumps "
          "writes them (2 option sets)")


def refused(wd, out, path, why):
    """Every reader refuses deferred data `out` naming `path`: exit 1."""
    for label, p in (("pytracekit-coverage report", writer(["report", out], wd, expect=1)),
                     ("pytracekit-coverage combine",
                      writer(["combine", "-o", "x", out], wd, expect=1)),
                     ("pytracekit report", module(["report", out], wd, expect=1)),
                     ("pytracekit combine", module(["combine", "-o", "y", out], wd,
                                                   expect=None))):
        if p.returncode == 0 or path not in p.stderr or why not in p.stderr:
            u.fail("%s: exit %d, stderr:\n%s" % (label, p.returncode, p.stderr))
    for d in ("x", "y"):
        if os.path.exists(os.path.join(wd, d, "coverage.json")):
            u.fail("a refused combine wrote %s/coverage.json" % d)


def case_changed():
    wd, src = project("changed", False)
    helper = os.path.join(src, "helper.py")
    ptk_run(wd, src, ",branch=true,reports=false", "def")
    with open(helper, "a") as f:
        f.write("x = 1\n")
    refused(wd, "def", helper, "changed since the run")
    # the same size, other bytes, the modification time put back
    with open(helper, "w") as f:
        f.write(HELPER)
    ptk_run(wd, src, ",reports=false", "def2")
    st = os.stat(helper)
    with open(helper, "w") as f:
        f.write(HELPER.replace("total += i", "total -= i"))
    os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns))
    if os.stat(helper).st_size != st.st_size:
        u.fail("the edit changed the size")
    refused(wd, "def2", helper, "changed since the run")
    # only touched: the same bytes, a newer modification time
    with open(helper, "w") as f:
        f.write(HELPER)
    ptk_run(wd, src, ",reports=false", "def3")
    before = module(["report", "-m", "def3"], wd).stdout
    st = os.stat(helper)
    os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns + 5000000000))
    after = module(["report", "-m", "def3"], wd).stdout
    if before != after or "helper.py" not in after:
        u.fail("a touched source:\n%s\n%s" % (before, after))
    print("ok: an edited source refused by the four readers (also at the same size and "
          "modification time); a touched one completed")


def case_missing():
    wd, src = project("missing", False)
    helper = os.path.join(src, "helper.py")
    ptk_run(wd, src, ",reports=false", "def")
    os.unlink(helper)
    refused(wd, "def", helper, "is missing")
    print("ok: a missing source refused by the four readers")


def case_bad_options():
    wd, src = project("bad", False)
    p = ptk_run(wd, src, ",reports=maybe", "o1", expect=2)
    if "reports" not in p.stderr:
        u.fail("reports=maybe:\n" + p.stderr)
    p = ptk_run(wd, src, ",reports=false,html=true", "o2", expect=2)
    if "html=true needs the reports" not in p.stderr:
        u.fail("reports=false,html=true:\n" + p.stderr)
    for d in ("o1", "o2"):
        if os.path.exists(os.path.join(wd, d, "coverage.json")):
            u.fail("a refused run wrote %s/coverage.json" % d)
    print("ok: bad values refused")


def main():
    globals()["case_" + sys.argv[1].replace("-", "_")]()


main()
