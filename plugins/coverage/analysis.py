# Static analysis for the coverage plugin: what could run in a module.
#
# Compiled into the plugin (as a string, see CMakeLists.txt). The plugin
# analyses in C (analyze.c); analyze() here is the reference it is checked
# against (PYTRACEKIT_COVERAGE_ANALYSIS=python), never on the per-line path.
# Everything here is derived from the code objects themselves, walking
# nested code objects through co_consts.
#
#   analyze(code, want_arcs) -> (lines, funcs, branches)
#     lines    sorted line numbers that can produce a LINE event
#     funcs    [(code, qualname, firstlineno, start_offset, own_lines), ...],
#              the root first; start_offset is the byte offset of the code's
#              first RESUME (a frame whose f_lasti is <= it has not run yet);
#              own_lines the lines of that code object alone
#     branches {line: [destination line, ...]} for lines with a conditional
#              jump and at least two destinations; a negative destination
#              -N is "leaves the code object whose first line is N" (the
#              convention coverage.py uses for exits)
#   compile_file(path) -> code object of the file's source (its valid .pyc's,
#     else compiled), or why not (str)
#   c_optable() -> the opcode tables of the C analysis, for pytracekit's
#     _coverage_analyze() (completing deferred coverage data)
#   op_tables() -> every opcode table the plugin starts with (baked into it
#     at build time by embed.py)

import sys


def _init():
    """The opcode tables of the reference analysis (analyze()): dis is
    imported only when it runs, not when the plugin loads this module for
    compile_file()."""
    global dis, _RESUME, _NOFALL, _EXITS, _JUMPS, _JREL, _JABS, _EXTENDED_ARG
    global _HAVE_ARGUMENT, _CONDITIONAL, _NOT_CONDITIONAL, _EXIT_OPS, _NOFALL_OPS
    global _CACHES, _JUMP_ADDS_CACHES
    import dis
    _RESUME = dis.opmap.get("RESUME")
    _NOFALL = frozenset(
        name for name in (
            "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
            "JUMP_ABSOLUTE", "JUMP", "JUMP_NO_INTERRUPT",
            "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE")
        if name in dis.opmap)
    _EXITS = frozenset(n for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap)
    _JUMPS = frozenset(getattr(dis, "hasjump", None) or (dis.hasjrel + dis.hasjabs))
    _JREL = frozenset(dis.hasjrel)
    _JABS = frozenset(dis.hasjabs)
    _EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
    _HAVE_ARGUMENT = dis.HAVE_ARGUMENT
    _CONDITIONAL = frozenset(
        op for op in _JUMPS
        if dis.opname[op] not in _NOFALL
        and (dis.opname[op].startswith(("POP_JUMP", "JUMP_IF")) or dis.opname[op] == "FOR_ITER"))
    _NOT_CONDITIONAL = bytes(op for op in range(256) if op not in _CONDITIONAL)
    _EXIT_OPS = frozenset(dis.opmap[n] for n in _EXITS)
    _NOFALL_OPS = frozenset(dis.opmap[n] for n in _NOFALL)
    _CACHES = _cache_sizes()
    _JUMP_ADDS_CACHES = sys.version_info >= (3, 12)


# (types.CodeType, without importing types: the plugin loads this module
# before the program starts, and imports nothing the program would not)
_CodeType = type(_init.__code__)


def _cache_sizes():
    """Inline cache entries after each opcode (what dis skips)."""
    table = getattr(dis, "_inline_cache_entries", None)
    out = [0] * 256
    for op in range(256):
        if hasattr(table, "get"):  # by name: a dict (3.13), a frozendict (3.15)
            out[op] = table.get(dis.opname[op], 0)
        elif table is not None:
            out[op] = table[op]
    return out


def _instructions(code):
    """[(offset, opcode, jump target or None)] of `code`, as dis.get_instructions
    gives them (EXTENDED_ARG included, inline caches skipped), without
    building its Instruction records: the branch analysis of a large module
    is dominated by that otherwise."""
    raw = code.co_code
    out = []
    extended = 0
    caches = 0
    n = len(raw)
    i = 0
    while i < n:
        if caches:
            caches -= 1
            i += 2
            continue
        op = raw[i]
        caches = _CACHES[op]
        target = None
        if op >= _HAVE_ARGUMENT:
            arg = raw[i + 1] | extended
            extended = (arg << 8) if op == _EXTENDED_ARG else 0
            if op in _JREL:
                signed = -arg if "JUMP_BACKWARD" in dis.opname[op] else arg
                target = i + 2 + signed * 2
                if _JUMP_ADDS_CACHES:
                    target += 2 * caches
            elif op in _JABS:
                target = arg * 2
        else:
            extended = 0
        out.append((i, op, target))
        i += 2
    return out


