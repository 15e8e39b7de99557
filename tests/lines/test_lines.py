"""The lines plugin on programs of its own: hits per line against
sys.settrace's line events (recursion, a generator, an exception, two
threads), the time of a line with and without its calls, the filter, and
the reports' forms.

    python test_lines.py settrace|calls|filter|reports|threads|contexts|combine|html|blocks
"""
import json
import os
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import PYTHON, check, fail, load_module, run_cli  # noqa: E402
import subprocess  # noqa: E402

PROG = textwrap.dedent("""\
    import threading
    import time

    def rec(n):
        if n == 0:
            return 0
        return 1 + rec(n - 1)

    def gen(n):
        for i in range(n):
            yield i * 2

    def fails(x):
        try:
            raise ValueError(x)
        except ValueError:
            return -1

    def sleeper():
        for _ in range(3):
            time.sleep(0.02)

    def work():
        total = 0
        for k in range(50):
            total += rec(k % 7)
            total += sum(gen(4))
            total += fails(k)
        return total

    def main():
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        work()
        for t in threads:
            t.join()
        sleeper()

    main()
    """)

# sys.settrace's line events of the program's file: {line: hits}, or with
# "thread" / "context" {thread's name or context: {line: hits}} (a program
# with contexts mirrors the current one in its global CUR)
ORACLE = textwrap.dedent("""\
    import json, sys, threading
    path, by = sys.argv[1], sys.argv[2]
    hits = {}
    def group(frame):
        if by == "thread":
            return threading.current_thread().name
        if by == "context":
            return frame.f_globals.get("CUR", [""])[0]
        return ""
    def tracer(frame, event, arg):
        if frame.f_code.co_filename != path:
            return None
        if event == "line":
            mine = hits.setdefault(group(frame), {})
            mine[frame.f_lineno] = mine.get(frame.f_lineno, 0) + 1
        return tracer
    threading.settrace(tracer)
    sys.settrace(tracer)
    src = open(path).read()
    g = {"__name__": "__main__", "__file__": path}
    exec(compile(src, path, "exec"), g)
    sys.settrace(None)
    threading.settrace(None)
    print(json.dumps(hits if by != "none" else hits.get("", {})))
    """)


def run_lines(tmp, spec, prog=PROG):
    path = os.path.join(tmp, "prog.py")
    with open(path, "w") as f:
        f.write(prog)
    out = os.path.join(tmp, "out")
    args = ["-o", out]
    for one in spec.split("\0-p"):
        args += ["-p", one]
    p = run_cli(args + [path], cwd=tmp)
    check(p.returncode == 0, f"run failed: {p.stdout}\n{p.stderr}")
    with open(os.path.join(out, "lines.json")) as f:
        return path, out, json.load(f), p.stderr


def settrace_hits(path, by="none"):
    """ORACLE's hits: {line: hits}, or by "thread" / "context" {group:
    {line: hits}}."""
    p = subprocess.run([PYTHON, "-c", ORACLE, path, by], capture_output=True, text=True,
                       check=True)
    data = json.loads(p.stdout)
    if by == "none":
        return {int(k): v for k, v in data.items()}
    return {g: {int(k): v for k, v in h.items()} for g, h in data.items()}


def case_settrace():
    with tempfile.TemporaryDirectory() as tmp:
        path, _, data, _ = run_lines(tmp, "lines:modules=__main__,html=false")
        oracle = settrace_hits(path)
    ours = {int(k): v["hits"] for k, v in data["files"][path]["lines"].items()}
    if ours != oracle:
        fail(f"hits differ from sys.settrace's: "
             f"{ {n: (oracle.get(n), ours.get(n)) for n in sorted(set(ours) | set(oracle)) if ours.get(n) != oracle.get(n)} }")
    funcs = data["files"][path]["functions"]
    expect = ["<module>", "fails", "gen", "main", "rec", "sleeper", "work"]
    if sys.version_info < (3, 12):  # a comprehension is a function of its own (PEP 709)
        expect.insert(4, "main.<locals>.<listcomp>")
    check(sorted(funcs) == expect, f"functions: {sorted(funcs)}")
    # 3 x 50 calls of work's loop; rec: 3 x 50 outer calls + the recursion
    check(funcs["work"]["calls"] == 3, f"work calls: {funcs['work']}")
    check(funcs["rec"]["calls"] == 3 * sum(k % 7 + 1 for k in range(50)), f"rec: {funcs['rec']}")
    check(funcs["gen"]["calls"] == 150, f"gen started 150 times (resumes are no calls): {funcs['gen']}")
    check(funcs["fails"]["calls"] == 150, f"fails: {funcs['fails']}")
    print(f"PASS: {sum(ours.values())} hits on {len(ours)} lines equal to sys.settrace's")


