#!/usr/bin/env python3
"""Independent counter for the profiler-report conformance set.

For every file listed in manifest.tsv this script recognises the report's shape
from its content (magic bytes, header rows, table titles; never the file name)
and counts:

  launches        kernel executions / profiled kernel launches
  kernels         distinct kernel names
  kernel_time_ns  total kernel time in ns, where the file states durations

Files without kernel executions get a verdict instead (api-only, cpu-only,
failed-profile: <text>, progress-only: N launches listed, ...).

Python 3 standard library only.  Usage:

    python3 tools/conformance/count.py --root /work/ext/conformance \
        > tools/conformance/expected.tsv

Output columns: file, shape, launches, kernels, kernel_time_ns, verdict_note.
kernel_time_ns is empty where the file gives no per-launch duration.
"""

import argparse
import csv
import gzip
import io
import json
import os
import re
import sqlite3
import sys

csv.field_size_limit(1 << 30)

UNIT_NS = {
    "ns": 1, "nsecond": 1, "nsec": 1,
    "us": 1000, "usecond": 1000, "usec": 1000,
    "ms": 1000000, "msecond": 1000000, "msec": 1000000,
    "s": 1000000000, "second": 1000000000, "sec": 1000000000,
}


class Result:
    def __init__(self, shape, launches=0, kernels=0, time_ns=None, note=""):
        self.shape = shape
        self.launches = launches
        self.kernels = kernels
        self.time_ns = time_ns
        self.note = note

    def row(self, name):
        t = "" if self.time_ns is None else str(int(round(self.time_ns)))
        note = self.note.replace("\t", " ").replace("\n", " ")
        return "\t".join([name, self.shape, str(self.launches), str(self.kernels), t, note])


# ---------------------------------------------------------------- helpers

def decode_text(data):
    """Bytes to str: honour UTF-16/UTF-8 BOMs, fold CRLF and CR to LF."""
    if data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff"):
        text = data.decode("utf-16")
    elif data.startswith(b"\xef\xbb\xbf"):
        text = data[3:].decode("utf-8", errors="replace")
    elif len(data) > 3 and data[1:2] == b"\x00" and data[3:4] == b"\x00":
        text = data.decode("utf-16-le", errors="replace")  # UTF-16 without BOM
    else:
        text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def digits(s):
    """Integer from a cell that may carry thousands separators (',' '.' or ' ')."""
    d = re.sub(r"[^0-9]", "", s or "")
    return int(d) if d else None


def number(s):
    """Float from a cell with ',' thousands separators (e.g. '8,992' or '1,234.5')."""
    s = (s or "").strip().replace(",", "")
    try:
        return float(s)
    except ValueError:
        return None


def strip_quotes(s):
    s = (s or "").strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    return s


# ---------------------------------------------------------------- SQLite shapes

def count_nsys_sqlite(con, tables):
    """Nsight Systems SQLite export: CUPTI_ACTIVITY_KIND_KERNEL rows are launches."""
    version = ""
    if "META_DATA_EXPORT" in tables:
        try:
            meta = dict(con.execute("SELECT name, value FROM META_DATA_EXPORT").fetchall())
            version = meta.get("EXPORT_SCHEMA_VERSION", "")
        except sqlite3.Error:
            pass
    schema = "schema %s" % version if version else "no META_DATA_EXPORT (old schema, %d tables)" % len(tables)
    runtime = 0
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        runtime = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    memcpy = 0
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        memcpy = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()[0]
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
        name_col = next((c for c in ("demangledName", "shortName", "name") if c in cols), None)
        rows = con.execute('SELECT start, "end", %s FROM CUPTI_ACTIVITY_KIND_KERNEL' % name_col).fetchall()
        if rows:
            strings = {}
            if "StringIds" in tables:
                strings = dict(con.execute("SELECT id, value FROM StringIds").fetchall())
            names = {strings.get(r[2], r[2]) for r in rows}
            total = sum(r[1] - r[0] for r in rows)
            note = "%s; %d memcpy; %d runtime calls" % (schema, memcpy, runtime)
            return Result("nsys-sqlite", len(rows), len(names), total, note)
    if runtime:
        return Result("nsys-sqlite", 0, 0, None,
                      "api-only: %d CUDA runtime calls, no kernel rows (%s; %d memcpy)" % (runtime, schema, memcpy))
    return Result("nsys-sqlite", 0, 0, None, "no-gpu-activity: no CUDA activity tables (%s)" % schema)


