// Which of a copy kernel's paths does a cuBLAS GEMM beside it starve (issue 41)?
// copy_residency.cu: beside a GEMM the copy's 24 CTAs stay resident but move ~4-5x less;
// copy_contention.cu: plain L2 readers, tensor-core work and shallow TMA readers do not
// do that, deep TMA readers and DRAM-saturating ones do, less. Here the copy (24 CTAs x
// 512 threads, 4 x 16 B per thread in flight, as interfere.py's copy16) is split into its
// parts, each beside back-to-back GEMMs (gpt3.op.tp32 and palm.fc2.tp32, fp16, cuBLAS,
// the layout torch.mm(A, W.t()) uses), queued first:
//   copy        64 MiB DRAM -> DRAM (the reference)
//   read        the loads only (64 MiB from DRAM)
//   write       the stores only (64 MiB)
//   copy_l2     a copy between two 2 MiB buffers, reused (L2-resident unless evicted)
//   read_l2     the loads only, of a 2 MiB buffer reused
//   tma_read    the loads as 32 KiB bulk copies (TMA) into 4 shared-memory stages, 24 CTAs
// and a one-thread pointer chase over 1 MiB (L2 hits). Prints CSV.
//   nvcc -O3 -arch=sm_90 -o copy_paths copy_paths.cu -lcublas && ./copy_paths

#include "h200_common.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

// mode 0 copy, 1 loads only, 2 stores only. Index i of the 64 MiB stream touches
// element (i & mask) of src / dst (mask: all ones, or a small buffer reused).
template <int Mode>
__global__ void part(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16,
                     unsigned long long mask, int4* sink, unsigned long long* stamps) {
  if (threadIdx.x == 0) stamps[2 * blockIdx.x] = gtime();
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  int4 acc = make_int4(0, 0, 0, 0);
  const int4 v = make_int4(1, 2, 3, (int)i);
  for (; i + 3 * stride < n16; i += 4 * stride) {
    if (Mode == 0) {
      int4 a = src[i & mask]; int4 b = src[(i + stride) & mask]; int4 c = src[(i + 2 * stride) & mask];
      int4 d = src[(i + 3 * stride) & mask];
      dst[i & mask] = a; dst[(i + stride) & mask] = b; dst[(i + 2 * stride) & mask] = c;
      dst[(i + 3 * stride) & mask] = d;
    } else if (Mode == 1) {
      int4 a = src[i & mask]; int4 b = src[(i + stride) & mask]; int4 c = src[(i + 2 * stride) & mask];
      int4 d = src[(i + 3 * stride) & mask];
      acc.x ^= a.x ^ b.x ^ c.x ^ d.x; acc.y ^= a.y ^ b.y; acc.z ^= c.z ^ d.z; acc.w ^= a.w ^ d.w;
    } else {
      dst[i & mask] = v; dst[(i + stride) & mask] = v; dst[(i + 2 * stride) & mask] = v;
      dst[(i + 3 * stride) & mask] = v;
    }
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678) sink[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = gtime();
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// The loads as bulk asynchronous copies (cp.async.bulk, TMA) of 32 KiB into 4 shared-memory
// stages per CTA (128 threads), each CTA walking its share of the 64 MiB: a copy kernel's
// reads done the way a Hopper GEMM loads its operands.
constexpr unsigned kChunk = 32768;
__global__ void tma_read(const char* __restrict__ src, unsigned long long bytes, int* sink, unsigned long long* stamps) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) unsigned long long bar[4];
  const int stages = 4;
  if (threadIdx.x == 0) {
    stamps[2 * blockIdx.x] = gtime();
    for (int s = 0; s < stages; ++s) asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(smem_addr(&bar[s])));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  const int chunks = int(bytes / kChunk / gridDim.x);
  auto issue = [&](int i) {
    const int s = i % stages;
    const unsigned long long c = (unsigned long long)i * gridDim.x + blockIdx.x;
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(smem_addr(&bar[s])), "r"(kChunk));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(smem + s * kChunk)),
                 "l"(src + c * kChunk), "r"(kChunk), "r"(smem_addr(&bar[s]))
                 : "memory");
  };
  if (threadIdx.x == 0)
    for (int i = 0; i < stages && i < chunks; ++i) issue(i);
  int acc = 0;
  for (int i = 0; i < chunks; ++i) {
    const int s = i % stages;
    const unsigned phase = (i / stages) & 1;
    unsigned done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done)
                   : "r"(smem_addr(&bar[s])), "r"(phase)
                   : "memory");
    acc += smem[s * kChunk + threadIdx.x * 4];
    __syncthreads();
    if (threadIdx.x == 0 && i + stages < chunks) issue(i + stages);
  }
  if (acc == 0x7fffffff) sink[0] = acc;
  __syncthreads();
  if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = gtime();
}

