"""The lines plugin against line_profiler (kernprof's LineProfiler, 5.1 in
the project's venv for this Python): one function of the standard library
timed while CPython's own tests of it run (but those WITHOUT names),
selected by the filter
(functions=) here and given to LineProfiler.add_function there. Hits per
line must be equal, line by line. Time per line is printed beside
line_profiler's, as a share of the function's total (the lines above 5%),
and not asserted: two runs of the same program do not take the same time.

    python test_oracle.py difflib|json|textwrap
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import CLI, PYTHON, check, fail, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
VENVS = os.environ.get("PTK_VENV_DIR", "/var/cache/pytracekit/venv")

# case -> (CPython test suite, lp_driver target, functions= of the filter)
CASES = {"difflib": ("test_difflib", "difflib:SequenceMatcher.find_longest_match",
                "SequenceMatcher.find_longest_match"),
    "json": ("test_json", "json.encoder:py_encode_basestring_ascii"
             "+test.test_json:pyjson.encoder.py_encode_basestring_ascii"
             "+test.test_json:cjson.encoder.py_encode_basestring_ascii",
             "py_encode_basestring_ascii"),
    "textwrap": ("test_textwrap", "textwrap:TextWrapper._wrap_chunks",
                 "TextWrapper._wrap_chunks"),
}

# The tests both tools leave out (run_suite.py --without): those that repeat
# the function's lines millions of times or start interpreters, every one
# of them reaching no line the rest of the suite does not (3.11 to 3.13).
WITHOUT = {
    # 7.5 of the suite's 8.2 million hits, 90% of its time under either
    # tool: 37 lines reached with it or without
    "test_difflib": ["test.test_difflib.TestSFpatches.test_recursion_limit"],
    # test_recursion: a 5000-deep pure-Python encoder, 12.5 million calls
    # under any tracer, never reaching the function; test_unicode: every
    # code point decoded (16 hits, 0.9 s of CPU under line_profiler);
    # test_tool: interpreters started
    "test_json": ["test.test_json.test_recursion.", "test.test_json.test_unicode.",
                  "test.test_json.test_tool."],
}


def venv_python():
    """The venv's interpreter when it is this build's Python (the same
    standard library, line for line), else None."""
    ver = subprocess.run([PYTHON, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    py = os.path.join(VENVS, "py" + ver.rsplit(".", 1)[0], "bin", "python")
    if not os.path.exists(py):
        return None, ver
    theirs = subprocess.run([py, "-c", "import sys, line_profiler; "
                             "print('%d.%d.%d' % sys.version_info[:3])"],
                            capture_output=True, text=True)
    if theirs.returncode != 0 or theirs.stdout.strip() != ver:
        return None, ver
    return py, ver


def main():
    case = sys.argv[1]
    suite, lp_target, functions = CASES[case]
    py, ver = venv_python()
    if py is None:
        skip(f"no venv with line_profiler for Python {ver} under {VENVS}")
    with tempfile.TemporaryDirectory() as tmp:
        lp_out = os.path.join(tmp, "lp.json")
        without = ",".join(WITHOUT.get(suite, []))
        p = subprocess.run([py, os.path.join(HERE, "lp_driver.py"), lp_target, "test." + suite,
                            without, lp_out],
                           capture_output=True, text=True, timeout=900, cwd=tmp)
        check(p.returncode == 0, f"line_profiler run failed:\n{p.stdout}\n{p.stderr}")
        with open(lp_out) as f:
            lp = json.load(f)
        out = os.path.join(tmp, "out")
        p = subprocess.run([CLI, "-o", out, "-p", f"lines:functions={functions},top=0",
                            os.path.join(HERE, "run_suite.py"), "test." + suite,
                            "--without", without],
                           capture_output=True, text=True, timeout=900, cwd=tmp)
        check(p.returncode == 0, f"pytracekit run failed:\n{p.stdout}\n{p.stderr}")
        with open(os.path.join(out, "lines.json")) as f:
            ours = json.load(f)
        with open(os.path.join(out, "lines.txt")) as f:
            text = f.read()
    files = ours["files"]
    check(len(files) == 1, f"one file measured, not {sorted(files)}")
    (path, entry), = files.items()
    funcs = entry["functions"]
    name = functions
    check(list(funcs) == [name], f"the one function {name}, not {list(funcs)}")
    lp_rows = [r for r in lp["rows"] if r[0] == path and r[1] == funcs[name]["line"]]
    check(lp_rows, f"line_profiler has nothing for {path}:{funcs[name]['line']}: {lp['rows'][:3]}")
    lp_hits = {r[3]: r[4] for r in lp_rows if r[4] > 0}
    our_hits = {int(n): v["hits"] for n, v in entry["lines"].items() if v["hits"] > 0}
    if lp_hits != our_hits:
        diff = {n: (lp_hits.get(n), our_hits.get(n)) for n in sorted(set(lp_hits) | set(our_hits))
                if lp_hits.get(n) != our_hits.get(n)}
        fail(f"hits differ (line: line_profiler, lines): {diff}")
    check(f"Function: {name} at line {funcs[name]['line']}" in text, "lines.txt names it")
    check("Line #      Hits         Time  Per Hit   % Time  Line Contents" in text,
          "lines.txt has line_profiler's header")
    # time: the share of each line in its function's total, theirs and ours
    lp_total = sum(r[5] for r in lp_rows)
    our_total = funcs[name]["time_ns"]
    worst = 0.0
    print(f"{case}: {len(our_hits)} lines, {sum(our_hits.values())} hits equal to line_profiler's")
    print(f"  function total: line_profiler {lp_total / 1e6:.1f} ms, lines {our_total / 1e6:.1f} ms")
    print("  line  lp share  our share  difference (points of the total)")
    for r in sorted(lp_rows, key=lambda r: r[3]):
        share = 100.0 * r[5] / lp_total if lp_total else 0.0
        if share <= 5.0:
            continue
        mine = 100.0 * entry["lines"].get(str(r[3]), {"time_ns": 0})["time_ns"] / our_total
        worst = max(worst, abs(mine - share))
        print(f"  {r[3]:5d} {share:8.1f}% {mine:9.1f}% {mine - share:+8.1f}")
    print(f"  largest difference: {worst:.1f} points (target: 10)")
    print("PASS")


main()
