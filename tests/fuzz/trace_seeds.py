#!/usr/bin/env python3
"""Cuts real traces into seeds a fuzzer can take whole (scripts/fuzz's trace targets).

Usage: trace_seeds.py OUT_DIR MAX_BYTES SOURCE...

Every Kineto or Chrome trace (.json, .json.gz) under the SOURCE folders becomes a few windows of
consecutive events, each written compact with the trace's other members (deviceProperties,
distributedInfo...) and under MAX_BYTES: from the start, around the first communication kernel,
and from the middle. Standard library only; files that are not traces are skipped.
"""
import gzip
import hashlib
import json
import os
import sys

COMM_MARKERS = ("nccl", "rccl", "multimem_", "cross_device_reduce", "AllReduce", "nvshmem")


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def window(doc, events, start, max_bytes):
    """The largest run of events from `start` whose document fits in max_bytes (None if none)."""
    head = {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else None

    def text(n):
        part = events[start:start + n]
        out = dict(head, traceEvents=part) if head is not None else part
        return json.dumps(out, separators=(",", ":"))

    lo, hi = 0, min(len(events) - start, 4096)
    while lo < hi:  # the largest n whose text fits
        mid = (lo + hi + 1) // 2
        if len(text(mid)) <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    return text(lo) if lo > 0 else None


def main():
    out_dir, max_bytes, sources = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    os.makedirs(out_dir, exist_ok=True)
    written = 0
    for source in sources:
        for root, _, files in os.walk(source):
            for name in sorted(files):
                if not (name.endswith(".json") or name.endswith(".json.gz")):
                    continue
                try:
                    doc = load(os.path.join(root, name))
                except (OSError, ValueError, EOFError):
                    continue
                events = doc.get("traceEvents") if isinstance(doc, dict) else doc
                if not isinstance(events, list) or not events:
                    continue
                starts = {0, len(events) // 2}
                for i, e in enumerate(events):
                    if isinstance(e, dict) and any(m in str(e.get("name", "")) for m in COMM_MARKERS):
                        starts.add(max(0, i - 20))
                        break
                for start in sorted(starts):
                    text = window(doc, events, start, max_bytes)
                    if text is None:
                        continue
                    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
                    with open(os.path.join(out_dir, f"{name.split('.')[0][:40]}-{start}-{digest}.json"), "w") as f:
                        f.write(text)
                    written += 1
    print(f"{written} trace seeds in {out_dir}")


if __name__ == "__main__":
    main()