def count_rocprof_v1_db(con, tables):
    """rocprof v1 results.db: KERN rows (with BeginNs/EndNs) or, when KERN is empty, OPS rows."""
    def cols(t):
        return [r[1] for r in con.execute('PRAGMA table_info("%s")' % t)]
    for table, name_col in (("KERN", "KernelName"), ("OPS", "Name")):
        if table in tables and "BeginNs" in cols(table):
            rows = con.execute('SELECT BeginNs, EndNs, "%s" FROM "%s"' % (name_col, table)).fetchall()
            if rows:
                names = {strip_quotes(str(r[2])) for r in rows}
                total = sum(int(r[1]) - int(r[0]) for r in rows)
                return Result("rocprof-v1-db", len(rows), len(names), total, "kernels from %s table" % table)
    hip = 0
    if "HIP" in tables:
        hip = con.execute('SELECT count(*) FROM "HIP"').fetchone()[0]
    if hip:
        return Result("rocprof-v1-db", 0, 0, None, "api-only: %d HIP API rows" % hip)
    return Result("rocprof-v1-db", 0, 0, None, "no-dispatches")


def count_rocpd(con, tables):
    """rocprofv3 rocpd database: one row per dispatch in the kernels view."""
    view = "kernels" if "kernels" in tables else None
    if view is None:
        return Result("rocpd-sqlite", 0, 0, None, "no kernels view")
    cols = [r[1] for r in con.execute('PRAGMA table_info("%s")' % view)]
    name_col = next((c for c in ("kernel_name", "name", "KernelName") if c in cols), None)
    start = next((c for c in ("start", "start_timestamp") if c in cols), None)
    end = next((c for c in ("end", "end_timestamp") if c in cols), None)
    rows = con.execute('SELECT "%s", "%s", "%s" FROM "%s"' % (name_col, start, end, view)).fetchall()
    if not rows:
        return Result("rocpd-sqlite", 0, 0, None, "no-dispatches")
    return Result("rocpd-sqlite", len(rows), len({r[0] for r in rows}), sum(r[2] - r[1] for r in rows), "")


def count_sqlite(path):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}
        if any(t.startswith(("CUPTI_", "TARGET_INFO", "META_DATA", "NVTX_")) for t in tables) or "StringIds" in tables:
            return count_nsys_sqlite(con, tables)
        if any(t.startswith("rocpd_") for t in tables):
            return count_rocpd(con, tables)
        if tables & {"KERN", "OPS", "HIP", "COPY"}:
            return count_rocprof_v1_db(con, tables)
        return Result("sqlite-unknown", 0, 0, None, "tables: " + ",".join(sorted(tables))[:200])
    finally:
        con.close()


# ---------------------------------------------------------------- JSON shapes

def count_kineto(doc):
    """PyTorch profiler / Kineto trace: X events with cat 'kernel' (or legacy 'Kernel')."""
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict)]
    devices = [d.get("name", "?") for d in doc.get("deviceProperties", []) or [] if isinstance(d, dict)]
    complete = [e for e in events if e.get("ph") == "X"]
    kernels = [e for e in complete if str(e.get("cat", "")).lower() == "kernel"]
    cats = {str(e.get("cat", "")).lower() for e in complete}
    dev = ("devices: " + ", ".join(sorted(set(devices)))) if devices else "no deviceProperties"
    if kernels:
        names = {e.get("name") for e in kernels}
        total_us = sum(float(e.get("dur", 0) or 0) for e in kernels)
        nccl = sum(1 for e in kernels if "nccl" in str(e.get("name", "")).lower())
        note = dev + ("; %d NCCL kernel launches" % nccl if nccl else "")
        return Result("kineto-json", len(kernels), len(names), total_us * 1000.0, note)
    if not complete:
        return Result("kineto-json", 0, 0, None, "empty-trace: no complete events (%s)" % dev)
    gpu_side = {"gpu_memcpy", "gpu_memset", "memcpy", "memset"}
    if cats & gpu_side:
        return Result("kineto-json", 0, 0, None, "no kernels: only GPU memcpy/memset activity (%s)" % dev)
    if cats & {"cuda_runtime", "cuda_driver", "runtime"}:
        return Result("kineto-json", 0, 0, None, "no-gpu-activity: runtime/driver calls but no GPU events (%s)" % dev)
    return Result("kineto-json", 0, 0, None, "cpu-only (%s)" % dev)


