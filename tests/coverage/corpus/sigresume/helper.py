"""Excluded (include= names main.py only): resumes a measured generator
with a SIGINT pending, from C, as CPython's test_generators does."""
import _testcapi


def interrupt(gen, tick):
    tick()
    try:
        _testcapi.raise_SIGINT_then_send_None(gen)
    except StopIteration as e:
        return e.value
