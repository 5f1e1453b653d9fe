#!/usr/bin/env python3
"""Seed 001's all-gather + GEMM from `t3sim sweep` CSVs of kind ag_gemm
(configs/sweeps/ag_gemm_seed001*.yaml).

Usage:
    tools/plot_ag_gemm.py CSV [CSV ...] -o OUTDIR

Every `fused` row carries its sequential run (CU all-gather, then GEMM) and the ideal
(max of the two): per row, the execution time normalized to sequential of sequential
(1), fused and ideal-overlap. Writes ag_gemm.png (bars per case) and ag_gemm.md (the
table: times, speedups, fraction of the ideal, the GEMM's launch and the last copy's
signal). A case is named by its file's system (GPU count), launch order and tile.

Exit codes: 0 success; 2 bad input (missing file or columns, no ok fused rows) or no
matplotlib: one line on stderr and no PNG written.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import NoReturn

NEEDED = ["status", "configuration", "num_gpus", "time_ps", "sequential_ps", "isolated_all_gather_ps",
          "isolated_gemm_ps", "ideal_ps", "fused_gemm_launch_ps", "fused_copies_end_ps"]


def fail(message: str) -> NoReturn:
    print(f"plot_ag_gemm: error: {message}", file=sys.stderr)
    sys.exit(2)


def case_name(path: Path, row: dict[str, str]) -> str:
    parts = [f"{path.stem} {row['num_gpus']} GPUs"]
    if row.get("workload.launch_order"):
        parts.append(row["workload.launch_order"])
    tile_m, tile_n = row.get("workload.gemm.tile_m"), row.get("workload.gemm.tile_n")
    if tile_m or tile_n:
        parts.append(f"tile {tile_m or '-'}x{tile_n or '-'}")
    return ", ".join(parts)


def read(paths: list[Path]) -> list[dict]:
    cases = []
    skipped = 0
    for path in paths:
        if not path.is_file():
            fail(f"{path}: no such file")
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
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
                    "name": case_name(path, row),
                    "sequential_ms": seq / 1e9,
                    "fused_ms": int(row["time_ps"]) / 1e9,
                    "ideal_ms": int(row["ideal_ps"]) / 1e9,
                    "ag_ms": int(row["isolated_all_gather_ps"]) / 1e9,
                    "gemm_ms": int(row["isolated_gemm_ps"]) / 1e9,
                    "launch_ms": int(row["fused_gemm_launch_ps"]) / 1e9,
                    "copies_ms": int(row["fused_copies_end_ps"]) / 1e9,
                })
    if skipped:
        print(f"plot_ag_gemm: {skipped} rows skipped (not ok, or not fused)", file=sys.stderr)
    if not cases:
        fail("no ok fused rows")
    return cases


def table(cases: list[dict]) -> str:
    lines = ["| case | sequential ms (AG + GEMM) | fused ms | ideal ms | fused / seq | ideal / seq | "
             "speedup | fraction of ideal | GEMM launch ms | last copy ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        speedup = c["sequential_ms"] / c["fused_ms"]
        ideal = c["sequential_ms"] / c["ideal_ms"]
        frac = (speedup - 1) / (ideal - 1) if ideal > 1 else 0.0
        lines.append(f"| {c['name']} | {c['sequential_ms']:.4f} ({c['ag_ms']:.4f} + {c['gemm_ms']:.4f}) | "
                     f"{c['fused_ms']:.4f} | {c['ideal_ms']:.4f} | {c['fused_ms'] / c['sequential_ms']:.3f} | "
                     f"{c['ideal_ms'] / c['sequential_ms']:.3f} | {speedup:.3f} | {100 * frac:.1f}% | "
                     f"{c['launch_ms']:.4f} | {c['copies_ms']:.4f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    args = parser.parse_args()
    cases = read(args.csv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is not installed (apt-get install python3-matplotlib)")
    args.out.mkdir(parents=True, exist_ok=True)
    md = table(cases)
    (args.out / "ag_gemm.md").write_text(md)
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
    ax.set_title("All-gather + GEMM (seed 001)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / "ag_gemm.png", dpi=120)


if __name__ == "__main__":
    main()
