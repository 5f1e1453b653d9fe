#!/usr/bin/env bash
# Builds and runs one tools/h200 program that needs no library beyond CUDA's runtime on
# the H200 machine, with the SM clock and power sampled beside it (nvidia-smi, read
# only). usage: measure_program.sh NAME OUTDIR  (NAME.cu -> OUTDIR/NAME.csv, NAME_clocks.csv)
set -euo pipefail
name="${1:?usage: measure_program.sh NAME OUTDIR}"
out="${2:?usage: measure_program.sh NAME OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
"$nvcc" -O3 -arch=sm_90 -std=c++17 -o "/tmp/$name" "$here/$name.cu"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 50 > "$out/${name}_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; "/tmp/$name"; } > "$out/$name.csv"
kill $smi
cat "$out/$name.csv"
