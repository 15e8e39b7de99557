"""The rooms of lib/ (docs/architecture.md): each source sees only its own
room and the rooms below it, and only lib/session/backends.c names the
backends.

    test_structure.py rooms      every quoted #include of lib/ goes to a
                                 header of its own room or a lower one
    test_structure.py backends   the backends' header is included by the
                                 backends and by lib/session/backends.c alone,
                                 the delivery ladder (core/deliver.h) by
                                 lib/core and lib/backends alone
    test_structure.py listed     every source of a room is built
                                 (lib/CMakeLists.txt), and no file of lib/
                                 lies outside the rooms
    test_structure.py private    no source of lib/core names a field of the
                                 structs the backends lay over the private
                                 parts of the hub's records (PTK__PRIVATE)

Reads the sources only (no build needed); exits 1 naming each violation.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LIB = os.path.join(ROOT, "lib")

# Each room and the rooms it may include (itself and those below it).
ROOMS = {
    "core": {"core"},
    "backends": {"backends", "core"},
    "ref": {"ref", "core"},
    "session": {"session", "backends", "ref", "core"},
}
# Headers outside the rooms that every room may include (ptk_fault.h is
# internal/'s, shared with the plugins).
SHARED = {"ptk_config.h", "ptk_fault.h", "ptk_filter_keys.h"}
# Files of lib/ outside the rooms.
TOP_FILES = {"CMakeLists.txt", "exports.txt", "pytracekit.map", "ptk_config.h.in",
             "fault.c", "ptk_filter_keys.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for room in sorted(ROOMS):
        d = os.path.join(LIB, room)
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                yield room, name, os.path.join(d, name)


def case_rooms():
    bad = []
    for room, name, path in sources():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            if inc.startswith("pytracekit/") or inc in SHARED:
                continue
            parts = inc.split("/")
            if len(parts) != 2 or parts[0] not in ROOMS:
                bad.append("lib/%s/%s includes \"%s\": not ROOM/FILE.h of lib/"
                           % (room, name, inc))
                continue
            if parts[0] not in ROOMS[room]:
                bad.append("lib/%s/%s includes \"%s\": %s is not below %s"
                           % (room, name, inc, parts[0], room))
            elif not os.path.exists(os.path.join(LIB, inc)):
                bad.append("lib/%s/%s includes \"%s\", which does not exist"
                           % (room, name, inc))
    return bad


def case_backends():
    bad = []
    for room, name, path in sources():
        with open(path, encoding="utf-8") as f:
            incs = INCLUDE.findall(f.read())
        for inc in incs:
            if inc == "core/deliver.h" and room not in ("core", "backends"):
                bad.append("lib/%s/%s includes \"%s\": only the hub and the "
                           "backends deliver events" % (room, name, inc))
        if room == "backends" or (room, name) == ("session", "backends.c"):
            continue
        for inc in incs:
            if inc.startswith("backends/"):
                bad.append("lib/%s/%s includes \"%s\": only the backends and "
                           "lib/session/backends.c see them" % (room, name, inc))
    return bad


def case_listed():
    bad = []
    with open(os.path.join(LIB, "CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    listed = set(re.findall(r"\b((?:%s)/[a-z_]+\.c)\b" % "|".join(ROOMS), cmake))
    for room, name, _ in sources():
        if name.endswith(".c") and "%s/%s" % (room, name) not in listed:
            bad.append("lib/%s/%s is not in lib/CMakeLists.txt" % (room, name))
    for name in sorted(os.listdir(LIB)):
        if name not in ROOMS and name not in TOP_FILES:
            bad.append("lib/%s lies outside the rooms" % name)
    return bad


PRIVATE = re.compile(r"PTK__PRIVATE\([^;]*?,\s*(\w+)\s*\)")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def struct_fields(text, name):
    """The member names of `typedef struct NAME { ... }` in text."""
    m = re.search(r"typedef\s+struct\s+%s\s*\{(.*?)\}\s*%s\s*;" % (name, name),
                  text, re.S)
    if m is None:
        return None
    fields = set()
    for decl in COMMENT.sub(" ", m.group(1)).split(";"):
        for part in decl.split(","):
            part = re.sub(r"\[[^\]]*\]", "", part).strip()
            w = re.search(r"(\w+)$", part)
            if w:
                fields.add(w.group(1))
    return fields


def case_private():
    bad = []
    owned = {}  # field -> the backend struct it belongs to
    for room, name, path in sources():
        if room != "backends":
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for typ in sorted(set(PRIVATE.findall(text))):
            fields = struct_fields(text, typ)
            if not fields:
                bad.append("lib/backends/%s lays %s over a private part, but "
                           "its fields cannot be read" % (name, typ))
                continue
            for fld in fields:
                owned[fld] = "lib/backends/%s %s" % (name, typ)
    if not owned:
        bad.append("no backend lays a struct over a private part (PTK__PRIVATE)")
    for room, name, path in sources():
        if room != "core":
            continue
        with open(path, encoding="utf-8") as f:
            text = COMMENT.sub(" ", f.read())
        for fld, where in sorted(owned.items()):
            if re.search(r"(->|\.)\s*%s\b" % fld, text):
                bad.append("lib/core/%s names %s, a field of %s"
                           % (name, fld, where))
    return bad


# every case_NAME function, as CMake registers them (ptk_script_cases)
CASES = {n[5:]: f for n, f in list(globals().items()) if n.startswith("case_")}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print("usage: test_structure.py %s" % "|".join(CASES), file=sys.stderr)
        return 2
    bad = CASES[sys.argv[1]]()
    for b in bad:
        print(b)
    print("%s: %d violation(s)" % (sys.argv[1], len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
