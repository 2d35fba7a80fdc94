#!/usr/bin/env python3
"""Generates a large `ncu --csv` details report by tiling the launch rows of a real corpus file.

Each copy gets a new launch ID and one of several kernel names, and its Duration is varied, so
the collector aggregates many kernels of many launches. Output is never committed.
usage: gen_ncu_csv.py CORPUS_CSV OUT_CSV LAUNCHES
"""
import csv
import io
import sys


def main() -> int:
    src, out, launches = sys.argv[1], sys.argv[2], int(sys.argv[3])
    text = open(src, encoding="utf-8").read()
    start = text.index('"ID","Process ID"')
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, body = rows[0], [r for r in rows[1:] if r]
    id_col, name_col = header.index("ID"), header.index("Kernel Name")
    metric_col, value_col = header.index("Metric Name"), header.index("Metric Value")
    with open(out, "w", encoding="utf-8", newline="") as f:
        f.write(text[:start])
        w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
        w.writerow(header)
        for launch in range(launches):
            for r in body:
                r = list(r)
                r[id_col] = str(launch)
                r[name_col] = f"{r[name_col]}_v{launch % 97}"
                if r[metric_col] == "Duration":
                    r[value_col] = str(int(float(r[value_col])) + (launch * 37) % 5000)
                w.writerow(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