def count_autograd_legacy(events):
    """Pre-Kineto torch.autograd.profiler chrome trace: a bare JSON array."""
    complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    kernels = [e for e in complete if str(e.get("pid", "")).startswith("CUDA")]
    if kernels:
        total_us = sum(float(e.get("dur", 0) or 0) for e in kernels)
        return Result("autograd-legacy-json", len(kernels), len({e.get("name") for e in kernels}),
                      total_us * 1000.0, "")
    return Result("autograd-legacy-json", 0, 0, None,
                  "cpu-only: %d CPU events, no CUDA functions" % len(complete))


def count_rocprof_v1_json(doc):
    """rocprof v1 results.json: X events on the pids named GPU<n> are kernel dispatches."""
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict) and e]
    gpu_pids = {str(e.get("pid")) for e in events
                if e.get("ph") == "M" and e.get("name") == "process_name"
                and re.match(r"^GPU\d+$", str(e.get("args", {}).get("name", "")))}
    kernels = [e for e in events if e.get("ph") == "X" and str(e.get("pid")) in gpu_pids]
    if not kernels:
        return Result("rocprof-v1-json", 0, 0, None, "no-dispatches")
    total = 0
    for e in kernels:
        a = e.get("args", {})
        if "BeginNs" in a and "EndNs" in a:
            total += int(a["EndNs"]) - int(a["BeginNs"])
        elif "DurationNs" in a:
            total += int(a["DurationNs"])
        else:
            total += float(e.get("dur", 0)) * 1000.0
    names = {e.get("name") for e in kernels}
    return Result("rocprof-v1-json", len(kernels), len(names), total, "")


def count_json(text):
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return Result("json-invalid", 0, 0, None, "unparseable JSON: %s" % exc)
    if isinstance(doc, list):
        return count_autograd_legacy(doc)
    if isinstance(doc, dict) and "traceEvents" in doc:
        ev = doc["traceEvents"]
        rocprof = any(isinstance(e, dict) and isinstance(e.get("args"), dict) and "BeginNs" in e["args"]
                      for e in ev[:2000])
        if rocprof or "schemaVersion" not in doc and any(
                isinstance(e, dict) and e.get("name") == "process_name"
                and str(e.get("args", {}).get("name", "")).startswith("GPU") for e in ev[:50]):
            return count_rocprof_v1_json(doc)
        return count_kineto(doc)
    return Result("json-unknown", 0, 0, None, "JSON without traceEvents")


# ---------------------------------------------------------------- CSV shapes

def csv_rows(lines):
    return list(csv.reader(io.StringIO("\n".join(lines))))