def _exception_targets(code):
    parse = getattr(dis, "_parse_exception_table", None)
    entries = parse(code) if parse else dis.Bytecode(code).exception_entries
    return [e.target for e in entries if not e.lasti]


def _walk(code):
    todo = [code]
    while todo:
        c = todo.pop()
        yield c
        # Reverse keeps source order for siblings.
        todo.extend(reversed([k for k in c.co_consts if isinstance(k, _CodeType)]))


def _start_offset(code):
    raw = code.co_code
    for off in range(0, len(raw), 2):
        if raw[off] == _RESUME:
            return off
    return -1


def _code_lines(code, start):
    out = set()
    for begin, end, line in code.co_lines():
        # Instructions up to the first RESUME (RETURN_GENERATOR, MAKE_CELL,
        # COPY_FREE_VARS, RESUME itself and its inline cache on 3.15) never
        # produce a LINE event.
        if line is not None and line > 0 and end > start + 2 + (2 * _CACHES[_RESUME] if start >= 0 else 0):
            out.add(line)
    return out


def _instruction_lines(code, instrs):
    """The line of each instruction (None where it has none)."""
    lines = [None] * len(instrs)
    k = 0
    n = len(instrs)
    for begin, end, line in code.co_lines():
        while k < n and instrs[k][0] < begin:
            k += 1
        while k < n and instrs[k][0] < end:
            lines[k] = line
            k += 1
    return lines


def _branches(code):
    # Most code objects of a test module have no conditional jump: found
    # without decoding (the even bytes of co_code are the opcodes, its
    # inline caches zeros), they cost no _instructions().
    if not code.co_code[::2].translate(None, _NOT_CONDITIONAL):
        return {}
    instrs = _instructions(code)
    if not any(op in _CONDITIONAL for _, op, _ in instrs):
        return {}
    lines = _instruction_lines(code, instrs)
    index = {ins[0]: n for n, ins in enumerate(instrs)}
    exit_dest = -code.co_firstlineno
    last = len(instrs) - 1
    EXIT = -1
    # Successors of each instruction (EXIT: leaves the code object).
    succs = []
    for n, (offset, op, target) in enumerate(instrs):
        out = []
        if op in _EXIT_OPS:
            out.append(EXIT)
        if target is not None and op in _JUMPS:
            t = index.get(target)
            if t is not None:
                out.append(t)
        if op not in _NOFALL_OPS and n < last:
            out.append(n + 1)
        succs.append(out)

    # What runs without an exception, and what an except clause runs: the
    # handlers that need f_lasti (with-statement exits, re-raise cleanups)
    # are compiler plumbing whose jumps are not branches of the program.
    todo = [0] + [index[t] for t in _exception_targets(code) if t in index]
    seen = set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(s for s in succs[n] if s != EXIT)

    branch_lines = set()
    by_line = {}
    for n in seen:
        line = lines[n]
        if line is None or line <= 0:
            continue
        by_line.setdefault(line, []).append(n)
        if instrs[n][1] in _CONDITIONAL:
            branch_lines.add(line)

    # A branch is a conditional jump; its destinations are where each of
    # its directions leads: the first instruction on another line (or the
    # exit), through straight-line code and unconditional jumps. A
    # conditional jump on the way is a branch of its own. This is what the
    # branch events of sys.monitoring can see, and what the LINE
    # transitions show of a jump; other ways out of a line that holds a
    # jump (the rest of a multi-line comprehension, say) are not branches.
    out = {}
    for line in branch_lines:
        dests = set()
        visited = set()
        todo = [s for n in by_line[line] if instrs[n][1] in _CONDITIONAL for s in succs[n]]
        while todo:
            s = todo.pop()
            if s == EXIT:
                dests.add(exit_dest)
                continue
            if s in visited:
                continue
            visited.add(s)
            other = lines[s]
            if other is not None and other > 0 and other != line:
                dests.add(other)
            elif instrs[s][1] not in _CONDITIONAL:
                todo.extend(succs[s])
        if len(dests) >= 2:
            out[line] = sorted(dests, key=lambda d: (d < 0, d))
    return out


def analyze(code, want_arcs):
    if "dis" not in globals():
        _init()
    lines = set()
    funcs = []
    branches = {}
    for c in _walk(code):
        start = _start_offset(c)
        own = _code_lines(c, start)
        lines |= own
        funcs.append((c, c.co_qualname, c.co_firstlineno, start, sorted(own)))
        if want_arcs:
            for line, dests in _branches(c).items():
                have = branches.setdefault(line, [])
                have.extend(d for d in dests if d not in have)
    return sorted(lines), funcs, branches


