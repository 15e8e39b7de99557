"""Counts the Python calls of examples/workload per function, with
sys.setprofile in every thread (threading.setprofile for the workers): the
oracle for what the counter plugin reports when the `pytracekit` command runs
the same program.

    python3 workload_oracle.py WORKLOAD_DIR   ->  {"qualname@file.py:firstline": calls}
"""

import io
import json
import os
import runpy
import sys
import threading
from contextlib import redirect_stdout


def main():
    wl = os.path.realpath(sys.argv[1])
    # One dict per thread: a thread switch can happen inside prof(), so a
    # shared `counts[key] += 1` would lose updates.
    per_thread = {}
    get_ident = threading.get_ident

    keys = {}  # code object -> its key, or None if not the workload's

    def key_of(code):
        path = os.path.realpath(code.co_filename)
        if not path.startswith(wl + os.sep):
            return None
        return f"{code.co_qualname}@{os.path.basename(path)}:{code.co_firstlineno}"

    def prof(frame, event, arg):
        if event == "call":
            code = frame.f_code
            try:
                key = keys[code]
            except KeyError:
                key = keys[code] = key_of(code)
            if key is not None:
                counts = per_thread.setdefault(get_ident(), {})
                counts[key] = counts.get(key, 0) + 1

    sys.path.insert(0, wl)
    sys.argv = [os.path.join(wl, "main.py")]
    threading.setprofile(prof)
    sys.setprofile(prof)
    try:
        with redirect_stdout(io.StringIO()):
            runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code:
            raise
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    counts = {}
    for mine in per_thread.values():
        for key, n in mine.items():
            counts[key] = counts.get(key, 0) + n
    json.dump(counts, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
