// What in a GEMM starves a copy kernel beside it (issue 41)? copy_residency.cu found the
// copy's CTAs resident the whole time but each moving ~4x less beside a cuBLAS GEMM,
// while a plain load kernel reading the L2 at 4-6.5 TB/s on the other SMs left the copy
// at its alone rate. This program puts the same copy (interfere.py's copy16, 24 CTAs x
// 512 threads, 64 MiB, queued first) beside kernels that each have one property of the
// GEMM, on the other 108 SMs:
//   tma_l2 / tma_dram  bulk asynchronous copies into shared memory (cp.async.bulk, the
//                      TMA path cuBLAS's Hopper kernels load A and B with), 1 CTA per SM,
//                      STAGES x 32 KiB in flight, from an L2-resident 16 MiB or a 1 GiB
//                      buffer;
//   lsu_l2             plain 16 B loads (ld.global.cg) of the 16 MiB buffer (reference);
//   lsu_deep_l2        the same with 4 or 8 loads in flight per thread (`stages`), 1024
//                      threads per SM: 64 or 128 KiB in flight per SM, as deep as TMA;
//   tma_* with sub     the same bytes in flight as smaller bulk requests (1 KiB each);
//   mma                tensor-core work only (mma.sync m16n8k16, no memory): power and
//                      clock without traffic.
// For each: the copy's bandwidth and CTA run time, the kernel's own rate, and a
// one-thread pointer chase's latency (L2-resident chain) beside it. Prints CSV.
//   nvcc -O3 -arch=sm_90 -o copy_contention copy_contention.cu && ./copy_contention

#include "h200_common.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>


__global__ void chase(const unsigned* __restrict__ next, unsigned long long hops, unsigned long long* out) {
  unsigned j = 0;
  const unsigned long long t0 = gtime();
  for (unsigned long long h = 0; h < hops; ++h) j = __ldcg(next + j);
  out[0] = t0;
  out[1] = gtime();
  out[2] = j;
}

__global__ void lsu_reader(const int4* __restrict__ src, unsigned long long n16, int reps, int4* sink,
                           unsigned long long* stamps) {
  if (threadIdx.x == 0 && blockIdx.x == 0) stamps[0] = gtime();
  int4 acc = make_int4(0, 0, 0, 0);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (int r = 0; r < reps; ++r)
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
      const int4 v = __ldcg(src + i);
      acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
    }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678) sink[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(stamps + 1, gtime());
}

// Plain loads, U independent 16 B loads in flight per thread (the copy issues 4).
template <int U>
__global__ void lsu_deep_reader(const int4* __restrict__ src, unsigned long long n16, int reps, int4* sink,
                                unsigned long long* stamps) {
  if (threadIdx.x == 0 && blockIdx.x == 0) stamps[0] = gtime();
  int4 acc = make_int4(0, 0, 0, 0);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (int r = 0; r < reps; ++r)
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i + (U - 1) * stride < n16;
         i += U * stride) {
      int4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = __ldcg(src + i + u * stride);
#pragma unroll
      for (int u = 0; u < U; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w; }
    }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678) sink[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(stamps + 1, gtime());
}

// Tensor-core work without memory traffic: each warp runs `iters` x 8 independent
// m16n8k16 fp16 MMAs.
__global__ void mma_burn(int iters, float* sink, unsigned long long* stamps) {
  if (threadIdx.x == 0 && blockIdx.x == 0) stamps[0] = gtime();
  unsigned a0 = threadIdx.x, a1 = a0 * 3, a2 = a0 * 5, a3 = a0 * 7, b0 = a0 * 11, b1 = a0 * 13;
  float d[8][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < 8; ++k)
      mma_m16n8k16(d[k], a0, a1, a2, a3, b0, b1);
  }
  float s = 0;
  for (int k = 0; k < 8; ++k) s += d[k][0] + d[k][1] + d[k][2] + d[k][3];
  if (s == 1234.5f) sink[0] = s;
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(stamps + 1, gtime());
}

