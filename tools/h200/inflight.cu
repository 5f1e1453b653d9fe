// How many bytes of loads one SM keeps in flight (issue 41; the model's
// gpu.cu.max_inflight_load_bytes, its L1 MSHRs). One CTA of 1024 threads, alone on the
// GPU, reads a buffer with U independent 16-byte loads per thread in flight (all issued
// before any is used), U = 1-32: 16 KiB x U requested per SM. The rate rises with U
// while the loads in flight are what the SM allows, then flattens at either the SM's
// data port (80 B per cycle of loads, channel_copy.csv) or its limit on loads in flight
// divided by the latency. A DRAM-sized buffer (1 GiB: every load a miss, ~420 ns
// unloaded) and an L2-resident one (16 MiB, warm) tell the two apart: the port does
// not depend on the latency, the in-flight limit does.
#include "h200_common.cuh"

template <int U>
__global__ void __launch_bounds__(1024) read_u(const int4* __restrict__ buf, size_t n, int iters, int4* sink) {
  const size_t stride = size_t(blockDim.x) * U;
  size_t base = threadIdx.x;
  int4 acc = make_int4(0, 0, 0, 0);
  for (int it = 0; it < iters; ++it) {
    int4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = __ldcg(buf + ((base + size_t(u) * blockDim.x) & (n - 1)));  // n: a power of two
#pragma unroll
    for (int u = 0; u < U; ++u) acc.x ^= v[u].x + v[u].w;
    base = (base + stride) & (n - 1);
  }
  if (acc.x == 0x1234567) sink[0] = acc;
}

template <int U>
void run(const char* what, const int4* buf, size_t bytes, int4* sink) {
  const size_t n = bytes / sizeof(int4);
  const size_t per_iter = size_t(1024) * U * sizeof(int4);
  const int iters = int(std::min<size_t>((256ull << 20) / per_iter, 1u << 20));  // 256 MiB read per run
  read_u<U><<<1, 1024>>>(buf, n, iters, sink);  // warm
  CK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  float best = 1e30f;
  for (int r = 0; r < 3; ++r) {
    CK(cudaEventRecord(a));
    read_u<U><<<1, 1024>>>(buf, n, iters, sink);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    best = std::min(best, ms);
  }
  const double gbps = double(iters) * per_iter / (best * 1e-3) / 1e9;
  printf("%s,%d,%zu,%.3f,%.2f\n", what, U, per_iter >> 10, best, gbps);
  fflush(stdout);
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
}

template <int... Us>
void sweep(const char* what, const int4* buf, size_t bytes, int4* sink) {
  (run<Us>(what, buf, bytes, sink), ...);
}

int main() {
  const size_t big = 1ull << 30, small = 16ull << 20;
  const int4* dram = reinterpret_cast<const int4*>(device_bytes(big, 1));
  const int4* l2 = reinterpret_cast<const int4*>(device_bytes(small, 2));
  int4* sink = reinterpret_cast<int4*>(device_bytes(4096, 0));
  printf("buffer,loads_per_thread,kib_requested_per_sm,ms,GBps\n");
  sweep<1, 2, 3, 4, 6, 8, 12, 16, 24, 32>("dram_1GiB", dram, big, sink);
  sweep<1, 2, 3, 4, 6, 8, 12, 16, 24, 32>("l2_16MiB", l2, small, sink);
  return 0;
}
