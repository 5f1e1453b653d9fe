#!/usr/bin/env bash
# Runs d2d_engine.cu on the H200 machine (issue 41). usage: measure_d2d_engine.sh OUTDIR
set -euo pipefail
out="${1:?usage: measure_d2d_engine.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
. "$here/cupti_env.sh"
"$nvcc" -O3 -arch=sm_90 -std=c++17 -o /tmp/d2d_engine "$here/d2d_engine.cu" "${cupti_flags[@]}" -lcublas
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 20 > "$out/d2d_engine_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader)"; /tmp/d2d_engine; } > "$out/d2d_engine.csv"
kill $smi
cat "$out/d2d_engine.csv"
