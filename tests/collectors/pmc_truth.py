#!/usr/bin/env python3
"""The test's own reading of a rocprof per-dispatch CSV (v1 results/counter CSVs, rocprof-compute
pmc_perf.csv and friends), with Python's csv module and rocprof-compute's documented formulas
(analysis_configs/gfx942/0200_system-speed-of-light.yaml). Prints JSON: per kernel the dispatch
count, summed End - Start (ns), the earliest-starting dispatch's duration and its excess over the
others' mean (two dispatches or more), and where the counters are there the L2 hit rate, the LDS bank
conflict share and, with a sysinfo.csv beside the file, the achieved wavefront occupancy."""
import csv
import json
import os
import sys


def number(text):
    return float(text.strip())


def main(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    header = [h.strip() for h in rows[0]]
    if "Counter_Name" in header:  # rocprofv3 counter collection: one row per dispatch and counter
        return long_format(header, rows[1:])
    name_col = header.index("KernelName") if "KernelName" in header else header.index("Kernel_Name")
    begin = next((header.index(c) for c in ("BeginNs", "Start_Timestamp") if c in header), None)
    end = next((header.index(c) for c in ("EndNs", "End_Timestamp") if c in header), None)
    level = header.index("SQ_LEVEL_WAVES") if "SQ_LEVEL_WAVES" in header else None
    accum = level + 1 if level is not None and header[level + 1].startswith("SQ_ACCUM_PREV_HIRES") else None
    sysinfo = {}
    sysinfo_path = os.path.join(os.path.dirname(path), "sysinfo.csv")
    if os.path.exists(sysinfo_path):
        with open(sysinfo_path, newline="") as f:
            r = list(csv.reader(f))
            sysinfo = dict(zip([h.strip() for h in r[0]], [v.strip() for v in r[1]]))
    cus = float(sysinfo.get("cu_per_gpu") or sysinfo.get("numCU") or 0)
    waves = float(sysinfo.get("max_waves_per_cu") or sysinfo.get("maxWavesPerCU") or 0)
    xcds = float(sysinfo.get("num_xcd") or 1)
    kernels = {}
    for row in rows[1:]:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        extra = len(row) - len(header)
        if extra > 0:  # unquoted names holding commas
            row = row[:name_col] + [",".join(row[name_col:name_col + extra + 1])] + row[name_col + extra + 1:]
        k = kernels.setdefault(row[name_col].strip(), {"dispatches": 0, "duration_ns": 0.0, "sums": {}, "acc": 0.0, "gui": 0.0,
                                                       "timed": []})
        k["dispatches"] += 1
        if begin is not None and end is not None and number(row[end]) >= number(row[begin]):
            k["duration_ns"] += number(row[end]) - number(row[begin])
            k["timed"].append((number(row[begin]), number(row[end]) - number(row[begin])))
        for c in ("TCC_HIT_sum", "TCC_MISS_sum", "SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE", "GRBM_GUI_ACTIVE",
                  "SQ_ACTIVE_INST_VALU", "SQ_ACTIVE_INST_SCA", "SQ_VALU_MFMA_BUSY_CYCLES", "TCC_EA_RDREQ_sum",
                  "TCC_EA_RDREQ_32B_sum", "TCC_EA_WRREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA0_RDREQ_sum",
                  "TCC_EA0_RDREQ_32B_sum", "TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum", "TCC_BUBBLE_sum"):
            if c in header:
                k["sums"][c] = k["sums"].get(c, 0.0) + number(row[header.index(c)])
        if accum is not None and "GRBM_GUI_ACTIVE" in header:
            k["acc"] += number(row[accum])
            k["gui"] += number(row[header.index("GRBM_GUI_ACTIVE")]) / xcds
    out = {}
    for name, k in kernels.items():
        o = {"dispatches": k["dispatches"], "duration_ns": k["duration_ns"]}
        if len(k["timed"]) >= 2:
            first = min(k["timed"])[1]
            o["first_launch_duration"] = first
            o["first_launch_excess"] = first - (sum(d for _, d in k["timed"]) - first) / (len(k["timed"]) - 1)
        s = k["sums"]
        if "TCC_HIT_sum" in s and s["TCC_HIT_sum"] + s["TCC_MISS_sum"] > 0:
            o["l2_hit_rate"] = 100 * s["TCC_HIT_sum"] / (s["TCC_HIT_sum"] + s["TCC_MISS_sum"])
        if "SQ_LDS_IDX_ACTIVE" in s and s["SQ_LDS_IDX_ACTIVE"] > 0:
            o["lds_conflict_pct"] = 100 * s["SQ_LDS_BANK_CONFLICT"] / s["SQ_LDS_IDX_ACTIVE"]
        if k["gui"] > 0 and cus > 0 and waves > 0:
            o["occupancy_achieved"] = 100 * (k["acc"] / k["gui"]) / (waves * cus)
        # System Speed-of-Light: the busiest compute pipe, and L2-Fabric bytes against hbm_bw.
        gui = s.get("GRBM_GUI_ACTIVE", 0)
        if sysinfo and gui > 0 and cus > 0:
            cu_cycles = gui / xcds * cus
            pipes = [100 * s[c] / cu_cycles for c in ("SQ_ACTIVE_INST_VALU", "SQ_ACTIVE_INST_SCA") if c in s]
            if "SQ_VALU_MFMA_BUSY_CYCLES" in s:
                pipes.append(100 * s["SQ_VALU_MFMA_BUSY_CYCLES"] / (cu_cycles * 4))
            if pipes:
                o["sm_throughput"] = max(pipes)
        hbm = float(sysinfo.get("hbm_bw") or sysinfo.get("hbmBW") or 0)
        arch = sysinfo.get("gpu_arch") or sysinfo.get("gpu_soc")
        nbytes = None
        if arch == "gfx90a" and "TCC_EA_RDREQ_sum" in s:
            nbytes = (32 * s["TCC_EA_RDREQ_32B_sum"] + 64 * (s["TCC_EA_RDREQ_sum"] - s["TCC_EA_RDREQ_32B_sum"])
                      + 64 * s["TCC_EA_WRREQ_64B_sum"] + 32 * (s["TCC_EA_WRREQ_sum"] - s["TCC_EA_WRREQ_64B_sum"]))
        elif arch == "gfx942" and "TCC_EA0_RDREQ_sum" in s:
            nbytes = (128 * s["TCC_BUBBLE_sum"] + 64 * (s["TCC_EA0_RDREQ_sum"] - s["TCC_BUBBLE_sum"] - s["TCC_EA0_RDREQ_32B_sum"])
                      + 32 * s["TCC_EA0_RDREQ_32B_sum"] + 64 * s["TCC_EA0_WRREQ_64B_sum"]
                      + 32 * (s["TCC_EA0_WRREQ_sum"] - s["TCC_EA0_WRREQ_64B_sum"]))
        if nbytes is not None and hbm > 0 and k["duration_ns"] > 0:
            o["memory_throughput"] = 100 * (nbytes / k["duration_ns"]) / hbm
        out[name] = o
    json.dump(out, sys.stdout)


def long_format(header, rows):
    name, disp = header.index("Kernel_Name"), header.index("Dispatch_Id")
    cname, cvalue = header.index("Counter_Name"), header.index("Counter_Value")
    kernels = {}
    for row in rows:
        if not row:
            continue
        k = kernels.setdefault(row[name], {"ids": set(), "counters": {}})
        k["ids"].add(row[disp])
        k["counters"][row[cname]] = k["counters"].get(row[cname], 0.0) + number(row[cvalue])
    json.dump({n: {"dispatches": len(k["ids"]), "duration_ns": 0.0, "counters": k["counters"]} for n, k in kernels.items()},
              sys.stdout)


main(sys.argv[1])
