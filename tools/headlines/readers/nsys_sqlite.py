#!/usr/bin/env python3
"""Summarise an Nsight Systems SQLite export the way an expert first reads it.

usage: nsys_sqlite.py FILE.sqlite

Prints: exporter version and GPU; capture span and time to the first GPU work; per kernel
launches, total and share of GPU time, launch configuration (grid, block, lanes used in the
last warp, registers, shared memory) and a theoretical occupancy; memcpy/memset by kind with
pageable/pinned/managed memory; unified-memory migrations and page faults; the CUDA API calls
that take host time; the largest GPU idle gaps and which host call sits in each; launch-to-start
queue delay; NCCL share.  Python 3 standard library only.
"""
import sqlite3
import sys
from collections import defaultdict

# nsys ENUM_CUDA_MEMCPY_OPER / ENUM_CUDA_MEM_KIND, used when the export has no ENUM tables
COPY_KIND = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD",
             7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "UVM HtoD", 12: "UVM DtoH",
             13: "UVM DtoD"}
MEM_KIND = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed",
            5: "DeviceStatic", 6: "ManagedStatic", 7: "Unknown"}

# per compute capability: max warps/SM, max blocks/SM, registers/SM, shared memory/SM (bytes),
# reserved shared memory per block
ARCH = {
    (3, 0): (64, 16, 65536, 49152, 0), (3, 5): (64, 16, 65536, 49152, 0),
    (3, 7): (64, 16, 131072, 114688, 0), (5, 0): (64, 32, 65536, 65536, 0),
    (5, 2): (64, 32, 65536, 98304, 0), (6, 0): (64, 32, 65536, 65536, 0),
    (6, 1): (64, 32, 65536, 98304, 0), (7, 0): (64, 32, 65536, 98304, 0),
    (7, 5): (32, 16, 65536, 65536, 0), (8, 0): (64, 32, 65536, 167936, 1024),
    (8, 6): (48, 16, 65536, 102400, 1024), (8, 7): (48, 16, 65536, 167936, 1024),
    (8, 9): (48, 24, 65536, 102400, 1024), (9, 0): (64, 32, 65536, 233472, 1024),
    (10, 0): (64, 32, 65536, 233472, 1024), (12, 0): (48, 32, 65536, 102400, 1024),
}


def tables(con):
    return {r[0] for r in con.execute("select name from sqlite_master where type in ('table','view')")}


def cols(con, t):
    return [r[1] for r in con.execute(f'pragma table_info("{t}")')]


def fmt_ns(ns):
    ns = float(ns)
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def fmt_bytes(b):
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= f:
            return f"{b / f:.2f} {unit}"
    return f"{b} B"