def count_ncu_csv(lines, start):
    """ncu --csv: long layout (one row per metric) or wide layout (--page raw / metrics as columns)."""
    body = [l for l in lines[start:] if not l.startswith("==") and l.strip()]
    rows = csv_rows(body)
    header = [h.strip() for h in rows[0]]
    idx = {h: i for i, h in enumerate(header)}
    pid_i, id_i, name_i = idx.get("Process ID"), idx["ID"], idx["Kernel Name"]
    need = max(idx.get("Metric Value", 0), name_i, id_i)
    data = [r for r in rows[1:] if len(r) > need]  # rule columns may be missing on metric rows
    if "Metric Name" in idx:
        launches, durations = {}, {}
        mn, mu, mv = idx["Metric Name"], idx.get("Metric Unit"), idx["Metric Value"]
        for r in data:
            key = (r[pid_i] if pid_i is not None else "", r[id_i])
            launches.setdefault(key, r[name_i])
            if r[mn] in ("Duration", "gpu__time_duration.sum", "gpu__time_duration") and key not in durations:
                v = number(r[mv])
                unit = UNIT_NS.get((r[mu] if mu is not None else "ns").strip())
                if v is not None and unit:
                    durations[key] = v * unit
        layout = "long layout"
    else:
        units = None
        if data and not data[0][id_i].strip():  # units row of --page raw
            units, data = data[0], data[1:]
        launches, durations = {}, {}
        col = next((c for c in ("gpu__time_duration.sum", "Duration") if c in idx), None)
        for r in data:
            if not r[id_i].strip():
                continue
            key = (r[pid_i] if pid_i is not None else "", r[id_i])
            launches[key] = r[name_i]
            if col:
                v = number(r[idx[col]])
                u = UNIT_NS.get(units[idx[col]].strip(), None) if units else 1
                if v is not None and u:
                    durations[key] = v * u
        layout = "wide layout" + (" with units row" if units else "")
    n = len(launches)
    if n == 0:
        return Result("ncu-csv", 0, 0, None, "header only, no launches (%s)" % layout)
    time_ns = sum(durations.values()) if len(durations) == n else None
    note = layout + ("" if time_ns is not None else "; duration for %d of %d launches" % (len(durations), n))
    return Result("ncu-csv", n, len(set(launches.values())), time_ns, note)


def count_rocprof_stats(lines):
    """rocprof v1 *.stats.csv: Name,Calls,TotalDurationNs,... (kernel, HIP API or copy statistics)."""
    rows = csv_rows([l for l in lines if l.strip()])
    header = rows[0]
    data = [r for r in rows[1:] if len(r) >= 3]
    if not data:
        return Result("rocprof-v1-stats", 0, 0, None, "header only")
    api = [r for r in data if re.match(r"^(__)?(hip|hsa_|amd_comgr)", r[0])]
    copies = [r for r in data if r[0].startswith(("Copy", "Fill", "Marker"))]
    barriers = [r for r in data if r[0] == "<barrier packet>"]
    if len(api) == len(data):
        return Result("rocprof-v1-stats", 0, 0, None,
                      "api-only: %d HIP API calls in %d functions" % (sum(int(r[1]) for r in api), len(api)))
    if len(copies) == len(data):
        return Result("rocprof-v1-stats", 0, 0, None,
                      "copy-only: %d copies in %d kinds, no kernels" % (sum(int(r[1]) for r in copies), len(copies)))
    kern = [r for r in data if r not in api and r not in copies and r not in barriers]
    note = ""
    if barriers:
        note = "excluded <barrier packet>: %d calls, %d ns" % (sum(int(r[1]) for r in barriers),
                                                                sum(int(r[2]) for r in barriers))
    return Result("rocprof-v1-stats", sum(int(r[1]) for r in kern), len(kern),
                  sum(int(r[2]) for r in kern), note)


def count_rocm_dispatch_csv(lines, shape):
    """One row per kernel dispatch: rocprof v1 results.csv / -i pmc csv, rocprofv2/v3 kernel traces,
    rocprof-compute pmc_perf.csv.  Timestamps: BeginNs/EndNs or Start_Timestamp/End_Timestamp."""
    rows = csv_rows([l for l in lines if l.strip()])
    header = [h.strip() for h in rows[0]]
    idx = {h: i for i, h in enumerate(header)}
    data = [r for r in rows[1:] if len(r) == len(header)]
    name_i = idx.get("KernelName", idx.get("Kernel_Name"))
    b = idx.get("BeginNs", idx.get("Start_Timestamp"))
    e = idx.get("EndNs", idx.get("End_Timestamp"))
    if not data:
        return Result(shape, 0, 0, None, "no-dispatches: header only")
    names = {r[name_i] for r in data}
    total = None
    if b is not None and e is not None:
        try:
            total = sum(float(r[e]) - float(r[b]) for r in data)
        except ValueError:
            total = None
    note = "" if total is not None else "no timestamps (counter collection)"
    return Result(shape, len(data), len(names), total, note)


