"""One measured process of bench/filters/run.py:

    driver.py VARIANT PASSES N OUT_DIR

Runs fapp.app.run(N) PASSES times under VARIANT's session (none for bare)
and prints the CPU time of the last pass. Under callgrind, the instructions
of the last pass are the difference between PASSES=2 and PASSES=1."""
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from fapp import app  # noqa: E402

VARIANTS = {
    "bare": None,
    "counter": ["counter:events=profile"],
    "counter-filtered": ["counter:events=profile,modules=fapp.app"],
    "timer": ["timer"],
    "timer-filtered": ["timer:modules=fapp.app"],
    "lines": ["counter:events=line"],
    "lines-filtered": ["counter:events=line,modules=fapp.app"],
}
variant, passes, n, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
app.run(200)  # warm up (specialisation) untraced
plugins = VARIANTS[variant]
s = None
if plugins is not None:
    import pytracekit
    s = pytracekit.Session(plugins, output_dir=out, threads="current")
    s.start()
for p in range(passes):
    t0 = time.process_time()
    app.run(n)
    t1 = time.process_time()
if s is not None:
    s.stop()
    s.close()
print("%.6f" % (t1 - t0))
