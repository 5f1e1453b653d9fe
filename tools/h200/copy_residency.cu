// Why does an SM copy kernel lose most of its bandwidth beside a cuBLAS GEMM on H200
// (issue 41; ../shared/calibration/h200/interference_2gpu.csv, sm_local_24 rows)?
// Two explanations predict different things, and this program measures both:
//  - block scheduling: the copy's CTAs wait for SMs (they start late, spread out), or
//  - memory contention: the CTAs are resident the whole time and each moves less
//    (its loads take longer).
// It runs interfere.py's copy kernel (copy16: 24 CTAs x 512 threads, 64 MiB, int4
// loads and stores) with every CTA stamping %globaltimer when it starts and ends, beside
// back-to-back cuBLAS GEMMs (the four Table 2 shapes of interference_2gpu.csv, fp16, the
// layout torch.mm(A, W.t()) uses), copies queued first or GEMMs first. A one-thread
// pointer chase measures the load latency (L2 hit, DRAM) alone and beside the GEMMs.
// Beside a plain L2 or DRAM reader kernel on the other SMs, the same copy shows
// whether any heavy read traffic starves it or the GEMM's in particular.
// Prints CSV rows (one per measurement).
//   nvcc -O3 -arch=sm_90 -o copy_residency copy_residency.cu -lcublas && ./copy_residency

#include "h200_common.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>


__global__ void stamp(unsigned long long* at) { *at = gtime(); }

// One thread follows a cyclic chain of 128 B-spaced pointers (a random permutation of
// the buffer's lines), `hops` times; stamps start and end.
__global__ void chase(const unsigned* __restrict__ next, unsigned long long hops, unsigned long long* out) {
  unsigned j = 0;
  const unsigned long long t0 = gtime();
  for (unsigned long long h = 0; h < hops; ++h) j = __ldcg(next + j);
  const unsigned long long t1 = gtime();
  out[0] = t0;
  out[1] = t1;
  out[2] = j;
}

