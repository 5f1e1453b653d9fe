// What one NCCL-like channel CTA moves per second with 1 or 2 sources and 1, 2 or 3
// destinations (issue 42 item 2: on 4 H200s NCCL's ring all-gather channel moves 19.7
// GB/s of bus bandwidth and its reduce-scatter channel 25.7, nccl_ring_channels_4gpu.csv
// at 1 channel; an all-gather step loads a byte and stores it twice (the output and the
// next GPU's buffer), a reduce-scatter step loads two and stores one; the model's channel
// CTA runs the all-gather at twice its reduce-scatter's rate).
//
// One CTA of 512 threads (NCCL's Simple protocol) on one SM, alone on the GPU, runs
// NCCL's reduceCopy pattern over `bytes`: each thread loads UNROLL 16-byte elements from
// every source, adds them, and stores the sum to every destination, then moves on by the
// CTA's stride. All buffers are on this GPU (no NVLink, no flags): what the SM's own
// load and store path costs. Buffers of 4 MiB (L2-resident after a warm pass) and of
// 256 MiB (DRAM). Rate = bytes processed (one destination's worth) per second.
#include "h200_common.cuh"

template <int NSRC, int NDST, int UNROLL>
__global__ void __launch_bounds__(512) reduce_copy(const int4* __restrict__ s0, const int4* __restrict__ s1,
                                                   int4* __restrict__ d0, int4* __restrict__ d1,
                                                   int4* __restrict__ d2, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x * UNROLL;
  for (size_t base = size_t(blockIdx.x) * blockDim.x * UNROLL + threadIdx.x; base < n; base += stride) {
    int4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const size_t i = base + size_t(u) * blockDim.x;
      v[u] = i < n ? __ldcg(s0 + i) : make_int4(0, 0, 0, 0);
    }
    if (NSRC > 1) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const size_t i = base + size_t(u) * blockDim.x;
        if (i < n) {
          const int4 w = __ldcg(s1 + i);
          v[u].x += w.x;
          v[u].y += w.y;
          v[u].z += w.z;
          v[u].w += w.w;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const size_t i = base + size_t(u) * blockDim.x;
      if (i < n) {
        __stcg(d0 + i, v[u]);
        if (NDST > 1) __stcg(d1 + i, v[u]);
        if (NDST > 2) __stcg(d2 + i, v[u]);
      }
    }
  }
}

template <int NSRC, int NDST, int UNROLL>
void run(const char* what, int ctas, size_t bytes, int4* const* buf) {
  const size_t n = bytes / sizeof(int4);
  auto launch = [&] { reduce_copy<NSRC, NDST, UNROLL><<<ctas, 512>>>(buf[0], buf[1], buf[2], buf[3], buf[4], n); };
  launch();  // warm (and, for 4 MiB, into the L2)
  CK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const int reps = bytes <= (8u << 20) ? 50 : 3;
  std::vector<float> ms(reps);
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms[r], a, b));
  }
  std::sort(ms.begin(), ms.end());
  const float med = ms[reps / 2];
  const double gbps = bytes / (med * 1e-3) / 1e9;
  printf("%s,%d,%d,%d,%d,%zu,%.2f,%.2f,%.2f,%.2f\n", what, NSRC, NDST, UNROLL, ctas, bytes >> 20, med * 1e3, gbps,
         gbps * NSRC, gbps * NDST);
  fflush(stdout);
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
}

template <int U>
void all_patterns(int ctas, size_t bytes, int4* const* buf) {
  run<1, 1, U>("copy", ctas, bytes, buf);
  run<2, 1, U>("reduce_scatter_step", ctas, bytes, buf);
  run<1, 2, U>("all_gather_step", ctas, bytes, buf);
  run<2, 2, U>("all_reduce_step", ctas, bytes, buf);
  run<1, 3, U>("one_to_three", ctas, bytes, buf);
}

int main() {
  const size_t big = 256ull << 20, small = 4ull << 20;
  int4* buf[5];
  for (auto& p : buf) p = reinterpret_cast<int4*>(device_bytes(big, 1));
  printf("pattern,sources,destinations,unroll,ctas,MiB,us,GBps_per_dst_byte,load_GBps,store_GBps\n");
  for (size_t bytes : {small, big}) {
    for (int ctas : {1, 2}) {
      all_patterns<1>(ctas, bytes, buf);
      all_patterns<4>(ctas, bytes, buf);
      all_patterns<8>(ctas, bytes, buf);
    }
  }
  return 0;
}
