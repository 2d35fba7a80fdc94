#!/usr/bin/env python3
"""Summarise Nsight Compute output: default text (sections), `--csv` details pages, and
`--print-summary per-gpu/per-kernel` tables.

usage: ncu_text.py FILE

For every profiled launch: name, grid x block, lanes in the last warp, duration, compute and
memory speed-of-light %, DRAM %, registers, shared memory, theoretical vs achieved occupancy,
the top warp stall, and the rule lines (OPT/WRN) with their estimated speedups.  Launches of the
same kernel are grouped.  Standard library only.
"""
import csv
import io
import re
import sys
from collections import OrderedDict

KERNEL_RE = re.compile(r"^\s{0,4}(\S.*?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), (?:Context|Device)")
# 2019-2021 releases print no launch shape: "  vadd(float const *,...), 2022-Jun-02 19:22:05, Context 1, Stream 7"
OLD_KERNEL_RE = re.compile(r"^\s{0,4}(\S.*?), \d{4}-\w{3}-\d{2} [\d:]+, Context \d+, Stream \d+")
ROW_RE = re.compile(r"^\s{4,}(\S.*?)\s{2,}(\S+)?\s{2,}(\S+)\s*$")
WANT = {
    "Duration": "dur", "Compute (SM) Throughput": "sm%", "SM Throughput": "sm%",
    "Memory Throughput": "mem%", "DRAM Throughput": "dram%", "Registers Per Thread": "regs",
    "Theoretical Occupancy": "theo%", "Achieved Occupancy": "ach%", "Block Size": "block",
    "Grid Size": "grid", "Static Shared Memory Per Block": "smem_s",
    "Dynamic Shared Memory Per Block": "smem_d", "Warp Cycles Per Issued Instruction": "cpi",
    "Executed Ipc Active": "ipc", "L1/TEX Hit Rate": "l1hit", "L2 Hit Rate": "l2hit",
    "Memory [%]": "mem%", "SOL FB": "dram%", "Elapsed Cycles": "cycles",
}


def parse_text(lines):
    launches, cur = [], None
    for raw in lines:
        line = raw.rstrip("\n")
        m = KERNEL_RE.match(line)
        if m:
            g = tuple(int(x) for x in m.groups()[1:4])
            b = tuple(int(x) for x in m.groups()[4:7])
            cur = {"name": m.group(1).strip(), "grid": g, "block": b, "m": {}, "rules": [], "unit": {}, "raw": {}}
            launches.append(cur)
            continue
        m = OLD_KERNEL_RE.match(line)
        if m:
            cur = {"name": m.group(1).strip(), "grid": "?", "block": "?", "m": {}, "rules": [], "unit": {}, "raw": {}}
            launches.append(cur)
            continue
        if cur is None:
            continue
        s = line.strip()
        if s.startswith(("OPT", "WRN")):
            cur["rules"].append(s)
        elif cur["rules"] and s and not s.startswith(("---", "Section", "INF", "Metric")) and line.startswith(" " * 10) \
                and not ROW_RE.match(line):
            cur["rules"][-1] += " " + s
        mm = ROW_RE.match(line)
        if mm and mm.group(1) not in ("Metric Name",):
            cur["raw"].setdefault(mm.group(1), f"{mm.group(3)} {mm.group(2) or ''}".strip())
        if mm and mm.group(1) in WANT:
            key = WANT[mm.group(1)]
            cur["m"].setdefault(key, mm.group(3))
            cur["unit"].setdefault(key, mm.group(2) or "")
        elif mm and mm.group(1).startswith("Stall") is False and "Stall" in mm.group(1):
            pass
    return launches


def parse_csv(text):
    """`ncu --csv` details page: one row per metric."""
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    launches = OrderedDict()
    for r in rows:
        key = r.get("ID")
        L = launches.setdefault(key, {"name": r.get("Kernel Name", "?"), "m": {}, "unit": {}, "rules": [],
                                      "grid": r.get("Grid Size", ""), "block": r.get("Block Size", "")})
        name = r.get("Metric Name", "")
        if name in WANT:
            L["m"].setdefault(WANT[name], r.get("Metric Value", ""))
            L["unit"].setdefault(WANT[name], r.get("Metric Unit", ""))
        if r.get("Rule Name") and r.get("Rule Type") in ("OPT", "WRN"):
            L["rules"].append(f"{r.get('Rule Type')} {r.get('Rule Description', '')[:200]} "
                              f"[est. speedup {r.get('Estimated Speedup', '?')}]")
    return list(launches.values())


def f(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return None


def main(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    if '"ID","Process ID"' in text:
        launches = parse_csv(text)
        print(f"ncu --csv details: {len(launches)} launches")
    else:
        launches = parse_text(text.splitlines())
        print(f"ncu text: {len(launches)} launches")
        if not launches and ("Minimum" in text and "Maximum" in text):
            print("summary table (--print-summary): metric rows with Minimum/Maximum/Average")
            for line in text.splitlines():
                if re.search(r"(duration|throughput|occupancy|registers|launch__)", line, re.I):
                    print("  " + line.strip()[:150])
            return
    for m in re.finditer(r"==(ERROR|WARNING)== (.*)", text):
        print(f"{m.group(1)}: {m.group(2)[:140]}")
    groups = OrderedDict()
    for L in launches:
        groups.setdefault(L["name"], []).append(L)
    for name, Ls in groups.items():
        print(f"\n{name[:110]}  x{len(Ls)}")
        for L in Ls[:4]:
            m, u = L["m"], L["unit"]
            g, b = L["grid"], L["block"]
            if not m and L.get("raw"):
                print("  raw metrics: " + "; ".join(f"{k} = {v}" for k, v in list(L["raw"].items())[:8]))
            if m.get("grid") and not isinstance(b, tuple):
                g, b = m.get("grid"), m.get("block")
            if isinstance(b, tuple):
                threads = b[0] * b[1] * b[2]
                blocks = g[0] * g[1] * g[2]
                shape = f"grid {g}={blocks} block {b}={threads} last-warp lanes {threads % 32 or 32}/32"
            else:
                shape = f"grid {g} block {b}"
            print(f"  {shape}")
            print(f"  duration {m.get('dur', '?')} {u.get('dur', '')}  SM {m.get('sm%', '?')}%  memory {m.get('mem%', '?')}%  "
                  f"DRAM {m.get('dram%', '?')}%  regs {m.get('regs', '?')}  smem {m.get('smem_s', '?')}+{m.get('smem_d', '?')}  "
                  f"occupancy theo {m.get('theo%', '?')}% achieved {m.get('ach%', '?')}%  "
                  f"IPC {m.get('ipc', '?')}  cycles/issue {m.get('cpi', '?')}")
        rules = OrderedDict()
        for L in Ls:
            for r in L["rules"]:
                rules.setdefault(r[:230], None)
        for r in list(rules)[:6]:
            print(f"    {r}")


if __name__ == "__main__":
    main(sys.argv[1])
