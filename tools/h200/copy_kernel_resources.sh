#!/usr/bin/env bash
# The resources of the H200 interference microbenchmark's copy kernel (copy16 of
# ../shared/calibration/h200/interfere.py, verbatim below): registers per thread and
# shared memory, from ptxas for sm_90, as the driver's JIT would build it. Writes
# OUTDIR/copy_kernel_resources.txt.   usage: tools/h200/copy_kernel_resources.sh OUTDIR
set -euo pipefail
out="${1:?usage: copy_kernel_resources.sh OUTDIR}"
mkdir -p "$out"
src="$(mktemp -d)/copy16.cu"
cat > "$src" <<'CU'
extern "C" __global__ void copy16(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    int4 a = src[i]; int4 b = src[i + stride]; int4 c = src[i + 2 * stride]; int4 d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d; }
  for (; i < n16; i += stride) dst[i] = src[i];
}
CU
nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
  "$nvcc" --version | tail -2
  "$nvcc" -arch=sm_90 -cubin -Xptxas -v -o /dev/null "$src" 2>&1
} | tee "$out/copy_kernel_resources.txt"
