"""Many files, one after the other: each compiled under a name of its own,
run and dropped before the next. The hub judges a file once for all its
code objects and keeps that verdict by the name's address: a new name made
where a freed one was must be judged again, not given the old verdict
(the names here are made so that most of them are)."""
import sys

# The addresses of the names, to say whether any was reused (the test
# that runs this checks it: a run without reuse would test nothing).
seen = set()
reused = 0
for i in range(400):
    name = "/many_files/%s/m%d.py" % ("yes" if i % 3 == 0 else "no", i)
    code = compile("def w_file():\n    return 1\n\nw_file()\n", name, "exec")
    reused += id(code.co_filename) in seen
    seen.add(id(code.co_filename))
    ns = {"__name__": "m%d" % i}
    exec(code, ns)
    # w_file and ns make a cycle: cleared here, the name is freed now, not
    # at the next collection (which 3.14's incremental collector makes
    # later than the next file)
    ns.clear()
    del code
if reused == 0:
    sys.exit("no name was made at a freed one's address: nothing was tested")
