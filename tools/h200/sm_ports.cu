// Where does a GEMM beside a copy kernel take the copy's bandwidth (issue 41)? If the SMs
// of a TPC (or a GPC) share a port into the memory system, a copy CTA whose neighbour SM
// runs a GEMM CTA loses more than one whose neighbour runs another copy CTA.
// Part 1: each CTA (one per SM, 1024 threads, 8 x 16 B loads in flight per thread) reads
//   an L2-resident 16 MiB buffer only if its SM is in the chosen set (by %smid); the
//   others exit. Sets: 1 SM; 2 SMs of one TPC (smid 2k, 2k+1); 2 SMs of different TPCs;
//   8 consecutive SMs; 8 spread SMs; all. Gives the per-SM bandwidth in each.
// Part 2: the copy kernel (interfere.py's copy16, 24 CTAs x 512) beside back-to-back
//   cuBLAS GEMMs (gpt3.op.tp32, palm.fc2.tp32), copies first; each copy CTA records its
//   SM and run time; rows per copy CTA class: the TPC partner SM (smid ^ 1) also runs a
//   copy CTA, or not. Prints CSV.
//   nvcc -O3 -arch=sm_90 -o sm_ports sm_ports.cu -lcublas && ./sm_ports

#include "h200_common.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

// Reads its slice of `n16` int4s `reps` times if its SM is in `active` (a 256-bit set).
__global__ void sm_reader(const int4* __restrict__ src, unsigned long long n16, int reps, const unsigned* active,
                          int4* sink, unsigned long long* out) {
  const unsigned s = smid();
  if (!((active[s / 32] >> (s % 32)) & 1)) return;
  __shared__ unsigned long long t0;
  if (threadIdx.x == 0) t0 = gtime();
  __syncthreads();
  int4 acc = make_int4(0, 0, 0, 0);
  const unsigned long long base = (unsigned long long)s * 65536 % n16;  // a per-SM start
  for (int r = 0; r < reps; ++r)
    for (unsigned long long i = threadIdx.x; i + 7 * blockDim.x < 65536; i += 8 * blockDim.x) {
      int4 v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = __ldcg(src + (base + i + u * blockDim.x) % n16);
#pragma unroll
      for (int u = 0; u < 8; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w; }
    }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678) sink[threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.x == 0) out[s] = gtime() - t0;
}

// h200_common.cuh's copy16 that also stamps its SM id: stamps[3 b] start, [3 b + 1] end, [3 b + 2] SM.
__global__ void copy16_sm(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16,
                       unsigned long long* stamps) {
  if (threadIdx.x == 0) stamps[3 * blockIdx.x] = gtime();
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    int4 a = src[i]; int4 b = src[i + stride]; int4 c = src[i + 2 * stride]; int4 d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
  }
  for (; i < n16; i += stride) dst[i] = src[i];
  __syncthreads();
  if (threadIdx.x == 0) { stamps[3 * blockIdx.x + 1] = gtime(); stamps[3 * blockIdx.x + 2] = smid(); }
}
__global__ void stamp(unsigned long long* at) { *at = gtime(); }
// Holds its SM for `ns` without touching memory; records its SM.
__global__ void spin(unsigned long long ns, unsigned long long* out) {
  const unsigned long long t0 = gtime();
  while (gtime() - t0 < ns) {
  }
  if (threadIdx.x == 0) { out[3 * blockIdx.x] = t0; out[3 * blockIdx.x + 1] = gtime(); out[3 * blockIdx.x + 2] = smid(); }
}

