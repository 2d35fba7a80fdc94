#!/usr/bin/env python3
"""Generates a large Nsight Systems SQLite export from a real corpus export.

Copies the corpus file (its schema, metadata, GPU info, string table) and adds KERNELS kernel
launches inside SQLite: each copies the export's own kernel row with a new start (launches follow
each other with gaps), a duration from 1.5 to 41.5 us, one of 4 streams, one of 200 kernel names
(new StringIds entries derived from the real name), and a cudaLaunchKernel runtime row 4-7 us
before it, with the same correlation ID. Output is never committed.
usage: gen_nsys_sqlite.py CORPUS_SQLITE OUT_SQLITE KERNELS
"""
import os
import shutil
import sqlite3
import sys


def main() -> int:
    src, out, kernels = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tmp = out + ".tmp"
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o644)
    db = sqlite3.connect(tmp)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    k = db.execute("SELECT rowid, * FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()
    if k is None:
        print("gen_nsys_sqlite: the corpus export has no kernel row to copy", file=sys.stderr)
        return 2
    cols = [r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    row = dict(zip(["rowid"] + cols, k))
    demangled = db.execute("SELECT value FROM StringIds WHERE id = ?", (row["demangledName"],)).fetchone()[0]
    short = db.execute("SELECT value FROM StringIds WHERE id = ?", (row["shortName"],)).fetchone()[0]
    base_id = db.execute("SELECT max(id) FROM StringIds").fetchone()[0] + 1
    names = []
    for i in range(200):
        names.append((base_id + 2 * i, demangled.replace("(", f"_v{i}(", 1) if "(" in demangled else f"{demangled}_v{i}"))
        names.append((base_id + 2 * i + 1, f"{short}_v{i}"))
    db.executemany("INSERT INTO StringIds(id, value) VALUES (?, ?)", names)
    launch = db.execute("SELECT id FROM StringIds WHERE value LIKE 'cudaLaunchKernel%'").fetchone()
    launch_id = launch[0] if launch else base_id + 400
    if not launch:
        db.execute("INSERT INTO StringIds(id, value) VALUES (?, 'cudaLaunchKernel_v7000')", (launch_id,))
    rt_cols = [r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")]
    rt = db.execute("SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()
    rt_row = dict(zip(rt_cols, rt))
    t0 = row["end"] + 1_000_000
    corr0 = 10_000_000
    # Kernel i: duration 1.5-41.5 us, gap 0.5-20 us after the previous on its stream's timeline.
    varied = {
        "start": f"{t0} + i * 25000 + (i * 7919) % 5000",
        "end": f"{t0} + i * 25000 + (i * 7919) % 5000 + 1500 + (i * 104729) % 40000",
        "streamId": "7 + i % 4",
        "correlationId": f"{corr0} + i",
        "demangledName": f"{base_id} + 2 * (i % 200)",
        "shortName": f"{base_id} + 2 * (i % 200) + 1",
        "gridX": "1 + i % 256",
    }
    select = ", ".join(varied.get(c, repr(row[c]) if row[c] is not None else "NULL") for c in cols)
    db.execute(f"""INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL ({", ".join(cols)})
                   WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < {kernels})
                   SELECT {select} FROM seq""")
    rt_varied = {
        "start": f"{t0} + i * 25000 + (i * 7919) % 5000 - 7000 + (i % 3) * 1000",
        "end": f"{t0} + i * 25000 + (i * 7919) % 5000 - 4000",
        "correlationId": f"{corr0} + i",
        "nameId": str(launch_id),
    }
    rt_select = ", ".join(rt_varied.get(c, repr(rt_row[c]) if rt_row[c] is not None else "NULL") for c in rt_cols)
    db.execute(f"""INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME ({", ".join(rt_cols)})
                   WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < {kernels})
                   SELECT {rt_select} FROM seq""")
    db.commit()
    db.close()
    os.replace(tmp, out)
    print(f"gen_nsys_sqlite: {kernels} kernels and launches, {os.path.getsize(out) / 1e6:.0f} MB -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
