#!/usr/bin/env python3
"""Reads copy_phase.csv (tools/h200/copy_phase.cu) and says, per copy that ran wholly
beside the GEMMs, where in a GEMM it ended (the fraction of that GEMM elapsed) and how
the next copy then ran (on how many SMs, after what wait); per copy size, the copies'
rate beside the GEMMs. Also reads a model sweep's rows (--model CSV, the columns
workload.copy_bytes and copy_GBps_during of `t3sim sweep`) to print the two rates side
by side.

  tools/h200/copy_phase.py copy_phase.csv [MORE.csv ...] [--model model.csv ...] [-o OUT.md]
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict

SPREAD_SMS = 12  # more SMs than a packed copy's 6-8: it spread


def load(paths):
    rows = defaultdict(lambda: {"gemm": [], "copy": []})
    for path in paths:
        with open(path) as f:
            lines = f.readlines()
        # measure_program.sh's first line (and, with two GPUs, nvidia-smi's second) precede the header.
        start = next((i for i, l in enumerate(lines) if l.startswith("gemm,")), None)
        if start is None:
            raise SystemExit(f"{path}: no 'gemm,...' header line: not copy_phase.cu's output")
        load_rows(rows, csv.DictReader(lines[start:]))
    return rows


def load_rows(rows, reader):
    for r in reader:
        key = (r["gemm"], int(r["size_mib"]))
        if r["kind"] == "gemm":
            rows[key]["gemm"].append((int(r["start_ns"]), int(r["end_ns"])))
        else:
            rows[key]["copy"].append(
                (int(r["start_ns"]), int(r["end_ns"]), int(r["sms"]), int(r["cta_last_end_ns"]) - int(r["cta_first_start_ns"])))


def where(t, gemms):
    """The fraction of the GEMM running at t that has elapsed (None in a gap)."""
    for s, e in gemms:
        if s <= t < e:
            return (t - s) / (e - s)
    return None


def analyse(rows):
    per_copy, per_size = [], []
    for (gemm, mib), d in sorted(rows.items()):
        gemms, copies = sorted(d["gemm"]), sorted(d["copy"])
        if not gemms:
            continue
        g0, g1 = gemms[0][0], gemms[-1][1]
        inside = [i for i, c in enumerate(copies) if c[0] > g0 and c[1] < g1]
        for i in inside:
            if i + 1 >= len(copies) or copies[i + 1][1] >= g1:
                continue
            c, n = copies[i], copies[i + 1]
            if c[2] > SPREAD_SMS:
                continue  # a spread copy's end: not the question
            per_copy.append({"gemm": gemm, "size_mib": mib, "index": i, "run_us": c[3] / 1e3,
                             "end_phase": where(c[1], gemms), "next_sms": n[2], "next_wait_us": (n[0] - c[1]) / 1e3})
        full = [i for i in inside if i + 1 < len(copies)]
        if len(full) >= 2:
            span = copies[full[-1] + 1][0] - copies[full[0]][0]
            rate = len(full) * mib * 2**20 / span  # bytes per ns = GB/s
            per_size.append({"gemm": gemm, "size_mib": mib, "copies": len(full),
                             "spread": sum(1 for i in full if copies[i][2] > SPREAD_SMS),
                             "gemm_us": statistics.median(e - s for s, e in gemms) / 1e3, "rate_GBps": rate})
    return per_copy, per_size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="copy_phase.cu's output (one or more runs)")
    ap.add_argument("--model", action="append", default=[], help="a t3sim sweep CSV of the same rows (repeatable)")
    ap.add_argument("-o", "--out", help="write the tables here (Markdown) instead of stdout")
    a = ap.parse_args()
    per_copy, per_size = analyse(load(a.csv))
    model = {}
    for path in a.model:
        with open(path) as f:
            for r in csv.DictReader(f):
                if r.get("status", "ok") != "ok":
                    continue
                size = r["workload.copy_bytes"].replace("MiB", "")
                model[(r["workload.gemm.preset"], int(size))] = float(r["copy_GBps_during"])
    out = open(a.out, "w") if a.out else sys.stdout
    print("| GEMM | copy MiB | GEMM us | copies beside | spread | rate GB/s | model GB/s |", file=out)
    print("|---|---:|---:|---:|---:|---:|---:|", file=out)
    for s in per_size:
        m = model.get((s["gemm"], s["size_mib"]))
        print(f"| {s['gemm']} | {s['size_mib']} | {s['gemm_us']:.1f} | {s['copies']} | {s['spread']} | "
              f"{s['rate_GBps']:.1f} | {'' if m is None else f'{m:.1f}'} |", file=out)
    print(file=out)
    if model:
        print("| GEMM | sizes with both | machine mean GB/s | model mean GB/s | model / machine |", file=out)
        print("|---|---:|---:|---:|---:|", file=out)
        for gemm in sorted({s["gemm"] for s in per_size}):
            both = [(s["rate_GBps"], model[(gemm, s["size_mib"])]) for s in per_size
                    if s["gemm"] == gemm and (gemm, s["size_mib"]) in model]
            if both:
                mm, sm = statistics.mean(b[0] for b in both), statistics.mean(b[1] for b in both)
                print(f"| {gemm} | {len(both)} | {mm:.1f} | {sm:.1f} | {sm / mm:.3f} |", file=out)
        print(file=out)
    # What follows a packed copy, by where in a GEMM it ended.
    bins = [(0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01)]
    print("| packed copy ended at (fraction of the GEMM) | copies | next spread (> 12 SMs) | next wait us (median) |",
          file=out)
    print("|---|---:|---:|---:|", file=out)
    gap = [c for c in per_copy if c["end_phase"] is None]
    for lo, hi in bins:
        sel = [c for c in per_copy if c["end_phase"] is not None and lo <= c["end_phase"] < hi]
        if sel:
            print(f"| {lo:.1f}-{min(hi, 1.0):.1f} | {len(sel)} | {sum(c['next_sms'] > SPREAD_SMS for c in sel)} | "
                  f"{statistics.median(c['next_wait_us'] for c in sel):.1f} |", file=out)
    if gap:
        print(f"| between GEMMs | {len(gap)} | {sum(c['next_sms'] > SPREAD_SMS for c in gap)} | "
              f"{statistics.median(c['next_wait_us'] for c in gap):.1f} |", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
