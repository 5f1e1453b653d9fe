// Shared by the issue-41 microbenchmarks in tools/h200/: error checking, the GPU clock
// and SM id, and the GEMM they run beside (cuBLAS, fp16, the layout torch.mm(A, W.t())
// uses, as ../shared/calibration/h200/interfere.py does).
#pragma once
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

// Nanoseconds of the GPU's global timer (the same clock on every SM).
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// One lane samples (global timer, SM cycles) every period_ns for n samples
// (clock_response.cu, clock_beside_copy.cu): the clock of the SM it runs on.
__global__ void sampler(unsigned long long* t, long long* c, int n, unsigned long long period_ns) {
  if (threadIdx.x != 0) return;
  const unsigned long long t0 = gtime();
  for (int k = 0; k < n; ++k) {
    const unsigned long long due = t0 + k * period_ns;
    unsigned long long now;
    do now = gtime();
    while (now < due);
    c[k] = clock64();
    t[k] = gtime();
  }
}

// Stamps the global timer (placed in a stream between kernels).
__global__ void marker(unsigned long long* slot) { *slot = gtime(); }

// A Table 2 GEMM shape (interference_2gpu.csv's four).
struct Shape {
  const char* name;
  int M, N, K;
};

// C[M x N] = A[M x K] * W[N x K]^T on `handle`'s stream: column-major C^T (N x M) =
// W (op T of K x N) * A^T (K x M). The operands are zeros (timing only).
struct TorchMmGemm {
  TorchMmGemm(cublasHandle_t handle, const Shape& shape) : h(handle), sh(shape) {
    CK(cudaMalloc(&A, size_t(sh.M) * sh.K * 2));
    CK(cudaMalloc(&W, size_t(sh.N) * sh.K * 2));
    CK(cudaMalloc(&C, size_t(sh.M) * sh.N * 2));
    CK(cudaMemset(A, 0, size_t(sh.M) * sh.K * 2));
    CK(cudaMemset(W, 0, size_t(sh.N) * sh.K * 2));
  }
  ~TorchMmGemm() {
    cudaFree(A);
    cudaFree(W);
    cudaFree(C);
  }
  TorchMmGemm(const TorchMmGemm&) = delete;
  TorchMmGemm& operator=(const TorchMmGemm&) = delete;
  void operator()() const {
    const float alpha = 1.f, beta = 0.f;
    const cublasStatus_t st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.N, sh.M, sh.K, &alpha, W, CUDA_R_16F, sh.K,
                                           A, CUDA_R_16F, sh.K, &beta, C, CUDA_R_16F, sh.N, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
      fprintf(stderr, "cublasGemmEx failed: %d\n", int(st));
      exit(1);
    }
  }
  cublasHandle_t h;
  Shape sh;
  __half *A = nullptr, *W = nullptr, *C = nullptr;
};

// interfere.py's copy16 (int4 loads and stores, 4 per thread in flight), with each CTA's
// start and end stamped (thread 0, after a barrier at the end so the end is the CTA's
// last store issued): stamps[2 b] and stamps[2 b + 1].
// The copy's loop, shared with the kernels that record more of their CTAs (copy_phase.cu).
__device__ __forceinline__ void copy16_loop(const int4* __restrict__ src, int4* __restrict__ dst,
                                            unsigned long long n16) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    int4 a = src[i]; int4 b = src[i + stride]; int4 c = src[i + 2 * stride]; int4 d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
  }
  for (; i < n16; i += stride) dst[i] = src[i];
}
__global__ void copy16(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16,
                       unsigned long long* stamps) {
  if (threadIdx.x == 0) stamps[2 * blockIdx.x] = gtime();
  copy16_loop(src, dst, n16);
  __syncthreads();
  if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = gtime();
}

// Fills n halves with values uniform in [-2, 2) from a hash of the index: the switching
// activity of torch.randn operands (interfere.py), which decides the tensor cores' power
// and so the clock; zeros (TorchMmGemm's default) draw about 40 % less power.
__global__ void fill_random(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    p[i] = __float2half((x & 0xFFFF) / 16384.0f - 2.0f);
  }
}

