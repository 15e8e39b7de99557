"""Fuzzes `pytracekit combine`'s inputs, as the libFuzzer targets fuzz the
option and filter parsers: report sets of a real run (counter, timer with its
pstats, folded, speedscope and JSON files, coverage, run.json), one or two of
their files mutated (a value replaced by another type, a member deleted, the
file cut short, bytes changed), with random --paths rules, given to combine's
main() for SECONDS (argv[1]). Each input must end in exit 0, 2 or 3, never an
exception; exit 2 says one line, "pytracekit combine: ...", and writes
nothing; exit 0 writes reports that parse. Iteration N uses random.Random(N),
so a finding is reproduced by its number; its input is kept in
finding-combine-N/ (the test's directory)."""
import contextlib
import io
import json
import marshal
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

from ptk_testlib import CLI, check, fail, skip

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
VALUES = [None, -1, 0, 2 ** 70, "x", "", [], {}, 1.5, float("nan"), float("inf"), True,
          "\x00/a\udcff", [[[]]], {"a": 1}, "1e999", "\u00b2"]


def mutate_json(obj, rng):
    nodes = []

    def walk(x, parent, key, depth):
        nodes.append((parent, key))
        if depth > 6:
            return
        if isinstance(x, dict):
            for k in list(x)[:24]:
                walk(x[k], x, k, depth + 1)
        elif isinstance(x, list):
            for i in range(min(len(x), 24)):
                walk(x[i], x, i, depth + 1)
    walk(obj, None, None, 0)
    parent, key = rng.choice(nodes)
    if parent is None:
        return rng.choice(VALUES)
    if isinstance(parent, dict) and rng.random() < 0.25:
        del parent[key]
    elif isinstance(parent, list) and rng.random() < 0.1:
        parent.insert(key, rng.choice(VALUES))
    else:
        parent[key] = rng.choice(VALUES)
    return obj


def mutate(name, data, rng):
    if rng.random() < 0.12:
        return data[:rng.randrange(len(data) + 1)]
    if name.endswith(".json"):
        try:
            obj = json.loads(data)
        except ValueError:
            return data
        for _ in range(rng.randint(1, 3)):
            obj = mutate_json(obj, rng)
        return json.dumps(obj).encode("utf-8", "surrogatepass")
    if name.endswith(".pstats"):
        stats = marshal.loads(data)
        entries = [None, (1,), (1, 2, 3, 4, {}), (1, 2, 3.5, 4, {("a", 1, "b"): None}),
                   (1, 2, 3, 4, {("a", "1", "b"): (1, 1, 1, 1)}), (True, 2, 3, 4, {})]
        if stats and rng.random() < 0.7:
            stats[rng.choice(list(stats))] = rng.choice(entries + VALUES)
        else:
            stats = rng.choice([None, [], {1: 2}, {("a",): (1, 2, 3, 4, {})}] + VALUES)
        return marshal.dumps(stats)
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        if b:
            b[rng.randrange(len(b))] = rng.choice(b" ;()\n:0\xff\x00\xb2")
    return bytes(b)


def paths_rules(rng):
    alphabet = "ab/*\\.:"
    rules = []
    for _ in range(rng.randint(0, 2)):
        canonical = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
        pats = ",".join("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
                        for _ in range(rng.randint(1, 3)))
        rules += ["--paths", canonical + "=" + pats]
    return rules


def real_sets(tmp):
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write("def f(x):\n    return x + 1\n"
                "def g():\n    return sum(f(i) for i in range(5))\n"
                "for _ in range(3):\n    g()\n")
    out = os.path.join(tmp, "seed")
    p = subprocess.run([CLI, "-p", "counter", "-p", "timer:speedscope=true,folded=true",
                        "-p", "coverage:branch=true", "-o", out, prog],
                       cwd=tmp, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"the seed run failed: {p.stderr[-2000:]}")
    files = {}
    for n in sorted(os.listdir(out)):
        with open(os.path.join(out, n), "rb") as f:
            files[n] = f.read()
    return files


def one(seed_files, n, work):
    """Iteration n; returns a complaint, or None."""
    from pytracekit import combining
    rng = random.Random(n)
    top = os.path.join(work, "in")
    sets = ["a", "b"] if rng.random() < 0.5 else ["a"]
    victims = rng.sample(sorted(seed_files), rng.randint(1, 2))
    for s in sets:
        os.makedirs(os.path.join(top, s))
        for name, data in seed_files.items():
            if s == sets[-1] and name in victims:
                data = mutate(name, data, rng)
            with open(os.path.join(top, s, name), "wb") as f:
                f.write(data)
    out = os.path.join(work, "out")
    argv = ["-o", out] + paths_rules(rng) + [top]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = combining.main(argv)
    except BaseException:
        return "an exception escaped: " + traceback.format_exc()[-1500:]
    said = err.getvalue()
    if rc == 2:
        lines = said.splitlines()
        if len(lines) != 1 or not lines[0].startswith("pytracekit combine: "):
            return f"exit 2 without one message: {said[-1500:]!r}"
        if os.path.exists(out):
            return "exit 2, but the output directory was written"
    elif rc in (0, 3):
        for name in os.listdir(out):
            if name.endswith(".json"):
                try:
                    with open(os.path.join(out, name), encoding="utf-8") as f:
                        json.load(f)
                except ValueError as e:
                    return f"exit {rc}, but {name} does not parse: {e}"
    else:
        return f"exit {rc}: {said[-1500:]!r}"
    return None


def main():
    if CLI is None:
        skip("PTK_CLI is not set")
    with tempfile.TemporaryDirectory() as tmp:
        seed_files = real_sets(tmp)
        end = time.monotonic() + SECONDS
        n = 0
        while n == 0 or time.monotonic() < end:
            work = os.path.join(tmp, "w")
            complaint = one(seed_files, n, work)
            if complaint is not None:
                keep = os.path.abspath(f"finding-combine-{n}")
                shutil.rmtree(keep, ignore_errors=True)
                shutil.copytree(os.path.join(work, "in"), keep)
                fail(f"iteration {n} (input kept in {keep}): {complaint}")
            shutil.rmtree(work)
            n += 1
    print(f"fuzz.combine: {n} inputs in {SECONDS:g} s, no finding")


if __name__ == "__main__":
    main()
