"""The coverage plugin's start: the opcode tables compiled into it at build
time (analysis.py's op_tables(), baked by embed.py) against the same tables
asked of this interpreter's opcode module at start
(PYTRACEKIT_COVERAGE_SETUP=python, what the plugin does under an
interpreter of another magic number), and what each way imports
(-X importtime, PYTHONPROFILEIMPORTTIME):

  same      lines, arcs, branches and counts of four programs (branch=true
            and branch=true,counts=true; both backends), and the deferred
            data: equal either way
  imports   with include= (and no coveragepy=) the start imports nothing
            (no opcode, no sysconfig); asked of Python, opcode is imported;
            the default scope imports sysconfig (its library directories)
            either way; the program's own sys.modules is the same in all

    test_setup.py CASE
"""
import json
import os

import ptk_coverage_util as u

PROGRAMS = ["arcs.py", "loops.py", "generators.py", "exceptions.py"]
PYTHON_SETUP = {"PYTRACEKIT_COVERAGE_SETUP": "python"}


def files_of(data, wd):
    """The measured files' records, by path relative to @p wd."""
    return {os.path.relpath(path, wd): rec for path, rec in data["files"].items()}


def case_same():
    wd = u.workdir("setup-same")
    u.copy_corpus(wd, *PROGRAMS)
    compared = 0
    for prog in PROGRAMS:
        for spec in ("coverage:branch=true", "coverage:branch=true,counts=true",
                     "coverage:branch=true,reports=false"):
            got = {}
            for how, env in (("baked", None), ("python", PYTHON_SETUP)):
                out = "out-%s-%s-%d" % (prog, how, len(spec))
                _, data = u.run_ptk(wd, [os.path.join(wd, prog)], spec=spec, outdir=out,
                                    env_extra=env)
                if not data or not data["files"]:
                    u.fail("%s %s (%s): nothing measured" % (prog, spec, how))
                got[how] = files_of(data, wd)
            if got["baked"] != got["python"]:
                u.fail("%s, %s: the baked tables measure otherwise than opcode's:\n"
                       "baked  %s\npython %s" % (prog, spec, json.dumps(got["baked"])[:2000],
                                                 json.dumps(got["python"])[:2000]))
            compared += 1
    print("ok: %d runs the same with the tables baked in and asked of opcode" % compared)


def imported(stderr):
    """The modules -X importtime saw imported."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line} - {"imported package"}


PROBE = "import sys\nprint(sorted(sys.modules))\n"


def case_imports():
    wd = u.workdir("setup-imports")
    prog = os.path.join(wd, "probe.py")
    with open(prog, "w") as f:
        f.write(PROBE)
    bare = u.run([u.python(), prog], wd).stdout
    rows = []
    for name, spec, env, want, not_want in (
            ("include=, baked", "include=%s/*," % wd, None, set(), {"opcode", "sysconfig"}),
            ("include=, asked of Python", "include=%s/*," % wd, PYTHON_SETUP, {"opcode"},
             {"sysconfig"}),
            ("default scope, baked", "", None, {"sysconfig"}, {"opcode"}),
            ("default scope, asked of Python", "", PYTHON_SETUP, {"sysconfig", "opcode"},
             set())):
        extra = dict(env or {}, PYTHONPROFILEIMPORTTIME="1")
        p, data = u.run_ptk(wd, [prog], spec="coverage:%sreports=false" % spec,
                            outdir="out%d" % len(rows), env_extra=extra)
        seen = imported(p.stderr)
        if not want <= seen or seen & not_want:
            u.fail("%s: imported %s; wanted %s and none of %s"
                   % (name, sorted(seen), sorted(want), sorted(not_want)))
        if p.stdout != bare:
            u.fail("%s: the program's sys.modules differ from a bare run's:\n  bare %s\n"
                   "  ours %s" % (name, bare, p.stdout))
        if list(data["files"]) != [prog]:
            u.fail("%s: measured %s" % (name, sorted(data["files"])))
        rows.append("%s: %s" % (name, ", ".join(sorted(seen & {"opcode", "sysconfig"}))
                                or "neither opcode nor sysconfig"))
    print("ok: the start imports\n  " + "\n  ".join(rows))


if __name__ == "__main__":
    import sys
    globals()["case_" + sys.argv[1]]()
