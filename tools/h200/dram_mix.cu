// What does a stream of DRAM writes cost the reads beside it (issue 41)? In the model a
// back-to-back GEMM is 22 % slower than its first (its predecessor's dirty C lines go to
// DRAM as it runs: 1.1 TB/s of write-backs under 0.13 TB/s of fills), and the memory
// controller's write queue sets how much: with 32 entries (high/low watermarks 24/8) it
// drains writes ~150 times per channel per GEMM and the fills wait; with 128 (96/32) the
// penalty is 14 %. On the H200 a dirty L2 costs the GEMM nothing (gemm_steady.csv). This
// measures the mechanism directly, no GEMM: DRAM writers (grid-stride int4 stores over
// 4 GiB, W CTAs of 512 threads) and DRAM readers (int4 L2-only loads over another 4 GiB,
// R CTAs) for 30 ms each, alone and together, with a one-thread pointer chase over a
// 2 GiB chain (every hop a DRAM miss) beside them, started with them.
//
// A second table does the same with scattered writers: each half-warp writes one 256 B
// segment at a pseudo-random 256 B-aligned offset per iteration (the order in which a
// cache writes back evicted lines is not a stream), so the controller finds few row hits.
//
// Prints CSV: pattern,readers,writers,read_GBps,write_GBps,chase_ns_per_hop  (median of 3)
//   nvcc -O3 -arch=sm_90 -o dram_mix dram_mix.cu

#include <algorithm>
#include <cstdio>
#include <vector>

#include "h200_common.cuh"

__global__ void chase(const unsigned* __restrict__ next, unsigned long long hops, unsigned long long* out) {
  unsigned j = 0;
  const unsigned long long t0 = gtime();
  for (unsigned long long h = 0; h < hops; ++h) j = __ldcg(next + j);
  out[0] = gtime() - t0;
  out[1] = j;
}

// Scattered writes: per iteration, each half-warp stores 16 x 16 B to a 256 B segment
// chosen by a hash of (thread group, iteration) over `n` int4 elements.
__global__ void __launch_bounds__(512) scattered_writer(int4* buf, size_t n, unsigned long long ns, unsigned long long* moved) {
  unsigned long long iters = 0;
  const unsigned long long t0 = gtime();
  const size_t segments = n / 16;
  const unsigned long long group = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 16;
  const unsigned lane = threadIdx.x % 16;
  while (gtime() - t0 < ns) {
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      unsigned long long x = (group * 8 + u) * 0x9E3779B97F4A7C15ull + iters * 0xBF58476D1CE4E5B9ull;
      x ^= x >> 31;
      x *= 0x94D049BB133111EBull;
      x ^= x >> 29;
      buf[(x % segments) * 16 + lane] = make_int4(u, 0, 0, 0);
    }
    ++iters;
  }
  atomicAdd(moved, iters * 8 * sizeof(int4));
}

int main() {
  const size_t buf_bytes = size_t(4) << 30;
  int4* rbuf = reinterpret_cast<int4*>(device_bytes(buf_bytes, 1));
  int4* wbuf = reinterpret_cast<int4*>(device_bytes(buf_bytes, 2));
  const size_t n16 = buf_bytes / 16;
  unsigned* chain = make_chain(size_t(2) << 30);
  unsigned long long *moved, *out;
  int4* sink;
  CK(cudaMalloc(&moved, 2 * 8));
  CK(cudaMalloc(&out, 2 * 8));
  CK(cudaMalloc(&sink, 64));
  cudaStream_t rs, ws, cs;
  CK(cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ws, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  const unsigned long long ns = 30000000;  // 30 ms of traffic
  const unsigned long long hops = 20000;   // ~7-20 ms of chase
  struct Case {
    int readers, writers;
  };
  const Case cases[] = {{0, 0},    {0, 4},     {0, 8},     {0, 16},    {0, 33},   {0, 66},   {0, 132},
                        {0, 264},  {4, 0},     {16, 0},    {66, 0},    {264, 0},  {16, 16},  {66, 16},
                        {16, 66},  {132, 132}, {66, 198},  {198, 66},  {264, 264}};
  // Warm-up: touch everything once.
  traffic_writer<<<264, 512, 0, ws>>>(wbuf, n16, 5000000, moved);
  traffic_reader<4><<<264, 512, 0, rs>>>(rbuf, n16, 5000000, sink, moved + 1);
  CK(cudaDeviceSynchronize());
  printf("pattern,readers,writers,read_GBps,write_GBps,chase_ns_per_hop\n");
  for (int scattered = 0; scattered < 2; ++scattered)
  for (const Case& c : cases) {
    std::vector<double> rd, wr, ch;
    for (int rep = 0; rep < 3; ++rep) {
      CK(cudaMemset(moved, 0, 2 * 8));
      CK(cudaDeviceSynchronize());
      if (c.writers > 0 && !scattered) traffic_writer<<<c.writers, 512, 0, ws>>>(wbuf, n16, ns, moved);
      if (c.writers > 0 && scattered) scattered_writer<<<c.writers, 512, 0, ws>>>(wbuf, n16, ns, moved);
      if (c.readers > 0) traffic_reader<4><<<c.readers, 512, 0, rs>>>(rbuf, n16, ns, sink, moved + 1);
      chase<<<1, 1, 0, cs>>>(chain, hops, out);
      CK(cudaDeviceSynchronize());
      unsigned long long hm[2], ho[2];
      CK(cudaMemcpy(hm, moved, sizeof hm, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(ho, out, sizeof ho, cudaMemcpyDeviceToHost));
      wr.push_back(double(hm[0]) / (ns * 1e-9) / 1e9);
      rd.push_back(double(hm[1]) / (ns * 1e-9) / 1e9);
      ch.push_back(double(ho[0]) / double(hops));
    }
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    printf("%s,%d,%d,%.1f,%.1f,%.1f\n", scattered ? "scattered" : "stream", c.readers, c.writers, med(rd), med(wr),
           med(ch));
    fflush(stdout);
  }
  return 0;
}
