#!/usr/bin/env python3
"""Summarise AMD profiler output: rocprof v1 (results.csv, results.stats.csv, hip_stats,
copy_stats, results.json, results.db), rocprofv3 CSV (kernel_trace, kernel_stats,
counter_collection, agent_info), rocpd SQLite, and rocprof-compute/Omniperf workload CSVs
(pmc_perf, timestamps, SQ_*.csv, pmc_kernel_top, sysinfo, roofline).

usage: rocprof.py FILE

Per kernel: dispatches, total time and share, workgroup and grid sizes (wavefronts per
workgroup on a 64-wide wave, lanes used in the last wave), VGPR/SGPR/LDS/scratch where
recorded; copies by direction; GPU busy share and the largest idle gaps; a few hardware
counters when present.  Standard library only.
"""
import csv
import json
import sqlite3
import sys
from collections import defaultdict


def fnum(x):
    try:
        return float(str(x).strip().strip('"'))
    except (TypeError, ValueError):
        return None


def fmt_ns(ns):
    ns = float(ns)
    for unit, f in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= f:
            return f"{ns / f:.3f} {unit}"
    return f"{ns:.0f} ns"


def pick(row, *names):
    for n in names:
        if n in row and row[n] not in (None, ""):
            return row[n]
    return None


def summarise_dispatches(rows):
    """rows: dicts with name, begin, end (ns) and optional grid, wg, vgpr, sgpr, lds, scratch."""
    rows = [r for r in rows if r["begin"] is not None and r["end"] is not None]
    if not rows:
        print("no dispatch timestamps")
        return
    by = defaultdict(lambda: {"n": 0, "t": 0.0, "cfg": defaultdict(int), "first": None})
    for r in rows:
        k = by[r["name"]]
        k["n"] += 1
        k["t"] += r["end"] - r["begin"]
        if k["first"] is None or r["begin"] < k["first"][0]:
            k["first"] = (r["begin"], r["end"] - r["begin"])
        k["cfg"][(r.get("grid"), r.get("wg"), r.get("vgpr"), r.get("sgpr"), r.get("lds"), r.get("scratch"))] += 1
    total = sum(k["t"] for k in by.values())
    print(f"{len(rows)} dispatches, {len(by)} kernels, kernel time {fmt_ns(total)}")
    if total <= 0:
        print("  (all durations are zero or negative: timestamps unusable)")
    for nm, k in sorted(by.items(), key=lambda kv: -kv[1]["t"])[:10]:
        cfg = max(k["cfg"], key=k["cfg"].get)
        grid, wg, vgpr, sgpr, lds, scr = cfg
        share = 100 * k["t"] / total if total > 0 else 0
        short = nm if len(nm) < 90 else nm[:87] + "..."
        print(f"  {share:5.1f}%  {fmt_ns(k['t']):>11}  n={k['n']:<6} avg {fmt_ns(k['t'] / k['n']):>10}  {short}")
        if k["n"] >= 2:
            first = k["first"][1]
            print(f"         first dispatch {fmt_ns(first)}, the other {k['n'] - 1} average {fmt_ns((k['t'] - first) / (k['n'] - 1))}")
        extra = ""
        wgv = fnum(wg)
        if wgv:
            lanes = int(wgv) % 64 or 64
            extra = f"  waves/WG {-(-int(wgv) // 64)}, last-wave lanes {lanes}/64"
            g = fnum(grid)
            if g:
                extra += f", workgroups {int(g // wgv) if g >= wgv else g}"
        print(f"         grid {grid} wg {wg}{extra}  vgpr {vgpr} sgpr {sgpr} lds {lds} scratch {scr}")
    spans = sorted((r["begin"], r["end"]) for r in rows)
    busy, cur_s, cur_e, gaps = 0.0, spans[0][0], spans[0][1], []
    for s, e in spans[1:]:
        if s > cur_e:
            busy += cur_e - cur_s
            gaps.append(s - cur_e)
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    busy += cur_e - cur_s
    span = spans[-1][1] - spans[0][0]
    if span > 0:
        print(f"GPU span {fmt_ns(span)}, busy {100 * busy / span:.1f}%, idle {fmt_ns(span - busy)} in {len(gaps)} gaps"
              + (f", largest {fmt_ns(max(gaps))}" if gaps else ""))
    short = sum(1 for r in rows if r["end"] - r["begin"] < 10_000)
    print(f"dispatches under 10 us: {short} of {len(rows)}")


