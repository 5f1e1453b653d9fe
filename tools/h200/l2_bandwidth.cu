// L2 and DRAM read bandwidth of one H200 (issue 41): every SM reads a buffer of SIZE
// bytes with 16 B loads cached in the L2 only (ld.global.cg) in a grid-stride loop, REPS times over, and the kernel's time
// gives the bandwidth. Buffers well under the 50 MB L2 stay in it after the first
// pass (the L2's hit bandwidth); 1 GiB does not (DRAM). Prints CSV.
//   nvcc -O3 -arch=sm_90 -o l2_bandwidth l2_bandwidth.cu && ./l2_bandwidth
#include <cstdio>
#include <cuda_runtime.h>

__global__ void read_all(const int4* __restrict__ src, unsigned long long n16, int reps, int4* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (int r = 0; r < reps; ++r) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
      const int4 v = __ldcg(src + i);  // cache at the L2 only: the L1 would serve repeats
      acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
    }
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678) sink[threadIdx.x] = acc;  // never true for zeros: keeps the loads
}

int main() {
  int sms = 0, clock_khz = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  const size_t max_bytes = 1ull << 30;
  int4 *buf, *sink;
  cudaMalloc(&buf, max_bytes);
  cudaMalloc(&sink, 1024 * sizeof(int4));
  cudaMemset(buf, 0, max_bytes);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  printf("size_bytes,ctas,threads,reps,time_ms,GBps,sms,max_clock_MHz\n");
  const size_t sizes[] = {2ull << 20, 8ull << 20, 16ull << 20, 24ull << 20, 32ull << 20, 40ull << 20, 1ull << 30};
  for (size_t size : sizes) {
    for (int per_sm : {2, 4}) {
      const int ctas = sms * per_sm, threads = 512;
      const int reps = size >= (256ull << 20) ? 4 : int((8ull << 30) / size);
      read_all<<<ctas, threads>>>(buf, size / 16, 1, sink);  // warm: the buffer into the L2
      cudaEventRecord(a);
      read_all<<<ctas, threads>>>(buf, size / 16, reps, sink);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      printf("%zu,%d,%d,%d,%.4f,%.1f,%d,%d\n", size, ctas, threads, reps, ms, double(size) * reps / (ms * 1e-3) / 1e9, sms,
             clock_khz / 1000);
    }
  }
  return 0;
}