def case_coverage():
    """Beside the coverage plugin, which switches each line off once it has
    run: the lines plugin still sees every LINE (each DISABLE is its own)."""
    with tempfile.TemporaryDirectory() as tmp:
        path, out, data, _ = run_lines(
            tmp, "lines:modules=__main__,html=false\0-pcoverage:source=" + tmp)
        oracle = settrace_hits(path)
        with open(os.path.join(out, "coverage.json")) as f:
            cov = json.load(f)
    ours = {int(k): v["hits"] for k, v in data["files"][path]["lines"].items()}
    check(ours == oracle, f"hits beside coverage differ from sys.settrace's: {ours} {oracle}")
    executed = [n for n, hits in cov["files"][path]["hits"] if hits]
    check(executed == sorted(oracle), f"coverage's lines {executed}, run: {sorted(oracle)}")
    print(f"PASS: {sum(ours.values())} hits beside coverage, which has {len(executed)} lines")


SLEEPY = textwrap.dedent("""\
    import time

    def inner():
        time.sleep(0.05)

    def outer():
        for _ in range(2):
            inner()
        x = 0
        return x

    outer()
    """)


def case_calls():
    with tempfile.TemporaryDirectory() as tmp:
        path, _, with_calls, _ = run_lines(tmp, "lines:modules=__main__", SLEEPY)
    with tempfile.TemporaryDirectory() as tmp:
        path2, _, without, _ = run_lines(tmp, "lines:modules=__main__,calls=false", SLEEPY)
    check(with_calls["calls"] is True and without["calls"] is False, "the mode is in the report")
    a = with_calls["files"][path]["lines"]
    b = without["files"][path2]["lines"]
    check({k: v["hits"] for k, v in a.items()} == {k: v["hits"] for k, v in b.items()},
          "the same hits either way")
    # line 8 calls inner() twice, which sleeps 50 ms each time (line 4)
    check(a["8"]["time_ns"] >= 100_000_000, f"calls=true: line 8 has inner's 100 ms: {a['8']}")
    check(a["4"]["time_ns"] >= 100_000_000, f"line 4 sleeps 100 ms: {a['4']}")
    check(b["8"]["time_ns"] < 10_000_000, f"calls=false: line 8 without inner's time: {b['8']}")
    check(b["4"]["time_ns"] < 10_000_000, f"calls=false: line 4 without time.sleep: {b['4']}")
    check(a["12"]["time_ns"] >= 100_000_000, f"the module's line 12 has outer(): {a['12']}")
    print("PASS: line 8 %.1f ms with calls, %.3f ms without"
          % (a["8"]["time_ns"] / 1e6, b["8"]["time_ns"] / 1e6))


SAME_NAME = textwrap.dedent("""\
    import difflib

    class SequenceMatcher:
        def find_longest_match(self, a, b):
            return min(a, b)

    mine = SequenceMatcher()
    for i in range(3):
        mine.find_longest_match(i, 2)
        difflib.SequenceMatcher(None, "abcd" * i, "bcd").find_longest_match()
    """)