def read_csv(path):
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = text.splitlines()
    header = next(csv.reader([lines[0]]))
    rows = []
    for line in lines[1:]:
        vals = next(csv.reader([line]), [])
        if len(vals) > len(header):
            # unquoted kernel names containing commas (old rocprof): glue the excess into the name column
            name_i = next((i for i, h in enumerate(header) if h in ("KernelName", "Name", "Kernel_Name")), None)
            if name_i is not None:
                extra = len(vals) - len(header)
                vals = vals[:name_i] + [",".join(vals[name_i:name_i + extra + 1])] + vals[name_i + extra + 1:]
        rows.append(dict(zip(header, vals)))
    return header, rows


def csv_file(path):
    header, rows = read_csv(path)
    hs = set(header)
    print(f"CSV with {len(rows)} rows, {len(header)} columns")
    if {"Name", "Calls", "TotalDurationNs"} <= hs:            # --stats / hip_stats / copy_stats / kernel_stats
        total = sum(fnum(r["TotalDurationNs"]) or 0 for r in rows)
        print(f"stats table, total {fmt_ns(total)}")
        for r in rows[:10]:
            print(f"  {fnum(r.get('Percentage')) or 0:6.2f}%  {fmt_ns(fnum(r['TotalDurationNs']) or 0):>11}  "
                  f"calls {r['Calls']:<7} avg {fmt_ns(fnum(r.get('AverageNs')) or 0):>10}  {r['Name'][:90]}")
        return
    if "Count" in hs and any(h.startswith("Sum(ns)") for h in header):   # pmc_kernel_top
        for r in rows:
            print(f"  {r.get('Pct')}%  sum {fmt_ns(fnum(r.get('Sum(ns)')) or 0)}  n={r.get('Count')}  {pick(r, 'KernelName', 'Kernel_Name')[:90]}")
        return
    if "numCU" in hs or "gpu_soc" in hs or "gpu_arch" in hs:    # sysinfo
        r = rows[0] if rows else {}
        keys = [k for k in ("gpu_model", "gpu_soc", "gpu_arch", "numCU", "cu_per_gpu", "numSE", "hbmBW", "max_sclk",
                            "compute_partition", "memory_partition", "rocm_version", "host_rocmver") if k in r]
        print("  " + "  ".join(f"{k}={r[k]}" for k in keys))
        return
    if any("Peak" in h or h.startswith("HBMBw") or h.endswith("Bw") for h in header) and len(rows) <= 2:
        print("  roofline peaks: " + "  ".join(f"{h}={rows[0][h]}" for h in header[:14]))
        return
    if "Counter_Name" in hs and "Counter_Value" in hs:         # rocprofv3 counter_collection
        agg = defaultdict(lambda: defaultdict(float))
        for r in rows:
            agg[r.get("Kernel_Name", "?")][r["Counter_Name"]] += fnum(r["Counter_Value"]) or 0
        for k, cs in list(agg.items())[:10]:
            print(f"  {k[:70]}: " + ", ".join(f"{c}={v:.4g}" for c, v in cs.items()))
        return
    if "Agent_Type" in hs or ("Node_Id" in hs and "Name" in hs):  # agent_info
        for r in rows:
            print(f"  {r.get('Agent_Type', r.get('Type'))} {r.get('Name')} {r.get('Marketing_Name', '')} CUs {r.get('Cu_Count', r.get('cu_count', ''))}")
        return
    name_col = next((h for h in ("KernelName", "Kernel_Name", "Name") if h in hs), None)
    begin = next((h for h in ("BeginNs", "Start_Timestamp") if h in hs), None)
    end = next((h for h in ("EndNs", "End_Timestamp") if h in hs), None)
    disp = []
    for r in rows:
        b, e = fnum(r.get(begin)) if begin else None, fnum(r.get(end)) if end else None
        disp.append({"name": r.get(name_col, "?") if name_col else "?", "begin": b, "end": e,
                     "grid": pick(r, "grd", "Grid_Size", "Grid_Size_X", "GRD"),
                     "wg": pick(r, "wgr", "Workgroup_Size", "Workgroup_Size_X", "WGR"),
                     "vgpr": pick(r, "arch_vgpr", "vgpr", "Arch_VGPR", "VGPR"),
                     "sgpr": pick(r, "sgpr", "SGPR"), "lds": pick(r, "lds", "LDS_Per_Workgroup", "LDS"),
                     "scratch": pick(r, "scr", "Scratch_Per_Workitem", "SCR")})
    if begin and end:
        summarise_dispatches(disp)
    else:
        print(f"no timestamps; kernels: {len(set(d['name'] for d in disp))}")
        by = defaultdict(int)
        for d in disp:
            by[d["name"]] += 1
        for k, n in sorted(by.items(), key=lambda kv: -kv[1])[:8]:
            print(f"  n={n:<5} {k[:90]}")
    counters = [h for h in header if h.isupper() or h.startswith(("SQ_", "TCC_", "TCP_", "GRBM_", "TA_"))
                or h in ("FETCH_SIZE", "WRITE_SIZE", "VALUInsts", "SALUInsts", "VFetchInsts", "LDSBankConflict", "Wavefronts")]
    counters = [c for c in counters if c not in ("KernelName", "GPU_ID")][:10]
    if counters and name_col:
        agg = defaultdict(lambda: defaultdict(float))
        for r in rows:
            for c in counters:
                agg[r.get(name_col, "?")][c] += fnum(r.get(c)) or 0
        print("counters (summed per kernel, first 10 columns):")
        for k, cs in list(agg.items())[:6]:
            print(f"  {k[:60]}: " + ", ".join(f"{c}={v:.4g}" for c, v in cs.items()))


