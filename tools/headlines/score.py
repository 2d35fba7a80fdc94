#!/usr/bin/env python3
"""Scores perfwatch's first finding against the headline set (manifest.tsv).

For each row it runs `perfwatch check --format json FILE`, takes the findings at warning or error
(info lines are context, not claims), maps each rule to a headline category (rule_categories.tsv)
and prints, per split, overall and per format:
  hit      the first finding's category is the row's category (for `none`: no finding at all)
  precise  of the reports where perfwatch made a claim, the share whose first claim is the row's
           problem (a claim on a `none` report, or another problem's, is counted wrong)
  worth    of all findings printed, the share naming the row's problem
  true     of all findings printed, the share judged true against the file (findings_truth.tsv for
           the public files, tests/fixtures/verdicts/corpus_findings.tsv for the corpus; a finding
           no row judges counts as not true): the issue's "92.5% true", judged after the run
Rows whose file is absent are skipped and counted. Standard library only.
"""
import argparse, concurrent.futures, csv, json, os, subprocess, sys, tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))

def load_tsv(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader((l for l in f if not l.startswith("#")), delimiter="\t")]
    head = rows[0]
    return [dict(zip(head, r)) for r in rows[1:] if r]

def locate(row, ext_root, corpus_root):
    name = row["file"]
    if name.startswith("corpus:"):
        return os.path.join(corpus_root, name[len("corpus:"):])
    return os.path.join(ext_root, name)

def run_check(perfwatch, config, path):
    cmd = [perfwatch, "--config", config, "check", "--format", "json", "--fail-on", "error", path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        return None, (p.stderr.strip().splitlines() or ["no output"])[-1]
    return doc.get("findings", []), None

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perfwatch", required=True)
    ap.add_argument("--ext", default="/work/ext/headlines")
    ap.add_argument("--corpus", default=os.environ.get("PERFWATCH_CORPUS") or os.path.join(HERE, "..", "..", "..", "shared", "corpus"))
    ap.add_argument("--split", default="all", choices=["all", "tune", "holdout"])
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--min-hit", type=float, default=0, help="fail (exit 1) under this overall hit rate, percent")
    ap.add_argument("--min-precise", type=float, default=0, help="fail under this overall precision, percent")
    ap.add_argument("--min-worth", type=float, default=0, help="fail under this overall share worth reading, percent")
    ap.add_argument("--min-true", type=float, default=0, help="fail under this overall share judged true, percent")
    args = ap.parse_args()
    rows = load_tsv(os.path.join(HERE, "manifest.tsv"))
    cats = {r["rule"]: r["category"] for r in load_tsv(os.path.join(HERE, "rule_categories.tsv"))}
    judged = {(r["file"], r["rule"], r["entity"]): r["true"] == "yes"
              for r in load_tsv(os.path.join(HERE, "findings_truth.tsv"))}
    judged.update({(r["report"], r["rule"], r["entity"]): r["true"] == "yes"
                   for r in load_tsv(os.path.join(HERE, "..", "..", "tests", "fixtures", "verdicts", "corpus_findings.tsv"))})
    todo = [r for r in rows if args.split in ("all", r["split"])]
    present = [(r, locate(r, args.ext, args.corpus)) for r in todo]
    missing = [r for r, p in present if not os.path.exists(p)]
    present = [(r, p) for r, p in present if os.path.exists(p)]
    if not present:
        print("no report of the set is here (corpus or --ext)")
        return 1 if os.environ.get("PERFWATCH_REQUIRE_CORPUS") == "1" else 77
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "perfwatch.yaml")
        with open(config, "w") as f:
            f.write("reader: {isolation: none}\n")
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda rp: run_check(args.perfwatch, config, rp[1]), present))
    stats = defaultdict(lambda: defaultdict(int))
    for (row, path), (findings, err) in zip(present, results):
        want = row["category"]
        claims = [] if findings is None else [f for f in findings if f["severity"] in ("warning", "error")]
        got = [cats.get(f["rule"], "other:" + f["rule"]) for f in claims]
        hit = findings is not None and (not got) if want == "none" else (bool(got) and got[0] == want)
        for key in ("all", "format:" + row["format"], "split:" + row["split"]):
            s = stats[key]
            s["reports"] += 1
            s["hit"] += hit
            if got:
                s["claimed"] += 1
                s["precise"] += got[0] == want
            s["findings"] += len(got)
            s["worth"] += sum(1 for g in got if g == want)
            s["true"] += sum(1 for f in claims if judged.get((row["file"], f["rule"], f["entity"]["name"]), False))
            s["unread"] += findings is None
        if args.verbose or not hit:
            first = claims[0] if claims else None
            what = "error: " + err if err else (f"{first['rule']} on {first['entity']['name']}" if first else "no claim")
            print(f"{'HIT ' if hit else 'MISS'} {row['split']:7} {row['format']:15} want {want:24} got {what[:90]}  [{row['file'][:60]}]")
        for f in claims:
            if (row["file"], f["rule"], f["entity"]["name"]) not in judged:
                print(f"UNJUDGED {row['file'][:60]} / {f['rule']} / {f['entity']['name'][:60]}: {f['message'][:120]}")
    print()
    print(f"{'set':28} {'reports':>7} {'hit':>7} {'precise':>8} {'worth':>7} {'true':>7}")
    for key in sorted(stats, key=lambda k: (k != "all", k)):
        s = stats[key]
        pct = lambda a, b: f"{100.0 * a / b:6.1f}%" if b else "     - "
        print(f"{key:28} {s['reports']:7} {pct(s['hit'], s['reports'])} {pct(s['precise'], s['claimed'])} "
              f"{pct(s['worth'], s['findings'])} {pct(s['true'], s['findings'])}")
    if missing:
        print(f"\n{len(missing)} rows skipped, file absent (first: {missing[0]['file']})")
    s = stats["all"]
    figures = {"hit": 100.0 * s["hit"] / s["reports"],
               "precise": 100.0 * s["precise"] / s["claimed"] if s["claimed"] else 100.0,
               "worth": 100.0 * s["worth"] / s["findings"] if s["findings"] else 100.0,
               "true": 100.0 * s["true"] / s["findings"] if s["findings"] else 100.0}
    failed = [f"{k} {figures[k]:.1f}% < {floor:g}%" for k, floor in
              (("hit", args.min_hit), ("precise", args.min_precise), ("worth", args.min_worth), ("true", args.min_true))
              if figures[k] < floor]
    if failed:
        print("below the floor: " + ", ".join(failed))
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
