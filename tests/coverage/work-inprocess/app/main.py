import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from app import util, unused  # noqa: E402


def run(mode, text):
    items = util.parse(text)
    if mode == "a":
        return util.mode_a(items)
    elif mode == "b":
        return util.mode_b(items)
    return None


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "a"
    print(run(mode, "x, y, z"), unused.CONSTANT)