// A cuBLAS handle whose GEMMs go on `gemm`, and a second stream for what runs beside
// them (both non-blocking).
struct GemmAndSideStreams {
  GemmAndSideStreams() {
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
      fprintf(stderr, "cublasCreate failed\n");
      exit(1);
    }
    CK(cudaStreamCreateWithFlags(&gemm, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    cublasSetStream(handle, gemm);
  }
  cublasHandle_t handle;
  cudaStream_t gemm, side;
};

// The GEMM's operands made random (interfere.py's randn: the power, so the clock, of
// its runs), on `s`, waited for.
inline void randomize_operands(const TorchMmGemm& gemm, cudaStream_t s) {
  fill_random<<<1024, 256, 0, s>>>(gemm.A, size_t(gemm.sh.M) * gemm.sh.K, 1);
  fill_random<<<1024, 256, 0, s>>>(gemm.W, size_t(gemm.sh.N) * gemm.sh.K, 2);
  CK(cudaStreamSynchronize(s));
}

// `ms` of wall time of back-to-back GEMMs on `s` (the clock down at the power cap, as in
// interfere.py's windows). Needs <chrono>.
template <class Gemm>
inline void run_gemms_for(const Gemm& gemm, cudaStream_t s, int ms) {
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(ms)) {
    for (int i = 0; i < 20; ++i) gemm();
    CK(cudaStreamSynchronize(s));
  }
}

constexpr unsigned kBulkChunk = 32768;  // bytes per bulk copy (bulk_reader)

// A shared-memory pointer as the 32-bit shared-space address PTX takes.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Waits until the mbarrier at `bar` has completed phase `phase` (a stage's bulk copy
// landed).
__device__ __forceinline__ void wait_stage(unsigned long long* bar, unsigned phase) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(shared_address(bar)), "r"(phase)
                 : "memory");
}

// The GEMM's kind of load (TMA): each CTA streams `chunks` chunks of 32 KiB (each as
// 32 KiB / `sub` bulk requests; its share of the buffer, wrapping) into
// `stages` shared-memory buffers with cp.async.bulk, thread 0 issuing, all waiting on
// the stage's mbarrier before it is reused.
__global__ void bulk_reader(const char* __restrict__ src, unsigned long long bytes, int chunks, int stages,
                           unsigned sub, unsigned long long* stamps, int* sink) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) unsigned long long bar[8];
  if (threadIdx.x == 0 && blockIdx.x == 0) stamps[0] = gtime();
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(shared_address(&bar[s])));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  const unsigned long long nchunks = bytes / kBulkChunk;
  auto issue = [&](int i) {
    const int s = i % stages;
    const unsigned long long c = ((unsigned long long)blockIdx.x + (unsigned long long)i * gridDim.x) % nchunks;
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(shared_address(&bar[s])), "r"(kBulkChunk));
    for (unsigned o = 0; o < kBulkChunk; o += sub)
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              shared_address(smem + s * kBulkChunk + o)),
          "l"(src + c * kBulkChunk + o), "r"(sub), "r"(shared_address(&bar[s]))
          : "memory");
  };
  if (threadIdx.x == 0)
    for (int i = 0; i < stages && i < chunks; ++i) issue(i);
  int acc = 0;
  for (int i = 0; i < chunks; ++i) {
    const int s = i % stages;
    const unsigned phase = (i / stages) & 1;
    wait_stage(&bar[s], phase);
    acc += smem[s * kBulkChunk + threadIdx.x * 4];
    __syncthreads();
    if (threadIdx.x == 0 && i + stages < chunks) issue(i + stages);
  }
  if (acc == 0x7fffffff) sink[0] = acc;
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(stamps + 1, gtime());
}


