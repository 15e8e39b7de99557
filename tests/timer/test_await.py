"""timer:await=true on programs/await_tasks.py (50 asyncio Tasks; sleeper()
awaits asyncio.sleep(0.05) twenty times):

  await     sleeper's inclusive time (pstats cumtime) is its wall time as
            the program measured it, within 5%; every function of the
            program keeps cProfile's call counts (its slices); timer.json
            lists the Tasks, sleeper's with 21 steps and the same wall time,
            each busy one with 21 steps
  default   without the option sleeper's inclusive time is the time its
            slices ran (under a tenth of its wall time) and timer.json has
            no Tasks

    test_await.py await|default
"""
import json
import os
import sys

import ptk_timer_util as U

SCRIPT = U.program("await_tasks.py")


def measured(proc):
    n, secs = proc.stdout.split()[:2]
    U.check(n == "50", "the program's output: %r" % proc.stdout)
    return float(secs)


def sleeper(stats):
    return U.one(stats, "sleeper", SCRIPT)


def case_await():
    outdir, proc = U.run_timer(SCRIPT, opts="await=true")
    wall = measured(proc)
    U.check(wall >= 1.0, "sleeper took %.3f s, less than its 20 sleeps" % wall)
    ours = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    U.check_consistent(ours, "timer.pstats")
    cc, nc, tt, ct, callers = sleeper(ours)
    U.check(abs(ct - wall) <= 0.05 * wall,
            "sleeper's cumtime %.6f s, its wall time %.6f s" % (ct, wall))
    U.check(nc == 21 and tt < 0.1 * wall, "sleeper: %d calls, tottime %.6f" % (nc, tt))
    theirs = U.run_cprofile(SCRIPT)
    problems, nfuncs, _, _ = U.compare_with_cprofile(ours, theirs, SCRIPT)
    U.check(not problems and nfuncs >= 6,
            "counts under await=true differ from cProfile's (%d functions): %s"
            % (nfuncs, problems[:5]))
    j = U.load_json(outdir)
    U.check(j.get("await") is True, "timer.json: await is %r" % j.get("await"))
    tasks = {t["name"]: t for t in j["tasks"]}
    s = tasks.get("sleeper")
    U.check(s is not None and s["coroutine"] == "sleeper" and s["steps"] == 21,
            "the sleeper Task: %r" % s)
    U.check(abs(s["wall_ns"] / 1e9 - wall) <= 0.05 * wall and s["running_ns"] < s["wall_ns"],
            "the sleeper Task's wall %d ns, running %d ns; measured %.6f s"
            % (s["wall_ns"], s["running_ns"], wall))
    busy = [t for n, t in tasks.items() if n.startswith("busy-")]
    U.check(len(busy) == 49 and all(t["steps"] == 21 and t["coroutine"] == "busy"
                                    for t in busy),
            "busy Tasks: %r" % busy[:3])
    print("OK: sleeper %.6f s inclusive, %.6f s measured" % (ct, wall))


def case_default():
    outdir, proc = U.run_timer(SCRIPT)
    wall = measured(proc)
    ours = U.load_pstats(os.path.join(outdir, "timer.pstats"))
    cc, nc, tt, ct, callers = sleeper(ours)
    U.check(nc == 21 and ct < 0.1 * wall,
            "sleeper by default: %d calls, cumtime %.6f s of %.6f s" % (nc, ct, wall))
    j = U.load_json(outdir)
    U.check("tasks" not in j and "await" not in j, "timer.json: %r" % sorted(j))


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
