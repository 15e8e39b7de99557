"""Every rejection of the loader and of the option parser, through the
command: exit status 2, the program does not run, nothing is written, and
stderr says what was expected and what was found.

usage: test_reject.py CASE
"""
import os
import re
import struct
import sys

from ptk_loader_util import (HAVE_REFTRACER, PY_VERSION, PLUGIN_DIR, Scratch,
                             check, check_in, clean_env, cli, expect_rejected,
                             expect_ran, main, test_plugin)


def enoent_path():
    with Scratch("enoent") as s:
        missing = s.join("nowhere", "nosuch.so")
        expect_rejected(s, ["-p", missing],
                        ["pytracekit: cannot load plugin '%s': no such file" % missing])
        # a relative path (it has a '/') is a path, not a name
        expect_rejected(s, ["-p", "./nosuch.so"],
                        ["cannot load plugin './nosuch.so': no such file"])


def enoent_name():
    """By name: the message names the plugin, the file it looked for and
    every directory it looked in, in search order."""
    with Scratch("enoent-name") as s:
        d1, d2, d3 = s.mkdir("cli"), s.mkdir("env1"), s.mkdir("env2")
        env = clean_env({"PYTRACEKIT_PLUGIN_PATH": d2 + ":" + d3})
        r = expect_rejected(s, ["--plugin-path", d1, "-p", "nosuch_plugin"],
                            ["pytracekit: plugin 'nosuch_plugin' not found: "
                             "no nosuch_plugin.so in " + d1 + ", " + d2 + ", " + d3 + ", ",
                             "(give a path with a '/', or add a directory with "
                             "--plugin-path or PYTRACEKIT_PLUGIN_PATH)"],
                            env=env)
        # the built-in plugin directory is searched last
        looked = r.err.split(" in ", 1)[1].split(" (give", 1)[0].split(", ")
        check(looked[:3] == [d1, d2, d3], "search order: %r" % looked, r)
        check(any(os.path.realpath(d) == os.path.realpath(PLUGIN_DIR) for d in looked[3:]),
              "the build's plugin directory %s is not in the list %r" % (PLUGIN_DIR, looked), r)
        check(os.getcwd() not in looked and s.path not in looked and "." not in looked,
              "the current directory is listed", r)


def enoent_empty_options():
    """The options part does not leak into the name."""
    with Scratch("enoent-opts") as s:
        expect_rejected(s, ["-p", "nosuch:top=3"],
                        ["plugin 'nosuch' not found: no nosuch.so in "])


def notso_path():
    with Scratch("notso") as s:
        fake = s.write("x.so", "this is a text file, not an ELF object\n")
        expect_rejected(s, ["-p", fake],
                        ["pytracekit: cannot load plugin '%s': not a loadable shared object (" % fake])


def notso_name():
    """Found by name in the plugin path, but not a shared object."""
    with Scratch("notso-name") as s:
        d = s.mkdir("plugins")
        fake = s.write("plugins/textplug.so", "not an ELF object\n")
        expect_rejected(s, ["--plugin-path", d, "-p", "textplug"],
                        ["cannot load plugin '%s': not a loadable shared object (" % fake])


def notso_empty():
    with Scratch("notso-empty") as s:
        fake = s.write("empty.so", "")
        expect_rejected(s, ["-p", fake],
                        ["cannot load plugin '%s': not a loadable shared object (" % fake])


def notso_dir():
    with Scratch("notso-dir") as s:
        d = s.mkdir("dir.so")
        expect_rejected(s, ["-p", d],
                        ["cannot load plugin '%s': not a regular file "
                         "(expected a shared object)" % d])