constexpr int kCtas = 24, kThreads = 512;
constexpr size_t kBytes = 64ull << 20;

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int4 *buf, *src, *dst, *sink;
  unsigned* active;
  unsigned long long *out, *stamps, *marks;
  CK(cudaMalloc(&buf, 16ull << 20));
  CK(cudaMemset(buf, 0, 16ull << 20));
  CK(cudaMalloc(&src, kBytes));
  CK(cudaMalloc(&dst, kBytes));
  CK(cudaMemset(src, 1, kBytes));
  CK(cudaMalloc(&sink, 1 << 16));
  CK(cudaMalloc(&active, 32));
  CK(cudaMalloc(&out, 8 * 256));
  CK(cudaMalloc(&marks, 64));
  const int max_launches = 1500;
  CK(cudaMalloc(&stamps, 8ull * 3 * kCtas * max_launches));
  printf("part,what,sms,per_sm_GBps_mean,per_sm_GBps_min,per_sm_GBps_max,extra\n");
  // Part 1.
  auto run_set = [&](const char* name, std::vector<int> set) {
    unsigned bits[8] = {};
    for (int s : set) bits[s / 32] |= 1u << (s % 32);
    CK(cudaMemcpy(active, bits, 32, cudaMemcpyHostToDevice));
    CK(cudaMemset(out, 0, 8 * 256));
    const int reps = 40;
    sm_reader<<<sms, 1024>>>(buf, (16ull << 20) / 16, 2, active, sink, out);  // warm
    CK(cudaDeviceSynchronize());
    CK(cudaMemset(out, 0, 8 * 256));
    sm_reader<<<sms, 1024>>>(buf, (16ull << 20) / 16, reps, active, sink, out);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> t(256);
    CK(cudaMemcpy(t.data(), out, 8 * 256, cudaMemcpyDeviceToHost));
    double sum = 0, mn = 1e30, mx = 0;
    int n = 0;
    for (int s : set) {
      if (!t[s]) continue;
      const double gbps = 65536.0 * 16 * reps / double(t[s]);
      sum += gbps; mn = std::min(mn, gbps); mx = std::max(mx, gbps); ++n;
    }
    printf("ports,%s,%d,%.1f,%.1f,%.1f,\n", name, n, n ? sum / n : 0, mn, mx);
    fflush(stdout);
  };
  if (!getenv("SKIP_PORTS")) {
  run_set("one_sm", {10});
  run_set("tpc_pair", {10, 11});
  run_set("two_tpcs", {10, 12});
  run_set("pairs_4_tpcs", {10, 11, 20, 21, 30, 31, 40, 41});
  std::vector<int> consec, spread, all;
  for (int s = 0; s < 16; ++s) consec.push_back(s);
  for (int s = 0; s < 16; ++s) spread.push_back((s * 8) % sms + (s * 8) / sms);
  for (int s = 0; s < sms; ++s) all.push_back(s);
  run_set("sm_0_to_15", consec);
  run_set("16_spread", spread);
  std::vector<int> evens;
  for (int s = 0; s < sms; s += 2) evens.push_back(s);
  run_set("one_sm_per_tpc", evens);
  run_set("all", all);
  }

  // Part 2.
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  cudaStream_t gs, cs;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  cublasSetStream(h, gs);
  for (const Shape& sh : {Shape{"none", 0, 0, 0}, Shape{"gpt3.op.tp32", 2048, 12288, 384},
                          Shape{"palm.fc2.tp32", 2048, 18432, 2304}}) {
    const bool g = sh.M > 0;
    std::optional<TorchMmGemm> gemm_op;
    if (g) gemm_op.emplace(h, sh);
    auto gemm = [&]() { (*gemm_op)(); };
    // Warm: cuBLAS's first call for a shape may allocate (and so synchronize the device),
    // which would run the queued copies before the GEMMs.
    if (g) for (int i = 0; i < 5; ++i) gemm();
    const int n_g = g ? (sh.K > 1000 ? 100 : 600) : 0;
    const int n_c = g ? 300 : 100;
    CK(cudaDeviceSynchronize());
    CK(cudaMemset(marks, 0, 64));
    for (int k = 0; k < n_c; ++k) copy16_sm<<<kCtas, kThreads, 0, cs>>>(src, dst, kBytes / 16, stamps + 3 * kCtas * k);
    if (g) {
      stamp<<<1, 1, 0, gs>>>(marks);
      for (int i = 0; i < n_g; ++i) gemm();
      stamp<<<1, 1, 0, gs>>>(marks + 1);
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    unsigned long long w[2] = {0, ~0ull};
    if (g) CK(cudaMemcpy(w, marks, 16, cudaMemcpyDeviceToHost));
    std::vector<unsigned long long> st(3ull * kCtas * n_c);
    CK(cudaMemcpy(st.data(), stamps, st.size() * 8, cudaMemcpyDeviceToHost));
    // Per class: CTA run times of copies inside the window.
    std::map<std::string, std::vector<double>> cls;
    std::map<int, int> distinct_hist;  // distinct SMs per copy kernel -> copies
    for (int k = 0; k < n_c; ++k) {
      unsigned long long smin = ~0ull, emax = 0;
      std::vector<int> smids;
      for (int j = 0; j < kCtas; ++j) {
        smin = std::min(smin, st[3 * (kCtas * k + j)]);
        emax = std::max(emax, st[3 * (kCtas * k + j) + 1]);
        smids.push_back(int(st[3 * (kCtas * k + j) + 2]));
      }
      if (smin < w[0] || emax > w[1]) continue;
      {
        std::vector<int> u = smids;
        std::sort(u.begin(), u.end());
        distinct_hist[int(std::unique(u.begin(), u.end()) - u.begin())]++;
      }
      for (int j = 0; j < kCtas; ++j) {
        const int s = smids[j];
        const bool partner = std::find(smids.begin(), smids.end(), s ^ 1) != smids.end();
        const double us = double(st[3 * (kCtas * k + j) + 1] - st[3 * (kCtas * k + j)]) / 1e3;
        cls[partner ? "partner_copy" : "partner_other"].push_back(us);
      }
    }
    for (auto& [name, v] : cls) {
      std::sort(v.begin(), v.end());
      double sum = 0;
      for (double x : v) sum += x;
      const double per_cta_bytes = double(kBytes) / kCtas;
      printf("copy_cta,%s:%s,%zu,%.1f,%.1f,%.1f,run_us median %.1f\n", sh.name, name.c_str(), v.size(),
             per_cta_bytes / (sum / v.size() * 1e3), per_cta_bytes / (v.back() * 1e3),
             per_cta_bytes / (v.front() * 1e3), v[v.size() / 2]);
    }
    std::string h;
    for (auto [d, n] : distinct_hist) h += std::to_string(d) + " SMs: " + std::to_string(n) + " copies; ";
    printf("copy_sms,%s,,,,,%s\n", sh.name, h.c_str());
    fflush(stdout);
    // Part 3: 24 CTAs x 512 threads that only spin for 5 ms, queued first, then GEMMs:
    // does the GEMM run on the other SMs, or wait for the spinning CTAs to leave?
    if (g) {
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(e0, gs));
      for (int i = 0; i < 20; ++i) gemm();
      CK(cudaEventRecord(e1, gs));
      CK(cudaDeviceSynchronize());
      float alone_ms, with_ms;
      CK(cudaEventElapsedTime(&alone_ms, e0, e1));
      spin<<<kCtas, kThreads, 0, cs>>>(5000000ull, stamps);
      CK(cudaEventRecord(e0, gs));
      for (int i = 0; i < 20; ++i) gemm();
      CK(cudaEventRecord(e1, gs));
      CK(cudaDeviceSynchronize());
      CK(cudaEventElapsedTime(&with_ms, e0, e1));
      std::vector<unsigned long long> sp(3 * kCtas);
      CK(cudaMemcpy(sp.data(), stamps, sp.size() * 8, cudaMemcpyDeviceToHost));
      std::vector<int> u;
      for (int j = 0; j < kCtas; ++j) u.push_back(int(sp[3 * j + 2]));
      std::sort(u.begin(), u.end());
      const int distinct = int(std::unique(u.begin(), u.end()) - u.begin());
      printf("spin_blocker,%s,%d,,,,20 GEMMs alone %.1f us each; beside 24 spinning CTAs (5 ms, %d SMs) %.1f us each\n",
             sh.name, distinct, alone_ms * 1e3 / 20, distinct, with_ms * 1e3 / 20);
      fflush(stdout);
    }
  }
  return 0;
}
