"""The oracle of test_tasks.py: runs program.py under sys.setprofile and, at
every Python call (and resume), asks asyncio which Task runs; numbers the
Tasks 1, 2, ... in the order first seen, holding each (so that a new Task
at a dead one's address is never taken for it). Writes [function, number,
Task name] for the program's own functions, and the number of Tasks, as
JSON.

    oracle.py OUT PROGRAM
"""
import json
import sys
import threading

out, prog = sys.argv[1], sys.argv[2]
seen = []  # the Tasks, strong
rows = []


def number(task):
    for i, t in enumerate(seen):
        if t is task:
            return i + 1
    seen.append(task)
    return len(seen)


def prof(frame, event, arg):
    if event != "call":
        return
    # (asyncio while it is imported has no current_task yet)
    current = getattr(sys.modules.get("asyncio"), "current_task", None)
    task = None
    if current is not None:
        try:
            task = current()
        except RuntimeError:
            task = None
    n = number(task) if task is not None else 0
    if frame.f_code.co_filename == prog:
        rows.append([frame.f_code.co_name, n, task.get_name() if task is not None else None])


sys.argv = [prog]
threading.setprofile(prof)
sys.setprofile(prof)
try:
    code = compile(open(prog).read(), prog, "exec")
    exec(code, {"__name__": "__main__", "__file__": prog})
finally:
    sys.setprofile(None)
    threading.setprofile(None)
with open(out, "w") as f:
    json.dump({"rows": rows, "tasks": len(seen)}, f)