def notso_truncated():
    """A shared object cut short (a copy interrupted, a full disk) is
    refused before dlopen maps it: mapping past the end of a file would
    kill the command with SIGBUS. By path, by name, and in --list-plugins."""
    src = os.path.join(PLUGIN_DIR, "counter.so")
    with open(src, "rb") as f:
        data = f.read()
    with Scratch("truncated") as s:
        d = s.mkdir("plugins")
        # where the last loadable segment ends (64-bit little-endian ELF)
        phoff, = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        seg_end = 0
        for i in range(phnum):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
                "<IIQQQQ", data, phoff + i * phentsize)
            if p_type == 1:  # PT_LOAD
                seg_end = max(seg_end, p_offset + p_filesz)
        check(8192 < seg_end <= len(data), "counter.so's segments end at %d" % seg_end)
        for n in (64, 1000, 3000, 8192, seg_end - 1):
            cut = os.path.join(d, "cut.so")
            with open(cut, "wb") as f:
                f.write(data[:n])
            expect_rejected(s, ["-p", cut],
                            ["cannot load plugin '%s': not a loadable shared object (" % cut,
                             "the file is truncated"])
            expect_rejected(s, ["--plugin-path", d, "-p", "cut"],
                            ["cannot load plugin '%s': not a loadable shared object (" % cut])
            r = cli(["--list-plugins", "--plugin-path", d], cwd=s.path)
            check(r.rc == 0, "--list-plugins with a truncated file (%d bytes)" % n, r)
            check_in("%s: rejected: " % cut, r.out, "the truncated file is listed as rejected", r)
            check_in("counter ", r.out, "the other plugins are still listed", r)
        # the control: cut after the segments (only section headers lost), it loads
        whole = os.path.join(d, "whole.so")
        with open(whole, "wb") as f:
            f.write(data[:seg_end])
        expect_ran(s, ["-p", whole], out="out-whole")


def noentry():
    p = test_plugin("bad_noentry")
    with Scratch("noentry") as s:
        expect_rejected(s, ["-p", p],
                        ["pytracekit: cannot load plugin '%s': it has no ptk_plugin_entry "
                         "function (expected one, as PTK_PLUGIN_DEFINE writes)" % p])


def null_entry():
    p = test_plugin("bad_null")
    with Scratch("null") as s:
        expect_rejected(s, ["-p", p],
                        ["(%s): ptk_plugin_entry returned NULL (expected a descriptor)" % p])


def abi_major():
    p = test_plugin("bad_abimajor")
    with Scratch("abimajor") as s:
        expect_rejected(s, ["-p", p],
                        ["plugin 'bad_abimajor' (%s) was built for plugin ABI 2.0, "
                         "this host has ABI 1.7 (the major version must match)" % p])


def abi_minor():
    p = test_plugin("bad_abiminor")
    with Scratch("abiminor") as s:
        expect_rejected(s, ["-p", p],
                        ["plugin 'bad_abiminor' (%s) needs plugin ABI 1.8, this host has "
                         "ABI 1.7 (rebuild it against these headers or use a newer "
                         "pytracekit)" % p])


def struct_size():
    p = test_plugin("bad_size")
    with Scratch("size") as s:
        r = expect_rejected(s, ["-p", p],
                            ["plugin 'bad_size' (%s): descriptor struct_size is " % p],
                            regexes=[r"struct_size is \d+, at least \d+ expected for ABI 1\.7"])
        found, expected = map(int, re.search(r"struct_size is (\d+), at least (\d+)", r.err).groups())
        check(found == expected - 8 or found == expected - 4,
              "found %d, expected %d: the plugin is one pointer short" % (found, expected), r)


def struct_size_tiny():
    """Too small to even hold the ABI fields: rejected before they are read."""
    p = test_plugin("bad_tiny")
    with Scratch("tiny") as s:
        expect_rejected(s, ["-p", p],
                        ["(%s): descriptor struct_size is 2, at least " % p],
                        regexes=[r"struct_size is 2, at least \d+ expected\n"])


def mask_no_on_event():
    p = test_plugin("bad_nocb")
    with Scratch("nocb") as s:
        expect_rejected(s, ["-p", p],
                        ["pytracekit: plugin 'bad_nocb' subscribes to 'call' but has no "
                         "on_event callback"])


def mask_ref_no_on_ref():
    """A REF bit without on_ref: lib/session/loader.c (ptk__validate_desc) checks the
    callbacks before it checks that reference events are available, so this
    is PTK_EMASK on every Python, 3.11 and 3.12 included."""
    p = test_plugin("bad_refnocb")
    with Scratch("refnocb") as s:
        r = expect_rejected(s, ["-p", p],
                            ["pytracekit: plugin 'bad_refnocb' subscribes to 'ref_create' but "
                             "has no on_ref callback"])
        check("3.13" not in r.err, "expected the callback error, not the version error", r)


def ref_unavailable():
    """A well-formed REF subscriber: rejected before 3.13 with the version
    error; accepted (and the program runs) on 3.13+."""
    p = test_plugin("bad_ref")
    with Scratch("ref") as s:
        if HAVE_REFTRACER:
            expect_ran(s, ["-p", p])
            return
        expect_rejected(s, ["-p", p],
                        ["pytracekit: plugin 'bad_ref' subscribes to reference events "
                         "(ref_create/ref_destroy), which need CPython 3.13 or newer "
                         "(PyRefTracer); this is Python %s" % PY_VERSION])


