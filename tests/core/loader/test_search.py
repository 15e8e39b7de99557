"""Where plugins are searched: --plugin-path, then PYTRACEKIT_PLUGIN_PATH,
then the plugin directory; never the current directory; relative entries of
PYTRACEKIT_PLUGIN_PATH are ignored; a spec with a '/' is a path.

usage: test_search.py CASE
"""
import os
import shutil

from ptk_loader_util import (CLI, Scratch, check, check_in, clean_env, expect_ran,
                             expect_rejected, load_json, main, marker_program, run,
                             shipped_plugin, test_plugin)


def copy(src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def not_in_cwd():
    """A valid plugin in the current directory is not found by name."""
    with Scratch("cwd") as s:
        copy(shipped_plugin("counter"), s.join("counter2.so"))
        r = expect_rejected(s, ["-p", "counter2"],
                            ["pytracekit: plugin 'counter2' not found: no counter2.so in "])
        check(s.path + "," not in r.err and s.path + " (" not in r.err,
              "the current directory was listed as searched", r)
        # nor through an empty PYTRACEKIT_PLUGIN_PATH entry (which some
        # search paths read as ".")
        for value in ("", ":", "::", "." , "./"):
            expect_rejected(s, ["-p", "counter2"], ["plugin 'counter2' not found"],
                            env=clean_env({"PYTRACEKIT_PLUGIN_PATH": value}))


def env_relative_ignored():
    """Relative entries of PYTRACEKIT_PLUGIN_PATH are dropped (they would
    depend on the current directory); absolute ones around them work."""
    with Scratch("relative") as s:
        copy(shipped_plugin("counter"), s.join("rel", "counter2.so"))
        copy(shipped_plugin("counter"), s.join("counter2.so"))
        env = clean_env({"PYTRACEKIT_PLUGIN_PATH": "rel:.:./rel:rel/../rel"})
        r = expect_rejected(s, ["-p", "counter2"], ["plugin 'counter2' not found"], env=env)
        looked = r.err.split(" in ", 1)[1].split(" (give", 1)[0].split(", ")
        check(not any(not d.startswith("/") for d in looked),
              "relative entries listed as searched: %r" % looked, r)
        absdir = s.mkdir("abs")
        copy(shipped_plugin("counter"), s.join("abs", "counter2.so"))
        env = clean_env({"PYTRACEKIT_PLUGIN_PATH": "rel:" + absdir + ":."})
        r = expect_ran(s, ["-p", "counter2"], env=env)
        load_json(s.join("out", "counter.json"), r)


def env_path():
    """PYTRACEKIT_PLUGIN_PATH, ':'-separated, is searched in order."""
    with Scratch("env") as s:
        d = s.mkdir("plugins")
        copy(shipped_plugin("counter"), s.join("plugins", "counter2.so"))
        env = clean_env({"PYTRACEKIT_PLUGIN_PATH": s.join("missing") + ":" + d})
        r = expect_ran(s, ["-p", "counter2:top=0"], env=env)
        data = load_json(s.join("out", "counter.json"), r)
        check(data["events"]["call"] > 0, "counter counted nothing", r)


def cli_path():
    """--plugin-path DIR (repeatable)."""
    with Scratch("cli") as s:
        d1, d2 = s.mkdir("one"), s.mkdir("two")
        copy(shipped_plugin("counter"), s.join("two", "counter2.so"))
        r = expect_ran(s, ["--plugin-path", d1, "--plugin-path", d2, "-p", "counter2"])
        load_json(s.join("out", "counter.json"), r)
        # and for --list-plugins
        from ptk_loader_util import cli
        r = cli(["--list-plugins", "--plugin-path", d2], cwd=s.path)
        check(r.rc == 0, "--list-plugins failed", r)
        check_in("file: %s" % s.join("two", "counter2.so"), r.out, "--list-plugins", r)


def order():
    """--plugin-path before PYTRACEKIT_PLUGIN_PATH before the plugin
    directory: three different plugins installed under one name."""
    with Scratch("order") as s:
        a, b = s.mkdir("a"), s.mkdir("b")
        copy(shipped_plugin("counter"), s.join("a", "dup.so"))
        copy(test_plugin("fail_nth"), s.join("b", "dup.so"))
        env = clean_env({"PYTRACEKIT_PLUGIN_PATH": b})
        r = expect_ran(s, ["--plugin-path", a, "-p", "dup"], env=env, out="o1")
        check(sorted(os.listdir(s.join("o1"))) == ["counter.json", "run.json"],
              "--plugin-path should win: %r" % os.listdir(s.join("o1")), r)
        r = expect_ran(s, ["-p", "dup:n=0"], env=env, out="o2")
        check(sorted(os.listdir(s.join("o2"))) == ["fail_nth.json", "run.json"],
              "PYTRACEKIT_PLUGIN_PATH: %r" % os.listdir(s.join("o2")), r)
        # the environment comes before the plugin directory: a 'counter'
        # there shadows the shipped one
        copy(test_plugin("fail_nth"), s.join("b", "counter.so"))
        r = expect_ran(s, ["-p", "counter:n=0"], env=env, out="o3")
        check(sorted(os.listdir(s.join("o3"))) == ["fail_nth.json", "run.json"],
              "PYTRACEKIT_PLUGIN_PATH before the plugin directory: %r"
              % os.listdir(s.join("o3")), r)
        # and without it, the shipped counter is found
        r = expect_ran(s, ["-p", "counter"], out="o4")
        check(sorted(os.listdir(s.join("o4"))) == ["counter.json", "run.json"], "default counter", r)


def skip_non_files():
    """A directory named NAME.so in an earlier directory does not stop the
    search."""
    with Scratch("skipdir") as s:
        a, b = s.mkdir("a"), s.mkdir("b")
        os.mkdir(s.join("a", "counter2.so"))
        copy(shipped_plugin("counter"), s.join("b", "counter2.so"))
        r = expect_ran(s, ["--plugin-path", a + ":" + b, "-p", "counter2"])
        load_json(s.join("out", "counter.json"), r)


def by_path():
    """A spec with a '/' is a path: absolute, relative to the current
    directory, and through a symlink; options after the last '/'."""
    with Scratch("path") as s:
        copy(shipped_plugin("counter"), s.join("my dir:x", "counter2.so"))
        os.symlink(s.join("my dir:x", "counter2.so"), s.join("link.so"))
        for spec in (s.join("my dir:x", "counter2.so") + ":top=1",
                     "./my dir:x/counter2.so",
                     "./link.so:events=call"):
            r = expect_ran(s, ["-p", spec])
            load_json(s.join("out", "counter.json"), r)
            os.unlink(s.join("out", "counter.json"))


def default_counter():
    """No -p: the counter plugin."""
    with Scratch("default") as s:
        r = expect_ran(s, [])
        data = load_json(s.join("out", "counter.json"), r)
        check(data["events"]["call"] > 0, "counter counted nothing", r)
        check_in("pytracekit counter:", r.err, "summary", r)


def inside_prefix():
    """The built-in plugin directories stay inside the tree the library (or,
    when it is linked in, the command) was installed into: a copy placed as
    <prefix>/lib and <prefix>/bin under PREFIX=.../opt/a/b searches nothing
    outside PREFIX, and a plugin planted where relative fallbacks once
    reached (<prefix>/lib/../../../pytracekit/plugins) is not found."""
    build = os.environ["PTK_BUILD_DIR"]
    with Scratch("prefix") as s:
        prefix = s.mkdir(os.path.join("opt", "a", "b"))
        os.makedirs(os.path.join(prefix, "lib"), exist_ok=True)
        for name in os.listdir(os.path.join(build, "lib")):
            src = os.path.join(build, "lib", name)
            if name.startswith("libpytracekit.so") and not os.path.lexists(
                    os.path.join(prefix, "lib", name)):
                if os.path.islink(src):
                    os.symlink(os.readlink(src), os.path.join(prefix, "lib", name))
                else:
                    shutil.copyfile(src, os.path.join(prefix, "lib", name))
        cli_copy = copy(CLI, os.path.join(prefix, "bin", "pytracekit"))
        os.chmod(cli_copy, 0o755)
        copy(shipped_plugin("counter"),
             os.path.join(prefix, "lib", "pytracekit", "plugins", "counter.so"))
        for planted in (s.join("opt", "pytracekit", "plugins"),
                        s.join("opt", "a", "pytracekit", "plugins"),
                        s.join("pytracekit", "plugins"),
                        s.join("opt", "lib", "pytracekit", "plugins"),
                        s.join("opt", "a", "lib", "pytracekit", "plugins")):
            copy(shipped_plugin("counter"), os.path.join(planted, "planted.so"))
        env = clean_env({"LD_LIBRARY_PATH": os.path.join(prefix, "lib")})
        marker = s.join("marker")
        r = run([cli_copy, "-o", s.join("out"), "-p", "planted", "-c", marker_program(marker)],
                cwd=s.path, env=env)
        check(r.rc == 2 and not os.path.exists(marker),
              "a plugin planted outside the prefix was loaded", r)
        check_in("plugin 'planted' not found: no planted.so in ", r.err, "message", r)
        looked = r.err.split(" in ", 1)[1].split(" (give", 1)[0].split(", ")
        real_prefix = os.path.realpath(prefix)
        outside = [d for d in looked
                   if not os.path.normpath(d).startswith(real_prefix + os.sep)]
        check(not outside, "searched outside the prefix %s: %r" % (real_prefix, outside), r)
        # the installed plugin directory is still searched
        r = run([cli_copy, "-o", s.join("out"), "-p", "counter", "-c", marker_program(marker)],
                cwd=s.path, env=env)
        check(r.rc == 0 and os.path.exists(marker), "the installed counter was not found", r)


CASES = {f.__name__: f for f in [
    not_in_cwd, env_relative_ignored, env_path, cli_path, order, skip_non_files,
    by_path, default_counter, inside_prefix]}

if __name__ == "__main__":
    main(CASES)
