"""The HTML report (html=true), rendered by headless Chromium.

    test_html.py

Runs corpus/app/main.py with branch=true,html=true and loads the report in
Chromium (`--dump-dom`, and a `--screenshot`): the index lists every file,
sorted by coverage (lowest first), with the figures of coverage.json's
summaries; each file's page marks exactly the executed lines (run), the
missed ones (mis), the partial branch lines (par, naming the destinations
not taken) and the excluded ones (exc), all computed here from coverage.json; the screenshot shows the
three highlight colours. Skips (77), saying why, when Chromium is absent
(tools/setup-machine installs it).
"""
import html.parser
import os
import re
import subprocess

import ptk_coverage_util as u
import ptk_sanitize  # noqa: F401 (a PLAIN_DRIVER: the command gets PYTHONMALLOC back)
from ptk_browser import browser_env, chromium, chromium_args, dump_dom, png_pixels

COLOURS = {"run": (0xdd, 0xff, 0xdd), "mis": (0xff, 0xdd, 0xdd), "par": (0xff, 0xff, 0xaa)}


class Dom(html.parser.HTMLParser):
    """Just what the checks need: the index rows and the source lines."""

    def __init__(self):
        super().__init__()
        self.rows = []        # [[(class, text, href)], ...] of tr.file / tr.total
        self.lines = {}       # line number -> (class, text of span.ann)
        self._row = None
        self._cell = None
        self._line = None
        self._ann = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("class") in ("file", "total"):
            self._row = [a["class"]]
            self.rows.append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = [a.get("class"), "", None]
            self._row.append(self._cell)
        elif tag == "a" and self._cell is not None:
            self._cell[2] = a.get("href")
        elif tag == "p" and (a.get("id") or "").startswith("t"):
            self._line = int(a["id"][1:])
            self.lines[self._line] = [a.get("class"), ""]
        elif tag == "span" and a.get("class") == "ann":
            self._ann = True

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "p":
            self._line = None
        elif tag == "span":
            self._ann = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data
        if self._ann and self._line is not None:
            self.lines[self._line][1] += data


def parse(text):
    d = Dom()
    d.feed(text)
    return d


def expected_classes(rec):
    """run / mis / par per line, and the untaken destinations of par lines."""
    hits = {n for n, c in rec["hits"]}
    arcs = {(a, b) for a, b, c in rec["arcs"]}
    out = {}
    for n in set(rec["lines"]) | hits:
        out[n] = ("run" if n in hits else "mis", "")
    for n in rec.get("excluded", []):
        out.setdefault(n, ("exc", ""))
    for line, dests in rec["branches"]:
        if line in rec.get("no_branch", []):
            continue  # never missing
        missed = [d for d in dests if (line, d) not in arcs]
        if line in hits and missed:
            out[line] = ("par", "line %d didn't jump to %s" % (
                line, ", ".join("exit" if d < 0 else "line %d" % d for d in missed)))
    return out


def main():
    browser = chromium()
    wd = u.workdir("html")
    u.copy_corpus(wd, "app")
    _, data = u.run_ptk(wd, [os.path.join(wd, "app", "main.py"), "a"],
                        spec="coverage:branch=true,html=true")
    htmldir = os.path.join(wd, "out", "html")
    index = parse(dump_dom(browser, wd, os.path.join(htmldir, "index.html")))
    files = [r for r in index.rows if r[0] == "file"]
    if len(files) != len(data["files"]) or index.rows[-1][0] != "total":
        u.fail("index rows %r for %d files" % (index.rows, len(data["files"])))
    by_name = {os.path.relpath(p, wd): rec for p, rec in u.modeled(data)["files"].items()}
    pcs = []
    checked = 0
    for row in files:
        cells = {c[0]: c for c in row[1:]}
        name, href = cells["name"][1], cells["name"][2]
        rec = by_name.get(name)
        if rec is None:
            u.fail("index lists %r, not a measured file" % name)
        s = rec["summary"]
        want = {"stmts": str(s["num_statements"]), "miss": str(s["missing_lines"]),
                "branches": str(s["num_branches"]),
                "partial": str(s["num_partial_branches"]),
                "pc": s["percent_covered_display"] + "%"}
        got = {k: cells[k][1] for k in want}
        if got != want:
            u.fail("index row %s: %r, coverage.json says %r" % (name, got, want))
        pcs.append(s["percent_covered"])
        page = parse(dump_dom(browser, wd, os.path.join(htmldir, href)))
        # the page's figures are labelled as the index's columns
        with open(os.path.join(htmldir, href)) as f:
            m = re.search(r'<table class="index" id="summary"><thead><tr>(.*?)</tr></thead>',
                          f.read())
        heads = re.findall(r"<th>(.*?)</th>", m.group(1)) if m else None
        if heads != ["Statements", "Missing", "Branches", "Partial", "Coverage"]:
            u.fail("%s: the page's figures are labelled %r" % (name, heads))
        want_lines = expected_classes(rec)
        with open(os.path.join(wd, name)) as f:
            nsrc = len(f.read().splitlines())
        if sorted(page.lines) != list(range(1, nsrc + 1)):
            u.fail("%s: page has lines %s, the source %d" % (name, sorted(page.lines), nsrc))
        for n, (cls, ann) in page.lines.items():
            w = want_lines.get(n, (None, ""))
            if (cls, ann) != w:
                u.fail("%s line %d: class %r %r, expected %r %r" % (name, n, cls, ann, *w))
        checked += len(want_lines)
    if pcs != sorted(pcs):
        u.fail("index not sorted by coverage: %r" % pcs)
    total = {c[0]: c[1] for c in index.rows[-1][1:]}
    if total["pc"] != data["totals"]["percent_covered_display"] + "%":
        u.fail("total %r, coverage.json %r" % (total, data["totals"]))
    # Rendered: the page of a file with partial lines shows all three colours.
    main_page = os.path.join(htmldir, [c for r in files for c in r[1:]
                                       if c[1] == "app/main.py"][0][2])
    shot = os.path.join(wd, "main.png")
    p = subprocess.run(chromium_args(browser, wd) + [
        "--window-size=1000,1400", "--screenshot=" + shot, "file://" + main_page],
        env=browser_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    if p.returncode != 0 or not os.path.exists(shot):
        u.fail("chromium --screenshot failed (%d):\n%s" % (p.returncode, p.stderr))
    pixels = png_pixels(shot)
    for cls, rgb in COLOURS.items():
        if not any(all(abs(a - b) <= 2 for a, b in zip(px, rgb)) for px in pixels):
            u.fail("the screenshot of app/main.py has no %s colour %r" % (cls, rgb))
    print("ok: index of %d files sorted by coverage %r; %d line classes as expected; "
          "run/mis/par colours rendered" % (len(files), pcs, checked))


main()