def mask_unknown_bit():
    p = test_plugin("bad_mask")
    with Scratch("mask") as s:
        expect_rejected(s, ["-p", p],
                        ["plugin 'bad_mask': event mask 0x100001 has bits that name no "
                         "event (valid: 0x3fff)"])


def no_name():
    p = test_plugin("bad_noname")
    with Scratch("noname") as s:
        expect_rejected(s, ["-p", p], ["(%s): descriptor has no name" % p])


def opts(spec):
    return test_plugin("bad_opts") + ":" + spec


def option_unknown():
    with Scratch("opt-unknown") as s:
        expect_rejected(s, ["-p", opts("n=1,bogus=1")],
                        ["pytracekit: unknown option 'bogus' for plugin 'bad_opts' "
                         "(it accepts: n, flag, mode, ratio, label, items, init, "
                         "include, exclude, modules, functions, threads, max_depth)"])
        expect_rejected(s, ["-p", "counter:tpo=5"],
                        ["pytracekit: unknown option 'tpo' for plugin 'counter' "
                         "(it accepts: events, top, per_context, include, exclude, modules, "
                         "functions, threads, max_depth); did you mean 'top'?"])
        # option names are case-sensitive
        expect_rejected(s, ["-p", "counter:TOP=5"], ["unknown option 'TOP' for plugin 'counter'",
                                                     "; did you mean 'top'?"])
        # nothing near: no guess
        expect_rejected(s, ["-p", "counter:bogus=5"], ["max_depth)\n"])


def option_int():
    with Scratch("opt-int") as s:
        for bad in ("abc", "12x", "1.5", "", "99999999999999999999"):
            expect_rejected(s, ["-p", opts("n=" + bad)],
                            ["pytracekit: option 'n' of plugin 'bad_opts' expects an "
                             "integer, found '%s'" % bad])
        expect_rejected(s, ["-p", "counter:top=ten"],
                        ["option 'top' of plugin 'counter' expects an integer, found 'ten'"])


def option_int_no_value():
    with Scratch("opt-novalue") as s:
        expect_rejected(s, ["-p", opts("n")],
                        ["pytracekit: option 'n' of plugin 'bad_opts' expects an integer, "
                         "found no value"])


def option_bool():
    with Scratch("opt-bool") as s:
        for bad in ("maybe", "2", "tru", ""):
            expect_rejected(s, ["-p", opts("flag=" + bad)],
                            ["pytracekit: option 'flag' of plugin 'bad_opts' expects a "
                             "boolean (true/false), found '%s'" % bad])


def option_choice():
    with Scratch("opt-choice") as s:
        for bad in ("medium", "FAST", "fas", ""):
            expect_rejected(s, ["-p", opts("mode=" + bad)],
                            ["pytracekit: option 'mode' of plugin 'bad_opts' expects one "
                             "of fast|slow|off, found '%s'" % bad])


def option_double():
    with Scratch("opt-double") as s:
        expect_rejected(s, ["-p", opts("ratio=half")],
                        ["option 'ratio' of plugin 'bad_opts' expects a number, found 'half'"])


def option_quote():
    with Scratch("opt-quote") as s:
        expect_rejected(s, ["-p", opts("label='a,b")],
                        ["plugin 'bad_opts': option 'label' has an unterminated quote"])


def option_after_quote():
    """Text after a closing quote, before the next ','."""
    with Scratch("opt-afterquote") as s:
        expect_rejected(s, ["-p", opts("label='a'b,n=1")],
                        ["plugin 'bad_opts': expected ',' after option 'label'"])
        expect_rejected(s, ["-p", opts('label="a"=b')],
                        ["plugin 'bad_opts': expected ',' after option 'label'"])


def options_valid():
    """The same plugin with good values of every type runs: the rejections
    above are about the values, nothing else."""
    with Scratch("opt-valid") as s:
        for spec in ("n=-5,flag=yes,mode=off,ratio=1e3,label='a,b',items=x;y",
                     "flag,n=0", "flag=OFF,mode=slow", "", "n=7,,flag=1"):
            r = expect_ran(s, ["-p", opts(spec)])
            check_in("bad_opts: nothing to report", r.err, "summary", r)


