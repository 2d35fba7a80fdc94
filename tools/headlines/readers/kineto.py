#!/usr/bin/env python3
"""Summarise a PyTorch profiler (Kineto) chrome trace, .json or .json.gz.

usage: kineto.py FILE

Prints: devices; per kernel launches, total, share of GPU time, grid/block/registers/shared
memory and the recorded occupancy; memcpy/memset by kind; GPU busy share of the span and the
largest idle gaps with the host call running inside each; CUDA/HIP runtime calls by host
time (synchronisation, launches); NCCL/RCCL share and how much of it overlaps compute; the
heaviest CPU ops with input shapes; ProfilerStep durations.  Standard library only.
"""
import gzip
import json
import sys
from collections import defaultdict


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        data = json.load(f)
    if isinstance(data, list):
        return {"traceEvents": data}
    return data


def fmt_us(us):
    us = float(us)
    if us >= 1e6:
        return f"{us / 1e6:.3f} s"
    if us >= 1e3:
        return f"{us / 1e3:.3f} ms"
    return f"{us:.1f} us"


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0


def union(intervals):
    total, out = 0.0, []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return sum(e - s for s, e in out), out


def main(path):
    data = load(path)
    ev = [e for e in data.get("traceEvents", []) if isinstance(e, dict)]
    for d in data.get("deviceProperties", []) or []:
        print(f"device {d.get('id')}: {d.get('name')}  SMs {d.get('numSms')}  "
              f"cc {d.get('computeMajor')}.{d.get('computeMinor')}  regs/SM {d.get('regsPerMultiprocessor')}")
    if data.get("distributedInfo"):
        print(f"distributed: {data['distributedInfo']}")

    cat = lambda e: str(e.get("cat", "")).lower()
    X = [e for e in ev if e.get("ph") == "X"]
    kernels = [e for e in X if cat(e) == "kernel"]
    copies = [e for e in X if cat(e) in ("gpu_memcpy", "memcpy")]
    sets = [e for e in X if cat(e) in ("gpu_memset", "memset")]
    runtime = [e for e in X if cat(e) in ("cuda_runtime", "cuda_driver", "runtime", "hip_runtime")]
    cpu_ops = [e for e in X if cat(e) in ("cpu_op", "operator")]

    ktot = sum(num(e.get("dur")) for e in kernels)
    ctot = sum(num(e.get("dur")) for e in copies)
    print(f"\nGPU work: {len(kernels)} kernels {fmt_us(ktot)}, {len(copies)} memcpy {fmt_us(ctot)}, "
          f"{len(sets)} memset {fmt_us(sum(num(e.get('dur')) for e in sets))}")

    if kernels:
        by = defaultdict(lambda: {"n": 0, "t": 0.0, "cfg": defaultdict(int), "occ": []})
        for e in kernels:
            a = e.get("args", {}) or {}
            k = by[e.get("name", "?")]
            k["n"] += 1
            k["t"] += num(e.get("dur"))
            cfg = (str(a.get("grid")), str(a.get("block")), a.get("registers per thread"),
                   a.get("shared memory"))
            k["cfg"][cfg] += 1
            occ = a.get("est. achieved occupancy %")
            if occ is None and isinstance(a.get("occupancy"), dict):
                occ = a["occupancy"].get("theoretical occupancy %") or a["occupancy"].get("Theoretical")
            if occ is not None:
                k["occ"].append(num(occ))
        print("\nkernels (by total time):")
        for nm, k in sorted(by.items(), key=lambda kv: -kv[1]["t"])[:12]:
            cfg = max(k["cfg"], key=k["cfg"].get)
            short = nm if len(nm) < 90 else nm[:87] + "..."
            print(f"  {100 * k['t'] / ktot:5.1f}%  {fmt_us(k['t']):>11}  n={k['n']:<6} avg {fmt_us(k['t'] / k['n']):>10}  {short}")
            try:
                block = json.loads(cfg[1]) if cfg[1] != "None" else None
                threads = block[0] * block[1] * block[2] if block else None
            except (ValueError, TypeError, IndexError):
                threads = None
            lanes = f"  last-warp lanes {threads % 32 or 32}/32" if threads else ""
            occ = f"  occupancy {sum(k['occ']) / len(k['occ']):.0f}%" if k["occ"] else ""
            print(f"         grid {cfg[0]} block {cfg[1]}{lanes}  regs {cfg[2]}  smem {cfg[3]}{occ}")
        small = sum(1 for e in kernels if num(e.get("dur")) < 10)
        print(f"kernels under 10 us: {small} of {len(kernels)}")

    if copies:
        by = defaultdict(lambda: [0, 0.0, 0.0])
        for e in copies:
            a = e.get("args", {}) or {}
            key = e.get("name", "?")
            by[key][0] += 1
            by[key][1] += num(a.get("bytes"))
            by[key][2] += num(e.get("dur"))
        print("\nmemcpy: count, bytes, time")
        for k, (n, b, t) in sorted(by.items(), key=lambda kv: -kv[1][2])[:8]:
            print(f"  {k[:50]:<50} n={n:<6} {b / 1e6:10.2f} MB {fmt_us(t):>11}")
        if ktot:
            print(f"memcpy time / kernel time = {ctot / ktot:.2f}")

    gpu = kernels + copies + sets
    if gpu:
        busy, merged = union([(num(e["ts"]), num(e["ts"]) + num(e.get("dur"))) for e in gpu])
        t0, t1 = merged[0][0], merged[-1][1]
        span = t1 - t0
        print(f"\nGPU span {fmt_us(span)}; busy {fmt_us(busy)} = {100 * busy / span:.1f}%; idle {fmt_us(span - busy)}")
        gaps = sorted(((merged[i + 1][0] - merged[i][1], merged[i][1], merged[i + 1][0])
                       for i in range(len(merged) - 1)), reverse=True)[:5]
        for g, s, e in gaps:
            inside = [r for r in runtime + cpu_ops if num(r["ts"]) < e and num(r["ts"]) + num(r.get("dur")) > s]
            top = max(inside, key=lambda r: min(num(r["ts"]) + num(r.get("dur")), e) - max(num(r["ts"]), s), default=None)
            what = f"{top.get('name')} ({fmt_us(num(top.get('dur')))})" if top else "no traced host call"
            print(f"  gap {fmt_us(g)}: host in {what}")

        coll = [e for e in kernels if any(w in e.get("name", "").lower() for w in ("nccl", "rccl", "allreduce", "all_reduce", "alltoall"))]
        if coll:
            ct = sum(num(e.get("dur")) for e in coll)
            comp, cm = union([(num(e["ts"]), num(e["ts"]) + num(e.get("dur"))) for e in kernels if e not in coll])
            overlapped = 0.0
            for e in coll:
                s, t = num(e["ts"]), num(e["ts"]) + num(e.get("dur"))
                for a, b in cm:
                    if a < t and b > s:
                        overlapped += min(b, t) - max(a, s)
            print(f"collective kernels: {len(coll)}, {fmt_us(ct)} = {100 * ct / ktot:.1f}% of kernel time; "
                  f"{100 * overlapped / ct if ct else 0:.0f}% overlapped with compute kernels")

    if runtime:
        by = defaultdict(lambda: [0, 0.0])
        for e in runtime:
            by[e.get("name")][0] += 1
            by[e.get("name")][1] += num(e.get("dur"))
        print("\nruntime API by host time:")
        for k, (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1])[:8]:
            print(f"  {str(k):<34} n={n:<6} {fmt_us(t)}")

    if cpu_ops:
        by = defaultdict(lambda: [0, 0.0, None])
        for e in cpu_ops:
            a = e.get("args", {}) or {}
            k = by[e.get("name")]
            k[0] += 1
            k[1] += num(e.get("dur"))
            if k[2] is None and a.get("Input Dims"):
                k[2] = a.get("Input Dims")
        print("\nCPU ops by inclusive time (shapes of the first call):")
        for k, (n, t, dims) in sorted(by.items(), key=lambda kv: -kv[1][1])[:10]:
            d = f"  dims {json.dumps(dims)[:80]}" if dims else ""
            print(f"  {str(k)[:44]:<44} n={n:<5} {fmt_us(t):>11}{d}")
    steps = [e for e in X if str(e.get("name", "")).startswith("ProfilerStep")]
    if steps:
        print("\nsteps: " + ", ".join(f"{e['name']} {fmt_us(num(e.get('dur')))}" for e in steps[:8]))
    if not gpu:
        print("\nno GPU events in this trace")


if __name__ == "__main__":
    main(sys.argv[1])
