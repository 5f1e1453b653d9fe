#!/usr/bin/env bash
# Reproduce T3's sub-layer results (T3 §6): the 28 Table 2 cases x sequential, t3,
# t3-mca, ideal-overlap, ideal-rs-nmc and fused (seed 000's software fusion beside
# T3's hardware; configs/sweeps/t3_reproduction.yaml), then the
# report: OUTDIR/t3_reproduction.csv (one row per point), OUTDIR/t3_results.md and
# t3_summary.csv (speedups, geomeans, exposed communication, share of the ideal
# speedup, DRAM breakdown, paper targets), fig16_speedup.png and fig18_dram.png.
#
#   tools/reproduce_t3.sh OUTDIR [extra t3sim sweep options, e.g. -j 2]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: tools/reproduce_t3.sh OUTDIR [t3sim sweep options]}"
shift
mkdir -p "$out"
t3sim="${T3SIM:-build/t3sim}"
"$t3sim" sweep configs/sweeps/t3_reproduction.yaml -o "$out/t3_reproduction.csv" "$@"
# Debian's python3 has matplotlib (python3-matplotlib); prefer it over a PATH python.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" tools/t3_report.py "$out/t3_reproduction.csv" -o "$out"
echo "report: $out/t3_results.md"
