"""pytracekit combine. Usage: test_combine.py CASE

sum       a followed run (a parent and 8 forked children): every combined
          figure (counter calls and events, pstats calls and times, folded
          stacks, timer.json) equals the sum of the parts, computed here from
          the parts themselves.
paths     two "machines" (the same program under two directories) merged
          with --paths: one file, the counts of both.
coverage  the combined coverage of two runs against coverage.py's combine
          of the same two runs (where coverage.py is importable).
errors    bad input: exit 2, a message, nothing written.
"""
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile

from ptk_testlib import CLI, PYTHON, check, fail, run_cli, skip

CASE = sys.argv[1]

EIGHT = """\
import os, sys
def parent_work(): pass
def child_work(n):
    return sum(range(n))
for _ in range(3): parent_work()
pids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        for _ in range(i + 1): child_work(i)
        sys.exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
"""


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def parts(out):
    return [out] + sorted(os.path.join(out, d) for d in os.listdir(out) if d.startswith("pid-"))


def case_sum(tmp):
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(EIGHT)
    out = os.path.join(tmp, "out")
    p = run_cli(["-p", "counter:top=0", "-p", "timer:top=0,folded=true", "--follow-children",
                 "-o", out, prog], cwd=tmp)
    check(p.returncode == 0, p.stderr)
    dirs = parts(out)
    check(len(dirs) == 9, f"{len(dirs)} report sets")
    comb = os.path.join(tmp, "comb")
    p = run_cli(["combine", "-o", comb, out], cwd=tmp)
    check(p.returncode == 0, f"combine: {p.returncode} {p.stderr}")
    # counter: calls per function and events per kind
    want, events = {}, {}
    for d in dirs:
        c = load(d, "counter.json")
        for f in c["functions"]:
            key = (f["kind"], f["file"], f["line"], f["qualname"])
            want[key] = want.get(key, 0) + f["calls"]
        for k, v in c["events"].items():
            events[k] = events.get(k, 0) + v
    c = load(comb, "counter.json")
    got = {(f["kind"], f["file"], f["line"], f["qualname"]): f["calls"] for f in c["functions"]}
    check(got == want, "combined counter calls differ from the sum of the parts")
    check(c["events"] == events, f"events {c['events']} vs {events}")
    child = [v for k, v in got.items() if k[3] == "child_work"]
    check(child == [36], f"child_work combined {child}, expected 1+2+...+8 = 36")
    # pstats: calls, primitive calls and times per function
    wantp = {}
    for d in dirs:
        for k, v in pstats.Stats(os.path.join(d, "timer.pstats")).stats.items():
            a = wantp.get(k, (0, 0, 0.0, 0.0))
            wantp[k] = (a[0] + v[0], a[1] + v[1], a[2] + v[2], a[3] + v[3])
    st = pstats.Stats(os.path.join(comb, "timer.pstats"))
    check(set(st.stats) == set(wantp), "pstats functions differ")
    for k, v in st.stats.items():
        w = wantp[k]
        check(v[:2] == w[:2] and abs(v[2] - w[2]) < 1e-9 and abs(v[3] - w[3]) < 1e-9,
              f"pstats {k}: {v[:4]} vs {w}")
    check(sum(v[1] for k, v in st.stats.items() if k[2] == "child_work") == 36, "pstats child_work")
    # folded stacks: the value of each stack summed
    wantf = {}
    for d in dirs:
        with open(os.path.join(d, "timer.folded")) as f:
            for line in f:
                s, _, v = line.rstrip("\n").rpartition(" ")
                wantf[s] = wantf.get(s, 0) + int(v)
    gotf = {}
    with open(os.path.join(comb, "timer.folded")) as f:
        for line in f:
            s, _, v = line.rstrip("\n").rpartition(" ")
            gotf[s] = int(v)
    check(gotf == wantf, "folded stacks differ from the sum of the parts")
    # timer.json: totals and per-function calls
    tj = load(comb, "timer.json")
    for k in ("calls", "primitive_calls", "total_ns"):
        check(tj[k] == sum(load(d, "timer.json")[k] for d in dirs), f"timer.json {k}")
    check(tj["processes"] == 9, f"processes {tj['processes']}")
    m = load(comb, "run.json")
    check(sorted(r["pid"] for r in m["combined"]) ==
          sorted(load(d, "run.json")["run"]["pid"] for d in dirs), "run.json lists the runs")
    print("ok: 9 processes, combined = sum of parts")