def count_rocprofv3_counter_collection(lines):
    """rocprofv3 counter_collection.csv, long layout: one row per dispatch per counter."""
    rows = csv_rows([l for l in lines if l.strip()])
    header = rows[0]
    idx = {h: i for i, h in enumerate(header)}
    dispatches = {}
    for r in rows[1:]:
        if len(r) == len(header):
            dispatches[r[idx["Dispatch_Id"]]] = r[idx["Kernel_Name"]]
    return Result("rocprofv3-counter-collection", len(dispatches), len(set(dispatches.values())), None,
                  "long layout: %d rows for %d dispatches; no timestamps" % (len(rows) - 1, len(dispatches)))


def count_rocprofv3_api_or_copy(lines, what):
    rows = [r for r in csv_rows([l for l in lines if l.strip()])[1:] if r]
    return Result("rocprofv3-" + what, 0, 0, None,
                  ("api-only: %d calls" if what == "api-trace" else "no kernels: %d copies") % len(rows))


def count_nsys_gputrace_csv(lines):
    """nsys stats --report gputrace --format csv: kernel rows have GrdX filled."""
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in lines if l.strip()))))
    kern = [r for r in rows if (r.get("GrdX") or "").strip()]
    if not kern:
        return Result("nsys-gputrace-csv", 0, 0, None, "no kernels: %d non-kernel rows" % len(rows))
    total = sum(digits(r["Duration (ns)"]) or 0 for r in kern)
    return Result("nsys-gputrace-csv", len(kern), len({r["Name"] for r in kern}), total,
                  "%d memcpy/memset rows" % (len(rows) - len(kern)))


def count_nsys_kernsum_csv(lines):
    """nsys stats --report cuda_gpu_kern_sum --format csv."""
    rows = list(csv.DictReader(io.StringIO("\n".join(l for l in lines if l.strip()))))
    return Result("nsys-kernsum-csv", sum(digits(r["Instances"]) for r in rows), len(rows),
                  sum(digits(r["Total Time (ns)"]) for r in rows), "")


# ---------------------------------------------------------------- FPGA profile.mon

MON_LINE = re.compile(r"^\d+,\d+,[^,]+,\d+,\d+,-?\d+")


def count_profile_mon(lines):
    """Intel FPGA OpenCL profile.mon: one line per kernel execution, device,cq,name,start,end,..."""
    n, names, total, layouts = 0, set(), 0, set()
    for l in lines:
        f = l.strip().split(",")
        if len(f) < 6 or not MON_LINE.match(l.strip()):
            continue
        if f[-1] == "":
            f = f[:-1]
        if len(f) == 6 + int(f[5]):
            layouts.add("legacy")
        elif len(f) > 6 and len(f) == 7 + int(f[6]):
            layouts.add("shared_counter")
        else:
            layouts.add("unexpected field count")
        n += 1
        names.add(f[2])
        total += int(f[4]) - int(f[3])
    return Result("fpga-profile-mon", n, len(names), total, "layout: " + ",".join(sorted(layouts)))


# ---------------------------------------------------------------- ncu text

KERNEL_CFG = re.compile(r" \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)")
KERNEL_DATE = re.compile(r", \d{4}-\w{3}-\d{2} \d{2}:\d{2}:\d{2}, ")


def ncu_kernel_name(header):
    h = header.strip()
    for rx in (KERNEL_CFG, KERNEL_DATE):
        m = rx.search(h)
        if m:
            return h[:m.start()]
    return h.split(", Context ")[0]


