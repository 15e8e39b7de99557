#!/usr/bin/env python3
"""The coverage report step, one stage more per run, to be run under
callgrind: the instructions of stage k minus those of stage k-1 are what
stage k costs (each run repeats the stages before it).

    python report_split.py --dump coverage.json data.marshal   # once
    valgrind --tool=callgrind python report_split.py WRITER data.marshal STAGE

WRITER is tools/pytracekit-coverage.py (the plugin's report writer); the
data is a run's coverage.json (the measured records; the figures it also
holds are ignored), marshalled so that reading it costs next to nothing
and imports nothing. STAGE is one of STAGES: start (the interpreter and
the data), import (the writer module and what it imports at load), model
(coverage.py's statement model of every file: FileStats, shared by every
format), then each format the plugin writes, in the plugin's order.
"""
import marshal
import sys

STAGES = ["start", "import", "model", "json", "lcov", "xml", "txt", "short"]


def main(argv):
    if argv[0] == "--dump":
        import json
        with open(argv[1]) as f:
            data = json.load(f)
        for rec in data["files"].values():
            for k in ("summary", "missing_lines", "excluded_lines"):
                rec.pop(k, None)
        data.pop("totals", None)
        with open(argv[2], "wb") as f:
            marshal.dump(data, f)
        return 0
    writer, path, stage = argv
    upto = STAGES.index(stage)
    with open(path, "rb") as f:
        data = marshal.load(f)
    if upto < 1:
        return 0
    import importlib.util
    spec = importlib.util.spec_from_file_location("_ptk_coverage_format", writer)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    steps = [lambda: mod._stats(data), lambda: mod.json_text(data),
             lambda: mod.lcov_text(data), lambda: mod.cobertura_text(data, timestamp=0),
             lambda: mod.summary_text(data), lambda: mod.summary_short(data)]
    for step in steps[:upto - 1]:
        step()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