def occupancy(block_threads, regs, smem, lim):
    """Theoretical occupancy (active warps / max warps) from the launch and the SM limits."""
    max_warps, max_blocks, regs_sm, smem_sm, reserved = lim
    if block_threads <= 0:
        return None, "?"
    warps_per_block = -(-block_threads // 32)
    limits = {"warps": max_warps // warps_per_block, "blocks": max_blocks}
    if regs:
        regs_per_warp = -(-regs * 32 // 256) * 256          # allocation unit 256 registers
        warps_by_regs = (regs_sm // regs_per_warp) // 4 * 4   # warp allocation granularity 4
        limits["registers"] = warps_by_regs // warps_per_block
    if smem:
        per_block = -(-(smem + reserved) // 128) * 128
        limits["shared mem"] = smem_sm // per_block
    blocks = min(limits.values())
    limiter = min(limits, key=limits.get)
    return blocks * warps_per_block / max_warps, limiter


def main(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    T = tables(con)
    strings = {}
    if "StringIds" in T:
        strings = dict(con.execute("select id, value from StringIds"))

    def enum(table, fallback):
        if table in T:
            return {r[0]: r[1] for r in con.execute(f"select id, label from {table}")}
        return fallback

    copy_kind = enum("ENUM_CUDA_MEMCPY_OPER", COPY_KIND)
    mem_kind = enum("ENUM_CUDA_MEM_KIND", MEM_KIND)
    migration = enum("ENUM_CUDA_UNIF_MEM_MIGRATION", {0: "Unknown", 1: "User prefetch", 2: "Page fault",
                                                     3: "Speculative prefetch", 4: "Eviction",
                                                     5: "Access counters"})

    # ---- header
    if "META_DATA_EXPORT" in T:
        meta = dict(con.execute("select name, value from META_DATA_EXPORT"))
        print(f"exporter: {meta.get('EXPORT_PRODUCT_VERSION', '?')}  schema {meta.get('EXPORT_SCHEMA_VERSION', '?')}")
    gpus = {}
    lim = None
    if "TARGET_INFO_GPU" in T:
        c = cols(con, "TARGET_INFO_GPU")
        for row in con.execute("select * from TARGET_INFO_GPU"):
            g = dict(zip(c, row))
            gpus[g.get("id")] = g
            print(f"GPU {g.get('id')}: {g.get('name')}  cc {g.get('computeMajor')}.{g.get('computeMinor')}  "
                  f"SMs {g.get('smCount')}  discrete={g.get('isDiscrete')}  "
                  f"mem BW {float(g.get('memoryBandwidth') or 0) / 1e9:.0f} GB/s")
            cc = (g.get("computeMajor"), g.get("computeMinor"))
            base = ARCH.get(cc, (64, 32, 65536, 98304, 1024))
            lim = (g.get("maxWarpsPerSm") or base[0], g.get("maxBlocksPerSm") or base[1],
                   g.get("maxRegistersPerSm") or base[2], g.get("maxShmemPerSm") or base[3], base[4])
    if "ANALYSIS_DETAILS" in T:
        for dur, st, sp in con.execute("select duration, startTime, stopTime from ANALYSIS_DETAILS"):
            print(f"capture: {fmt_ns(dur)}")
    if lim is None:
        lim = (64, 32, 65536, 98304, 1024)
        print("GPU limits unknown: occupancy assumes 64 warps, 32 blocks, 64K regs, 96 KB smem per SM")

    def name_of(row, c):
        for key in ("demangledName", "shortName", "mangledName", "name"):
            if key in c and row[c.index(key)] is not None:
                v = row[c.index(key)]
                return strings.get(v, str(v)) if isinstance(v, int) else v
        return "?"

    # ---- GPU activities
    gpu_ops = []   # (start, end, kind, label, correlationId)
    kern = defaultdict(lambda: {"n": 0, "t": 0, "cfg": defaultdict(int), "short": ""})
    if "CUPTI_ACTIVITY_KIND_KERNEL" in T:
        c = cols(con, "CUPTI_ACTIVITY_KIND_KERNEL")
        for row in con.execute("select * from CUPTI_ACTIVITY_KIND_KERNEL"):
            r = dict(zip(c, row))
            nm = name_of(row, c)
            k = kern[nm]
            k["n"] += 1
            k["t"] += r["end"] - r["start"]
            if "shortName" in r:
                k["short"] = strings.get(r["shortName"], "")
            cfg = (r.get("gridX"), r.get("gridY"), r.get("gridZ"), r.get("blockX"), r.get("blockY"),
                   r.get("blockZ"), r.get("registersPerThread"),
                   (r.get("staticSharedMemory") or 0) + (r.get("dynamicSharedMemory") or 0))
            k["cfg"][cfg] += 1
            gpu_ops.append((r["start"], r["end"], "kernel", nm, r.get("correlationId"), r.get("deviceId")))
    copies = defaultdict(lambda: [0, 0, 0])
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in T:
        c = cols(con, "CUPTI_ACTIVITY_KIND_MEMCPY")
        for row in con.execute("select * from CUPTI_ACTIVITY_KIND_MEMCPY"):
            r = dict(zip(c, row))
            kind = copy_kind.get(r.get("copyKind"), str(r.get("copyKind")))
            src = mem_kind.get(r.get("srcKind"), "?")
            dst = mem_kind.get(r.get("dstKind"), "?")
            key = (kind, src, dst)
            if r.get("migrationCause") is not None:
                key = (kind, "UM", migration.get(r["migrationCause"], str(r["migrationCause"])))
            copies[key][0] += 1
            copies[key][1] += r.get("bytes") or 0
            copies[key][2] += r["end"] - r["start"]
            gpu_ops.append((r["start"], r["end"], "memcpy", kind, r.get("correlationId"), r.get("deviceId")))
    sets = [0, 0, 0]
    if "CUPTI_ACTIVITY_KIND_MEMSET" in T:
        for s, e, b, corr in con.execute("select start, end, bytes, correlationId from CUPTI_ACTIVITY_KIND_MEMSET"):
            sets[0] += 1
            sets[1] += b or 0
            sets[2] += e - s
            gpu_ops.append((s, e, "memset", "memset", corr, None))

    graphs = [0, 0]
    if "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" in T:
        # CUDA graphs traced as a whole (--cuda-graph-trace=graph): one row per graph launch,
        # the kernels inside are not in the KERNEL table
        for s, e, corr in con.execute("select start, end, correlationId from CUPTI_ACTIVITY_KIND_GRAPH_TRACE"):
            graphs[0] += 1
            graphs[1] += e - s
            gpu_ops.append((s, e, "graph", "CUDA graph", corr, None))

    kern_total = sum(k["t"] for k in kern.values())
    copy_total = sum(v[2] for v in copies.values())
    print(f"\nGPU work: {sum(k['n'] for k in kern.values())} kernels {fmt_ns(kern_total)}, "
          f"{sum(v[0] for v in copies.values())} memcpy {fmt_ns(copy_total)}, {sets[0]} memset {fmt_ns(sets[2])}")
    if graphs[0]:
        print(f"CUDA graph launches traced as whole graphs: {graphs[0]}, {fmt_ns(graphs[1])} (kernels inside not listed)")
    if kern_total and copy_total:
        print(f"memcpy time / kernel time = {copy_total / kern_total:.2f}")

    if kern:
        print("\nkernels (by total time):")
        nccl = 0
        for nm, k in sorted(kern.items(), key=lambda kv: -kv[1]["t"])[:15]:
            cfg = max(k["cfg"], key=k["cfg"].get)
            gx, gy, gz, bx, by, bz, regs, smem = cfg
            threads = (bx or 0) * (by or 1) * (bz or 1)
            blocks = (gx or 0) * (gy or 1) * (gz or 1)
            lanes = threads % 32 or 32 if threads else 0
            occ, limiter = occupancy(threads, regs, smem, lim)
            short = nm if len(nm) < 90 else nm[:87] + "..."
            print(f"  {100 * k['t'] / kern_total:5.1f}%  {fmt_ns(k['t']):>11}  n={k['n']:<6} avg {fmt_ns(k['t'] / k['n']):>10}  {short}")
            occ_s = f"{100 * occ:.0f}% ({limiter})" if occ is not None else "?"
            print(f"         grid ({gx},{gy},{gz})={blocks} blocks  block ({bx},{by},{bz})={threads} thr  "
                  f"last-warp lanes {lanes}/32  regs {regs}  smem {smem} B  theo.occ {occ_s}"
                  + (f"  [{len(k['cfg'])} configs]" if len(k["cfg"]) > 1 else ""))
            if gpus:
                sms = next(iter(gpus.values())).get("smCount") or 0
                if sms and blocks < sms:
                    print(f"         grid of {blocks} blocks < {sms} SMs: {sms - blocks} SMs idle")
        for nm, k in kern.items():
            if "nccl" in nm.lower():
                nccl += k["t"]
        if nccl:
            print(f"NCCL kernels: {fmt_ns(nccl)} = {100 * nccl / kern_total:.1f}% of kernel time")

    if copies:
        print("\nmemcpy (kind, src, dst): count, bytes, time, throughput")
        for key, (n, b, t) in sorted(copies.items(), key=lambda kv: -kv[1][2]):
            bw = b / t if t else 0
            print(f"  {key[0]:>9} {key[1]:>9} -> {key[2]:<12} n={n:<6} {fmt_bytes(b):>10} {fmt_ns(t):>11}  {bw:.2f} GB/s")
    if sets[0]:
        print(f"memset: n={sets[0]} {fmt_bytes(sets[1])} {fmt_ns(sets[2])}")

    # ---- unified memory: migrations that happen while a kernel runs are demand faults of that kernel
    um = [o for o in gpu_ops if o[2] == "memcpy" and ("UVM" in o[3] or "Unified" in o[3])]
    if um:
        kspans = sorted((o[0], o[1]) for o in gpu_ops if o[2] == "kernel")
        import bisect
        starts = [k[0] for k in kspans]
        inside = 0
        inside_t = 0
        for o in um:
            i = bisect.bisect_right(starts, o[0]) - 1
            if i >= 0 and kspans[i][1] > o[0]:
                inside += 1
                inside_t += o[1] - o[0]
        print(f"unified-memory migrations: {len(um)}, {inside} of them while a kernel runs ({fmt_ns(inside_t)})")
    for t in ("CUDA_UM_GPU_PAGE_FAULT_EVENTS", "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
              "CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER"):
        if t in T:
            n = con.execute(f'select count(*) from "{t}"').fetchone()[0]
            if n:
                extra = ""
                if "numberOfPageFaults" in cols(con, t):
                    extra = f", page faults {con.execute(f'select sum(numberOfPageFaults) from {t}').fetchone()[0]}"
                print(f"unified memory: {t} rows {n}{extra}")

    # ---- CUDA API
    api = defaultdict(lambda: [0, 0, 0])
    api_calls = []
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in T:
        c = cols(con, "CUPTI_ACTIVITY_KIND_RUNTIME")
        namecol = "nameId" if "nameId" in c else "name"
        for s, e, nid, corr in con.execute(f"select start, end, {namecol}, correlationId from CUPTI_ACTIVITY_KIND_RUNTIME"):
            nm = strings.get(nid, str(nid)) if isinstance(nid, int) else str(nid)
            nm = nm.split("_v")[0]
            api[nm][0] += 1
            api[nm][1] += e - s
            api[nm][2] = max(api[nm][2], e - s)
            api_calls.append((s, e, nm, corr))
    if api:
        print("\nCUDA API (by host time): calls, total, max")
        for nm, (n, t, mx) in sorted(api.items(), key=lambda kv: -kv[1][1])[:10]:
            print(f"  {nm:<36} n={n:<6} {fmt_ns(t):>11}  max {fmt_ns(mx)}")
        api_calls.sort()
        first_gpu = min((o[0] for o in gpu_ops), default=None)
        early = [c for c in api_calls if first_gpu is None or c[0] < first_gpu]
        if early:
            big = max(early, key=lambda c: c[1] - c[0])
            print(f"longest CUDA call before the first GPU op: {big[2]} {fmt_ns(big[1] - big[0])} "
                  f"(call #{api_calls.index(big) + 1} of {len(api_calls)})")

    # ---- timeline: busy union, gaps, queue delay
    if gpu_ops:
        gpu_ops.sort()
        t0, t_end = gpu_ops[0][0], max(o[1] for o in gpu_ops)
        busy, gaps = 0, []
        cur_s, cur_e, prev = gpu_ops[0][0], gpu_ops[0][1], gpu_ops[0]
        for op in gpu_ops[1:]:
            if op[0] > cur_e:
                busy += cur_e - cur_s
                gaps.append((op[0] - cur_e, cur_e, op[0], prev, op))
                cur_s, cur_e = op[0], op[1]
            elif op[1] > cur_e:
                cur_e = op[1]
            prev = op if op[1] >= prev[1] else prev
        busy += cur_e - cur_s
        span = t_end - t0
        print(f"\nGPU span {fmt_ns(span)} from first to last GPU op; busy {fmt_ns(busy)} = {100 * busy / span:.1f}%"
              f"; idle {fmt_ns(span - busy)} in {len(gaps)} gaps")
        if api_calls:
            cap0 = api_calls[0][0]
            cap1 = max(max(c[1] for c in api_calls), t_end)
            print(f"host CUDA span {fmt_ns(cap1 - cap0)}; first GPU op {fmt_ns(t0 - cap0)} after first CUDA call; "
                  f"GPU busy = {100 * busy / (cap1 - cap0):.1f}% of that span")
        by_corr = {c[3]: c for c in api_calls}
        for g, s, e, before, after in sorted(gaps, reverse=True)[:5]:
            inside = [c for c in api_calls if c[0] < e and c[1] > s]
            longest = max(inside, key=lambda c: min(c[1], e) - max(c[0], s)) if inside else None
            host = f"longest host call inside: {longest[2]} {fmt_ns(longest[1] - longest[0])}" if longest else "no CUDA call inside (host work)"
            print(f"  gap {fmt_ns(g)} after {before[2]} {before[3][:40]} before {after[2]} {after[3][:40]}; {host}")
        delays = []
        for op in gpu_ops:
            if op[2] == "kernel" and op[4] in by_corr:
                delays.append(op[0] - by_corr[op[4]][0])
        if delays:
            delays.sort()
            print(f"launch-to-start delay: median {fmt_ns(delays[len(delays) // 2])}, max {fmt_ns(delays[-1])} over {len(delays)} kernels")
        small = [o for o in gpu_ops if o[2] == "kernel" and o[1] - o[0] < 10_000]
        if small:
            print(f"kernels under 10 us: {len(small)} of {sum(1 for o in gpu_ops if o[2] == 'kernel')}")

    if "NVTX_EVENTS" in T:
        n = con.execute("select count(*) from NVTX_EVENTS").fetchone()[0]
        if n:
            print(f"\nNVTX events: {n}")
    if not gpu_ops:
        print("\nno GPU activity recorded in this export")


if __name__ == "__main__":
    main(sys.argv[1])