def contexts(path):
    """{stack of frame (file, line, name without its file part): inclusive
    ns} of a speedscope evented profile."""
    doc = load(os.path.dirname(path), os.path.basename(path))
    frames = doc["shared"]["frames"]
    key = [(f.get("file"), f.get("line"), f["name"].split(" (")[0] if f.get("file")
            else f["name"]) for f in frames]
    out, stack = {}, []
    for prof in doc["profiles"]:
        for ev in prof["events"]:
            if ev["type"] == "O":
                stack.append((key[ev["frame"]], ev["at"]))
            else:
                k, at = stack[-1]
                path_ = tuple(s[0] for s in stack)
                stack.pop()
                out[path_] = out.get(path_, 0) + ev["at"] - at
    return out


def case_formats(tmp):
    """Every format combines (timer.speedscope.json: the time of each
    calling context summed), and what is not combined is said."""
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(EIGHT)
    out = os.path.join(tmp, "out")
    p = run_cli(["-p", "counter:top=0", "-p", "timer:top=0", "--follow-children",
                 "-o", out, prog], cwd=tmp)
    check(p.returncode == 0, p.stderr)
    # the parent also with a timeline and timer.folded: formats of some sets only
    p = run_cli(["-p", "counter:top=0", "-p", "timer:top=0,folded=true", "-p",
                 "timeline", "-o", os.path.join(tmp, "extra"), prog], cwd=tmp)
    check(p.returncode == 0, p.stderr)
    dirs = parts(out) + parts(os.path.join(tmp, "extra"))
    comb = os.path.join(tmp, "comb")
    p = run_cli(["combine", "-o", comb, out, os.path.join(tmp, "extra")], cwd=tmp)
    check(p.returncode == 0, f"combine: {p.returncode} {p.stderr}")
    want = {}
    for d in dirs:
        for k, v in contexts(os.path.join(d, "timer.speedscope.json")).items():
            want[k] = want.get(k, 0) + v
    got = contexts(os.path.join(comb, "timer.speedscope.json"))
    check(got == want, "combined speedscope contexts differ from the sum of the parts")
    doc = load(comb, "timer.speedscope.json")
    check(doc["profiles"][0]["endValue"] ==
          sum(load(d, "timer.speedscope.json")["profiles"][0]["endValue"] for d in dirs),
          "endValue is not the sum")
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("pytracekit combine: ")]
    for want_line in (
            "pytracekit combine: timeline.perfetto-trace is not combined (in 1 report set)",
            "pytracekit combine: timeline.summary.json is not combined (in 1 report set)",
            "pytracekit combine: timer.folded covers 1 of the %d timer report sets" % len(dirs)):
        check(any(ln.startswith(want_line) for ln in said), f"{want_line!r} not in {said}")
    m = load(comb, "run.json")
    check(len(m["left_out"]) == 3, f"run.json left_out: {m['left_out']}")
    print("ok: speedscope combined, %d left out said" % len(m["left_out"]))


PROG = """\
import sys
def work(n):
    if n > 2:
        return "big"
    return "small"
for i in range(int(sys.argv[1])):
    work(i)
"""


