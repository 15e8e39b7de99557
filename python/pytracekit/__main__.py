"""python -m pytracekit [-p PLUGIN]... [-o DIR] [--threads current|all]
                        [--backend auto|legacy|monitoring]
                        (SCRIPT | -m MODULE | -c CODE) [ARGS...]

In-process equivalent of the pytracekit command."""
import argparse
import os
import runpy
import sys

from . import Session, Error


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "combine":
        from .combining import main as combine_main
        return combine_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m pytracekit")
    ap.add_argument("-p", "--plugin", action="append", default=[])
    ap.add_argument("-o", "--output", default="pytracekit-out")
    ap.add_argument("--threads", choices=["current", "all"], default="all")
    ap.add_argument("--plugin-path", action="append", default=[])
    ap.add_argument("--backend", choices=["auto", "legacy", "monitoring"],
                    default="auto")
    ap.add_argument("--follow-children", action="store_true",
                    default=os.environ.get("PYTRACEKIT_FOLLOW_CHILDREN", "0")
                    not in ("", "0"))
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("-m", dest="module")
    g.add_argument("-c", dest="code")
    g.add_argument("script", nargs="?")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    ns = ap.parse_args(argv)
    try:
        s = Session(ns.plugin or ["counter"], output_dir=ns.output,
                    threads=ns.threads, backend=ns.backend,
                    plugin_path=":".join(ns.plugin_path) or None,
                    follow_children=ns.follow_children)
    except Error as e:
        print(f"pytracekit: {e}", file=sys.stderr)
        return 2
    if ns.module:
        sys.argv = [ns.module] + ns.args
        target = lambda: runpy.run_module(ns.module, run_name="__main__", alter_sys=True)
    elif ns.code is not None:
        sys.argv = ["-c"] + ns.args
        target = lambda: exec(compile(ns.code, "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = [ns.script] + ns.args
        sys.path[0] = os.path.dirname(os.path.abspath(ns.script))
        target = lambda: runpy.run_path(ns.script, run_name="__main__")
    with s:
        target()
    # As the command: 3 when the program succeeded but a report failed.
    return 3 if s.failures else 0


if __name__ == "__main__":
    sys.exit(main())