constexpr int kCtas = 24, kThreads = 512;
constexpr size_t kCopyBytes = 64ull << 20;

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t ks, cs;
  CK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  int4 *src, *dst, *sink;
  char* rbuf;
  unsigned long long *stamps, *marks, *chase_out;
  const int max_copies = 2000;
  CK(cudaMalloc(&src, kCopyBytes));
  CK(cudaMalloc(&dst, kCopyBytes));
  CK(cudaMemset(src, 1, kCopyBytes));
  CK(cudaMalloc(&stamps, 8ull * 2 * kCtas * max_copies));
  CK(cudaMalloc(&marks, 64 * 8));
  CK(cudaMalloc(&chase_out, 3 * 8));
  CK(cudaMalloc(&rbuf, 1ull << 30));
  CK(cudaMemset(rbuf, 0, 1ull << 30));
  CK(cudaMalloc(&sink, 1024 * 16));
  // The chase chain: 4 MiB, 128 B per hop, a random cycle.
  const size_t cbytes = 4ull << 20, lines = cbytes / 128;
  std::vector<unsigned> perm(lines), next(cbytes / 4, 0);
  std::iota(perm.begin(), perm.end(), 0u);
  std::mt19937_64 rng(7);
  std::shuffle(perm.begin() + 1, perm.end(), rng);
  for (size_t i = 0; i < lines; ++i) next[size_t(perm[i]) * 32] = perm[(i + 1) % lines] * 32;
  unsigned* chain;
  CK(cudaMalloc(&chain, cbytes));
  CK(cudaMemcpy(chain, next.data(), cbytes, cudaMemcpyHostToDevice));
  CK(cudaFuncSetAttribute(bulk_reader, cudaFuncAttributeMaxDynamicSharedMemorySize, 6 * kBulkChunk));

  printf("interferer,stages,sub_bytes,interferer_GBps,interferer_us,copies_in_window,copy_cta_run_us,copy_GBps,chase_ns_per_hop\n");
  // stages: TMA stages of 32 KiB, or loads in flight per thread for lsu_deep_l2; sub: bytes per
  // bulk request.
  struct Case { const char* name; int stages; unsigned sub; };
  const Case cases[] = {{"none", 0, 0},          {"lsu_l2", 0, 0},          {"tma_l2", 2, kBulkChunk},
                        {"tma_l2", 4, kBulkChunk},   {"tma_l2", 6, kBulkChunk},     {"tma_l2", 6, 1024},
                        {"tma_l2", 4, 1024},     {"lsu_deep_l2", 4, 0},     {"lsu_deep_l2", 8, 0},
                        {"tma_dram", 4, kBulkChunk}, {"tma_dram", 6, kBulkChunk},   {"tma_dram", 6, 1024},
                        {"mma", 0, 0}};
  const int rctas = sms - kCtas;
  for (const Case& c : cases) {
    auto launch = [&](unsigned long long* st) {
      const std::string n = c.name;
      if (n == "lsu_l2") {
        lsu_reader<<<2 * rctas, 512, 0, ks>>>(reinterpret_cast<int4*>(rbuf), (16ull << 20) / 16, 3000, sink, st);
      } else if (n == "tma_l2") {
        bulk_reader<<<rctas, 128, c.stages * kBulkChunk, ks>>>(rbuf, 16ull << 20, 20000, c.stages, c.sub, st, (int*)sink);
      } else if (n == "lsu_deep_l2" && c.stages == 4) {
        lsu_deep_reader<4><<<rctas, 1024, 0, ks>>>(reinterpret_cast<int4*>(rbuf), (16ull << 20) / 16, 3000, sink, st);
      } else if (n == "lsu_deep_l2") {
        lsu_deep_reader<8><<<rctas, 1024, 0, ks>>>(reinterpret_cast<int4*>(rbuf), (16ull << 20) / 16, 3000, sink, st);
      } else if (n == "tma_dram") {
        bulk_reader<<<rctas, 128, c.stages * kBulkChunk, ks>>>(rbuf, 1ull << 30, 4000, c.stages, c.sub, st, (int*)sink);
      } else if (n == "mma") {
        mma_burn<<<rctas * 2, 512, 0, ks>>>(40000, (float*)sink, st);
      }
    };
    const unsigned long long bytes_moved =
        std::string(c.name) == "lsu_l2" || std::string(c.name) == "lsu_deep_l2" ? (16ull << 20) * 3000
        : std::string(c.name) == "tma_l2" ? 20000ull * kBulkChunk * rctas
        : std::string(c.name) == "tma_dram" ? 4000ull * kBulkChunk * rctas : 0;
    if (std::string(c.name) != "none") {  // warm (and the buffer into the L2)
      CK(cudaMemset(marks, 0, 64 * 8));
      launch(marks + 8);
      CK(cudaDeviceSynchronize());
      CK(cudaGetLastError());
    }
    // Alone: the interferer's own time.
    CK(cudaMemset(marks, 0, 64 * 8));
    launch(marks);
    CK(cudaDeviceSynchronize());
    unsigned long long w[2];
    CK(cudaMemcpy(w, marks, sizeof w, cudaMemcpyDeviceToHost));
    const double alone_us = std::string(c.name) == "none" ? 10000.0 : (w[1] - w[0]) / 1e3;
    // The copies first, then the interferer, then the chase on a third stream... the
    // chase needs an SM: it goes first, with the copies.
    const int n_c = std::min(max_copies, int(alone_us / 60.0 * 1.5) + 8);
    const unsigned long long hops = (unsigned long long)(alone_us * 1e3 * 0.5 / 300.0);
    CK(cudaMemset(marks, 0, 64 * 8));
    chase<<<1, 1, 0, 0>>>(chain, hops, chase_out);
    for (int k = 0; k < n_c; ++k)
      copy16<<<kCtas, kThreads, 0, cs>>>(src, dst, kCopyBytes / 16, stamps + 2 * kCtas * k);
    if (std::string(c.name) != "none") launch(marks);
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    CK(cudaMemcpy(w, marks, sizeof w, cudaMemcpyDeviceToHost));
    std::vector<unsigned long long> st(2ull * kCtas * n_c);
    CK(cudaMemcpy(st.data(), stamps, st.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long co[3];
    CK(cudaMemcpy(co, chase_out, sizeof co, cudaMemcpyDeviceToHost));
    if (std::string(c.name) == "none") { w[0] = 0; w[1] = ~0ull; }
    int n = 0;
    double run = 0;
    unsigned long long first = 0, last = 0;
    for (int k = 0; k < n_c; ++k) {
      unsigned long long smin = ~0ull, emax = 0;
      double r = 0;
      for (int j = 0; j < kCtas; ++j) {
        smin = std::min(smin, st[2 * (kCtas * k + j)]);
        emax = std::max(emax, st[2 * (kCtas * k + j) + 1]);
        r += double(st[2 * (kCtas * k + j) + 1] - st[2 * (kCtas * k + j)]);
      }
      if (smin < w[0] || emax > w[1]) continue;
      if (n == 0) first = smin;
      last = emax;
      ++n;
      run += r / kCtas;
    }
    const double during_us = std::string(c.name) == "none" ? 0 : (w[1] - w[0]) / 1e3;
    printf("%s,%d,%u,%.1f,%.1f,%d,%.2f,%.1f,%.1f\n", c.name, c.stages, c.sub,
           bytes_moved && during_us > 0 ? bytes_moved / (during_us * 1e3) : 0.0, during_us, n,
           n ? run / n / 1e3 : 0.0, n > 1 ? double(kCopyBytes) * n / double(last - first) : 0.0,
           double(co[1] - co[0]) / double(hops));
    fflush(stdout);
  }
  return 0;
}