// The copies of a stream (`ce[i]` recorded after copy i, i = 1..n) that ended before
// `end`: the first and last of them, and their rate between the first's end and the
// last's (0 with fewer than two).
struct CopiesBefore {
  int first = -1, last = -1;
  double gbps = 0;
};
inline CopiesBefore copies_before(const std::vector<cudaEvent_t>& ce, int n, cudaEvent_t end, size_t bytes) {
  CopiesBefore c;
  for (int i = 1; i <= n; ++i) {
    float to_end = 0;
    CK(cudaEventElapsedTime(&to_end, ce[i], end));
    if (to_end >= 0) {
      if (c.first < 0) c.first = i;
      c.last = i;
    }
  }
  if (c.first > 0 && c.last > c.first) {
    float span = 0;
    CK(cudaEventElapsedTime(&span, ce[c.first], ce[c.last]));
    c.gbps = double(c.last - c.first) * bytes / (span * 1e-3) / 1e9;
  }
  return c;
}

// One pass of 16 B L2-only loads over `n` elements, all the grid's threads, grid-stride
// (l2_after_copy.cu, copy_after_gemm.cu).
__global__ void read_pass(const int4* __restrict__ x, size_t n, int4* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    int4 v;
    asm volatile("ld.global.cg.v4.s32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(x + i));
    acc.x ^= v.x;
  }
  if (acc.x == 0x12345678) sink[0] = acc;
}

// One pass of 16 B stores over `n` elements, grid-stride.
__global__ void write_pass(int4* x, size_t n) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = make_int4(int(i), 1, 2, 3);
}

// A pointer-chase chain on the device: `bytes` of 128 B lines, each line's first word
// the index of the next in a random cyclic permutation (seed 7).
inline unsigned* make_chain(size_t bytes) {
  const size_t lines = bytes / 128, words = bytes / 4;
  std::vector<unsigned> perm(lines);
  std::iota(perm.begin(), perm.end(), 0u);
  std::mt19937_64 rng(7);
  std::shuffle(perm.begin() + 1, perm.end(), rng);
  std::vector<unsigned> next(words, 0);
  for (size_t i = 0; i < lines; ++i) next[size_t(perm[i]) * 32] = perm[(i + 1) % lines] * 32;
  unsigned* d;
  CK(cudaMalloc(&d, bytes));
  CK(cudaMemcpy(d, next.data(), bytes, cudaMemcpyHostToDevice));
  return d;
}


// An asynchronous copy of W bytes (4, 8 or 16) from global into shared memory at the
// shared-space address `smem` (Ampere's cp.async: 16 bytes bypass the L1, smaller ones
// go through it, as CUTLASS issues them).
template <int W>
__device__ __forceinline__ void cp_async_bytes(unsigned smem, const void* gmem) {
  if constexpr (W == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem), "l"(gmem));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(smem), "l"(gmem), "n"(W));
}

// A kernel timed by its CTAs' own cycle counters: `launch(steps)` runs it (each CTA's
// thread 0 writing its clock64 span to cycles[blockIdx.x]), once with `warm_steps` and
// then with `steps`; returns the CTAs' mean cycles and the elapsed milliseconds.
struct CycleTiming {
  double mean_cycles;
  float ms;
};
template <class Launch>
CycleTiming time_in_cycles(Launch launch, int warm_steps, int steps, const unsigned long long* cycles, int ctas) {
  launch(warm_steps);
  CK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a));
  launch(steps);
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms;
  CK(cudaEventElapsedTime(&ms, a, b));
  std::vector<unsigned long long> c(ctas);
  CK(cudaMemcpy(c.data(), cycles, ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  double mean = 0;
  for (auto x : c) mean += double(x) / ctas;
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return {mean, ms};
}

// `bytes` of device memory set to `value` (cudaMemset's byte).
inline char* device_bytes(size_t bytes, int value) {
  char* p;
  CK(cudaMalloc(&p, bytes));
  CK(cudaMemset(p, value, bytes));
  return p;
}

// Memory traffic for `ns` of the global timer (d2d_engine.cu, ce_paths.cu): each thread
// of the grid reads U 16-byte elements (L2-only loads) a grid stride apart per iteration,
// or writes 8, wrapping over `n` elements; `moved` gets the bytes moved.
template <int U>
__global__ void __launch_bounds__(512) traffic_reader(const int4* buf, size_t n, unsigned long long ns, int4* sink, unsigned long long* moved) {
  unsigned long long iters = 0;
  const unsigned long long t0 = gtime();
  int4 acc = make_int4(0, 0, 0, 0);
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  while (gtime() - t0 < ns) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int4 v;
      const int4* p = buf + (i + u * stride) % n;
      asm volatile("ld.global.cg.v4.s32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
      acc.x ^= v.x;
    }
    i = (i + U * stride) % n;
    ++iters;
  }
  if (acc.x == 0x12345678) sink[0] = acc;
  atomicAdd(moved, iters * U * sizeof(int4));
}

