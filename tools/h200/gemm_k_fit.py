#!/usr/bin/env python3
"""What results/h200-measurements/gemm_k_sweep_{zeros,random}.csv say for the model's
H200 GEMM (issues 41, 46). usage: gemm_k_fit.py [DIR]

1. The SM clock under a sustained GEMM: with random operands (interfere.py's
   torch.randn) every GEMM of K >= 1024 holds the GPU at its 700 W cap; the mean of
   the NVML-sampled SM clock over those rows.
2. A K step's cycles at a steady clock: with zero operands the GPU stays below its cap
   and at 1,980 MHz for K = 128-512; per shape the slope of time against K over those
   rows (one kernel, one tile) gives the cycles of one K step of one tile; what it
   adds to the tensor cores' ideal (tile_m x tile_n x 64 x 2 / 4096 FLOPs per cycle).
3. The fixed time of a round of tiles (prologue, epilogue) at that clock: the same fits'
   intercepts against the number of rounds R = ceil(tiles / 132).
"""
import csv
import math
import re
import sys
from pathlib import Path

d = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "results/h200-measurements")


def rows(name):
    with open(d / name) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def tile(r):
    m = re.search(r"_(\d+)x(\d+)_64x(\d+)_(\d)x(\d)", r["kernel"])
    return int(m[1]), int(m[2])  # cuBLAS m x n: torch N x M


def rounds(r):
    tm, tn = tile(r)
    return math.ceil(math.ceil(int(r["N"]) / tm) * math.ceil(int(r["M"]) / tn) / 132)


def lsq(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


loaded = [r for r in rows("gemm_k_sweep_random.csv") if int(r["K"]) >= 1024]
mhz = [float(r["sm_mhz_mean"]) for r in loaded]
watts = [float(r["power_w_mean"]) for r in loaded]
print(f"1. random operands, K >= 1024 ({len(loaded)} rows): SM clock mean {sum(mhz) / len(mhz):.0f} MHz "
      f"(rows {min(mhz):.0f}-{max(mhz):.0f}), power {min(watts):.0f}-{max(watts):.0f} W")

steady = {}
for r in rows("gemm_k_sweep_zeros.csv"):
    if 128 <= int(r["K"]) <= 512 and float(r["sm_mhz_min"]) >= 1935:
        steady.setdefault((r["shape"], tile(r)), []).append(r)
print("2./3. zero operands, K = 128-512 at 1,935-1,980 MHz, per shape:")
extras, fixed = [], []
for (shape, (tm, tn)), rs in steady.items():
    if len(rs) < 3:
        continue
    a, b = lsq([int(r["K"]) for r in rs], [float(r["median_ns"]) for r in rs])
    R = rounds(rs[0])
    step = b * 64 / R * 1.98  # cycles of one K step of one tile at 1.98 GHz
    ideal = tm * tn * 64 * 2 / 4096
    extras.append(step - ideal)
    fixed.append((R, a, tm * tn))
    print(f"   {shape:12s} {tm}x{tn} R={R:2d}: K step {step:5.0f} cycles (ideal {ideal:4.0f}, +{step - ideal:4.0f}); "
          f"intercept {a / 1e3:5.2f} us")
print(f"   K step: {sum(extras) / len(extras):.0f} cycles beyond the ideal on average")
same = [(R, a) for R, a, area in fixed if area == 256 * 128]
if len(same) >= 2:
    a0, per_round = lsq([R for R, _ in same], [a for _, a in same])
    print(f"   256x128 tiles: intercept = {a0 / 1e3:.2f} us + R x {per_round:.0f} ns "
          f"({per_round * 1.98:.0f} cycles per round at 1.98 GHz)")
