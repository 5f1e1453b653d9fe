// Does the L2 (and the path to DRAM) slow with the SMs when a GEMM holds the GPU at its
// power cap (issue 41)? A one-thread pointer chase (L2-resident 8 MiB, DRAM 2 GiB, 128 B
// per hop) alone and beside back-to-back palm.fc2.tp32 GEMMs whose operands are zeros
// (~400 W, SMs at 1,980 MHz) or random (the 700 W cap, ~1,500 MHz): the same traffic at
// two clocks. The chase reads both the global timer and its SM's cycle counter, so each
// row gives ns per hop, SM cycles per hop and the SM clock the chase ran at. If the
// L2's latency is paid in SM-clock cycles (one clock domain), cycles per hop stay and
// ns per hop grow as the clock drops; if the L2 keeps its own clock, ns per hop stay.
//
// Prints CSV: scenario,chain,hops,ns_per_hop,sm_cycles_per_hop,sm_mhz
//   nvcc -O3 -arch=sm_90 -o cap_latency cap_latency.cu -lcublas

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "h200_common.cuh"

__global__ void chase(const unsigned* __restrict__ next, unsigned long long hops, unsigned long long* out) {
  unsigned j = 0;
  const unsigned long long t0 = gtime();
  const long long c0 = clock64();
  for (unsigned long long h = 0; h < hops; ++h) j = __ldcg(next + j);
  const long long c1 = clock64();
  const unsigned long long t1 = gtime();
  out[0] = t1 - t0;
  out[1] = static_cast<unsigned long long>(c1 - c0);
  out[2] = j;
}


int main() {
  unsigned* chains[2] = {make_chain(8ull << 20), make_chain(2ull << 30)};
  const char* chain_names[2] = {"l2_8MiB", "dram_2GiB"};
  unsigned long long* out;
  CK(cudaMalloc(&out, 3 * 8));
  const GemmAndSideStreams streams;
  cublasHandle_t h = streams.handle;
  cudaStream_t gs = streams.gemm, cs = streams.side;
  const Shape sh{"palm.fc2.tp32", 2048, 18432, 2304};
  TorchMmGemm gemm(h, sh);
  const unsigned long long hops = 20000;
  cudaEvent_t settled;
  CK(cudaEventCreateWithFlags(&settled, cudaEventDisableTiming));
  printf("scenario,chain,hops,ns_per_hop,sm_cycles_per_hop,sm_mhz\n");
  auto report = [&](const char* scenario, int c) {
    unsigned long long o[3];
    CK(cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost));
    printf("%s,%s,%llu,%.1f,%.1f,%.0f\n", scenario, chain_names[c], hops, double(o[0]) / hops, double(o[1]) / hops,
           1e3 * double(o[1]) / double(o[0]));
    fflush(stdout);
  };
  for (int rep = 0; rep < 2; ++rep) {
    for (int c = 0; c < 2; ++c) {
      chase<<<1, 1, 0, cs>>>(chains[c], hops, out);
      CK(cudaDeviceSynchronize());
      report("alone", c);
    }
    for (const char* data : {"zeros", "random"}) {
      if (data[0] == 'z') {
        CK(cudaMemset(gemm.A, 0, size_t(sh.M) * sh.K * 2));
        CK(cudaMemset(gemm.W, 0, size_t(sh.N) * sh.K * 2));
      } else {
        fill_random<<<1024, 256>>>(gemm.A, size_t(sh.M) * sh.K, 1);
        fill_random<<<1024, 256>>>(gemm.W, size_t(sh.N) * sh.K, 2);
      }
      CK(cudaDeviceSynchronize());
      for (int c = 0; c < 2; ++c) {
        // 40 GEMMs (~11 ms: the clock settles at the cap), then the chase, queued behind
        // them by an event, beside 120 more (~33 ms against the chase's ~10).
        for (int i = 0; i < 40; ++i) gemm();
        CK(cudaEventRecord(settled, gs));
        CK(cudaStreamWaitEvent(cs, settled, 0));
        chase<<<1, 1, 0, cs>>>(chains[c], hops, out);
        for (int i = 0; i < 120; ++i) gemm();
        CK(cudaDeviceSynchronize());
        report(data[0] == 'z' ? "beside_gemm_zeros" : "beside_gemm_random", c);
      }
    }
  }
  return 0;
}