def option_value_with_slash():
    """A '/' inside an option value does not turn a NAME spec into a path
    (coverage:include=*/app/*.py, source=/dir): by name and by path."""
    with Scratch("opt-slash") as s:
        r = expect_ran(s, ["--plugin-path", os.path.dirname(test_plugin("bad_opts")),
                           "-p", "bad_opts:label=a/b,n=1"])
        check_in("bad_opts: nothing to report", r.err, "summary", r)
        r = expect_ran(s, ["-p", opts("label=/x/y,items=*/a.py;/b")])
        check_in("bad_opts: nothing to report", r.err, "summary", r)
    # and a rejection in such a spec is about the option, not a file
    with Scratch("opt-slash-reject") as s:
        expect_rejected(s, ["-p", "counter:top=/3"],
                        ["option 'top' of plugin 'counter' expects an integer, found '/3'"])


def init_fails():
    p = test_plugin("bad_opts")
    with Scratch("init-fail") as s:
        expect_rejected(s, ["-p", p + ":init=fail"],
                        ["pytracekit: plugin 'bad_opts' (%s) failed to start: bad_opts "
                         "refuses to start as asked (init=fail)" % p])


def init_raises():
    p = test_plugin("bad_opts")
    with Scratch("init-python") as s:
        expect_rejected(s, ["-p", p + ":init=python"],
                        ["pytracekit: plugin 'bad_opts' (%s) failed to start: " % p,
                         "RuntimeError: bad_opts init raised as asked"])


def init_widens_mask():
    """init may change the mask; the new one is checked like the declared one."""
    with Scratch("init-mask") as s:
        expect_rejected(s, ["-p", opts("init=mask")],
                        ["pytracekit: plugin 'bad_opts' subscribes to 'line' but has no "
                         "on_event callback"])


def second_plugin_rejected():
    """One bad plugin among good ones: nothing runs."""
    with Scratch("second") as s:
        expect_rejected(s, ["-p", "counter", "-p", test_plugin("bad_abimajor")],
                        ["was built for plugin ABI 2.0"])
        expect_rejected(s, ["-p", test_plugin("bad_abiminor"), "-p", "counter"],
                        ["needs plugin ABI 1.8"])


def module_codes():
    """The same rejections through the Python module: pytracekit.Error
    carries the message and the PTK_E* code."""
    import pytracekit
    cases = [
        ("/nonexistent/x.so", -3, "no such file"),
        ("nosuch_plugin", -3, "not found"),
        (test_plugin("bad_noentry"), -5, "no ptk_plugin_entry"),
        (test_plugin("bad_abimajor"), -6, "ABI 2.0"),
        (test_plugin("bad_abiminor"), -7, "ABI 1.7"),
        (test_plugin("bad_size"), -8, "struct_size"),
        (test_plugin("bad_nocb"), -9, "no on_event callback"),
        (test_plugin("bad_refnocb"), -9, "no on_ref callback"),
        (opts("bogus=1"), -10, "unknown option 'bogus'"),
        (opts("n=x"), -11, "expects an integer"),
        (opts("flag=x"), -11, "expects a boolean"),
        (opts("mode=x"), -11, "expects one of fast|slow|off"),
        (opts("init=fail"), -15, "refuses to start"),
    ]
    if not HAVE_REFTRACER:
        cases.append((test_plugin("bad_ref"), -12, "need CPython 3.13"))
    with Scratch("module") as s:
        fake = s.write("fake.so", "text\n")
        cases.append((fake, -4, "not a loadable shared object"))
        for spec, code, needle in cases:
            for how in ("constructor", "add_plugin"):
                try:
                    if how == "constructor":
                        pytracekit.Session([spec], output_dir=s.join("out"))
                    else:
                        pytracekit.Session([], output_dir=s.join("out")).add_plugin(spec)
                except pytracekit.Error as e:
                    msg, got = str(e), e.code
                    check(got == code, "%s via %s: code %r, expected %r (%s)"
                          % (spec, how, got, code, msg))
                    check(needle in msg, "%s via %s: message %r lacks %r" % (spec, how, msg, needle))
                else:
                    check(False, "%s via %s: no pytracekit.Error" % (spec, how))
        check(not os.path.exists(s.join("out")), "a rejected session created its directory")


CASES = {f.__name__: f for f in [
    enoent_path, enoent_name, enoent_empty_options, notso_path, notso_name, notso_empty,
    notso_dir, notso_truncated, noentry, null_entry, abi_major, abi_minor, struct_size, struct_size_tiny,
    mask_no_on_event, mask_ref_no_on_ref, ref_unavailable, mask_unknown_bit, no_name,
    option_unknown, option_int, option_int_no_value, option_bool, option_choice,
    option_double, option_quote, option_after_quote, options_valid, option_value_with_slash, init_fails, init_raises, init_widens_mask,
    second_plugin_rejected, module_codes]}

if __name__ == "__main__":
    main(CASES)
