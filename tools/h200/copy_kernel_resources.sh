#!/usr/bin/env bash
# The resources of the H200 interference microbenchmark's copy kernel (copy16 of
# ../shared/calibration/h200/interfere.py, kept in tools/h200/copy16.cu): registers per thread and
# shared memory, from ptxas for sm_90, as the driver's JIT would build it. Writes
# OUTDIR/copy_kernel_resources.txt.   usage: tools/h200/copy_kernel_resources.sh OUTDIR
set -euo pipefail
out="${1:?usage: copy_kernel_resources.sh OUTDIR}"
mkdir -p "$out"
src="$(mktemp -d)/copy16.cu"
cp "$(dirname "$0")/copy16.cu" "$src"  # the kernel interfere_common.py runs
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
  "$nvcc" --version | tail -2
  "$nvcc" -arch=sm_90 -cubin -Xptxas -v -o /dev/null "$src" 2>&1
} | tee "$out/copy_kernel_resources.txt"
