# Static analysis for the coverage plugin: what could run in a module.
#
# Compiled into the plugin (as a string, see CMakeLists.txt) and run once per
# measured file, never on the per-line path. Everything here is derived from
# the code objects themselves, walking nested code objects through co_consts.
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
#   compile_file(path) -> code object of the file's source, or why not (str)

import dis
import types

_RESUME = dis.opmap.get("RESUME")
_NOFALL = frozenset(
    name for name in (
        "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
        "JUMP_ABSOLUTE", "JUMP", "JUMP_NO_INTERRUPT",
        "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE")
    if name in dis.opmap)
_EXITS = frozenset(n for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap)
_JUMPS = frozenset(getattr(dis, "hasjump", None) or (dis.hasjrel + dis.hasjabs))
_EXIT = object()


def _walk(code):
    todo = [code]
    while todo:
        c = todo.pop()
        yield c
        # Reverse keeps source order for siblings.
        todo.extend(reversed([k for k in c.co_consts if isinstance(k, types.CodeType)]))


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
        # COPY_FREE_VARS, RESUME itself) never produce a LINE event.
        if line is not None and line > 0 and end > start + 2:
            out.add(line)
    return out


def _line_map(code):
    lines = {}
    for begin, end, line in code.co_lines():
        for off in range(begin, end, 2):
            lines[off] = line
    return lines


def _branches(code):
    instrs = [i for i in dis.get_instructions(code)]
    if not instrs:
        return {}
    line_at = _line_map(code)
    index = {ins.offset: n for n, ins in enumerate(instrs)}
    exit_dest = -code.co_firstlineno

    def succ(n):
        ins = instrs[n]
        out = []
        if ins.opname in _EXITS:
            out.append(_EXIT)
        if ins.opcode in _JUMPS and isinstance(ins.argval, int) and ins.argval in index:
            out.append(index[ins.argval])
        if ins.opname not in _NOFALL and n + 1 < len(instrs):
            out.append(n + 1)
        return out

    # What runs without an exception, and what an except clause runs: the
    # handlers that need f_lasti (with-statement exits, re-raise cleanups)
    # are compiler plumbing whose jumps are not branches of the program.
    roots = [0]
    for entry in dis.Bytecode(code).exception_entries:
        if not entry.lasti and entry.target in index:
            roots.append(index[entry.target])
    seen = set()
    todo = list(roots)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(s for s in succ(n) if s is not _EXIT)

    branch_lines = set()
    by_line = {}
    for n in seen:
        ins = instrs[n]
        line = line_at.get(ins.offset)
        if line is None or line <= 0:
            continue
        by_line.setdefault(line, []).append(n)
        if ins.opcode in _JUMPS and ins.opname not in _NOFALL and (
                ins.opname.startswith(("POP_JUMP", "JUMP_IF")) or ins.opname == "FOR_ITER"):
            branch_lines.add(line)

    out = {}
    for line in branch_lines:
        dests = set()
        visited = set()
        todo = list(by_line[line])
        while todo:
            n = todo.pop()
            if n in visited:
                continue
            visited.add(n)
            for s in succ(n):
                if s is _EXIT:
                    dests.add(exit_dest)
                    continue
                other = line_at.get(instrs[s].offset)
                if other is None or other == line:
                    todo.append(s)
                else:
                    dests.add(other)
        if len(dests) >= 2:
            out[line] = sorted(dests, key=lambda d: (d < 0, d))
    return out


def analyze(code, want_arcs):
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


def compile_file(path):
    try:
        with open(path, "rb") as f:
            source = f.read()
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
