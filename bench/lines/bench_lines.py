"""What the lines plugin costs, beside line_profiler, in CPU seconds.

For each of CPython's test suites of the oracle test (tests/lines): the
suite bare (`python -m unittest -q test.SUITE`), under line_profiler with
the one function handed to LineProfiler.add_function
(tests/lines/lp_driver.py), and under `pytracekit -p lines:functions=...`
with the same function selected; then the suite with `lines:modules=M`
(every line of the one module M the suite tests). The extra CPU of each
variant is its CPU time (user + system, of the child) less the bare run's;
each variant runs --reps times and the least is kept.

    python3 bench/lines/bench_lines.py --build build/rel313 [--reps 3]

The interpreter is the build's (CMakeCache.txt); line_profiler comes from
the venv of that Python (PTK_VENV_DIR, default /var/cache/pytracekit/venv).
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lines"))

# suite -> (lp_driver target, functions= of the filter, modules=)
SUITES = {
    "test_difflib": ("difflib:SequenceMatcher.find_longest_match",
                     "SequenceMatcher.find_longest_match", "difflib"),
    "test_json": ("json.encoder:py_encode_basestring_ascii"
                  "+test.test_json:pyjson.encoder.py_encode_basestring_ascii"
                  "+test.test_json:cjson.encoder.py_encode_basestring_ascii",
                  "py_encode_basestring_ascii", "json"),
    "test_textwrap": ("textwrap:TextWrapper._wrap_chunks", "TextWrapper._wrap_chunks",
                      "textwrap"),
}


def cpu_of(argv, cwd, env=None):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit("failed: %s\n%s" % (" ".join(argv), p.stderr[-2000:]))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--suites", default=",".join(SUITES))
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    cache = open(os.path.join(a.build, "CMakeCache.txt")).read()
    py = re.search(r"^Python3_EXECUTABLE:\w+=(.*)$", cache, re.M).group(1)
    ver = subprocess.run([py, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    venv = os.path.join(os.environ.get("PTK_VENV_DIR", "/var/cache/pytracekit/venv"),
                        "py" + ver, "bin", "python")
    cli = os.path.join(a.build, "tools", "pytracekit")
    driver = os.path.join(ROOT, "tests", "lines", "lp_driver.py")
    print("Python %s, %s; CPU seconds, least of %d" % (ver, a.build, a.reps))
    print("%-14s %7s %9s %9s %9s %8s %9s %8s" % (
        "suite", "bare", "lp", "lines", "ours/lp", "modules", "mod/bare", "module"))
    for suite in a.suites.split(","):
        target, functions, module = SUITES[suite]
        with tempfile.TemporaryDirectory() as tmp:
            runs = {
                "bare": [py, "-m", "unittest", "-q", "test." + suite],
                "lp": [venv, driver, target, suite, os.path.join(tmp, "lp.json")],
                "lines": [cli, "-o", os.path.join(tmp, "o1"), "-p",
                          "lines:functions=%s,html=false,top=0" % functions,
                          "-m", "unittest", "-q", "test." + suite],
                "modules": [cli, "-o", os.path.join(tmp, "o2"), "-p",
                            "lines:modules=%s,html=false,top=0" % module,
                            "-m", "unittest", "-q", "test." + suite],
            }
            best = {}
            for _ in range(a.reps):
                for k, argv in runs.items():
                    t = cpu_of(argv, tmp)
                    best[k] = min(best.get(k, t), t)
        bare = best["bare"]
        ratio = ((best["lines"] - bare) / (best["lp"] - bare)
                 if best["lp"] > bare else float("nan"))
        print("%-14s %7.2f %9.2f %9.2f %9.2f %8.2f %9.2f %8s" % (
            suite, bare, best["lp"], best["lines"], ratio, best["modules"],
            best["modules"] / bare, module))
        sys.stdout.flush()


main()