def case_filter():
    with tempfile.TemporaryDirectory() as tmp:
        path, _, data, _ = run_lines(tmp, "lines:functions=rec;gen,html=false")
    check(list(data["files"]) == [path], f"only prog.py: {list(data['files'])}")
    funcs = data["files"][path]["functions"]
    check(sorted(funcs) == ["gen", "rec"], f"only rec and gen: {sorted(funcs)}")
    lines = sorted(int(n) for n in data["files"][path]["lines"])
    check(lines == [5, 6, 7, 10, 11], f"only their lines: {lines}")
    # a module-qualified name: difflib's find_longest_match, not the program's
    # method of the same qualified name
    with tempfile.TemporaryDirectory() as tmp:
        path, _, data, _ = run_lines(tmp, "lines:functions=difflib.SequenceMatcher."
                                     "find_longest_match,html=false", SAME_NAME)
    import difflib
    files = {f: sorted(e["functions"]) for f, e in data["files"].items()}
    check(files == {difflib.__file__: ["SequenceMatcher.find_longest_match"]},
          f"difflib's only: {files}")
    fn = data["files"][difflib.__file__]["functions"]["SequenceMatcher.find_longest_match"]
    check(fn["calls"] == 3, f"3 calls of difflib's: {fn}")
    print("PASS")


def case_reports():
    with tempfile.TemporaryDirectory() as tmp:
        path, out, data, err = run_lines(tmp, "lines:modules=__main__,top=2", SLEEPY)
        with open(os.path.join(out, "lines.txt")) as f:
            text = f.read()
        with open(os.path.join(out, "lines.html")) as f:
            page = f.read()
        with open(os.path.join(out, "run.json")) as f:
            run = json.load(f)
    check("lines.json" in run["files"] and "lines.txt" in run["files"]
          and "lines.html" in run["files"], f"run.json lists the reports: {run['files']}")
    check(data["run"]["pid"] == run["run"]["pid"], "lines.json carries the run's identity")
    block = text.split("Function: inner at line 3\n", 1)
    check(len(block) == 2, f"a block for inner:\n{text}")
    rows = block[1].split("\n\n\n")[0].splitlines()
    check(rows[1] == "Line #      Hits         Time  Per Hit   % Time  Line Contents",
          f"line_profiler's header: {rows[1]!r}")
    check(rows[2] == "=" * len(rows[1]), "the rule under it")
    check(rows[3].split() == ["3", "def", "inner():"], f"the def line, no figures: {rows[3]!r}")
    f4 = rows[4].split()
    check(f4[0] == "4" and f4[1] == "2" and f4[4] == "100.0" and rows[4].endswith("time.sleep(0.05)"),
          f"line 4: 2 hits, 100% of inner: {rows[4]!r}")
    check(float(f4[2]) >= 100000.0 and abs(float(f4[3]) - float(f4[2]) / 2) < 0.1,
          f"time in microseconds, per hit half of it: {rows[4]!r}")
    # the heatmap: the hottest line of outer (8) is the one marked and reddest
    check('<p id="f2l8" class="hottest" style="background: rgb(255,65,65)">' in page,
          "outer's line 8 is the hottest line")
    check("time.sleep(0.05)" in page, "the source is shown")
    check(err.count("\n") >= 3 and "prog.py:12 (<module>)" in err, f"summary: {err}")
    print("PASS")


TWO_INPUTS = textwrap.dedent("""\
    import sys

    def helper(x):
        if x % 3 == 0:
            return x * 2
        return x + 1

    def work_a(n):
        t = 0
        for i in range(n):
            t += helper(i)
        return t

    def work_b(s):
        out = []
        for ch in s:
            if ch.isupper():
                out.append(ch.lower())
            else:
                out.append(helper(ord(ch)))
        return out

    if "a" in sys.argv[1]:
        work_a(40)
    if "b" in sys.argv[1]:
        work_b("Hello World")
    """)


def hits_column(text):
    """{(function, line): hits} of a lines.txt, read from its columns."""
    out = {}
    func = None
    for row in text.splitlines():
        if row.startswith("Function: "):
            func = row[len("Function: "):]
        elif func and row[:6].strip().isdigit():
            out[(func, int(row[:6]))] = row[7:16].strip()
    return out


