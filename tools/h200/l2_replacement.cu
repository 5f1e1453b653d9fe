// Which lines does the H200's L2 keep when a buffer a little larger than it is swept
// over and over (issue 41)? Under LRU a cyclic sweep of more than the L2 hits nothing:
// every line is evicted just before it is used again. Under a policy that does not
// evict strictly the oldest (random, or one that protects some lines) part of the buffer
// stays and the sweep's rate falls gradually with the size. This decides what a GEMM
// whose output is about the L2's size (gpt3.op.tp32: 50 MB of C) pays for the previous
// GEMM's dirty lines: the model with LRU writes back all of them (its second GEMM 1.21x
// its first), with random replacement few (1.00x); the machine's costs nothing
// (gemm_steady.csv).
//
// Every SM sweeps a buffer of SIZE bytes in a grid-stride loop (264 CTAs x 512 threads,
// 4 independent 16 B accesses in flight per thread), REPS passes after one warm pass;
// reads are ld.global.cg (L2 only), writes plain stores (the L2 is write-back).
// Prints CSV: op,size_MiB,reps,time_ms,GBps  (median of 3)
//   nvcc -O3 -arch=sm_90 -o l2_replacement l2_replacement.cu

#include <algorithm>
#include <cstdio>
#include <vector>

#include "h200_common.cuh"

__global__ void __launch_bounds__(512) sweep_read(const int4* __restrict__ src, size_t n16, int reps, int4* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (int r = 0; r < reps; ++r) {
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
      const int4 a = __ldcg(src + i), b = __ldcg(src + i + stride), c = __ldcg(src + i + 2 * stride),
                 d = __ldcg(src + i + 3 * stride);
      acc.x ^= a.x ^ b.x ^ c.x ^ d.x;
    }
    for (; i < n16; i += stride) acc.x ^= __ldcg(src + i).x;
  }
  if (acc.x == 0x12345678) sink[0] = acc;
}

__global__ void __launch_bounds__(512) sweep_write(int4* dst, size_t n16, int reps) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (int r = 0; r < reps; ++r) {
    size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
      dst[i] = make_int4(r, 0, 0, 0);
      dst[i + stride] = make_int4(r, 1, 0, 0);
      dst[i + 2 * stride] = make_int4(r, 2, 0, 0);
      dst[i + 3 * stride] = make_int4(r, 3, 0, 0);
    }
    for (; i < n16; i += stride) dst[i] = make_int4(r, 4, 0, 0);
  }
}

int main() {
  const size_t max_bytes = size_t(256) << 20;
  int4* buf = reinterpret_cast<int4*>(device_bytes(max_bytes, 1));
  int4* sink;
  CK(cudaMalloc(&sink, 64));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int sizes_mib[] = {16, 24, 32, 36, 40, 44, 48, 52, 56, 60, 64, 72, 80, 96, 128, 256};
  printf("op,size_MiB,reps,time_ms,GBps\n");
  for (int op = 0; op < 2; ++op) {
    for (int mib : sizes_mib) {
      const size_t bytes = size_t(mib) << 20, n16 = bytes / 16;
      const int reps = std::max(4, int((size_t(4) << 30) / bytes));
      std::vector<float> ms3;
      for (int t = 0; t < 3; ++t) {
        if (op == 0) sweep_read<<<264, 512>>>(buf, n16, 1, sink);
        else sweep_write<<<264, 512>>>(buf, n16, 1);
        CK(cudaEventRecord(e0));
        if (op == 0) sweep_read<<<264, 512>>>(buf, n16, reps, sink);
        else sweep_write<<<264, 512>>>(buf, n16, reps);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ms3.push_back(ms);
      }
      std::sort(ms3.begin(), ms3.end());
      const float ms = ms3[1];
      printf("%s,%d,%d,%.4f,%.1f\n", op == 0 ? "read" : "write", mib, reps, ms, double(bytes) * reps / (ms * 1e-3) / 1e9);
      fflush(stdout);
    }
  }
  return 0;
}
