"""cmake/monitoring_probe.py, which decides at configure time whether the
build registers the monitoring backend's tests: it agrees with what this
build decided (PTK_HAVE_SYS_MONITORING, the first argument: x1 or x), says
yes on every 3.12+ (3.14 and 3.15 included, whose headers no longer have
the private macro that was checked before), and takes the fallback -- no,
with the reason -- for an interpreter without sys.monitoring, without one
of the events the backend registers, or without an immortal None."""
import os
import subprocess
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ptk_testlib import PYTHON, check  # noqa: E402

SOURCE = os.environ.get("PTK_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))
PROBE = os.path.join(SOURCE, "cmake", "monitoring_probe.py")
sys.path.insert(0, os.path.dirname(PROBE))
import monitoring_probe  # noqa: E402

built = sys.argv[1] == "x1"
version = "%d.%d.%d" % sys.version_info[:3]
real = monitoring_probe.why_not()
if sys.version_info >= (3, 12):
    check(real is None, "the probe says no on %s: %s" % (version, real))
else:
    check(real == "CPython %s has no sys.monitoring (PEP 669, 3.12+)" % version, real)
check(built == (real is None),
      "configure decided PTK_HAVE_SYS_MONITORING=%s, the probe now says %r" % (built, real))

# The probe run as configure runs it: exit status and reason.
r = subprocess.run([PYTHON, PROBE], capture_output=True, text=True)
check(r.returncode == (0 if real is None else 1) and r.stderr == (real + "\n" if real else ""),
      "as a command: %r" % (r,))

if sys.version_info >= (3, 12):
    saved = sys.monitoring
    try:
        del sys.monitoring
        got = monitoring_probe.why_not()
        check(got == "CPython %s has no sys.monitoring (PEP 669, 3.12+)" % version, got)
        events = types.SimpleNamespace(**{n: getattr(saved.events, n)
                                          for n in monitoring_probe.EVENTS if n != "JUMP"})
        sys.monitoring = types.SimpleNamespace(
            **{n: getattr(saved, n) for n in monitoring_probe.FUNCTIONS + monitoring_probe.CONSTANTS},
            events=events)
        got = monitoring_probe.why_not()
        check(got == "sys.monitoring.events of CPython %s has no JUMP" % version, got)
    finally:
        sys.monitoring = saved
print("probe:", real or "yes", "; build:", built)