def case_paths(tmp):
    outs = []
    for machine, n in (("a", 3), ("b", 5)):
        src = os.path.join(tmp, machine, "src")
        os.makedirs(src)
        with open(os.path.join(src, "prog.py"), "w") as f:
            f.write(PROG)
        out = os.path.join(tmp, "out-" + machine)
        p = run_cli(["-p", "counter:top=0", "-p", "timer:top=0,folded=true", "-p", "coverage", "-o", out,
                     os.path.join(src, "prog.py"), str(n)], cwd=tmp)
        check(p.returncode == 0, p.stderr)
        outs.append(out)
    comb = os.path.join(tmp, "comb")
    canon = os.path.join(tmp, "canon")
    p = run_cli(["combine", "--no-summary", "-o", comb, "--paths",
                 f"{canon}={tmp}/*/src", outs[0], outs[1]], cwd=tmp)
    check(p.returncode == 0, f"combine: {p.stderr}")
    c = load(comb, "counter.json")
    work = [(f["file"], f["calls"]) for f in c["functions"] if f["qualname"] == "work"]
    check(work == [(canon + "/prog.py", 8)], f"work: {work}")
    st = pstats.Stats(os.path.join(comb, "timer.pstats"))
    keys = [k for k in st.stats if k[2] == "work"]
    check(keys == [(canon + "/prog.py", 2, "work")] and st.stats[keys[0]][1] == 8,
          f"pstats work: {[(k, st.stats[k][:2]) for k in keys]}")
    cov = load(comb, "coverage.json")
    check(list(cov["files"]) == [canon + "/prog.py"], f"coverage files {list(cov['files'])}")
    hits = dict(cov["files"][canon + "/prog.py"]["hits"])
    # (a line's count is the number of runs it ran in: the plugin turns a
    # line off once it has run)
    check(hits.get(4) == 1 and hits.get(5) == 2 and hits.get(7) == 2, f"hits {hits}")
    check(cov["meta"]["runs"] == 2, f"runs {cov['meta']['runs']}")
    # coverage.py's figures, as in each run's own coverage.json: the file's
    # summary and missing lines, and the totals, from the combined lines
    rec = cov["files"][canon + "/prog.py"]
    ran = {n for n, c in rec["hits"] if c} & set(rec["lines"])
    missing = sorted(set(rec["lines"]) - ran)
    check(sorted(rec.get("missing_lines", ["absent"])) == missing
          and rec.get("summary", {}).get("covered_lines") == len(ran)
          and cov.get("totals", {}).get("num_statements") == len(rec["lines"])
          and cov["totals"]["covered_lines"] == len(ran),
          f"the combined figures: {rec.get('summary')}, {cov.get('totals')}, "
          f"missing {rec.get('missing_lines')} (want {missing})")
    # The Python API gives the same files.
    import pytracekit
    api = os.path.join(tmp, "api")
    m = pytracekit.combine(outs, api, paths=[(canon, [f"{tmp}/*/src"])])
    check(m["files"] == load(comb, "run.json")["files"], f"API files {m['files']}")
    for name in ("counter.json", "timer.json", "coverage.json"):
        check(load(api, name) == load(comb, name), f"API {name} differs from the command's")
    print("ok: two machines remapped onto", canon)


def case_coverage(tmp):
    try:
        import coverage  # noqa: F401
        from coverage import CoverageData
    except ImportError:
        skip(f"coverage.py is not importable by {sys.executable}; "
             "tools/run-tests runs this on Debian's python3")
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write(PROG)
    outs = []
    for n in ("2", "4"):
        out = os.path.join(tmp, "out" + n)
        p = run_cli(["-p", "coverage:branch=true", "-o", out, prog, n], cwd=tmp)
        check(p.returncode == 0, p.stderr)
        outs.append(out)
        # its trace core: line transitions, as ours (from 3.14 its default
        # core is sysmon, whose branch data are not transitions)
        p = subprocess.run([PYTHON, "-m", "coverage", "run", "--branch", "--parallel-mode",
                            prog, n], cwd=tmp, capture_output=True, text=True,
                           env=dict(os.environ, COVERAGE_CORE="ctrace"))
        check(p.returncode == 0, p.stderr)
    p = subprocess.run([PYTHON, "-m", "coverage", "combine"], cwd=tmp,
                       capture_output=True, text=True)
    check(p.returncode == 0, p.stderr)
    data = CoverageData(os.path.join(tmp, ".coverage"))
    data.read()
    comb = os.path.join(tmp, "comb")
    p = run_cli(["combine", "--no-summary", "-o", comb] + outs, cwd=tmp)
    check(p.returncode == 0, p.stderr)
    ours = load(comb, "coverage.json")["files"][prog]
    theirs_lines = set(data.lines(prog))
    ours_lines = {n for n, c in ours["hits"] if c}
    check(ours_lines == theirs_lines, f"lines: {sorted(ours_lines)} vs coverage.py {sorted(theirs_lines)}")
    theirs_arcs = {(a, b) for a, b in data.arcs(prog) if a > 0 and b > 0}
    ours_arcs = {(a, b) for a, b, c in ours["arcs"] if a > 0 and b > 0 and c}
    check(ours_arcs == theirs_arcs, f"arcs: {sorted(ours_arcs)} vs coverage.py {sorted(theirs_arcs)}")
    print("ok: combined lines and arcs equal coverage.py combine")


