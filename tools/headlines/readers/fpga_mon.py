#!/usr/bin/env python3
"""Summarise an Intel FPGA SDK for OpenCL dynamic-profiler profile.mon.

usage: fpga_mon.py FILE

Each line: device, queue/kernel id, kernel name, start ns, end ns, then per-kernel counter
blocks (stall/occupancy/bandwidth words, not decoded here).  Prints per kernel executions and
total time, and the share of the capture span in which any kernel runs (idle gaps = host).
Standard library only.
"""
import sys
from collections import defaultdict


def fmt_ns(ns):
    for unit, f in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= f:
            return f"{ns / f:.3f} {unit}"
    return f"{ns:.0f} ns"


def main(path):
    runs = []
    for line in open(path, encoding="utf-8", errors="replace"):
        p = line.strip().rstrip(",").split(",")
        if len(p) < 5:
            continue
        try:
            runs.append((int(p[3]), int(p[4]), p[2], p[0], len(p) - 5))
        except ValueError:
            continue
    by = defaultdict(lambda: [0, 0])
    for s, e, name, dev, _ in runs:
        by[(dev, name)][0] += 1
        by[(dev, name)][1] += e - s
    print(f"{len(runs)} kernel executions on {len(set(r[3] for r in runs))} device(s)")
    for (dev, name), (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"  device {dev} {name:<30} n={n:<4} total {fmt_ns(t):>11} avg {fmt_ns(t / n)}")
    spans = sorted((s, e) for s, e, *_ in runs)
    busy, cs, ce, gaps = 0, spans[0][0], spans[0][1], []
    for s, e in spans[1:]:
        if s > ce:
            busy += ce - cs
            gaps.append(s - ce)
            cs, ce = s, e
        else:
            ce = max(ce, e)
    busy += ce - cs
    span = spans[-1][1] - spans[0][0]
    print(f"span {fmt_ns(span)}, some kernel running {100 * busy / span:.1f}%, "
          f"{len(gaps)} idle gaps" + (f", median {fmt_ns(sorted(gaps)[len(gaps) // 2])}" if gaps else ""))


if __name__ == "__main__":
    main(sys.argv[1])