def parts_column(text):
    """{(function, thread or context): (hits, calls)} of a lines.txt's
    "By thread:" / "By context:" tables, read from their columns."""
    out = {}
    func = None
    in_parts = False
    for row in text.splitlines():
        if row.startswith("Function: "):
            func, in_parts = row[len("Function: "):].split(" at line ")[0], False
        elif row in ("By thread:", "By context:"):
            in_parts = True
        elif in_parts and row.strip() and not row.strip().startswith("Time"):
            t, hits, calls, pc, label = row.split(None, 4)
            out[(func, label)] = (int(hits), int(calls))
        elif not row.strip():
            in_parts = False
    return out


def case_combine():
    """pytracekit combine of two runs with different inputs equals one run
    that does both: every line's hits and every function's calls, the text
    report's hits column; time is added exactly."""
    spec = "lines:functions=helper;work_a;work_b"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "prog.py")
        with open(path, "w") as f:
            f.write(TWO_INPUTS)
        outs = {}
        for arg in ("a", "b", "ab"):
            outs[arg] = os.path.join(tmp, "out-" + arg)
            p = run_cli(["-o", outs[arg], "-p", spec, path, arg], cwd=tmp)
            check(p.returncode == 0, f"run {arg}: {p.stderr}")
        comb = os.path.join(tmp, "comb")
        p = run_cli(["combine", "-o", comb, outs["a"], outs["b"]], cwd=tmp)
        check(p.returncode == 0, f"combine: {p.returncode} {p.stderr}")
        check("lines" not in p.stderr.replace("lines.json, lines.txt, lines.html", ""),
              f"nothing of lines is left out: {p.stderr}")
        load = lambda d, n: json.load(open(os.path.join(d, n)))  # noqa: E731
        a, b, both, got = (load(d, "lines.json") for d in
                           (outs["a"], outs["b"], outs["ab"], comb))
        manifest = load(comb, "run.json")
        texts = {}
        for k, d in (("both", outs["ab"]), ("comb", comb)):
            with open(os.path.join(d, "lines.txt")) as f:
                texts[k] = f.read()
        page_ok = os.path.exists(os.path.join(comb, "lines.html"))
        # calls=false times are no part of calls=true ones: bad input, nothing written
        nocalls = os.path.join(tmp, "out-nocalls")
        p = run_cli(["-o", nocalls, "-p", spec + ",calls=false", path, "a"], cwd=tmp)
        check(p.returncode == 0, p.stderr)
        p = run_cli(["combine", "-o", os.path.join(tmp, "bad"), outs["a"], nocalls], cwd=tmp)
        check(p.returncode == 2 and "calls=true and calls=false" in p.stderr
              and not os.path.exists(os.path.join(tmp, "bad")), f"{p.returncode} {p.stderr}")
    check(manifest["left_out"] == [], f"left out: {manifest['left_out']}")
    check({"lines.json", "lines.txt", "lines.html"} <= set(manifest["files"]) and page_ok,
          f"files: {manifest['files']}")
    check(got["processes"] == 2 and got["calls"] is True, f"{got['processes']}, {got['calls']}")
    mine, one = got["files"][path], both["files"][path]
    hits = {n: v["hits"] for n, v in mine["lines"].items()}
    want = {n: v["hits"] for n, v in one["lines"].items()}
    check(hits == want, f"hits of the combination {hits} != one run's {want}")
    check(sorted(mine["functions"]) == ["helper", "work_a", "work_b"], f"{sorted(mine['functions'])}")
    for name, fn in mine["functions"].items():
        ref = one["functions"][name]
        check(fn["calls"] == ref["calls"] and fn["line"] == ref["line"],
              f"{name}: calls {fn['calls']} != {ref['calls']}")
        check({n: v["hits"] for n, v in fn["lines"].items()}
              == {n: v["hits"] for n, v in ref["lines"].items()}, f"{name}: hits per line")
        check(fn["time_ns"] == sum(v["time_ns"] for v in fn["lines"].values()) > 0,
              f"{name}: total is the sum of its lines: {fn}")
    # time added exactly, line by line: a's plus b's
    for n, v in mine["lines"].items():
        parts = [d["files"][path]["lines"].get(n, {"time_ns": 0})["time_ns"] for d in (a, b)]
        check(v["time_ns"] == sum(parts) and v["time_ns"] > 0,
              f"line {n}: time {v['time_ns']} != {parts} added")
    check(got["files"][path]["functions"]["helper"]["calls"]
          == a["files"][path]["functions"]["helper"]["calls"]
          + b["files"][path]["functions"]["helper"]["calls"] == 40 + 9, "helper's calls: 40, and the 9 characters of 'Hello World' not upper case")
    cols = hits_column(texts["comb"])
    check(cols == hits_column(texts["both"]) and len(cols) > 15,
          f"lines.txt's hits column:\n{texts['comb']}\n----\n{texts['both']}")
    print(f"PASS: {sum(hits.values())} hits on {len(hits)} lines as one run's; "
          f"time added exactly")