def case_errors(tmp):
    comb = os.path.join(tmp, "comb")
    bad = os.path.join(tmp, "bad")
    os.makedirs(bad)
    with open(os.path.join(bad, "counter.json"), "w") as f:
        f.write("{not json")
    for args, what in ((["combine", "-o", comb, os.path.join(tmp, "missing")], "not a directory"),
                       (["combine", "-o", comb, bad], "counter.json"),
                       (["combine", "-o", comb, "--paths", "nocanon", bad], "--paths"),
                       (["combine", "-o", comb, "--bogus", bad], "unknown option"),
                       (["combine", "-o", comb, tmp + "/empty-none"], "not a directory")):
        p = run_cli(args, cwd=tmp)
        check(p.returncode == 2, f"{args}: exit {p.returncode}")
        check(what in p.stderr, f"{args}: {p.stderr!r} lacks {what!r}")
        check(not os.path.exists(comb), f"{args}: wrote {comb}")
    # a usage mistake is one line, not the usage text
    for args, line in ((["combine", "--bogus", bad],
                        "pytracekit combine: unknown option '--bogus' "
                        "(see pytracekit combine --help)\n"),
                       (["combine"], "pytracekit combine: no input directories "
                                     "(see pytracekit combine --help)\n"),
                       (["combine", bad, "-o"], "pytracekit combine: -o needs a value "
                                                "(see pytracekit combine --help)\n"),
                       (["html", "--nope"], "pytracekit html: unknown option '--nope' "
                                            "(see pytracekit html --help)\n"),
                       (["report", "--rcfile"], "pytracekit report: --rcfile needs a value "
                                                "(see pytracekit report --help)\n")):
        p = run_cli(args, cwd=tmp)
        check((p.returncode, p.stderr) == (2, line), f"{args}: {p.returncode} {p.stderr!r}")
    # a lines.json whose per-context figures are malformed: named where
    badlines = os.path.join(tmp, "badlines")
    os.makedirs(badlines)
    fn = {"line": 1, "calls": 1, "time_ns": 1, "lines": {"x": {"hits": 1, "time_ns": 1}}}
    with open(os.path.join(badlines, "lines.json"), "w") as f:
        json.dump({"calls": True, "files": {},
                   "contexts": {"t|call": {"files": {"/a.py": {"lines": {},
                                                               "functions": {"f": fn}}}}}}, f)
    p = run_cli(["combine", "-o", comb, badlines], cwd=tmp)
    check(p.returncode == 2 and "contexts['t|call'].files['/a.py'].functions['f'].lines['x']"
          in p.stderr and "a line number" in p.stderr and not os.path.exists(comb),
          f"malformed contexts: {p.returncode} {p.stderr!r}")
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    p = run_cli(["combine", "-o", comb, empty], cwd=tmp)
    check(p.returncode == 2 and "no reports" in p.stderr, p.stderr)
    print("ok: bad input is exit 2, nothing written")


def main():
    if CLI is None:
        skip("PTK_CLI is not set")
    with tempfile.TemporaryDirectory() as tmp:
        {"sum": case_sum, "formats": case_formats, "paths": case_paths,
         "coverage": case_coverage,
         "errors": case_errors}[CASE](tmp)


if __name__ == "__main__":
    main()
