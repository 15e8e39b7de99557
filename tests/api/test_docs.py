"""The guides against the build: the synopsis in getting-started.md is the
command's usage text, version numbers are the build's, and the exit status
documented for a failed report is the one the command returns."""
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
