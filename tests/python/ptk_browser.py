"""Headless Chromium for the tests that check a report the way its reader
shows it: the coverage HTML report, and the timer's files in speedscope."""
import os
import shutil
import subprocess

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