// A plain reader: every thread reads its share of `n16` int4s `reps` times (L2 only).
__global__ void reader(const int4* __restrict__ src, unsigned long long n16, int reps, int4* sink,
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

constexpr int kCtas = 24, kThreads = 512;
constexpr size_t kCopyBytes = 64ull << 20;

struct Copies {
  int4 *src = nullptr, *dst = nullptr;
  unsigned long long* stamps = nullptr;  // [launch][cta][start, end]
  int max_launches = 0;
  void init(int n) {
    max_launches = n;
    CK(cudaMalloc(&src, kCopyBytes));
    CK(cudaMalloc(&dst, kCopyBytes));
    CK(cudaMemset(src, 1, kCopyBytes));
    CK(cudaMalloc(&stamps, sizeof(unsigned long long) * 2 * kCtas * n));
  }
  void launch(int k, cudaStream_t s) {
    copy16<<<kCtas, kThreads, 0, s>>>(src, dst, kCopyBytes / 16, stamps + 2 * kCtas * k);
  }
  std::vector<unsigned long long> fetch(int n) {
    std::vector<unsigned long long> h(2 * kCtas * n);
    CK(cudaMemcpy(h.data(), stamps, h.size() * 8, cudaMemcpyDeviceToHost));
    return h;
  }
};

// Summary of the copies that ran entirely inside [w0, w1] (ns of %globaltimer).
struct CopyStats {
  int n = 0;
  double span_us = 0, start_spread_us = 0, cta_run_us = 0, GBps = 0, resident_fraction = 0;
};
CopyStats summarize(const std::vector<unsigned long long>& st, int launches, unsigned long long w0,
                    unsigned long long w1) {
  CopyStats s;
  double span = 0, spread = 0, run = 0, resident = 0;
  unsigned long long first = 0, last = 0;
  for (int k = 0; k < launches; ++k) {
    unsigned long long smin = ~0ull, smax = 0, emax = 0;
    double r = 0;
    for (int c = 0; c < kCtas; ++c) {
      const unsigned long long a = st[2 * (kCtas * k + c)], b = st[2 * (kCtas * k + c) + 1];
      smin = std::min(smin, a); smax = std::max(smax, a); emax = std::max(emax, b);
      r += double(b - a);
    }
    if (smin < w0 || emax > w1) continue;
    if (s.n == 0) first = smin;
    last = emax;
    ++s.n;
    span += double(emax - smin);
    spread += double(smax - smin);
    run += r / kCtas;
    resident += r / (double(emax - smin) * kCtas);
  }
  if (s.n == 0) return s;
  s.span_us = span / s.n / 1e3;
  s.start_spread_us = spread / s.n / 1e3;
  s.cta_run_us = run / s.n / 1e3;
  s.resident_fraction = resident / s.n;
  s.GBps = double(kCopyBytes) * s.n / double(last - first);
  return s;
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublasCreate failed\n"); return 1; }
  cudaStream_t gs, cs;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  cublasSetStream(h, gs);
  Copies copies;
  copies.init(4000);
  unsigned long long* marks;  // GEMM window: [0] before, [1] after
  CK(cudaMalloc(&marks, 64 * 8));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("measurement,gemm,order,gemm_alone_us,gemm_us,gemm_slowdown,copies_in_window,copy_span_us,"
         "copy_start_spread_us,copy_cta_run_us,copy_resident_fraction,copy_GBps,extra\n");

  // The pointer chases' buffers: 8 MiB (L2-resident) and 2 GiB (DRAM), 128 B per hop.
  unsigned* chain_l2 = make_chain(8ull << 20);
  unsigned* chain_dram = make_chain(2ull << 30);
  unsigned long long* chase_out;
  CK(cudaMalloc(&chase_out, 3 * 8));
  auto chase_ns = [&](unsigned* chain, unsigned long long hops, cudaStream_t s) {
    chase<<<1, 1, 0, s>>>(chain, hops, chase_out);
  };
  auto read_chase = [&](unsigned long long hops, unsigned long long* t0 = nullptr, unsigned long long* t1 = nullptr) {
    unsigned long long o[3];
    CK(cudaMemcpy(o, chase_out, sizeof o, cudaMemcpyDeviceToHost));
    if (t0) *t0 = o[0];
    if (t1) *t1 = o[1];
    return double(o[1] - o[0]) / double(hops);
  };
  // Alone: latency per hop.
  for (int w = 0; w < 2; ++w) { chase_ns(chain_l2, 20000, 0); CK(cudaDeviceSynchronize()); }
  printf("chase_alone,l2_8MiB,alone,,,,,,,,,,%.1f ns/hop\n", read_chase(20000));
  chase_ns(chain_dram, 20000, 0); CK(cudaDeviceSynchronize());
  printf("chase_alone,dram_2GiB,alone,,,,,,,,,,%.1f ns/hop\n", read_chase(20000));

  // Copies alone.
  for (int k = 0; k < 20; ++k) copies.launch(k, cs);
  CK(cudaDeviceSynchronize());
  {
    auto st = copies.fetch(20);
    CopyStats s = summarize(st, 20, 0, ~0ull);
    printf("copy_alone,,alone,,,,%d,%.2f,%.2f,%.2f,%.3f,%.1f,\n", s.n, s.span_us, s.start_spread_us, s.cta_run_us,
           s.resident_fraction, s.GBps);
  }

  const Shape shapes[] = {{"megagpt2.op.tp8", 16384, 3072, 384}, {"tnlg.fc2.tp8", 8192, 4256, 2128},
                          {"gpt3.op.tp32", 2048, 12288, 384}, {"palm.fc2.tp32", 2048, 18432, 2304}};
  for (const Shape& sh : shapes) {
    const TorchMmGemm gemm(h, sh);
    for (int i = 0; i < 50; ++i) gemm();
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0, gs));
    for (int i = 0; i < 50; ++i) gemm();
    CK(cudaEventRecord(e1, gs));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    const double t_g = ms * 1e3 / 50;  // us
    const int n_g = std::max(50, int(30000.0 / t_g));  // ~30 ms of GEMMs
    auto alone = [&]() {
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(e0, gs));
      for (int i = 0; i < n_g; ++i) gemm();
      CK(cudaEventRecord(e1, gs));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms, e0, e1));
      return ms * 1e3 / n_g;
    };
    for (const char* order : {"comm_first", "gemm_first"}) {
      const double g_alone = alone();
      const int n_c = std::min(copies.max_launches, int(1.6 * n_g * g_alone / 60.0) + 4);  // > the window at ~1 TB/s
      CK(cudaMemset(marks, 0, 64 * 8));
      auto launch_gemms = [&]() {
        stamp<<<1, 1, 0, gs>>>(marks);
        CK(cudaEventRecord(e0, gs));
        for (int i = 0; i < n_g; ++i) gemm();
        CK(cudaEventRecord(e1, gs));
        stamp<<<1, 1, 0, gs>>>(marks + 1);
      };
      auto launch_copies = [&]() { for (int k = 0; k < n_c; ++k) copies.launch(k, cs); };
      if (order[0] == 'c') { launch_copies(); launch_gemms(); } else { launch_gemms(); launch_copies(); }
      CK(cudaDeviceSynchronize());
      CK(cudaEventElapsedTime(&ms, e0, e1));
      const double g_us = ms * 1e3 / n_g;
      unsigned long long w[2];
      CK(cudaMemcpy(w, marks, sizeof w, cudaMemcpyDeviceToHost));
      auto st = copies.fetch(n_c);
      CopyStats s = summarize(st, n_c, w[0], w[1]);
      printf("gemm_copy,%s,%s,%.2f,%.2f,%.4f,%d,%.2f,%.2f,%.2f,%.3f,%.1f,n_gemm=%d n_copy=%d\n", sh.name, order, g_alone,
             g_us, g_us / g_alone, s.n, s.span_us, s.start_spread_us, s.cta_run_us, s.resident_fraction, s.GBps, n_g,
             n_c);
      fflush(stdout);
    }
    // Load latency beside the GEMMs: the chase first (it holds one SM), then ~n_g GEMMs.
    for (int which = 0; which < 2; ++which) {
      unsigned* chain = which == 0 ? chain_l2 : chain_dram;
      const double alone_ns = which == 0 ? 250.0 : 700.0;
      const double g_alone = alone();
      const unsigned long long hops = (unsigned long long)(0.8 * n_g * g_alone * 1e3 / (3 * alone_ns));
      CK(cudaMemset(marks, 0, 64 * 8));
      chase_ns(chain, hops, cs);
      stamp<<<1, 1, 0, gs>>>(marks);
      CK(cudaEventRecord(e0, gs));
      for (int i = 0; i < n_g; ++i) gemm();
      CK(cudaEventRecord(e1, gs));
      stamp<<<1, 1, 0, gs>>>(marks + 1);
      CK(cudaDeviceSynchronize());
      CK(cudaEventElapsedTime(&ms, e0, e1));
      unsigned long long t0, t1, w[2];
      const double per_hop = read_chase(hops, &t0, &t1);
      CK(cudaMemcpy(w, marks, sizeof w, cudaMemcpyDeviceToHost));
      printf("chase_beside_gemm,%s,%s,%.2f,%.2f,%.4f,,,,,,,%.1f ns/hop (chase %s the GEMM window)\n", sh.name,
             which == 0 ? "l2_8MiB" : "dram_2GiB", g_alone, ms * 1e3 / n_g, ms * 1e3 / n_g / g_alone, per_hop,
             (t1 <= w[1] && t0 >= w[0] - 100000) ? "inside" : "NOT inside");
      fflush(stdout);
    }
  }

  // The copy beside a plain reader on the other SMs (L2-resident 16 MiB or DRAM 1 GiB),
  // copies first.
  int4 *rbuf, *sink;
  CK(cudaMalloc(&rbuf, 1ull << 30));
  CK(cudaMemset(rbuf, 0, 1ull << 30));
  CK(cudaMalloc(&sink, 1024 * 16));
  for (size_t rbytes : {16ull << 20, 1ull << 30}) {
    for (int per_sm : {1, 2}) {
      const int rctas = (sms - kCtas) * per_sm;
      const int reps = rbytes < (256ull << 20) ? 3000 : 30;
      CK(cudaMemset(marks, 0, 64 * 8));
      reader<<<rctas, 512, 0, gs>>>(rbuf, rbytes / 16, 1, sink, marks + 8);  // warm
      CK(cudaDeviceSynchronize());
      CK(cudaMemset(marks, 0, 64 * 8));
      const int n_c = 400;
      for (int k = 0; k < n_c; ++k) copies.launch(k, cs);
      reader<<<rctas, 512, 0, gs>>>(rbuf, rbytes / 16, reps, sink, marks);
      CK(cudaDeviceSynchronize());
      unsigned long long w[2];
      CK(cudaMemcpy(w, marks, sizeof w, cudaMemcpyDeviceToHost));
      auto st = copies.fetch(n_c);
      CopyStats s = summarize(st, n_c, w[0], w[1]);
      const double reader_GBps = double(rbytes) * reps / double(w[1] - w[0]);
      printf("reader_copy,%s,comm_first,,,,%d,%.2f,%.2f,%.2f,%.3f,%.1f,reader %d CTAs x 512: %.1f GB/s over %.1f us\n",
             rbytes < (256ull << 20) ? "l2_16MiB" : "dram_1GiB", s.n, s.span_us, s.start_spread_us, s.cta_run_us,
             s.resident_fraction, s.GBps, rctas, reader_GBps, (w[1] - w[0]) / 1e3);
      fflush(stdout);
    }
  }
  return 0;
}
