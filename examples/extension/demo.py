"""Counts calls with the callcount extension and checks them against an
oracle: the same program counted with sys.setprofile.

    PYTHONPATH=build python3 demo.py
"""

import json
import os
import sys
import tempfile

import callcount


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Walker:
    def __init__(self):
        self.seen = 0

    def visit(self, tree):
        self.seen += 1
        for child in tree:
            self.visit(child)


def squares(n):
    for i in range(n):
        yield i * i


def program():
    fib(12)
    Walker().visit([[[]], [[], [[]]], []])
    return sum(squares(10))


def oracle():
    """Python calls per function of program(), counted by sys.setprofile."""
    counts = {}

    def prof(frame, event, arg):
        if event == "call":
            code = frame.f_code
            key = (code.co_filename, code.co_firstlineno, code.co_qualname)
            counts[key] = counts.get(key, 0) + 1

    sys.setprofile(prof)
    program()
    sys.setprofile(None)
    return {k: v for k, v in counts.items() if k[0] == __file__}


def main():
    with tempfile.TemporaryDirectory(prefix="callcount-") as out:
        return check(out)


def check(out):
    expected = oracle()
    callcount.start(output_dir=out)
    assert callcount.running()
    program()
    counts = callcount.stop()
    assert not callcount.running()
    mine = {k: v for k, v in counts.items() if k[0] == __file__}

    for (filename, line, name), calls in sorted(mine.items(), key=lambda kv: kv[0][1]):
        print(f"{name:16} line {line:3}  {calls:5} calls")
    if mine != expected:
        print("MISMATCH with sys.setprofile:", expected, file=sys.stderr)
        return 1
    # fib(12) makes 465 calls; each generator resume is a call (10 yields + end).
    assert mine[(__file__, fib.__code__.co_firstlineno, "fib")] == 465
    assert mine[(__file__, squares.__code__.co_firstlineno, "squares")] == 11

    with open(os.path.join(out, "callcount.json")) as f:
        report = json.load(f)
    key = f"{__file__}:{fib.__code__.co_firstlineno}:fib"
    assert report[key] == 465, report.get(key)

    try:
        callcount.stop()
    except RuntimeError as exc:
        print(f"second stop: {exc}")
    else:
        raise AssertionError("stop() twice did not raise")
    print(f"callcount on pytracekit {callcount.pytracekit_version()}: "
          "matches sys.setprofile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
