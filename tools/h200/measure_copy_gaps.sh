#!/usr/bin/env bash
# Runs copy_gaps.cu on the H200 machine (issue 41). usage: measure_copy_gaps.sh OUTDIR
set -euo pipefail
out="${1:?usage: measure_copy_gaps.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
cuda=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
inc=$(dirname "$(find "$cuda" /usr/local/cuda* -name cupti.h 2>/dev/null | head -1)")
lib=$(dirname "$(find "$cuda" /usr/local/cuda* -name 'libcupti.so*' 2>/dev/null | head -1)")
krec=$(grep -rhoE 'CUpti_ActivityKernel[0-9]+;' "$inc" | tr -d ';' | sort -V | tail -1)
"$nvcc" -O3 -arch=sm_90 -std=c++17 -DKREC="$krec" -I"$inc" -o /tmp/copy_gaps "$here/copy_gaps.cu" \
  -L"$lib" -Xlinker -rpath -Xlinker "$lib" -lcublas -lcupti
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 50 > "$out/copy_gaps_clocks.csv" &
smi=$!
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; /tmp/copy_gaps; } > "$out/copy_gaps.csv"
kill $smi
