#!/usr/bin/env bash
# Runs copy_residency.cu on the H200 machine with the SM clock sampled beside it
# (nvidia-smi, read-only; clocks are not changed). usage: tools/h200/measure_copy_residency.sh OUTDIR
set -euo pipefail
out="${1:?usage: measure_copy_residency.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
"$nvcc" -O3 -arch=sm_90 -o /tmp/copy_residency "$here/copy_residency.cu" -lcublas
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 20 > "$out/copy_residency_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; /tmp/copy_residency; } | tee "$out/copy_residency.csv"
kill $smi
