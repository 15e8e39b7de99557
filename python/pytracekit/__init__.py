"""pytracekit: run pytracekit sessions from Python code.

    import pytracekit
    with pytracekit.Session(["counter:top=5"], output_dir="out"):
        work()

Reports are written when the block ends (or on ``stop()`` + ``report()``).
"""
from ._pytracekit import Session, Error, version  # noqa: F401

__all__ = ["Session", "Error", "version"]
__version__ = version()
