import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fpkg import core  # noqa: E402


def w_main():
    return core.w_run()


print(w_main())
