#!/usr/bin/env bash
# Runs copy_gaps.cu on the H200 machine (issue 41). usage: measure_copy_gaps.sh OUTDIR
set -euo pipefail
out="${1:?usage: measure_copy_gaps.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
. "$here/cupti_env.sh"
"$nvcc" -O3 -arch=sm_90 -std=c++17 -o /tmp/copy_gaps "$here/copy_gaps.cu" "${cupti_flags[@]}" -lcublas
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 50 > "$out/copy_gaps_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; /tmp/copy_gaps; } > "$out/copy_gaps.csv"
kill $smi
