#!/usr/bin/env python3
"""Generates a large Kineto trace by tiling the events of a real corpus trace.

Copy k of the events is shifted by k times the trace's span, so the copies follow each other in
time; correlation, External id and flow ids are shifted so launches still pair with their
kernels; kernel and operator names get one of seven suffixes, so the collector aggregates many
names. Writes plain JSON of at least SIZE_MB megabytes. Output is never committed.
usage: gen_kineto.py CORPUS_TRACE(.json[.gz]) OUT_JSON SIZE_MB
"""
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def main() -> int:
    src, out, size_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    doc = load(src)
    events = doc.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    lo = min(e["ts"] for e in timed)
    hi = max(e["ts"] + e.get("dur", 0) for e in timed)
    span = (hi - lo) * 1.01
    id_step = 1 + max([e["args"].get(k, 0) for e in events if isinstance(e.get("args"), dict)
                       for k in ("correlation", "External id") if isinstance(e["args"].get(k), int)] +
                      [e.get("id", 0) for e in events if isinstance(e.get("id"), int)])
    target = int(size_mb * 1e6)
    with open(out, "w", encoding="utf-8") as f:
        head = json.dumps(doc)[:-1]
        f.write(head + (', ' if doc else '') + '"traceEvents": [\n')
        written, copy, first = len(head), 0, True
        while written < target:
            chunk = []
            for e in events:
                if copy > 0 and not isinstance(e.get("ts"), (int, float)):
                    continue  # metadata events once
                e = dict(e)
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = e["ts"] + copy * span
                if isinstance(e.get("id"), int):
                    e["id"] = e["id"] + copy * id_step
                args = e.get("args")
                if isinstance(args, dict):
                    args = dict(args)
                    for k in ("correlation", "External id"):
                        if isinstance(args.get(k), int):
                            args[k] = args[k] + copy * id_step
                    e["args"] = args
                if e.get("cat") in ("kernel", "cpu_op") and copy % 7:
                    e["name"] = f'{e["name"]}_v{copy % 7}'
                chunk.append(json.dumps(e, separators=(",", ":")))
            text = ("" if first else ",\n") + ",\n".join(chunk)
            first = False
            f.write(text)
            written += len(text)
            copy += 1
        f.write("\n]}\n")
    print(f"gen_kineto: {copy} copies of {len(events)} events, {written / 1e6:.0f} MB -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
