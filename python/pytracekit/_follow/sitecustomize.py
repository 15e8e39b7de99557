"""Start-up hook of processes that pytracekit follows.

A session that follows children puts this directory first on PYTHONPATH and
its plugins and options in PYTRACEKIT_FOLLOW (JSON). Python imports this
module at start-up (the `site` module imports `sitecustomize`); it starts
the same plugins, reporting into OUTPUT_DIR/pid-N/, then imports the
sitecustomize this one hides, if there is one. `python -S` and `python -I`
run no start-up hook and are not followed.
"""


def _child_dir(root, os):
    pid = os.getpid()
    for k in range(1, 1000):
        path = os.path.join(root, "pid-%d" % pid if k == 1 else "pid-%d.%d" % (pid, k))
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise OSError("no free report directory for process %d under %s" % (pid, root))


def _start():
    import json
    import os
    import sys

    raw = os.environ.get("PYTRACEKIT_FOLLOW")
    if not raw:
        return
    try:
        spec = json.loads(raw)
        root = spec["output_dir"]
        pkgdir = spec["pkgdir"]
    except (ValueError, KeyError, TypeError) as e:
        sys.stderr.write("pytracekit: PYTRACEKIT_FOLLOW is not usable (%s); "
                         "process %d is not traced\n" % (e, os.getpid()))
        return
    sys.path.insert(0, pkgdir)
    try:
        from pytracekit import _pytracekit
        from pytracekit import Session, Error
    except ImportError as e:
        sys.stderr.write("pytracekit: cannot follow into %s (Python %d.%d): %s\n"
                         % (sys.executable, sys.version_info[0],
                            sys.version_info[1], e))
        return
    finally:
        try:
            sys.path.remove(pkgdir)
        except ValueError:
            pass
    # the run this process follows: a session with follow_children takes
    # PYTRACEKIT_FOLLOW only when it is this one's
    _pytracekit._follow_run = spec.get("run")
    # the parent's filter as Session keywords ({"include": [items], ...,
    # "max_depth": N}), read once by the parent's library
    filt = spec.get("filter") or {}
    try:
        session = Session(spec["plugins"], output_dir=_child_dir(root, os),
                          threads=spec.get("threads", "all"),
                          backend=spec.get("backend", "auto"),
                          plugin_path=spec.get("plugin_path"),
                          follow_children=True, **filt)
        session.start()
    except (Error, OSError) as e:
        sys.stderr.write("pytracekit: cannot trace process %d: %s\n" % (os.getpid(), e))
        return
    # Held by the module, not only by the exit hook: multiprocessing's fork
    # server clears the atexit hooks in its children (they report through
    # os._exit, which pytracekit wraps).
    _pytracekit._followed_session = session

    def finish():
        if session.running:
            session.stop()
        session.report()

    import atexit
    atexit.register(finish)


def _chain():
    """Import the sitecustomize module this one hides."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    me = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path
                   if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name != "sitecustomize":
            raise
        if me is not None:
            sys.modules["sitecustomize"] = me
    finally:
        sys.path[:] = saved


_chain()
_start()
