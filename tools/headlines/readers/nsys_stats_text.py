#!/usr/bin/env python3
"""Summarise `nsys stats` / `nsys profile --stats=true` console text, wherever it sits (a log,
a Markdown file, Python comments).

usage: nsys_stats_text.py FILE

Finds each summary table (2020-era "CUDA Kernel Statistics:" titles and 2021+ "** ... (name):"
or "Executing 'name' stats report" titles), prints its top rows, and compares total kernel time
with memcpy time and with the CUDA API time spent in synchronisation and allocation.
Standard library only.
"""
import re
import sys

TITLE_RE = re.compile(r"(?:\*\* (.+?) \((\w+)\):|Executing '(\w+)' stats report|^\s*#?\s*(CUDA [A-Za-z /]+Statistics[^:]*|NVTX Push-Pop Range Statistics|Operating System Runtime API Statistics)[: ]*$)")
NUM_RE = re.compile(r"^-?[\d,]+(\.\d+)?%?$")


def parse(lines):
    tables, title, header, rows = [], None, None, None
    for raw in lines:
        line = raw.rstrip("\n")
        body = re.sub(r"^\s*#\s?", "", line)      # tables pasted as Python/shell comments
        body = body.replace("\u2502", " ").replace("|", " ")
        m = TITLE_RE.search(body)
        if m:
            title = m.group(2) or m.group(3) or m.group(4) or m.group(1)
            header, rows = None, None
            continue
        if title and header is None and "Time" in body and ("Name" in body or "Operation" in body or "Range" in body):
            header = re.split(r"\s{2,}", body.strip())
            rows = []
            tables.append((title, header, rows))
            continue
        if header is not None:
            toks = body.split()
            if not toks or set(body.strip()) <= set("-+= "):
                if rows:
                    header = None   # blank line after rows ends the table
                continue
            nums = []
            for t in toks:
                if NUM_RE.match(t) and len(nums) < len(header) - 1:
                    nums.append(float(t.rstrip("%").replace(",", "")))
                else:
                    break
            if len(nums) >= 3:
                rows.append((nums, " ".join(toks[len(nums):])))
            elif rows:
                header = None
    return tables


def col(header, rows, *names):
    for i, h in enumerate(header):
        if any(h.startswith(n) for n in names) and i < len(rows[0][0]):
            return i
    return None


def main(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    tables = parse(text.splitlines())
    print(f"{len(tables)} stats tables")
    kern = mem = 0.0
    for title, header, rows in tables:
        if not rows:
            print(f"\n[{title}] (no rows)")
            continue
        ti = col(header, rows, "Total Time", "Time (ns)", "Time(ns)")
        n_i = col(header, rows, "Instances", "Num Calls", "Calls", "Count", "Operations")
        unit = "ns" if ti is not None and "ns" in header[ti] else "?"
        total = sum(r[0][ti] for r in rows) if ti is not None else 0
        print(f"\n[{title}] {len(rows)} rows, total {total / 1e6:.3f} ms ({unit})")
        for nums, name in rows[:6]:
            pct = nums[0]
            t = nums[ti] if ti is not None else 0
            n = int(nums[n_i]) if n_i is not None else "?"
            avg = t / n if isinstance(n, int) and n else 0
            print(f"  {pct:5.1f}%  {t / 1e6:12.3f} ms  n={n:<8} avg {avg / 1e3:10.1f} us  {name[:90]}")
        low = title.lower()
        if "kern" in low and "kernexec" not in low:
            kern += total
        if ("mem_time" in low or "memtime" in low or "memory time" in low or "memory operation" in low) and "size" not in low:
            mem += sum(r[0][ti] for r in rows if "memcpy" in r[1].lower()) if ti is not None else 0
        if "api" in low and ti is not None:
            for key in ("Synchronize", "cudaMalloc", "cudaFree", "cudaMemcpy", "cudaLaunchKernel"):
                s = sum(r[0][ti] for r in rows if key in r[1])
                if s:
                    print(f"    API {key}*: {s / 1e6:.3f} ms")
    if kern:
        print(f"\nkernel time {kern / 1e6:.3f} ms, memcpy time {mem / 1e6:.3f} ms, ratio memcpy/kernel {mem / kern:.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