def count_ncu_text(lines):
    """ncu console output: a result block starts with a kernel line followed by '    Section:'.
    Without result blocks the log is a failed, empty or progress-only profile."""
    nonblank = [(i, l) for i, l in enumerate(lines) if l.strip()]
    blocks = []  # [name, invocations, duration_ns or None, summary?]
    for k, (i, l) in enumerate(nonblank):
        if k + 1 < len(nonblank) and nonblank[k + 1][1].startswith("    Section:") \
                and not l.startswith("    ") and l.startswith(" "):
            inv = re.search(r", Invocations (\d+)\s*$", l)
            blocks.append([ncu_kernel_name(l), int(inv.group(1)) if inv else 1, None, bool(inv)])
        elif blocks and blocks[-1][2] is None and not blocks[-1][3]:
            m = re.match(r"^\s{4}Duration\s+(\S+)\s+([\d.,]+)\s*$", l)
            if m and m.group(1) in UNIT_NS:
                blocks[-1][2] = number(m.group(2)) * UNIT_NS[m.group(1)]
    errors = [l.strip() for l in lines if l.startswith("==ERROR==")]
    progress = [l for l in lines if re.match(r'^==PROF== Profiling "', l)]
    if not blocks:
        if errors:
            return Result("ncu-text", 0, 0, None, "failed-profile: " + errors[0])
        if any("No kernels were profiled" in l for l in lines):
            return Result("ncu-text", 0, 0, None, "no-kernels-profiled")
        if progress:
            return Result("ncu-text", 0, 0, None, "progress-only: %d launches listed" % len(progress))
        return Result("ncu-text", 0, 0, None, "no result blocks")
    launches = sum(b[1] for b in blocks)
    names = {b[0] for b in blocks}
    summary = any(b[3] for b in blocks)
    timed = [b for b in blocks if b[2] is not None]
    time_ns = sum(b[2] for b in timed) if (timed and len(timed) == len(blocks)) else None
    notes = []
    if summary:
        notes.append("print-summary per-kernel: %d kernel rows, launches from Invocations" % len(blocks))
    elif time_ns is None:
        notes.append("Duration in %d of %d blocks" % (len(timed), len(blocks)))
    if progress and len(progress) != launches:
        notes.append("%d ==PROF== Profiling lines" % len(progress))
    if errors:
        notes.append("with " + errors[0])
    return Result("ncu-text", launches, len(names), time_ns, "; ".join(notes))


# ---------------------------------------------------------------- nsys stats text

def column_spans(dash_line):
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dash_line)]


def split_fixed(line, spans):
    cells = []
    for j, (s, e) in enumerate(spans):
        end = len(line) if j == len(spans) - 1 else e
        cells.append(line[s:end].strip())
    return cells


def count_nsys_stats_text(lines):
    """nsys --stats / nsys stats console text: sum every kernel summary table (header with
    'Instances') and every gputrace table (header with 'GrdX'); several runs may share a file."""
    summ = {"launches": 0, "names": set(), "total": 0, "tables": 0}
    trace = {"launches": 0, "names": set(), "total": 0, "tables": 0, "memops": 0}
    i = 0
    while i < len(lines) - 1:
        head, dash = lines[i], lines[i + 1]
        if re.match(r"^\s*-[-\s]+$", dash) and "Name" in head:
            spans = column_spans(dash)
            cols = split_fixed(head, spans)
            j = i + 2
            rows = []
            while j < len(lines) and lines[j].strip():
                rows.append(split_fixed(lines[j], spans))
                j += 1
            if "Instances" in cols and any(c.startswith("Total Time") for c in cols):
                ti = next(k for k, c in enumerate(cols) if c.startswith("Total Time"))
                ii = cols.index("Instances")
                summ["tables"] += 1
                # Each row is one kernel as nsys grouped them (by full name): rows whose names,
                # cut with an ellipsis, read the same are still different kernels, told apart
                # by their order among the rows of that name (the same in every run's table).
                seen = {}
                for r in rows:
                    summ["launches"] += digits(r[ii]) or 0
                    summ["total"] += digits(r[ti]) or 0
                    seen[r[-1]] = seen.get(r[-1], 0) + 1
                    summ["names"].add((r[-1], seen[r[-1]]))
            elif "GrdX" in cols and any(c.startswith("Duration") for c in cols):
                di = next(k for k, c in enumerate(cols) if c.startswith("Duration"))
                gi = cols.index("GrdX")
                trace["tables"] += 1
                for r in rows:
                    if r[gi]:
                        trace["launches"] += 1
                        trace["total"] += digits(r[di]) or 0
                        trace["names"].add(r[-1])
                    else:
                        trace["memops"] += 1
            i = j
            continue
        i += 1
    # The kernel summary and the gputrace of one run list the same launches: when a file has
    # summary tables, count those only; otherwise count the gputrace kernel rows.
    use = summ if summ["tables"] else trace
    if use["tables"]:
        if use is summ:
            note = "%d kernel summary table(s)" % summ["tables"]
            if trace["tables"]:
                note += "; gputrace table(s) not added (%d kernel rows, same launches)" % trace["launches"]
        else:
            note = "%d gputrace table(s), %d memory rows" % (trace["tables"], trace["memops"])
        if any((n[0] if isinstance(n, tuple) else n).endswith("\u2026") for n in use["names"]):
            note += "; names truncated with an ellipsis by nsys"
        return Result("nsys-stats-text", use["launches"], len(use["names"]), use["total"], note)
    skipped = [l.strip() for l in lines if l.startswith("SKIPPED:") and "kernel" in l.lower()]
    if skipped:
        return Result("nsys-stats-text", 0, 0, None, "no-gpu-activity: " + skipped[0])
    if any("API" in l and "Statistics" in l or "cuda_api_sum" in l for l in lines):
        return Result("nsys-stats-text", 0, 0, None, "api-only: no kernel table")
    return Result("nsys-stats-text", 0, 0, None, "no kernel table")


