#!/usr/bin/env bash
# Builds and runs one tools/h200 program on the H200 machine, with the SM clock and power
# sampled beside it (nvidia-smi, read only; every SAMPLE_MS ms, default 50). A program
# that includes cupti_kernels.cuh is built with CUPTI (cupti_env.sh). usage:
# [SAMPLE_MS=N] [ARCH=sm_90a] measure_program.sh NAME OUTDIR [ARGS...]  (NAME.cu -> OUTDIR/NAME.csv, NAME_clocks.csv;
# ARGS go to the program)
set -euo pipefail
name="${1:?usage: measure_program.sh NAME OUTDIR}"
out="${2:?usage: measure_program.sh NAME OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
cupti_flags=()
if grep -q '#include "cupti_kernels.cuh"' "$here/$name.cu"; then . "$here/cupti_env.sh"; fi
"$nvcc" -O3 -arch="${ARCH:-sm_90}" -std=c++17 -o "/tmp/$name" "$here/$name.cu" "${cupti_flags[@]}" -lcublas
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms "${SAMPLE_MS:-50}" \
  > "$out/${name}_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader)"; "/tmp/$name" "${@:3}"; } > "$out/$name.csv"
kill $smi
cat "$out/$name.csv"
