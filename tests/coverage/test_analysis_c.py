"""The static analysis in C (plugins/coverage/analyze.c) against its
reference in Python (analysis.py, PYTRACEKIT_COVERAGE_ANALYSIS=python): the
same statements, functions and branch destinations, file for file, over
standard-library packages (every .py file under them, through source=; the
ones the program imports are analysed from their live code objects, the
rest from their .pyc or source) and the test corpus.

    test_analysis_c.py
"""
import json
import os
import sys

import ptk_coverage_util as u
from ptk_sanitize import PLAIN_DRIVER

PACKAGES = ["json", "email", "asyncio", "importlib", "unittest", "concurrent", "xml",
            "collections", "logging", "http"]


def report(cwd, source, program, mode, outdir):
    spec = "coverage:source=%s,branch=true" % source
    cmd = [u.env("PTK_CLI"), "--plugin-path", u.env("PTK_PLUGIN_DIR"), "-p", spec,
           "-o", outdir] + program
    extra = {"PYTRACEKIT_COVERAGE_ANALYSIS": mode}
    if mode == "python" and PLAIN_DRIVER:
        # The reference is the oracle here: under the sanitizers it runs on
        # Python's own allocator (pure-Python work, 40% of its time through
        # ASan's malloc); the C analysis runs as every sanitizer test does.
        extra["PYTHONMALLOC"] = "pymalloc"
    u.run(cmd, cwd, env_extra=extra)
    with open(os.path.join(cwd, outdir, "coverage.json")) as f:
        data = json.load(f)
    data.pop("meta", None)
    return data


def compare(what, cwd, source, program):
    c = report(cwd, source, program, "c", what + "-c")
    py = report(cwd, source, program, "python", what + "-py")
    if set(c["files"]) != set(py["files"]):
        u.fail("%s: files differ: %s" % (what, sorted(set(c["files"]) ^ set(py["files"]))))
    branches = statements = 0
    for path in sorted(c["files"]):
        a, b = c["files"][path], py["files"][path]
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                u.fail("%s: %s: %s differs\n  C:      %s\n  Python: %s" % (
                    what, path, key, str(a.get(key))[:600], str(b.get(key))[:600]))
        statements += a["summary"]["num_statements"]
        branches += a["summary"]["num_branches"]
    if c != py:
        u.fail("%s: the reports differ outside the files" % what)
    if statements == 0 or branches == 0:
        u.fail("%s: nothing was compared (%d statements, %d branches)"
               % (what, statements, branches))
    print("ok: %s: %d files, %d statements, %d branches the same"
          % (what, len(c["files"]), statements, branches))


def main():
    wd = u.workdir("analysis-c")
    stdlib = os.path.dirname(json.__file__.rsplit(os.sep, 1)[0])
    for pkg in PACKAGES:
        compare(pkg, wd, os.path.join(stdlib, pkg), ["-c", "import %s" % pkg])
    os.makedirs(os.path.join(wd, "corpus"))
    corpus = u.copy_corpus(os.path.join(wd, "corpus"), "basic.py", "generators.py",
                           "exceptions.py", "loops.py")
    for prog in ("basic.py", "generators.py", "exceptions.py", "loops.py"):
        compare("corpus-" + prog, corpus, corpus, [prog])


if __name__ == "__main__":
    sys.exit(main())
