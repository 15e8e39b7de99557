"""timer.speedscope.json and timer.folded, opened in speedscope itself.

speedscope (the npm package, version 1.25.0) is the app flame-graph users
open these files in; its own importers read both formats. This loads each
file the way speedscope's command-line tool does (a script calling
speedscope.loadFileFromBase64, named in #localProfilePath=) into its
index.html in headless Chromium, in the sandwich view, whose table of
functions is HTML: for each symbol, the Total and Self that speedscope
computed from the file. Checked:

  * the title speedscope gives a profile it imported ("NAME - speedscope");
  * speedscope.json: the symbols are the functions of timer.json with time,
    each Self is timer.json's own_ns and each Total the time the function is
    on the stack in the file's events, as speedscope formats nanoseconds;
  * timer.folded: each Self is the sum of the lines ending in the symbol,
    each Total of the lines containing it (exact: the file's microseconds;
    a frame only on lines of 0 has no weight, and is not listed);
  * and that a file speedscope cannot import gives neither, so that these
    checks can fail: half of timer.speedscope.json is loaded too.

Skips (77), saying why, without Chromium or speedscope (tools/setup-machine
installs both; PTK_SPEEDSCOPE_DIR names another copy of the package).
"""
import base64
import collections
import html.parser
import json
import os
import re
import subprocess

import ptk_timer_util as U
import ptk_sanitize  # noqa: F401 (a PLAIN_DRIVER: the command gets PYTHONMALLOC back)
from ptk_browser import chromium, dump_dom

VERSION = "1.25.0"


def speedscope_dir():
    d = os.environ.get("PTK_SPEEDSCOPE_DIR")
    if not d:
        try:
            root = subprocess.run(["npm", "root", "-g"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, universal_newlines=True,
                                  timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            root = ""
        d = os.path.join(root, "speedscope") if root else ""
    index = os.path.join(d, "dist", "release", "index.html")
    if not d or not os.path.isfile(index):
        U.skip("speedscope is not installed (npm install -g speedscope@%s; "
               "tools/setup-machine installs it; or set PTK_SPEEDSCOPE_DIR)" % VERSION)
    with open(os.path.join(d, "package.json")) as f:
        version = json.load(f).get("version")
    U.check(version == VERSION, "speedscope %s at %s, the test reads %s's sandwich view"
            % (version, d, VERSION))
    return index


class Sandwich(html.parser.HTMLParser):
    """The title, and the texts of the sandwich table after its header:
    (total, self, symbol) for each row."""

    def __init__(self):
        super().__init__()
        self.title, self.texts, self._in_title = None, [], False

    def handle_starttag(self, tag, attrs):
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title = data.strip()
        elif data.strip():
            self.texts.append(data.strip())

    def rows(self):
        if "Symbol Name" not in self.texts:
            return {}
        t = self.texts[self.texts.index("Symbol Name") + 1:]
        U.check(len(t) % 3 == 0, "sandwich table texts not in threes: %r" % t[:12])
        out = {}
        for i in range(0, len(t), 3):
            total, own, name = t[i:i + 3]
            U.check(name not in out, "%s listed twice" % name)
            out[name] = (strip_percent(total), strip_percent(own))
        return out


def strip_percent(cell):
    m = re.match(r"^(.*\S) \((?:[<>]?[\d.]+%)\)$", cell)
    U.check(m is not None, "a sandwich cell without its percentage: %r" % cell)
    return m.group(1)


def open_in_speedscope(browser, wd, index, path, name):
    """What speedscope shows of @path: (title, {symbol: (total, self)})."""
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    loader = os.path.join(wd, name + ".js")
    with open(loader, "w") as f:  # what speedscope's cli.mjs writes
        f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps(name), json.dumps(data)))
    url = "file://%s#localProfilePath=%s&view=sandwich" % (index, loader)
    for attempt in range(1, 5):
        p = Sandwich()
        p.feed(dump_dom(browser, wd, url, "--virtual-time-budget=10000",
                        "--window-size=1600,4000"))
        rows = p.rows()
        # --dump-dom may come between the import (the title) and the
        # table's first render: about one load in sixteen here
        if rows or p.title == "speedscope":
            break
        print("%s: imported, the table not drawn yet at the DOM dump (try %d); again"
              % (name, attempt))
    return p.title, rows


UNITS = [(1e9, "s"), (1e6, "ms"), (1e3, "\u00b5s"), (1, "ns")]


