"""Measures whether the hub's f_trace_lines switch-off fires: once the
coverage plugin has disabled (PTK_DISABLE) every line of a code object, new
frames of it must run with LINE tracing off. On the legacy backend with
its frame hook (CPython 3.11) such frames run with no trace function at all
and are left untouched (f_trace_lines stays True; test_excluded_frames.py
shows such frames run untraced), with the same lines reported; the
switch-off itself is checked with the hook off (PYTRACEKIT_FRAME_HOOK=0),
where it is what stops their LINE events.

Each probe in corpus/switchoff.py runs all its lines on its first call and
returns its frame's f_trace_lines; the second call must see False. On
failure the lines of the probe that never produced a LINE event are printed
(what the hub's line set has too many), with the Python version.
"""
import json
import os

import ptk_coverage_util as u


def main():
    wd = u.workdir("switchoff")
    u.copy_corpus(wd, "switchoff.py")
    script = os.path.join(wd, "switchoff.py")
    p, data = u.run_ptk(wd, [script], env_extra={"PYTRACEKIT_FRAME_HOOK": "0"})
    if u.FRAME_HOOK:
        ph, hooked = u.run_ptk(wd, [script], outdir="out-hook")
        seen_hook = json.loads(ph.stdout.strip().splitlines()[-1])
        touched = [n for n, seen in sorted(seen_hook.items()) if seen != [True, True]]
        if touched:
            u.fail("frame hook: f_trace_lines changed for: %s" % ", ".join(touched))
        if hooked["files"] != data["files"]:
            u.fail("frame hook: coverage data differs from the run without it:\n%r\n%r"
                   % (hooked["files"], data["files"]))
        print("ok: frame hook: all %d probes' frames untouched, the same data as without it"
              % len(seen_hook))
    result = json.loads(p.stdout.strip().splitlines()[-1])
    rec = data["files"][script]
    hits = {n for n, c in rec["hits"]}
    never = sorted(set(rec["lines"]) - hits)
    funcs = sorted(rec["functions"], key=lambda f: f[1])
    bad = []
    for name, seen in sorted(result.items()):
        if len(seen) != 2:
            u.fail("%s: recorded %r" % (name, seen))
        first, second = seen
        if not first:
            u.fail("%s: LINE tracing was already off on the first call" % name)
        if second:
            bad.append(name)
    version = u.python_version()
    if u.MONITORING:
        # sys.monitoring: the hub switches each line off where it is
        # (sys.monitoring.DISABLE) and leaves frames alone, so f_trace_lines
        # stays True; every line must still have been reported once.
        touched = [n for n, seen in sorted(result.items()) if seen != [True, True]]
        if touched:
            u.fail("monitoring backend changed f_trace_lines for: %s" % ", ".join(touched))
        print("ok: Python %s, monitoring: all %d probes reported, frames untouched"
              % (version, len(result)))
        return
    if bad:
        lines = open(script).read().splitlines()
        detail = []
        for name in bad:
            start = [f[1] for f in funcs if f[0] == name][0]
            ends = [f[1] for f in funcs if f[1] > start]
            end = min(ends) if ends else len(lines) + 1
            missing = [n for n in never if start <= n < end]
            detail.append("%s (line %d): lines never reported: %s" % (
                name, start, ", ".join("%d %r" % (n, lines[n - 1].strip()) for n in missing)
                or "none (all ran)"))
        u.fail("Python %s: LINE events not switched off for: %s\n  %s"
               % (version, ", ".join(bad), "\n  ".join(detail)))
    print("ok: Python %s: f_trace_lines switched off on the second call of all %d probes"
          % (version, len(result)))


main()
