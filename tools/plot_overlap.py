#!/usr/bin/env python3
"""Seeds 000 and 001's overlap ops (kinds ag_gemm, gemm_a2a) from `t3sim sweep` CSVs
(configs/sweeps/ag_gemm_seed001*.yaml, gemm_a2a*.yaml): Figures 8-10 of seed 000 style.

Usage:
    tools/plot_overlap.py CSV [CSV ...] -o OUTDIR [--name NAME]

Every `fused` row carries its sequential run (the compute kernel and the CU collective
one after the other) and the ideal (max of the two): per row, the execution time
normalized to sequential of sequential (1), fused and ideal-overlap. Writes NAME.png
(bars per case; NAME defaults to overlap) and NAME.md (the table: times, speedups,
fraction of the ideal, the GPUs' end skew (seed 000 Figure 14; full-mode rows), and for
ag_gemm the GEMM's launch and the last copy's signal).
A case is named by its file, GPU count and the swept parameters.

Exit codes: 0 success; 2 bad input (missing file or columns, no ok fused rows) or no
matplotlib: one line on stderr and no PNG written.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from t3sim_tools import fail, pyplot

NEEDED = ["status", "configuration", "num_gpus", "time_ps", "sequential_ps", "isolated_compute_ps",
          "isolated_collective_ps", "ideal_ps"]


def case_name(path: Path, row: dict[str, str], swept: list[str]) -> str:
    parts = [f"{path.stem} {row['num_gpus']} GPUs"]
    for key in swept:
        if key != "system.num_gpus" and row.get(key):
            parts.append(f"{key.split('.')[-1]}={row[key]}")
    return ", ".join(parts)


def read(paths: list[Path]) -> list[dict]:
    cases = []
    skipped = 0
    for path in paths:
        if not path.is_file():
            fail(f"{path}: no such file")
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            # The sweep's axes: the columns between `point` and `status`.
            names = reader.fieldnames or []
            swept = names[1:names.index("status")] if "status" in names and names[:1] == ["point"] else []
            missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
            if missing:
                fail(f"{path}: missing columns {', '.join(missing)}")
            for row in reader:
                if row["status"] != "ok" or row["configuration"] != "fused":
                    skipped += 1
                    continue
                seq = int(row["sequential_ps"])
                if seq <= 0:
                    fail(f"{path}: point {row.get('point', '?')} has no sequential time")
                cases.append({
                    "name": case_name(path, row, swept),
                    "sequential_ms": seq / 1e9,
                    "fused_ms": int(row["time_ps"]) / 1e9,
                    "ideal_ms": int(row["ideal_ps"]) / 1e9,
                    "compute_ms": int(row["isolated_compute_ps"]) / 1e9,
                    "collective_ms": int(row["isolated_collective_ps"]) / 1e9,
                    "launch_ms": int(row.get("fused_gemm_launch_ps") or 0) / 1e9,
                    "copies_ms": int(row.get("fused_copies_end_ps") or 0) / 1e9,
                    "skew": float(row.get("skew") or 0),
                })
    if skipped:
        print(f"plot_overlap: {skipped} rows skipped (not ok, or not fused)", file=sys.stderr)
    if not cases:
        fail("no ok fused rows")
    return cases


def table(cases: list[dict]) -> str:
    lines = ["| case | sequential ms (compute + collective) | fused ms | ideal ms | fused / seq | ideal / seq | "
             "speedup | fraction of ideal | GPU end skew | GEMM launch ms | last copy ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        speedup = c["sequential_ms"] / c["fused_ms"]
        ideal = c["sequential_ms"] / c["ideal_ms"]
        frac = (speedup - 1) / (ideal - 1) if ideal > 1 else 0.0
        lines.append(f"| {c['name']} | {c['sequential_ms']:.4f} ({c['compute_ms']:.4f} + {c['collective_ms']:.4f}) | "
                     f"{c['fused_ms']:.4f} | {c['ideal_ms']:.4f} | {c['fused_ms'] / c['sequential_ms']:.3f} | "
                     f"{c['ideal_ms'] / c['sequential_ms']:.3f} | {speedup:.3f} | {100 * frac:.1f}% | {100 * c['skew']:.2f}% | "
                     f"{c['launch_ms']:.4f} | {c['copies_ms']:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    parser.add_argument("--name", default="overlap", help="output file stem (default: overlap)")
    args = parser.parse_args()
    cases = read(args.csv)
    plt = pyplot()
    args.out.mkdir(parents=True, exist_ok=True)
    md = table(cases)
    (args.out / f"{args.name}.md").write_text(md)
    print(md, end="")

    fig, ax = plt.subplots(figsize=(max(6.0, 1.4 * len(cases)), 4.0))
    width = 0.27
    xs = range(len(cases))
    for i, (label, key) in enumerate([("sequential", "sequential_ms"), ("fused", "fused_ms"),
                                      ("ideal-overlap", "ideal_ms")]):
        ax.bar([x + (i - 1) * width for x in xs], [c[key] / c["sequential_ms"] for c in cases], width, label=label)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([c["name"] for c in cases], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("execution time / sequential")
    ax.set_title(args.name)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / f"{args.name}.png", dpi=120)


if __name__ == "__main__":
    main()