THREADS = textwrap.dedent("""\
    import threading

    def fa(n):
        t = 0
        for i in range(n):
            t += i % 3
        return t

    def fb(s):
        out = []
        for ch in s:
            if ch == "x":
                out.append(1)
        return out

    def shared(k):
        return k + 1

    def run_a():
        for j in range(5):
            fa(10 + j)
            shared(1)

    def run_b():
        fb("xyxxz" * 4)
        for i in range(3):
            shared(i)

    ta = threading.Thread(target=run_a, name="alpha")
    tb = threading.Thread(target=run_b, name="beta")
    ta.start()
    tb.start()
    ta.join()
    tb.join()
    shared(0)
    """)

def case_threads():
    """per_thread=true: each thread's hits per line equal sys.settrace's line
    events on that thread; the whole run's figures are the threads' sums."""
    with tempfile.TemporaryDirectory() as tmp:
        path, out, data, _ = run_lines(tmp, "lines:modules=__main__,html=false,per_thread=true",
                                       THREADS)
        with open(os.path.join(out, "lines.txt")) as f:
            by_thread_txt = parts_column(f.read())
        oracle = settrace_hits(path, "thread")
        # combine adds up the whole run's figures and says it leaves the threads out
        out = os.path.join(tmp, "out")
        p = run_cli(["combine", "-o", os.path.join(tmp, "comb"), out], cwd=tmp)
        check(p.returncode == 0 and "lines.json's threads (per_thread=true) are not combined "
              "(in 1 report set)" in p.stderr, f"combine: {p.returncode} {p.stderr}")
        with open(os.path.join(tmp, "comb", "lines.json")) as f:
            comb = json.load(f)
        check("threads" not in comb and comb["files"] == data["files"],
              "combined: the whole run's figures")
        _, _, plain, _ = run_lines(tmp, "lines:modules=__main__,html=false", THREADS)
    check("threads" not in plain, "no threads section unless per_thread=true")
    check(sorted(oracle) == ["MainThread", "alpha", "beta"], f"oracle threads: {sorted(oracle)}")
    threads = data["threads"]
    by_name = {}
    for t in threads:
        check(isinstance(t["index"], int) and isinstance(t["ident"], int),
              f"a thread's identity: {t}")
        lines = t["files"].get(path, {"lines": {}})["lines"]
        if lines:
            check(t["name"] not in by_name, f"two threads named {t['name']}")
            by_name[t["name"]] = t
    check(sorted(by_name) == sorted(oracle), f"threads with lines: {sorted(by_name)}")
    for name, want in oracle.items():
        entry = by_name[name]["files"][path]
        got = {int(n): v["hits"] for n, v in entry["lines"].items()}
        check(got == want, f"thread {name}: hits {got} != sys.settrace's {want}")
        for key, fn in entry["functions"].items():
            check(fn["time_ns"] == sum(v["time_ns"] for v in fn["lines"].values()),
                  f"{name}.{key}: its total is its lines' sum")
    # the threads' own functions: fa only on alpha, fb only on beta, shared on all three
    funcs = {name: sorted(t["files"][path]["functions"]) for name, t in by_name.items()}
    check("fa" in funcs["alpha"] and "fa" not in funcs["beta"] and "fb" in funcs["beta"]
          and "fb" not in funcs["alpha"], f"functions per thread: {funcs}")
    calls = {name: t["files"][path]["functions"]["shared"]["calls"] for name, t in by_name.items()}
    check(calls == {"alpha": 5, "beta": 3, "MainThread": 1}, f"shared's calls per thread: {calls}")
    # lines.txt breaks each function down by thread, as lines.json has it
    want = {(q, "%s (thread %d)" % (t["name"], t["index"])):
            (sum(v["hits"] for v in fn["lines"].values()), fn["calls"])
            for t in threads for q, fn in t["files"].get(path, {"functions": {}})["functions"].items()}
    check(by_thread_txt == want, f"lines.txt's threads {by_thread_txt} != lines.json's {want}")
    # the whole run is the sum of its threads, line by line
    whole = data["files"][path]["lines"]
    for n, v in whole.items():
        parts = [t["files"].get(path, {"lines": {}})["lines"].get(n) for t in threads]
        parts = [x for x in parts if x]
        check(v["hits"] == sum(x["hits"] for x in parts)
              and v["time_ns"] == sum(x["time_ns"] for x in parts),
              f"line {n}: {v} is not the sum of {parts}")
    print(f"PASS: {len(oracle)} threads, each one's hits as sys.settrace's "
          f"({', '.join('%s %d' % (n, sum(h.values())) for n, h in sorted(oracle.items()))})")