__global__ void __launch_bounds__(512) traffic_writer(int4* buf, size_t n, unsigned long long ns, unsigned long long* moved) {
  unsigned long long iters = 0;
  const unsigned long long t0 = gtime();
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  while (gtime() - t0 < ns) {
#pragma unroll
    for (int u = 0; u < 8; ++u) buf[(i + u * stride) % n] = make_int4(u, 0, 0, 0);
    i = (i + 8 * stride) % n;
    ++iters;
  }
  atomicAdd(moved, iters * 8 * sizeof(int4));
}

// One m16n8k16 fp16 MMA with fp32 accumulation (Ampere's mma.sync): d += a * b, the
// operands' register fragments as the instruction takes them.
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                             unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A graph of copies of `piece` bytes from src to dst (UVA: a peer copy when they are on
// different GPUs), over and over, `total` bytes in all: a few launches keep a copy
// engine busy for a whole window without filling the launch queue (ce_footprint.cu,
// ce_read_source.cu).
inline cudaGraphExec_t copy_graph(char* dst, const char* src, size_t piece, size_t total, cudaStream_t s) {
  cudaGraph_t g;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (size_t done = 0; done < total; done += piece) CK(cudaMemcpyAsync(dst, src, piece, cudaMemcpyDefault, s));
  CK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t e;
  CK(cudaGraphInstantiate(&e, g, 0));
  CK(cudaGraphDestroy(g));
  return e;
}

// The SM clock over a window of GEMMs: one warp samples (global timer, cycles) every
// 20 us for 300 ms on its own stream (holding one SM), and markers on the GEMMs' stream
// stamp the window's start and end (clock_beside_copy.cu, ce_read_source.cu).
struct WindowClock {
  static constexpr int kSamples = 15000;
  static constexpr unsigned long long kPeriodNs = 20000;
  WindowClock() {
    CK(cudaMalloc(&t, kSamples * 8));
    CK(cudaMalloc(&c, kSamples * 8));
    CK(cudaMalloc(&marks, 2 * 8));
  }
  // Before the window's first GEMM: the sampler on `samples`, the start mark on `gemms`.
  void open(cudaStream_t samples, cudaStream_t gemms) {
    sampler<<<1, 32, 0, samples>>>(t, c, kSamples, kPeriodNs);
    marker<<<1, 1, 0, gemms>>>(marks);
  }
  void close(cudaStream_t gemms) { marker<<<1, 1, 0, gemms>>>(marks + 1); }
  // After both have run: the mean clock (MHz) from `skip_ns` after the start mark to the
  // end mark; -1 with fewer than two samples there.
  double mhz(unsigned long long skip_ns) const {
    unsigned long long hm[2];
    std::vector<unsigned long long> ht(kSamples);
    std::vector<long long> hc(kSamples);
    CK(cudaMemcpy(hm, marks, sizeof hm, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ht.data(), t, kSamples * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hc.data(), c, kSamples * 8, cudaMemcpyDeviceToHost));
    int first = -1, last = -1;
    for (int i = 0; i < kSamples; ++i) {
      if (first < 0 && ht[i] >= hm[0] + skip_ns) first = i;
      if (ht[i] <= hm[1]) last = i;
    }
    return first >= 0 && last > first ? 1e3 * double(hc[last] - hc[first]) / double(ht[last] - ht[first]) : -1;
  }
  unsigned long long *t = nullptr, *marks = nullptr;
  long long* c = nullptr;
};
