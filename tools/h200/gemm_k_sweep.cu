// What does a cuBLAS GEMM on H200 pay per tile, besides its K steps (issues 41, 46)?
// For each Table 2 output shape (M x N fixed, so the same kernel, tile and rounds), the
// K sweep 64 ... 16384: a persistent kernel of R rounds takes about
//   t(K) = launch + R * (per_tile + K / k_step * per_step),
// so the slope is the loaded K step and the intercept the fixed cost of a tile (prologue:
// the pipeline's first loads; epilogue: the C tile's conversion and store) times R.
// Each point records the kernel cuBLAS ran (CUPTI: name, grid, registers, shared memory,
// its GPU time per launch) and the SM clock and power while it ran (NVML, sampled every
// 5 ms by a second thread; read-only, no clock is set).
//
// Operands: uniform random fp16 (as interfere.py's torch.randn), or zeros with argument 2
// `zeros`. Prints CSV: data,shape,M,N,K,kernel,grid,block,regs,smem,launches,median_ns,min_ns,
//             sm_mhz_mean,sm_mhz_min,sm_mhz_max,power_w_mean,tflops
//   tools/h200/measure_gemm_k_sweep.sh OUTDIR (builds it with CUPTI and NVML: cupti_env.sh)

#include <nvml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cupti_kernels.cuh"
#include "h200_common.cuh"


namespace {

// Samples the SM clock (MHz) and power (W) every 5 ms while `running`.
struct ClockSampler {
  explicit ClockSampler(nvmlDevice_t d) : dev(d) {}
  void start() {
    mhz.clear();
    watts.clear();
    running = true;
    th = std::thread([this] {
      while (running) {
        unsigned clock = 0, mw = 0;
        if (nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &clock) == NVML_SUCCESS) mhz.push_back(clock);
        if (nvmlDeviceGetPowerUsage(dev, &mw) == NVML_SUCCESS) watts.push_back(mw / 1000.0);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  void stop() {
    running = false;
    th.join();
  }
  nvmlDevice_t dev;
  std::atomic<bool> running{false};
  std::thread th;
  std::vector<unsigned> mhz;
  std::vector<double> watts;
};


}  // namespace

int main(int argc, char** argv) {
  // Every Table 2 output shape of cublas_kernels.csv's fp16 rows, and the square one.
  const Shape shapes[] = {{"square_8192", 8192, 8192, 0},  {"palm", 2048, 18432, 0},
                          {"gpt3", 2048, 12288, 0},        {"tnlg", 8192, 4256, 0},
                          {"mtnlg", 2048, 20480, 0},       {"megagpt2", 16384, 3072, 0}};
  const int ks[] = {64, 128, 256, 384, 512, 1024, 2048, 2304, 4096, 8192, 16384};
  const double min_seconds = argc > 1 ? atof(argv[1]) : 0.25;  // per point, so the clock settles
  const bool random_data = !(argc > 2 && std::string(argv[2]) == "zeros");

  if (nvmlInit() != NVML_SUCCESS) {
    fprintf(stderr, "nvmlInit failed\n");
    return 1;
  }
  nvmlDevice_t dev;
  nvmlDeviceGetHandleByIndex(0, &dev);
  if (!start_kernel_activity()) {
    fprintf(stderr, "CUPTI activity setup failed\n");
    return 1;
  }
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  cublasSetStream(handle, stream);
  ClockSampler sampler(dev);

  printf("data,shape,M,N,K,kernel,grid,block,regs,smem,launches,median_ns,min_ns,sm_mhz_mean,sm_mhz_min,sm_mhz_max,"
         "power_w_mean,tflops\n");
  // Optional argument 3: explicit points "name:M:N:K,..." instead of the sweep.
  std::vector<Shape> points;
  std::vector<std::string> names;
  if (argc > 3) {
    std::string list = argv[3];
    for (size_t at = 0; at < list.size();) {
      const size_t end = std::min(list.find(',', at), list.size());
      const std::string item = list.substr(at, end - at);
      char name[64];
      int m, n, k;
      if (sscanf(item.c_str(), "%63[^:]:%d:%d:%d", name, &m, &n, &k) == 4) {
        names.push_back(name);
        points.push_back({nullptr, m, n, k});
      }
      at = end + 1;
    }
    for (size_t i = 0; i < points.size(); ++i) points[i].name = names[i].c_str();
  } else {
    for (const Shape& base : shapes)
      for (const int k : ks) points.push_back({base.name, base.M, base.N, k});
  }
  for (const Shape& sh : points) {
    {
      const int k = sh.K;
      TorchMmGemm gemm(handle, sh);
      if (random_data) {
        fill_random<<<1024, 256>>>(gemm.A, size_t(sh.M) * sh.K, 1);
        fill_random<<<1024, 256>>>(gemm.W, size_t(sh.N) * sh.K, 2);
        CK(cudaDeviceSynchronize());
      }
      for (int i = 0; i < 3; ++i) gemm();  // warm up (cuBLAS's heuristic, the L2)
      CK(cudaStreamSynchronize(stream));
      take_kernel_records();  // the warm-up's
      // Launches in batches until min_seconds of wall time have passed.
      sampler.start();
      const auto t0 = std::chrono::steady_clock::now();
      int launches = 0;
      while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < min_seconds) {
        for (int i = 0; i < 20; ++i) gemm();
        launches += 20;
        CK(cudaStreamSynchronize(stream));
      }
      sampler.stop();
      const std::vector<KernelRecord> recs = take_kernel_records();
      if (recs.empty()) {
        fprintf(stderr, "%s K=%d: no kernel records\n", sh.name, k);
        continue;
      }
      // cuBLAS may run more than one kernel per GEMM (a split-K reduction): time per GEMM
      // is the sum over one launch's kernels; the name is the longest kernel's.
      const size_t per = recs.size() / launches;
      std::vector<unsigned long long> t;
      size_t longest = 0;
      for (size_t i = 0; i + per <= recs.size(); i += per) {
        unsigned long long s = 0;
        for (size_t j = 0; j < per; ++j) s += recs[i + j].ns();
        t.push_back(s);
      }
      for (size_t j = 0; j < per && j < recs.size(); ++j)
        if (recs[j].ns() > recs[longest].ns()) longest = j;
      std::sort(t.begin(), t.end());
      const KernelRecord& r = recs[longest];
      double mhz = 0, w = 0;
      unsigned lo = ~0u, hi = 0;
      for (unsigned m : sampler.mhz) mhz += m, lo = std::min(lo, m), hi = std::max(hi, m);
      for (double x : sampler.watts) w += x;
      if (!sampler.mhz.empty()) mhz /= sampler.mhz.size();
      if (!sampler.watts.empty()) w /= sampler.watts.size();
      const double med = double(t[t.size() / 2]);
      printf("%s,%s,%d,%d,%d,%s%s,[%d;%d;%d],[%d;%d;%d],%d,%d,%zu,%.0f,%llu,%.0f,%u,%u,%.1f,%.1f\n", random_data ? "random" : "zeros", sh.name, sh.M,
             sh.N, sh.K, r.name.c_str(), per > 1 ? "+" : "", r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1],
             r.block[2], r.regs, r.smem, t.size(), med, t.front(), mhz, lo, hi, w,
             2.0 * sh.M * sh.N * sh.K / med / 1e3);
      fflush(stdout);
    }
  }
  cublasDestroy(handle);
  nvmlShutdown();
  return 0;
}
