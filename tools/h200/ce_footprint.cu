// Does a local copy-engine copy slow a GEMM through the DRAM or through the L2 (issue 41)?
// interfere_trace_*.csv (results/h200-measurements/README.md point 19): gpt3.op.tp32, whose
// 50 MB of C stays in the L2 when it runs alone, takes 1.76x beside interfere.py's local
// copy (64 MiB, repeated, ~955 GB/s beside it), megagpt2.op.tp8 1.34x; the model's GEMM
// 1.20x and 1.25x. Here the same copy engine copies a footprint that fits the L2 or not:
//   alone     the GEMMs alone
//   ce_1MiB   512 KiB -> 512 KiB, repeated: L2-resident, no DRAM traffic of its own
//   ce_8MiB   4 MiB -> 4 MiB, repeated: L2-resident alone, 8 MiB of the GEMM's L2 taken
//   ce_128MiB 64 MiB -> 64 MiB, repeated: interfere.py's ce_local (DRAM)
// If the L2-resident copies slow the GEMM as much, the L2 (ports, bandwidth) is the
// mechanism; if only the DRAM-sized one does, the DRAM and the evictions are.
//
// The copies are CUDA graphs of 1 GiB each (a chain of memcpy nodes), so a few launches
// keep the engine busy through the GEMMs without filling the launch queue (point 19). Per
// case: 0.5 s of GEMMs (the clock at the cap), 200 GEMMs alone, then the graphs and 200
// GEMMs, every GEMM followed by an event: the medians of the GEMMs alone and of those that
// ended while the copies ran, and the copy's rate over the graphs that ended inside the
// GEMMs (graph granularity).
// Prints CSV: shape,case,rep,gemm_alone_us,gemm_beside_us,slowdown,n_beside,copy_gbps_during,copy_gbps_alone
//   nvcc -O3 -arch=sm_90 -std=c++17 -o ce_footprint ce_footprint.cu -lcublas

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "h200_common.cuh"

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  const GemmAndSideStreams streams;
  cublasHandle_t h = streams.handle;
  cudaStream_t gs = streams.gemm, cs = streams.side;
  const size_t graph_bytes = size_t(1) << 30;
  char* src = device_bytes(size_t(128) << 20, 1);
  char* dst = device_bytes(size_t(128) << 20, 0);
  struct Case {
    const char* name;
    size_t piece;
    int graphs;
  };
  // PIECES_MIB="8,16,32" replaces the cases by copies of those sizes (footprint twice
  // that: the graded run of ce_footprint_graded.csv).
  std::vector<Case> cases = {{"alone", 0, 0}, {"ce_1MiB", size_t(512) << 10, 128}, {"ce_8MiB", size_t(4) << 20, 128},
                             {"ce_128MiB", size_t(64) << 20, 64}};
  static std::vector<std::string> names;
  if (const char* pieces = std::getenv("PIECES_MIB")) {
    cases.resize(1);
    names.clear();
    for (std::string rest = pieces; !rest.empty();) {
      const size_t comma = rest.find(',');
      const int mib = std::atoi(rest.substr(0, comma).c_str());
      names.push_back("ce_" + std::to_string(2 * mib) + "MiB");
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      cases.push_back({nullptr, size_t(mib) << 20, 64});
    }
    for (size_t i = 1; i < cases.size(); ++i) cases[i].name = names[i - 1].c_str();
  }
  const int n_cases = int(cases.size());
  std::vector<cudaGraphExec_t> graph(n_cases, nullptr);
  for (int c = 1; c < n_cases; ++c) graph[c] = copy_graph(dst, src, cases[c].piece, graph_bytes, cs);
  const int n_gemm = 200, max_graphs = 128;
  std::vector<cudaEvent_t> ge(n_gemm + 1), ce(max_graphs + 1);
  for (auto& e : ge) CK(cudaEventCreate(&e));
  for (auto& e : ce) CK(cudaEventCreate(&e));
  const Shape shapes[] = {{"gpt3.op.tp32", 2048, 12288, 384}, {"megagpt2.op.tp8", 16384, 3072, 384}};
  printf("shape,case,rep,gemm_alone_us,gemm_beside_us,slowdown,n_beside,copy_gbps_during,copy_gbps_alone\n");
  for (const Shape& sh : shapes) {
    TorchMmGemm gemm(h, sh);
    randomize_operands(gemm, gs);
    for (int rep = 0; rep < 2; ++rep) {
      for (int c = 0; c < n_cases; ++c) {
        const Case& k = cases[c];
        double alone_gbps = 0;
        if (k.graphs > 0) {  // the copy alone: 3 graphs
          CK(cudaEventRecord(ce[0], cs));
          for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(graph[c], cs));
          CK(cudaEventRecord(ce[1], cs));
          CK(cudaStreamSynchronize(cs));
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, ce[0], ce[1]));
          alone_gbps = 3.0 * graph_bytes / (ms * 1e-3) / 1e9;
        }
        run_gemms_for(gemm, gs, 500);
        auto gemm_times = [&](int n_copy_events) {
          CK(cudaEventRecord(ge[0], gs));
          for (int i = 1; i <= n_gemm; ++i) {
            gemm();
            CK(cudaEventRecord(ge[i], gs));
          }
          CK(cudaDeviceSynchronize());
          std::vector<double> beside;
          float copies_end = 1e30f;
          if (n_copy_events > 0) CK(cudaEventElapsedTime(&copies_end, ge[0], ce[n_copy_events]));
          for (int i = 1; i <= n_gemm; ++i) {
            float a = 0, b = 0;
            CK(cudaEventElapsedTime(&a, ge[0], ge[i - 1]));
            CK(cudaEventElapsedTime(&b, ge[0], ge[i]));
            if (b <= copies_end) beside.push_back(1e3 * (b - a));
          }
          return beside;
        };
        const double alone_us = median(gemm_times(0));
        double beside_us = alone_us, during_gbps = 0;
        int n_beside = n_gemm;
        if (k.graphs > 0) {
          CK(cudaEventRecord(ce[0], cs));
          for (int i = 1; i <= k.graphs; ++i) {
            CK(cudaGraphLaunch(graph[c], cs));
            CK(cudaEventRecord(ce[i], cs));
          }
          const std::vector<double> beside = gemm_times(k.graphs);
          beside_us = median(beside);
          n_beside = int(beside.size());
          // graphs that ended inside the GEMMs' window: [first GEMM's start, last GEMM's end]
          float last = 0;
          CK(cudaEventElapsedTime(&last, ge[0], ge[n_gemm]));
          int first_in = -1, last_in = -1;
          for (int i = 1; i <= k.graphs; ++i) {
            float at = 0;
            CK(cudaEventElapsedTime(&at, ge[0], ce[i]));
            if (at >= 0 && at <= last) {
              if (first_in < 0) first_in = i;
              last_in = i;
            }
          }
          if (first_in > 0 && last_in > first_in) {
            float span = 0;
            CK(cudaEventElapsedTime(&span, ce[first_in], ce[last_in]));
            during_gbps = double(last_in - first_in) * graph_bytes / (span * 1e-3) / 1e9;
          }
        }
        printf("%s,%s,%d,%.2f,%.2f,%.4f,%d,%.1f,%.1f\n", sh.name, k.name, rep, alone_us, beside_us,
               beside_us / alone_us, n_beside, during_gbps, alone_gbps);
        fflush(stdout);
      }
    }
  }
  return 0;
}