__global__ void chase(const unsigned* __restrict__ next, unsigned long long hops, unsigned long long* out) {
  unsigned j = 0;
  const unsigned long long t0 = gtime();
  for (unsigned long long h = 0; h < hops; ++h) j = __ldcg(next + j);
  out[0] = t0;
  out[1] = gtime();
  out[2] = j;
}
__global__ void stamp(unsigned long long* at) { *at = gtime(); }

constexpr int kCtas = 24, kThreads = 512;
constexpr size_t kBytes = 64ull << 20;

int main() {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  cudaStream_t gs, cs;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  cublasSetStream(h, gs);
  int4 *src, *dst, *sink;
  unsigned long long *stamps, *marks, *chase_out;
  const int max_launches = 3000;
  CK(cudaMalloc(&src, kBytes));
  CK(cudaMalloc(&dst, kBytes));
  CK(cudaMemset(src, 1, kBytes));
  CK(cudaMalloc(&sink, 1024 * 16));
  CK(cudaMalloc(&stamps, 8ull * 2 * kCtas * max_launches));
  CK(cudaMalloc(&marks, 64 * 8));
  CK(cudaMalloc(&chase_out, 3 * 8));
  const size_t cbytes = 1ull << 20, lines = cbytes / 128;
  std::vector<unsigned> perm(lines), next(cbytes / 4, 0);
  std::iota(perm.begin(), perm.end(), 0u);
  std::mt19937_64 rng(7);
  std::shuffle(perm.begin() + 1, perm.end(), rng);
  for (size_t i = 0; i < lines; ++i) next[size_t(perm[i]) * 32] = perm[(i + 1) % lines] * 32;
  unsigned* chain;
  CK(cudaMalloc(&chain, cbytes));
  CK(cudaMemcpy(chain, next.data(), cbytes, cudaMemcpyHostToDevice));

  const unsigned long long all = ~0ull, small = (2ull << 20) / 16 - 1;
  auto launch_part = [&](const std::string& p, int k) {
    unsigned long long* st = stamps + 2 * kCtas * k;
    if (p == "copy") part<0><<<kCtas, kThreads, 0, cs>>>(src, dst, kBytes / 16, all, sink, st);
    else if (p == "read") part<1><<<kCtas, kThreads, 0, cs>>>(src, dst, kBytes / 16, all, sink, st);
    else if (p == "write") part<2><<<kCtas, kThreads, 0, cs>>>(src, dst, kBytes / 16, all, sink, st);
    else if (p == "read_l2") part<1><<<kCtas, kThreads, 0, cs>>>(src, dst, kBytes / 16, small, sink, st);
    else if (p == "tma_read") tma_read<<<kCtas, 128, 4 * kChunk, cs>>>((const char*)src, kBytes, (int*)sink, st);
    else part<0><<<kCtas, kThreads, 0, cs>>>(src, dst, kBytes / 16, small, sink, st);
  };
  auto rate = [&](int n_c, unsigned long long w0, unsigned long long w1, int* in, double* run_us) {
    std::vector<unsigned long long> st(2ull * kCtas * n_c);
    CK(cudaMemcpy(st.data(), stamps, st.size() * 8, cudaMemcpyDeviceToHost));
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
      if (smin < w0 || emax > w1) continue;
      if (n == 0) first = smin;
      last = emax;
      ++n;
      run += r / kCtas;
    }
    *in = n;
    *run_us = n ? run / n / 1e3 : 0;
    return n > 1 ? double(kBytes) * (n - 1) / double(last - first) * (double(n) / (n - 1)) : 0.0;
  };
  printf("gemm,part,gemm_alone_us,gemm_us,gemm_slowdown,part_alone_GBps,part_during_GBps,ratio,cta_run_alone_us,"
         "cta_run_during_us,launches_in_window\n");
  // Parts alone.
  std::vector<std::string> parts = {"copy", "read", "write", "copy_l2", "read_l2", "tma_read"};
  CK(cudaFuncSetAttribute(tma_read, cudaFuncAttributeMaxDynamicSharedMemorySize, 4 * kChunk));
  std::vector<double> alone_GBps, alone_run;
  for (const auto& p : parts) {
    for (int k = 0; k < 30; ++k) launch_part(p, k);
    CK(cudaDeviceSynchronize());
    int n;
    double run;
    alone_GBps.push_back(rate(30, 0, ~0ull, &n, &run));
    alone_run.push_back(run);
  }
  for (const Shape& sh : {Shape{"gpt3.op.tp32", 2048, 12288, 384}, Shape{"palm.fc2.tp32", 2048, 18432, 2304}}) {
    const TorchMmGemm gemm(h, sh);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 50; ++i) gemm();  // also cuBLAS's first-call allocations (they synchronize)
    CK(cudaDeviceSynchronize());
    float ms;
    auto gemms = [&](int n) {
      CK(cudaEventRecord(e0, gs));
      for (int i = 0; i < n; ++i) gemm();
      CK(cudaEventRecord(e1, gs));
    };
    gemms(50);
    CK(cudaDeviceSynchronize());
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const int n_g = std::max(50, int(20000.0 / (ms * 1e3 / 50)));
    for (size_t pi = 0; pi <= parts.size(); ++pi) {
      gemms(n_g);
      CK(cudaDeviceSynchronize());
      CK(cudaEventElapsedTime(&ms, e0, e1));
      const double g_alone = ms * 1e3 / n_g;
      CK(cudaMemset(marks, 0, 64 * 8));
      unsigned long long hops = 0;
      int n_c = 0;
      if (pi < parts.size()) {
        n_c = std::min(max_launches, int(n_g * g_alone / 50.0) + 8);
        for (int k = 0; k < n_c; ++k) launch_part(parts[pi], k);
      } else {
        hops = (unsigned long long)(n_g * g_alone * 1e3 * 0.3 / 300.0);
        chase<<<1, 1, 0, cs>>>(chain, hops, chase_out);
      }
      stamp<<<1, 1, 0, gs>>>(marks);
      gemms(n_g);
      stamp<<<1, 1, 0, gs>>>(marks + 1);
      CK(cudaDeviceSynchronize());
      CK(cudaGetLastError());
      CK(cudaEventElapsedTime(&ms, e0, e1));
      const double g_us = ms * 1e3 / n_g;
      unsigned long long w[2];
      CK(cudaMemcpy(w, marks, sizeof w, cudaMemcpyDeviceToHost));
      if (pi < parts.size()) {
        int n;
        double run;
        const double during = rate(n_c, w[0], w[1], &n, &run);
        printf("%s,%s,%.2f,%.2f,%.4f,%.1f,%.1f,%.3f,%.2f,%.2f,%d\n", sh.name, parts[pi].c_str(), g_alone, g_us,
               g_us / g_alone, alone_GBps[pi], during, during / alone_GBps[pi], alone_run[pi], run, n);
      } else {
        unsigned long long o[3];
        CK(cudaMemcpy(o, chase_out, sizeof o, cudaMemcpyDeviceToHost));
        printf("%s,chase_l2_1MiB_ns_per_hop,%.2f,%.2f,%.4f,,%.1f,,,,\n", sh.name, g_alone, g_us, g_us / g_alone,
               double(o[1] - o[0]) / hops);
      }
      fflush(stdout);
    }
  }
  unsigned long long o[3];
  chase<<<1, 1>>>(chain, 20000, chase_out);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(o, chase_out, sizeof o, cudaMemcpyDeviceToHost));
  printf("none,chase_l2_1MiB_ns_per_hop,,,,,%.1f,,,,\n", double(o[1] - o[0]) / 20000);
  return 0;
}
