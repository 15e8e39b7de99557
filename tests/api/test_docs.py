"""The guides against the build: the synopsis in getting-started.md is the
command's usage text, version numbers are the build's, the exit status
documented for a failed report is the one the command returns, and the
usage text, the type stub and docs/ name every filter key of the one list
(lib/ptk_filter_keys.h) and no other."""
import os
import re
import subprocess
import sys
import unittest

import ptk_testlib as T

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(SRC, "docs")


def read(name):
    with open(os.path.join(SRC, name), encoding="utf-8") as f:
        return f.read()


def built_version():
    p = subprocess.run([T.CLI, "--version"], capture_output=True, text=True, timeout=60)
    m = re.match(r"pytracekit (\d+\.\d+\.\d+) ", p.stdout)
    assert m, p.stdout
    return m.group(1)


def key_list_disagreements(keys, usage, stub, filters_md, python_api_md):
    """Where the texts and the list of filter keys (rows of key, flag,
    keyword, is_int, help) disagree: a list of sentences, empty if none."""
    found = []
    synopsis = usage.split("\n\n")[0]
    helped = set(re.findall(r"^  (--[a-z-]+) +[A-Z]+ +every plugin:", usage, re.M))
    signature = re.search(r"def __init__\(self, plugins.*?\) -> None", stub, re.S)
    signature = signature.group(0) if signature else ""
    api = re.search(r"^`Session\(plugins.*\)`$", python_api_md, re.M)
    api = api.group(0) if api else ""
    table = set(re.findall(r"^\| `([a-z_]+)=` \|", filters_md, re.M))
    for key, flag, kw, is_int, _ in keys:
        if "[%s " % flag not in synopsis:
            found.append(f"the usage synopsis lacks [{flag} ...]")
        if flag not in helped:
            found.append(f"the usage text has no 'every plugin:' line for {flag}")
        if not re.search(r"\b%s: %s" % (kw, "Optional\\[int\\]" if is_int else "Union"),
                         signature):
            found.append(f"the stub's Session() lacks the keyword {kw}")
        if "%s=None" % kw not in api:
            found.append(f"docs/python-api.md's Session() lacks {kw}=None")
        if key not in table:
            found.append(f"docs/filters.md's table lacks `{key}=`")
    flags = {k[1] for k in keys}
    found += [f"the usage text has {f}, which is no filter key" for f in sorted(helped - flags)]
    found += [f"docs/filters.md has `{k}=`, which is no filter key"
              for k in sorted(table - {k[0] for k in keys})]
    return found


class FilterKeys(unittest.TestCase):
    def texts(self):
        from pytracekit import _pytracekit
        return (_pytracekit._filter_keys, _pytracekit._usage,
                read("python/pytracekit/__init__.pyi"), read("docs/filters.md"),
                read("docs/python-api.md"))

    def test_usage_stub_and_docs_follow_the_list(self):
        keys = self.texts()[0]
        self.assertEqual([k[:3] for k in keys],
                         [("include", "--include", "include"),
                          ("exclude", "--exclude", "exclude"),
                          ("modules", "--modules", "modules"),
                          ("functions", "--functions", "functions"),
                          ("threads", "--thread-names", "thread_names"),
                          ("max_depth", "--max-depth", "max_depth")])
        self.assertEqual(key_list_disagreements(*self.texts()), [])

    def test_a_disagreement_is_found(self):
        keys, usage, stub, filters_md, api = self.texts()
        cut = [usage.replace("[--thread-names GLOBS] ", ""),
               stub.replace("thread_names:", "thread_nam:"),
               filters_md.replace("| `threads=` |", "| `thread=` |"),
               api.replace("thread_names=None, ", "")]
        self.assertEqual(key_list_disagreements(keys, cut[0], stub, filters_md, api),
                         ["the usage synopsis lacks [--thread-names ...]"])
        self.assertEqual(key_list_disagreements(keys, usage, cut[1], filters_md, api),
                         ["the stub's Session() lacks the keyword thread_names"])
        self.assertEqual(key_list_disagreements(keys, usage, stub, cut[2], api),
                         ["docs/filters.md's table lacks `threads=`",
                          "docs/filters.md has `thread=`, which is no filter key"])
        self.assertEqual(key_list_disagreements(keys, usage, stub, filters_md, cut[3]),
                         ["docs/python-api.md's Session() lacks thread_names=None"])
        extra = usage.replace("  --max-depth N ",
                              "  --max-calls N    every plugin: x\n  --max-depth N ")
        self.assertEqual(key_list_disagreements(keys, extra, stub, filters_md, api),
                         ["the usage text has --max-calls, which is no filter key"])
        fewer = [k for k in keys if k[0] != "modules"]
        self.assertEqual(key_list_disagreements(fewer, usage, stub, filters_md, api),
                         ["the usage text has --modules, which is no filter key",
                          "docs/filters.md has `modules=`, which is no filter key"])


class Guides(unittest.TestCase):
    def setUp(self):
        if not T.CLI or not os.path.exists(T.CLI):
            T.skip("the pytracekit command is not built (PTK_CLI=%r)" % T.CLI)

    def test_synopsis_is_the_usage_text(self):
        usage = subprocess.run([T.CLI, "--help"], capture_output=True, text=True,
                               timeout=60).stdout
        synopsis = usage.split("\n\n")[0].splitlines()
        text = read("docs/getting-started.md")
        blocks = re.findall(r"```\n(usage: pytracekit .*?)```", text, re.S)
        self.assertEqual(len(blocks), 1, "one synopsis block in getting-started.md")
        self.assertEqual(blocks[0].splitlines(), synopsis)

    def test_version_numbers_are_the_builds(self):
        v = built_version()
        found = []
        for name in ["README.md"] + ["docs/" + n for n in sorted(os.listdir(DOCS))
                                     if n.endswith(".md")]:
            text = read(name)
            for m in re.finditer(r"libpytracekit\.so\.(\d+\.\d+\.\d+)|"
                                 r"pytracekit_VERSION` \| e\.g\. `(\d+\.\d+\.\d+)`", text):
                found.append((name, m.group(1) or m.group(2)))
        self.assertTrue(found, "no version number found in the guides")
        self.assertEqual([f for f in found if f[1] != v], [], "built: " + v)
        if T.BUILD:
            self.assertTrue(os.path.exists(os.path.join(T.BUILD, "lib",
                                                        "libpytracekit.so." + v)))

    def test_documented_exit_status_for_a_failed_report(self):
        code = int(re.search(r"#define PTK_EXIT_REPORT_FAILED (\d+)",
                             read("include/pytracekit/process.h")).group(1))
        m = re.search(r"(\d+) instead of 0\s+when a plugin's report could not be written",
                      read("docs/getting-started.md"))
        self.assertIsNotNone(m)
        self.assertEqual(int(m.group(1)), code)


if __name__ == "__main__":
    result = unittest.main(argv=sys.argv[:1] + sys.argv[1:], exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
