"""A server for the attach tests: HTTP on 127.0.0.1, one request at a
time in the main thread. Usage: attach_target.py PORTFILE [arm|import]
(arm: calls pytracekit.arm(); import: imports pytracekit).

GET /work answers through answer() (the function whose calls the tests
count); GET /state answers with what the process has installed of hooks
(JSON), for the tests' check that a detach leaves nothing behind; GET
/gc/off collects and turns the automatic collections off, GET /gc
collects, answers with the number of unreachable objects found and turns
them on again; GET /exit ends it with status 0. The port goes into
PORTFILE once it listens.
"""
import atexit
import gc
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer


def answer(path):
    return f"{path} done\n".encode()


def hooks():
    """What the process has of every hook pytracekit may install."""
    state = {
        "profile": repr(sys.getprofile()),
        "trace": repr(sys.gettrace()),
        "threading_profile": repr(getattr(threading, "getprofile", lambda: None)()),
        "threading_trace": repr(getattr(threading, "gettrace", lambda: None)()),
        "sigterm": repr(signal.getsignal(signal.SIGTERM)),
        "sighup": repr(signal.getsignal(signal.SIGHUP)),
        "os": [repr(getattr(os, n)) for n in ("_exit", "execv", "execve")],
        "threads": sorted(t.name for t in threading.enumerate()),
        "atexit": atexit._ncallbacks(),
        "modules_pytracekit": sorted(m for m in sys.modules if m.startswith("pytracekit")),
        "rss_kb": rss_kb(),
    }
    if hasattr(sys, "monitoring"):
        state["tools"] = [sys.monitoring.get_tool(i) for i in range(6)]
        state["events"] = [sys.monitoring.get_events(i) for i in range(6)]
        state["local_events"] = [
            sys.monitoring.get_local_events(i, f.__code__)
            for i in range(6) for f in (answer, Handler.do_GET)]
    return state


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/state":
            body = json.dumps(hooks()).encode()
        elif self.path == "/gc/off":
            gc.collect()
            gc.disable()
            body = b"off\n"
        elif self.path == "/gc":
            body = json.dumps(gc.collect()).encode()
            gc.enable()
        elif self.path == "/exit":
            body = b"bye\n"
            self.server.ending = True
        else:
            body = answer(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) > 2 and sys.argv[2] == "arm":
        import pytracekit
        pytracekit.arm()
    elif len(sys.argv) > 2 and sys.argv[2] == "import":
        import pytracekit  # noqa: F401 (PYTRACEKIT_ARM=1 arms it)
    server = HTTPServer(("127.0.0.1", 0), Handler)
    server.ending = False
    server.timeout = 0.05  # back in Python code 20 times a second
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, sys.argv[1])
    while not server.ending:
        server.handle_request()


if __name__ == "__main__":
    main()
