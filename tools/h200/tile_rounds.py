#!/usr/bin/env python3
"""Rounds of a cuBLAS GEMM's tiles from tile_order.cu's output (issue 41).

    tools/h200/tile_rounds.py tile_order.csv[.gz] > tile_order_rounds.csv

Groups the 64 x 64 sample points into the kernel's tiles (cublas_kernels.csv: gpt3.op
and megagpt2.op run nvjet 256x128, 128 rows x 256 columns of torch's C; palm.fc2 192x192),
a tile's time being its first point's, and splits each run's tiles into rounds at gaps
above the threshold (gpt3/megagpt2 2 us, palm 8 us: a round takes about 6 and 24 us).
Writes per run: the tile count per round, each round's start (us after the marker), and
the tiles of the last round (row:col of the tile grid)."""
import collections
import csv
import gzip
import sys

TILE = {"gpt3.op.tp32": (128, 256), "megagpt2.op.tp8": (128, 256), "palm.fc2.tp32": (192, 192)}
GAP_NS = {"gpt3.op.tp32": 2000, "megagpt2.op.tp8": 2000, "palm.fc2.tp32": 8000}


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    runs = collections.defaultdict(dict)
    with opener(path, "rt") as f:
        for row in csv.DictReader(f):
            gemm = row["gemm"]
            tr, tc = TILE[gemm]
            tile = (int(row["row_block"]) * 64 // tr, int(row["col_block"]) * 64 // tc)
            t = int(row["t_ns"])
            run = runs[(gemm, int(row["held"]), int(row["rep"]))]
            run[tile] = min(t, run.get(tile, t))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gemm", "held", "rep", "tiles", "rounds", "tiles_per_round", "round_start_us", "last_round_tiles"])
    for (gemm, held, rep), tiles in sorted(runs.items()):
        order = sorted(tiles, key=tiles.get)
        rounds = [[order[0]]]
        for a, b in zip(order, order[1:]):
            if tiles[b] - tiles[a] > GAP_NS[gemm]:
                rounds.append([])
            rounds[-1].append(b)
        out.writerow([gemm, held, rep, len(tiles), len(rounds), " ".join(str(len(r)) for r in rounds),
                      " ".join(f"{tiles[r[0]] / 1000:.1f}" for r in rounds),
                      " ".join(f"{r}:{c}" for r, c in sorted(rounds[-1])) if len(rounds[-1]) <= 16 else "-"])


if __name__ == "__main__":
    main(sys.argv[1])
