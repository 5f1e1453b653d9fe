#!/usr/bin/env bash
# Runs cap_latency.cu on the H200 machine (issue 41). usage: measure_cap_latency.sh OUTDIR
set -euo pipefail
out="${1:?usage: measure_cap_latency.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
"$nvcc" -O3 -arch=sm_90 -o /tmp/cap_latency "$here/cap_latency.cu" -lcublas
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv,noheader -lms 20 > "$out/cap_latency_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; /tmp/cap_latency; } | tee "$out/cap_latency.csv"
kill $smi
