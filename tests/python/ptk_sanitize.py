"""For a test script registered as a PLAIN_DRIVER (tests/CMakeLists.txt).

Under the sanitizers (PTK_SANITIZE) such a script runs without the
preloaded runtimes and with Python's own allocator: its own Python work
(reading traces and reports) is not ours to check and was many times
slower through ASan. Importing this module gives the processes it starts
PYTHONMALLOC=malloc back, so that the command (which links the runtimes
itself) runs as every other sanitizer test runs it, with the Python objects
our code touches visible to ASan. ORACLE_ENV is the script's environment as
it started, for pure-Python helpers that must not run on the C allocator
(an oracle that tells calls apart by id() is among them).
"""
import os

ORACLE_ENV = dict(os.environ)
PLAIN_DRIVER = bool(os.environ.get("PTK_SANITIZE")) and "LD_PRELOAD" not in os.environ
if PLAIN_DRIVER:
    os.environ["PYTHONMALLOC"] = "malloc"
