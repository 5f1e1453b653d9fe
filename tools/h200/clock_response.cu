// How the SM clock follows a burst of GEMMs (issue 41): how fast it falls to the power
// cap's clock when back-to-back GEMMs start, how low it sits, and how long it stays low
// after they end. One CTA (one warp) samples its SM's cycle counter against the global
// timer every 20 us for 400 ms, from a quiet start: 40 ms idle, then ~150 ms of
// back-to-back cuBLAS GEMMs on another stream (interfere.py's window), then idle again.
// A marker kernel stamps the global timer just before the first GEMM and just after the
// last, so every sample is placed against the GEMM window. The sampler holds one SM
// (the GEMM loses one cluster of its 66, point 7 of results/h200-measurements/README.md),
// which does not change what the clock does.
//
// Prints CSV: shape,operands,t_ms,sm_mhz  (1 ms bins, t from the first GEMM's start),
// then a summary per run: shape,operands,window_ms,mhz_before,ms_to_below_1800,
// mhz_during,ms_after_end_to_above_1900,mhz_last_10ms
//   nvcc -O3 -arch=sm_90 -o clock_response clock_response.cu -lcublas

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "h200_common.cuh"

int main() {
  const GemmAndSideStreams streams;
  cublasHandle_t h = streams.handle;
  cudaStream_t gs = streams.gemm, cs = streams.side;
  const int n = 20000;                      // 400 ms at 20 us
  const unsigned long long period = 20000;  // ns
  unsigned long long *t, *marks;
  long long* c;
  CK(cudaMalloc(&t, n * 8));
  CK(cudaMalloc(&c, n * 8));
  CK(cudaMalloc(&marks, 2 * 8));
  std::vector<unsigned long long> ht(n);
  std::vector<long long> hc(n);
  const Shape shapes[] = {{"palm.fc2.tp32", 2048, 18432, 2304}, {"megagpt2.op.tp8", 16384, 3072, 384}};
  std::vector<std::string> summary;
  printf("shape,operands,t_ms,sm_mhz\n");
  for (int rep = 0; rep < 2; ++rep) {
    for (const Shape& sh : shapes) {
      TorchMmGemm gemm(h, sh);
      for (const char* data : {"random", "zeros"}) {
        if (data[0] == 'r') {
          fill_random<<<1024, 256>>>(gemm.A, size_t(sh.M) * sh.K, 1);
          fill_random<<<1024, 256>>>(gemm.W, size_t(sh.N) * sh.K, 2);
        }
        // One GEMM's time at whatever clock (to size a ~150 ms window), then 2 s idle so
        // the clock starts from its idle state.
        for (int i = 0; i < 20; ++i) gemm();
        cudaEvent_t e0, e1;
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
        CK(cudaEventRecord(e0, gs));
        for (int i = 0; i < 20; ++i) gemm();
        CK(cudaEventRecord(e1, gs));
        CK(cudaDeviceSynchronize());
        float ms20 = 0;
        CK(cudaEventElapsedTime(&ms20, e0, e1));
        const int n_gemm = std::max(20, int(150.0f / (ms20 / 20)));
        std::this_thread::sleep_for(std::chrono::seconds(2));

        sampler<<<1, 32, 0, cs>>>(t, c, n, period);
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
        marker<<<1, 1, 0, gs>>>(marks);
        for (int i = 0; i < n_gemm; ++i) gemm();
        marker<<<1, 1, 0, gs>>>(marks + 1);
        CK(cudaDeviceSynchronize());
        unsigned long long hm[2];
        CK(cudaMemcpy(hm, marks, sizeof hm, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(ht.data(), t, n * 8, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hc.data(), c, n * 8, cudaMemcpyDeviceToHost));
        // 1 ms bins from the first sample.
        const double start = double(hm[0]), end = double(hm[1]);
        double before_sum = 0, during_sum = 0, last_sum = 0;
        int before_n = 0, during_n = 0, last_n = 0;
        double to_below = -1, to_above = -1;
        const int per_bin = 50;
        for (int k = 0; k + per_bin < n; k += per_bin) {
          const double dt = double(ht[k + per_bin] - ht[k]);
          const double mhz = 1e3 * double(hc[k + per_bin] - hc[k]) / dt;
          const double mid = 0.5 * (double(ht[k]) + double(ht[k + per_bin]));
          const double t_ms = (mid - start) * 1e-6;
          printf("%s,%s,%.2f,%.0f\n", sh.name, data, t_ms, mhz);
          if (mid < start - 5e6) before_sum += mhz, ++before_n;
          if (mid > start + 20e6 && mid < end) during_sum += mhz, ++during_n;
          if (mid > start && to_below < 0 && mhz < 1800) to_below = t_ms;
          if (mid > end && to_above < 0 && mhz > 1900) to_above = (mid - end) * 1e-6;
          if (mid > double(ht[n - 1]) - 10e6) last_sum += mhz, ++last_n;
        }
        char line[256];
        snprintf(line, sizeof line, "%s,%s,%.1f,%.0f,%.2f,%.0f,%.2f,%.0f", sh.name, data, (end - start) * 1e-6,
                 before_sum / std::max(1, before_n), to_below, during_sum / std::max(1, during_n), to_above,
                 last_sum / std::max(1, last_n));
        summary.push_back(line);
        fflush(stdout);
        if (data[0] == 'r') {
          CK(cudaMemset(gemm.A, 0, size_t(sh.M) * sh.K * 2));
          CK(cudaMemset(gemm.W, 0, size_t(sh.N) * sh.K * 2));
        }
      }
    }
  }
  printf("\n# summary\nshape,operands,window_ms,mhz_before,ms_to_below_1800,mhz_during,ms_after_end_to_above_1900,mhz_last_10ms\n");
  for (const auto& s : summary) printf("%s\n", s.c_str());
  return 0;
}
