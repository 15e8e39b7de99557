"""Can this interpreter run pytracekit's monitoring backend?

Run by cmake/checks.cmake with the interpreter being built against; asks what
lib/backends/monitoring.c's mon_init() asks when a session starts: sys.monitoring
(PEP 669) with the functions, constants and events the backend uses, and
None immortal (PEP 683; the callbacks return it without a new reference).
Exit status 0 and no output: yes; 1 and the reason on stderr: no.
"""
import sys

FUNCTIONS = ("use_tool_id", "free_tool_id", "get_tool", "register_callback",
             "set_events", "set_local_events", "restart_events")
CONSTANTS = ("DISABLE", "MISSING")
EVENTS = ("PY_START", "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD",
          "PY_UNWIND", "CALL", "C_RETURN", "C_RAISE", "LINE", "JUMP", "RAISE",
          "STOP_ITERATION", "INSTRUCTION", "BRANCH")


def why_not():
    version = "%d.%d.%d" % sys.version_info[:3]
    m = getattr(sys, "monitoring", None)
    if m is None:
        return "CPython %s has no sys.monitoring (PEP 669, 3.12+)" % version
    for name in FUNCTIONS + CONSTANTS:
        if not hasattr(m, name):
            return "sys.monitoring of CPython %s has no %s" % (version, name)
    for name in EVENTS:
        if not isinstance(getattr(m.events, name, None), int):
            return "sys.monitoring.events of CPython %s has no %s" % (version, name)
    before = sys.getrefcount(None)
    held = [None] * 100
    if sys.getrefcount(None) != before:
        return "None is not immortal in CPython %s (PEP 683)" % version
    del held
    return None


if __name__ == "__main__":
    reason = why_not()
    if reason:
        sys.stderr.write(reason + "\n")
        sys.exit(1)
