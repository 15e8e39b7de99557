"""One measured process of bench/filters/run.py:

    driver.py VARIANT N FLOOR_DIR OUT_DIR

Runs fapp.app.run(N) twice under VARIANT (a session, the floor's do-nothing
C profile function, or nothing for bare); the second pass runs inside
_ptkfloor.run (ptkbench_region: what callgrind collects) and its process
CPU time is printed. The first pass is where code objects are judged and,
on the monitoring backend, switched off."""
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from fapp import app  # noqa: E402

VARIANTS = {
    "bare": None,
    "floor": None,
    "counter": ["counter:events=profile"],
    "counter-filtered": ["counter:events=profile,modules=fapp.app"],
    "timer": ["timer"],
    "timer-filtered": ["timer:modules=fapp.app"],
    "lines": ["counter:events=line"],
    "lines-filtered": ["counter:events=line,modules=fapp.app"],
    # line coverage switches each line off once seen: after the first pass
    # only what it never saw costs anything
    "coverage": ["coverage:include=%s/*" % os.path.join(here, "fapp")],
    "coverage-filtered": ["coverage:include=%s/*,modules=fapp.app" % os.path.join(here, "fapp")],
}
variant, n, floor_dir, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, floor_dir)
import _ptkfloor  # noqa: E402

app.run(200)  # warm up (specialisation) untraced
plugins = VARIANTS[variant]
s = None
if plugins is not None:
    import pytracekit
    s = pytracekit.Session(plugins, output_dir=out, threads="current")
    s.start()
elif variant == "floor":
    _ptkfloor.install()
app.run(n)
t0 = time.process_time()
_ptkfloor.run(lambda: app.run(n))
t1 = time.process_time()
if s is not None:
    s.stop()
    s.close()
elif variant == "floor":
    _ptkfloor.uninstall()
print("%.6f" % (t1 - t0))
