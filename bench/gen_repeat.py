#!/usr/bin/env python3
"""Generates a large text report by repeating the body of a real corpus report.

The first HEADER lines are written once; the remaining lines are written again and again until
the output holds SIZE_MB megabytes. For line-oriented formats whose records stand alone
(FPGA profile.mon executions, rocprof stats rows, ncu text launch blocks), so each repetition adds
records of the same shape. Output is never committed.
usage: gen_repeat.py CORPUS_FILE OUT_FILE SIZE_MB [HEADER_LINES]
"""
import sys


def main() -> int:
    src, out, size_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    header_lines = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    lines = open(src, encoding="utf-8", errors="replace").read().splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    head, body = "".join(lines[:header_lines]), "".join(lines[header_lines:])
    if not body:
        print("gen_repeat: nothing to repeat", file=sys.stderr)
        return 2
    target = int(size_mb * 1e6)
    with open(out, "w", encoding="utf-8") as f:
        f.write(head)
        written = len(head)
        copies = 0
        while written < target:
            f.write(body)
            written += len(body)
            copies += 1
    print(f"gen_repeat: {copies} copies, {written / 1e6:.0f} MB -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