# Contexts set by the program itself (what the pytest plugin does at each
# test phase): a frame that runs on across a change (main's loop), a
# generator made in one context and resumed in others, and "" before the
# first context and after the last. CUR mirrors the context for the oracle.
# The generator is run to its end: one closed at exit would be resumed by a
# throw, which the legacy backend on 3.11 tells from a call only as "unknown".
CONTEXTS = textwrap.dedent("""\
    try:
        from pytracekit import set_context
    except ImportError:  # the oracle's run
        def set_context(name):
            return 0
    CUR = [""]

    def ctx(name):
        set_context(name); CUR[0] = name or ""

    def gen(n):
        for i in range(n):
            yield i

    def work(k):
        t = 0
        for i in range(k):
            t += i
        return t

    def main():
        g = gen(6)
        for name in ("a", "b", "a", "c"):
            ctx(name)
            work(len(name) + 2)
            next(g)
            x = 1
        ctx(None)
        rest = list(g)
        return x + len(rest)

    main()
    """)

def case_contexts():
    """per_context=true: each context's hits per line equal sys.settrace's
    line events while it was current, with frames and a generator that run
    on across context changes; the whole run's hits and times are the
    contexts' sums."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = "lines:modules=__main__,per_context=true"
        path, tmp_out, data, _ = run_lines(tmp, spec, CONTEXTS)
        # a second run, combined with the first
        os.rename(tmp_out, os.path.join(tmp, "first"))
        run_lines(tmp, spec + ",html=false", CONTEXTS)
        tmp_out = os.path.join(tmp, "first")
        with open(os.path.join(tmp_out, "lines.txt")) as f:
            got_txt = parts_column(f.read())
        with open(os.path.join(tmp_out, "lines.html")) as f:
            page = f.read()
        comb_dir = os.path.join(tmp, "comb")
        p = run_cli(["combine", "-o", comb_dir, tmp_out, os.path.join(tmp, "out")], cwd=tmp)
        check(p.returncode == 0, f"combine: {p.returncode} {p.stderr}")
        with open(os.path.join(comb_dir, "lines.json")) as f:
            comb = json.load(f)
        with open(os.path.join(comb_dir, "lines.txt")) as f:
            comb_txt = parts_column(f.read())
        oracle = settrace_hits(path, "context")
    got = {name: {int(n): v["hits"] for n, v in c["files"][path]["lines"].items()}
           for name, c in data["contexts"].items()}
    check(got == oracle, f"hits per context {got} != sys.settrace's {oracle}")
    check(sorted(got) == ["", "a", "b", "c"], f"contexts: {sorted(got)}")
    # main's loop line `x = 1` (line 27) once in each of its turns, two in "a"
    check(got["a"][27] == 2 and got["b"][27] == 1 and got["c"][27] == 1,
          f"main's loop across the changes: {[(k, v.get(27)) for k, v in got.items()]}")
    # the generator, made in "", starts at its first next() in "a" and is
    # resumed in each later turn and run to its end in "": one call, in "a";
    # its loop line in every context
    gen = {name: c["files"][path]["functions"].get("gen") for name, c in data["contexts"].items()}
    check({name: g["calls"] for name, g in gen.items() if g and g["calls"]} == {"a": 1}
          and all(g and "13" in g["lines"] for g in gen.values()),
          f"gen per context: {gen}")
    for n, v in data["files"][path]["lines"].items():
        parts = [c["files"][path]["lines"][n] for c in data["contexts"].values()
                 if n in c["files"][path]["lines"]]
        check(v["hits"] == sum(x["hits"] for x in parts)
              and v["time_ns"] == sum(x["time_ns"] for x in parts),
              f"line {n}: {v} is not the sum of {parts}")
    # lines.txt breaks each function down by context, as lines.json has it
    want = {(q, name or "(no context)"): (sum(v["hits"] for v in fn["lines"].values()), fn["calls"])
            for name, c in data["contexts"].items()
            for q, fn in c["files"][path]["functions"].items()}
    check(got_txt == want, f"lines.txt's contexts {got_txt} != lines.json's {want}")
    # work(3) twice: `t = 0`, the loop's test 4 times, its body 3, `return`
    check(got_txt[("work", "a")] == (2 * (1 + 4 + 3 + 1), 2),
          f"work in a: {got_txt[('work', 'a')]}")
    # lines.html: under each function its contexts by time, and on each
    # line a tooltip naming the contexts that took its time
    import html as _html
    import re
    work = page[page.index(">work</h2>"):]
    table = work[work.index('<table class="index parts">'):work.index("</table>")]
    rows = re.findall(r'<tr><td class="num">[^<]*</td><td class="num">(\d+)</td>'
                      r'<td class="num">(\d+)</td><td class="num">[^<]*</td><td>([^<]*)</td></tr>',
                      table)
    check({(_html.unescape(label), int(h), int(c)) for h, c, label in rows}
          == {(name, hits, calls) for (q, name), (hits, calls) in want.items() if q == "work"},
          f"lines.html's contexts of work: {rows}")
    tip = re.search(r'<p id="f\d+l18"[^>]* title="([^"]*)"', work)
    check(tip is not None and all(n + ":" in _html.unescape(tip.group(1)) for n in "abc"),
          f"line 18's tooltip: {tip and tip.group(1)}")
    # two runs combined: each context's hits twice, by name, and its table
    comb_hits = {name: {int(n): v["hits"] for n, v in c["files"][path]["lines"].items()}
                 for name, c in comb["contexts"].items()}
    check(comb_hits == {name: {n: 2 * h for n, h in hh.items()} for name, hh in oracle.items()},
          f"combined contexts: {comb_hits}")
    check(comb_txt.get(("work", "a")) == tuple(2 * x for x in got_txt[("work", "a")]),
          f"combined lines.txt: {comb_txt.get(('work', 'a'))}")
    print(f"PASS: {len(oracle)} contexts, each one's hits as sys.settrace's "
          f"({', '.join('%r %d' % (n, sum(h.values())) for n, h in sorted(oracle.items()))})")


def case_html():
    """lines.html as a browser shows it: the hottest line red."""
    from ptk_browser import browser_env, chromium, chromium_args, dump_dom, png_pixels
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        _, out, _, _ = run_lines(tmp, "lines:modules=__main__", SLEEPY)
        page = os.path.join(out, "lines.html")
        dom = dump_dom(browser, tmp, page)
        check('id="f2l8" class="hottest"' in dom and "Line timing" in dom,
              "the page renders with outer's hottest line")
        shot = os.path.join(tmp, "lines.png")
        p = subprocess.run(chromium_args(browser, tmp) + [
            "--window-size=1000,1400", "--screenshot=" + shot, "file://" + page + "#f2"],
            env=browser_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, timeout=120)
        check(p.returncode == 0 and os.path.exists(shot),
              f"chromium --screenshot failed ({p.returncode}):\n{p.stderr}")
        pixels = png_pixels(shot)
    hot = (255, 65, 65)
    check(any(all(abs(a - b) <= 2 for a, b in zip(px, hot)) for px in pixels),
          f"the screenshot has no hottest-line red {hot}")
    print("PASS: rendered, the hottest line red")


def case_blocks():
    """The lines each function of the reports shows: lines_format's
    _block_ends (one ast parse per file) against inspect.getblock, what
    line_profiler and the reports before it read, on every def and class of
    the standard library this Python has (its tests left out but those of
    the syntax: decorators, generics, type aliases, the grammar)."""
    import inspect
    import sysconfig
    import types
    import warnings
    source = os.environ["PTK_SOURCE_DIR"]
    fmt = load_module("_ptk_lines_format",
                      os.path.join(source, "plugins", "lines", "lines_format.py"))

    def getblock_last(lines, first):
        try:
            return first + len(inspect.getblock(lines[first - 1:])) - 1
        except Exception:
            return first

    stdlib = sysconfig.get_paths()["stdlib"]
    files = codes = 0
    differ = []
    syntax = ("test_decorators.py", "test_grammar.py", "test_type_aliases.py",
              "test_type_params.py", "test_type_annotations.py", "test_reprlib.py")
    for d, dirs, names in os.walk(stdlib):
        dirs[:] = sorted(x for x in dirs if x not in ("site-packages", "__pycache__"))
        in_tests = os.path.relpath(d, stdlib).split(os.sep)[0] in ("test", "idlelib")
        for name in sorted(names):
            if not name.endswith(".py") or (in_tests and name not in syntax):
                continue
            path = os.path.join(d, name)
            src = fmt._read_source(path)
            if src is None:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the grammar tests' SyntaxWarnings
                    top = compile("\n".join(src) + "\n", path, "exec")
            except (SyntaxError, ValueError):
                continue  # test data that is not Python
            files += 1
            end_of = fmt._block_ends(src)
            firsts, stack = set(), [top]
            while stack:
                co = stack.pop()
                n = co.co_firstlineno
                line = src[n - 1].lstrip() if 0 < n <= len(src) else ""
                # a def or a class body (a `type` alias's value is a
                # function named after it; annotations are __annotate__
                # functions on 3.14+)
                if (not co.co_name.startswith("<") and co.co_name != "__annotate__"
                        and not line.startswith("type ")):
                    firsts.add(co.co_firstlineno)
                stack += [c for c in co.co_consts if isinstance(c, types.CodeType)]
            lines = [s + "\n" for s in src]  # as getblock reads them, made once a file
            for first in sorted(firsts):
                codes += 1
                want = max(first, getblock_last(lines, first))
                got = fmt._last_line(end_of, first, [])
                if got != want:
                    differ.append("%s:%d: %d, getblock %d" % (path, first, got, want))
    print("%d files, %d defs and classes; %d differ" % (files, codes, len(differ)))
    # the lines as Python numbers them, in both report writers: a form feed,
    # U+2028 in a string and \r\n end no line of theirs
    cov_fmt = load_module("_ptk_coverage_format",
                          os.path.join(source, "tools", "pytracekit-coverage.py"))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ff.py")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("# -*- coding: utf-8 -*-\r\n\x0c\nS = 'a\u2028b\x85c'\n"
                    "\x0c\ndef f():\r\n    return S\n")
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        fn = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        for mod in (fmt, cov_fmt):
            src = mod._read_source(path)
            check(len(src) == 6 and src[fn.co_firstlineno - 1] == "def f():",
                  "%s read %r" % (mod.__name__, src))
        check(fmt._block_ends(fmt._read_source(path)) == {5: 6}, "ff.py's block")
    print("ok: form feeds, U+2028 and \\x85 end no line")
    for line in differ[:20]:
        print("  " + line)
    check(files > 300 and not differ, "blocks differ from inspect.getblock's")
    print("PASS: every block as inspect.getblock reads it")


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
