#!/usr/bin/env bash
# Runs gemm_k_sweep.cu on the H200 machine (issues 41, 46). usage:
#   measure_gemm_k_sweep.sh OUTDIR [seconds-per-point [random|zeros [name:M:N:K,...]]]
# Clocks are only read (NVML), never set.
set -euo pipefail
out="${1:?usage: measure_gemm_k_sweep.sh OUTDIR [seconds]}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
. "$here/cupti_env.sh"
"$nvcc" -O3 -arch=sm_90 -std=c++17 -o /tmp/gemm_k_sweep "$here/gemm_k_sweep.cu" "${cupti_flags[@]}" -lcublas -lnvidia-ml
{ echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader) $("$nvcc" --version | tail -1)"
  /tmp/gemm_k_sweep "${2:-0.25}" "${3:-random}" ${4:-}; } | tee "$out/gemm_k_sweep_${3:-random}${4:+_points}.csv"
