"""Headless Chromium for the tests that check a report the way its reader
shows it: the coverage HTML report, and the timer's files in speedscope."""
import os
import shutil
import struct
import subprocess
import zlib

from ptk_testlib import fail, skip


def chromium():
    """The browser's path; skips (77), saying why, when there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    skip("headless Chromium is not installed (apt-get install chromium; "
         "tools/setup-machine installs it)")


def chromium_args(browser, wd, *extra):
    return [browser, "--headless", "--no-sandbox", "--disable-gpu",
            "--force-color-profile=srgb", "--hide-scrollbars",
            "--user-data-dir=" + os.path.join(wd, "chromium-profile")] + list(extra)


def browser_env():
    """The environment without the sanitizer runtimes the ASan build preloads
    into Python: the browser is not instrumented, and hangs with them."""
    return {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS", "PYTHONMALLOC")}


def dump_dom(browser, wd, url, *extra):
    """The DOM of @url once its scripts have run (`--dump-dom`)."""
    if "://" not in url:
        url = "file://" + url
    p = subprocess.run(chromium_args(browser, wd, *extra) + ["--dump-dom", url],
                       env=browser_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    if p.returncode != 0 or "<html" not in p.stdout:
        fail("chromium --dump-dom %s failed (%d):\n%s" % (url, p.returncode, p.stderr))
    return p.stdout


def png_pixels(path):
    """The RGB(A) pixels of a PNG file (8-bit, non-interlaced), as a set."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, width = 8, b"", 0
    while pos < len(raw):
        n, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        chunk = raw[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or ctype not in (2, 6) or interlace:
                fail("unexpected PNG format: depth %d, colour type %d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    data = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    out = set()
    for y in range(height):
        f = data[y * (stride + 1)]
        line = bytearray(data[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            ul = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + left) & 255
            elif f == 2:
                line[i] = (line[i] + up) & 255
            elif f == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif f == 4:
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else ul)
                line[i] = (line[i] + pred) & 255
        for x in range(0, stride, bpp):
            out.add(tuple(line[x:x + 3]))
        prev = line
    return out