def c_optable():
    """(flags, caches): the opcode tables of the C analysis (analyze.c's
    cov_optable: AN_* flags and inline cache sizes per opcode): the plugin
    takes them when it starts (cov_life.c's set-up), pytracekit's
    _coverage_analyze() when it completes deferred data."""
    import opcode
    jumps = set(getattr(opcode, "hasjump", None) or (opcode.hasjrel + opcode.hasjabs))
    nofall = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
              "JUMP_ABSOLUTE", "JUMP", "JUMP_NO_INTERRUPT", "RETURN_VALUE",
              "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
    an = bytearray(256)
    for op in range(256):
        name, f = opcode.opname[op], 0
        if op in jumps and op in opcode.hasjrel:
            f |= 1
        elif op in jumps and op in opcode.hasjabs:
            f |= 2
        if "JUMP_BACKWARD" in name:
            f |= 4
        if (op in jumps and name not in nofall and
                (name.startswith(("POP_JUMP", "JUMP_IF")) or name == "FOR_ITER")):
            f |= 8
        if name in ("RETURN_VALUE", "RETURN_CONST"):
            f |= 16
        if name in nofall:
            f |= 32
        if name == "EXTENDED_ARG":
            f |= 64
        if name == "RESUME":
            f |= 128
        an[op] = f
    table = getattr(opcode, "_inline_cache_entries", None)
    caches = bytearray(256)
    for op in range(256):
        if hasattr(table, "get"):  # by name: a dict, a frozendict (3.15)
            caches[op] = table.get(opcode.opname[op], 0)
        elif table is not None:
            caches[op] = table[op]
    return bytes(an), bytes(caches)


def op_tables():
    """What the plugin takes from the opcode module when it starts, as
    {name: int or bytes}: the opcodes of RESUME and YIELD_VALUE, its branch
    trails' class of each opcode (cov_private.h's OPC_*), c_optable()'s
    two tables, and whether sys.monitoring has the two branch directions
    (3.14+). embed.py calls it at build time and compiles the result into
    the plugin, which uses it while the interpreter's magic number is the
    build's (the bytecode is then the same); under another one the plugin
    calls it itself (cov_life.c's set-up)."""
    import opcode
    m = opcode.opmap
    cls = bytearray(256)
    for op in set(getattr(opcode, "hasjump", ()) or opcode.hasjrel):
        name = opcode.opname[op] if op < 256 else ""
        if name.startswith(("POP_JUMP", "JUMP_IF")) or name == "FOR_ITER":
            cls[op] = 4
    for names, c in ((("EXTENDED_ARG",), 1),
                     (("RETURN_VALUE", "RETURN_CONST"), 2),
                     (("RAISE_VARARGS", "RERAISE"), 3),
                     (("JUMP_FORWARD",), 5),
                     (("JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"), 6)):
        for name in names:
            if name in m:
                cls[m[name]] = c
    an, caches = c_optable()
    events = getattr(getattr(sys, "monitoring", None), "events", None)
    return {"resume": m["RESUME"], "yield_value": m["YIELD_VALUE"], "opclass": bytes(cls),
            "anflags": an, "caches": caches,
            "branch_dirs": int(hasattr(events, "BRANCH_LEFT")
                               and hasattr(events, "BRANCH_RIGHT"))}


def _cached_code(path, source):
    """The code object in path's __pycache__ .pyc, when the import system
    would use it for this source (same magic number; the source's mtime and
    size, or its hash, as recorded); else None. Reading it is a marshal
    load; compiling a large module again costs 100 times more, and a module
    the program imported before tracing started (enum, re, ...) is
    analysed from its file."""
    import importlib.util
    import marshal
    import os
    try:
        cache = importlib.util.cache_from_source(path)
        data = _read_regular(cache)
        st = os.stat(path)
    except (OSError, NotImplementedError, ValueError):
        return None
    if len(data) < 16 or data[:4] != importlib.util.MAGIC_NUMBER:
        return None
    flags = int.from_bytes(data[4:8], "little")
    if flags & 1:  # hash-based (PEP 552)
        if data[8:16] != importlib.util.source_hash(source):
            return None
    elif (flags != 0
          or int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
          or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF
          or st.st_size != len(source)):
        return None
    try:
        code = marshal.loads(data[16:])
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, _CodeType) else None


def _read_regular(path):
    """The bytes of `path` if it is a regular file: a FIFO or a device
    under the measured tree would block the report for ever or never end
    (opened without blocking, checked, then read)."""
    import os
    import stat
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        os.set_blocking(fd, True)
        with open(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def compile_file(path):
    try:
        source = _read_regular(path)
        code = _cached_code(path, source)
        if code is not None:
            return code
        return compile(source, path, "exec", dont_inherit=True)
    except OSError as e:
        return e.strerror or str(e)
    except (SyntaxError, ValueError) as e:
        if isinstance(e, SyntaxError) and e.lineno:
            return "%s at line %d" % (e.msg, e.lineno)
        return str(e)


def python_files(directory):
    """The .py files under directory, sorted (hidden directories skipped)."""
    import os
    out = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        out.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(".py"))
    return out
