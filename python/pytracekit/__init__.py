"""pytracekit: run pytracekit sessions from Python code.

    import pytracekit
    with pytracekit.Session(["counter:top=5"], output_dir="out"):
        work()

Reports are written when the block ends (or on ``stop()`` + ``report()``).
"""
from ._pytracekit import Session, Error, version  # noqa: F401


def combine(inputs, output_dir="pytracekit-combined", paths=None, summary=None):
    """Merges report directories (and the pid-N/ ones below them) into one
    set of reports; see pytracekit.combining for the details."""
    from .combining import combine as _combine
    return _combine(inputs, output_dir, paths, summary)


__all__ = ["Session", "Error", "version", "combine"]
__version__ = version()