def time_value(text):
    """Nanoseconds and their display precision from speedscope's time format."""
    m = re.match(r"^(\d+\.\d\d)(s|ms|\u00b5s|ns)$", text)
    U.check(m is not None, "not a speedscope time: %r" % text)
    scale = dict((u, s) for s, u in UNITS)[m.group(2)]
    return float(m.group(1)) * scale, 0.005 * scale


def near(text, ns):
    value, half = time_value(text)
    return abs(value - ns) <= half * (1 + 1e-9)


def on_stack_time(path):
    """{frame name: ns on the stack} from the file's events (a recursive
    frame counted once), as the sandwich view's Total."""
    with open(path) as f:
        doc = json.load(f)
    names = [fr["name"] for fr in doc["shared"]["frames"]]
    total = collections.Counter()
    open_at, depth_of = {}, collections.Counter()
    for ev in doc["profiles"][0]["events"]:
        name = names[ev["frame"]]
        if ev["type"] == "O":
            if depth_of[name] == 0:
                open_at[name] = ev["at"]
            depth_of[name] += 1
        else:
            depth_of[name] -= 1
            if depth_of[name] == 0:
                total[name] += ev["at"] - open_at.pop(name)
    return doc, total


def check_json(browser, wd, index, outdir):
    path = os.path.join(outdir, "timer.speedscope.json")
    doc, total = on_stack_time(path)
    meta = U.load_json(outdir)
    own = {f["short"]: f["own_ns"] for f in meta["functions"]}
    title, rows = open_in_speedscope(browser, wd, index, path, "timer.speedscope.json")
    U.check(title == "%s - speedscope" % doc["name"],
            "speedscope did not import timer.speedscope.json: title %r" % title)
    U.check(set(rows) == set(total),
            "speedscope's symbols differ from the file's frames: %s"
            % sorted(set(rows) ^ set(total))[:6])
    for name, (t, s) in rows.items():
        U.check(name in own, "%s: not a function of timer.json" % name)
        U.check(near(s, own[name]), "%s: speedscope's Self %s, timer.json own_ns %d"
                % (name, s, own[name]))
        U.check(near(t, total[name]), "%s: speedscope's Total %s, on the stack %d ns"
                % (name, t, total[name]))
    with_time = {k for k, v in own.items() if v}
    U.check(with_time <= set(rows), "functions with own time speedscope does not list: %s"
            % sorted(with_time - set(rows))[:6])
    return len(rows)


def check_folded(browser, wd, index, outdir):
    path = os.path.join(outdir, "timer.folded")
    own, total = collections.Counter(), collections.Counter()
    for frames, us in U.parse_folded(path):
        own[frames[-1]] += us
        for name in set(frames):
            total[name] += us
    title, rows = open_in_speedscope(browser, wd, index, path, "timer.folded")
    U.check(title == "timer.folded - speedscope",
            "speedscope did not import timer.folded: title %r" % title)
    # A context under 1 us is a line of 0 (the values add up to the total
    # in whole microseconds): a frame only on such lines has no weight,
    # and speedscope lists none.
    weighed = {k for k, v in total.items() if v}
    U.check(set(rows) == weighed, "speedscope's symbols differ from the folded frames: %s"
            % sorted(set(rows) ^ weighed)[:6])
    for name, (t, s) in rows.items():
        want = ("{:,}".format(total[name]), "{:,}".format(own[name]))
        U.check((t, s) == want, "%s: speedscope's Total/Self %s/%s, the file's %s/%s"
                % ((name, t, s) + want))
    return len(rows)


def check_not_imported(browser, wd, index, outdir):
    path = os.path.join(outdir, "timer.speedscope.json")
    half = os.path.join(wd, "half.speedscope.json")
    with open(path, "rb") as f, open(half, "wb") as g:
        data = f.read()
        g.write(data[:len(data) // 2])
    title, rows = open_in_speedscope(browser, wd, index, half, "half.speedscope.json")
    U.check(title == "speedscope" and not rows,
            "half a file gave title %r and %d rows: the check cannot tell" % (title, len(rows)))


def main():
    browser = chromium()
    index = speedscope_dir()
    outdir, _ = U.run_timer(U.program("recursion.py"), "folded=true")
    wd = U.tempdir("ptk-speedscope-")
    n_json = check_json(browser, wd, index, outdir)
    n_folded = check_folded(browser, wd, index, outdir)
    check_not_imported(browser, wd, index, outdir)
    print("OK: speedscope %s imported timer.speedscope.json (%d symbols) and timer.folded "
          "(%d symbols) with the timer's figures; half a file it did not" % (VERSION, n_json, n_folded))


main()