def db_file(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    names = [r[0] for r in con.execute("select name from sqlite_master where type in ('table','view')")]
    print("tables/views: " + ", ".join(names[:25]))
    if "kernels" in names:                                  # rocpd (rocprofv3)
        cols = [r[1] for r in con.execute("pragma table_info(kernels)")]
        rows = []
        for row in con.execute("select * from kernels"):
            r = dict(zip(cols, row))
            rows.append({"name": r.get("name") or r.get("kernel_name") or "?", "begin": r.get("start"), "end": r.get("end"),
                         "grid": r.get("grid_size") or r.get("grid_size_x"), "wg": r.get("workgroup_size") or r.get("workgroup_size_x"),
                         "vgpr": r.get("arch_vgpr_count") or r.get("vgpr_count"), "sgpr": r.get("sgpr_count"),
                         "lds": r.get("lds_size") or r.get("group_segment_size"), "scratch": r.get("scratch_size") or r.get("private_segment_size")})
        summarise_dispatches(rows)
        if "memory_copies" in names:
            n, t = con.execute("select count(*), sum(end-start) from memory_copies").fetchone()
            print(f"memory copies: {n}, {fmt_ns(t or 0)}")
        return
    if "KERN" in names or "A" in names:                       # rocprof v1 SQLite
        t = "KERN" if "KERN" in names else "A"
        cols = [r[1] for r in con.execute(f"pragma table_info({t})")]
        rows = []
        for row in con.execute(f"select * from {t}"):
            r = dict(zip(cols, row))
            rows.append({"name": str(pick(r, "KernelName", "Name") or "?"), "begin": fnum(pick(r, "BeginNs")),
                         "end": fnum(pick(r, "EndNs")), "grid": pick(r, "grd"), "wg": pick(r, "wgr"),
                         "vgpr": pick(r, "arch_vgpr", "vgpr"), "sgpr": pick(r, "sgpr"), "lds": pick(r, "lds"),
                         "scratch": pick(r, "scr")})
        summarise_dispatches(rows)
    for t in ("HIP", "COPY", "OPS", "rocTX"):
        if t in names:
            cols = [r[1] for r in con.execute(f"pragma table_info({t})")]
            n = con.execute(f"select count(*) from {t}").fetchone()[0]
            line = f"{t}: {n} rows"
            if "BeginNs" in cols and "EndNs" in cols and "Name" in cols:
                top = con.execute(f"select Name, count(*), sum(EndNs-BeginNs) s from {t} group by Name order by s desc limit 5").fetchall()
                line += "; " + "; ".join(f"{nm} n={c} {fmt_ns(s or 0)}" for nm, c, s in top)
            print(line)


def json_file(path):
    data = json.load(open(path, encoding="utf-8", errors="replace"))
    ev = data.get("traceEvents", data) if isinstance(data, dict) else data
    by = defaultdict(lambda: [0, 0.0])
    for e in ev:
        if isinstance(e, dict) and e.get("ph") == "X":
            d = fnum(e.get("dur")) or 0
            by[(e.get("pid"), e.get("name"))][0] += 1
            by[(e.get("pid"), e.get("name"))][1] += d
    print(f"chrome trace: {sum(v[0] for v in by.values())} complete events")
    for (pid, nm), (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"  pid {pid}: {str(nm)[:70]:<70} n={n:<5} {t / 1e3:.3f} ms (dur in us)")


def main(path):
    if path.endswith(".db"):
        db_file(path)
    elif path.endswith(".json"):
        json_file(path)
    elif path.endswith(".txt"):
        print(open(path, encoding="utf-8", errors="replace").read()[:600])
    else:
        csv_file(path)


if __name__ == "__main__":
    main(sys.argv[1])