# ---------------------------------------------------------------- dispatcher

def classify_text(text):
    lines = text.split("\n")
    first = next((l for l in lines if l.strip()), "")
    plain = first.replace('"', "")
    for k, l in enumerate(lines):
        p = l.replace('"', "").lstrip("\ufeff")
        if p.startswith("ID,Process ID,") and "Kernel Name" in p:
            return count_ncu_csv(lines, k)
    if plain.startswith("Name,Calls,TotalDurationNs"):
        return count_rocprof_stats(lines)
    if plain.startswith("Index,KernelName"):
        return count_rocm_dispatch_csv(lines, "rocprof-v1-csv")
    if "Counter_Name" in plain and "Dispatch_Id" in plain:
        return count_rocprofv3_counter_collection(lines)
    if "Kernel_Name" in plain and "Start_Timestamp" in plain:
        return count_rocm_dispatch_csv(lines, "rocm-kernel-trace-csv")
    if plain.startswith(("Domain,Function", "Kind,Domain,Function")) or ("Function" in plain and "Operation" in plain):
        return count_rocprofv3_api_or_copy(lines, "api-trace")
    if "Source_Agent_Id" in plain or plain.startswith("Kind,Direction"):
        return count_rocprofv3_api_or_copy(lines, "memory-copy-trace")
    if plain.startswith("Start (ns),Duration (ns),CorrId"):
        return count_nsys_gputrace_csv(lines)
    if plain.startswith("Time (%),Total Time (ns),Instances"):
        return count_nsys_kernsum_csv(lines)
    body = [l for l in lines if l.strip()]
    if body and sum(1 for l in body if MON_LINE.match(l.strip())) == len(body):
        return count_profile_mon(lines)
    if any(l.startswith(("==PROF==", "==ERROR==")) for l in lines) or \
            any(l.startswith("    Section:") for l in lines):
        return count_ncu_text(lines)
    if any("stats report" in l or "Statistics:" in l or re.match(r"^ \*\* .*\(\w+\):", l) for l in lines):
        return count_nsys_stats_text(lines)
    return Result("unknown-text", 0, 0, None, "first line: " + first[:80])


def classify(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if not data:
        return Result("empty-file", 0, 0, None, "0 bytes")
    if data.startswith(b"SQLite format 3\x00"):
        return count_sqlite(path)
    if data.startswith(b"\x1f\x8b"):
        data = gzip.decompress(data)
    if data.startswith(b"version https://git-lfs"):
        return Result("lfs-pointer", 0, 0, None, "Git LFS pointer, no content")
    text = decode_text(data)
    if text.lstrip().startswith(("{", "[")):
        res = count_json(text)
        if res.shape != "json-invalid":
            return res
    return classify_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="folder holding <tool>/<file> as named in the manifest")
    ap.add_argument("--manifest", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "manifest.tsv"))
    args = ap.parse_args()
    with open(args.manifest, newline="") as fh:
        entries = [r["file"] for r in csv.DictReader(fh, delimiter="\t")]
    out = sys.stdout
    out.write("file\tshape\tlaunches\tkernels\tkernel_time_ns\tverdict_note\n")
    for name in entries:
        path = os.path.join(args.root, name)
        try:
            res = classify(path)
        except Exception as exc:  # report, never stop the run
            res = Result("error", 0, 0, None, "%s: %s" % (type(exc).__name__, exc))
        out.write(res.row(name) + "\n")


if __name__ == "__main__":
    main()
