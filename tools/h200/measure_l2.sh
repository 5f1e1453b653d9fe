#!/usr/bin/env bash
# Runs l2_bandwidth.cu on the H200 machine with the SM clock sampled beside it
# (nvidia-smi, read-only; clocks are not changed). usage: tools/h200/measure_l2.sh OUTDIR
set -euo pipefail
out="${1:?usage: measure_l2.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
"$nvcc" -O3 -arch=sm_90 -o /tmp/l2_bandwidth "$here/l2_bandwidth.cu"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 50 > "$out/l2_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; /tmp/l2_bandwidth; } | tee "$out/l2_bandwidth.csv"
kill $smi
