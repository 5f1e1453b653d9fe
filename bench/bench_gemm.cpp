// GPU speed: wall time and events/s of the T-NLG FC-2 TP=8 GEMM (8192 x 4256 x 2128,
// T3 Table 2) on the T3 Table 1 GPU (issue 4 goal: under 10 s on the 2-core machine),
// and of a 1024 x 2048 x 2128 GEMM with the same K (a fifth of a second: a quick
// check of the same L2 / memory-controller / event-queue paths, several iterations).
// And the H200 reference: Mega-GPT-2's output projection at TP 8 (16384 x 3072 x 384)
// on configs/systems/h200.yaml, as `t3sim run` runs it (its cuBLAS-like kernel, 132
// SMs, 192 memory channels with 512-entry write queues: the GEMM writes back 100 MB,
// so the controllers' queues are long), the path of the interference rows and the
// H200 c3 tables.
#include <benchmark/benchmark.h>

#include <string>

#include "bench/bench_configs.h"

#include "cli/run.h"
#include "models/system/gemm_system.h"
#include "sim/config.h"

namespace t3sim {
namespace {

GpuConfig table1_gpu() {
  ConfigTree tree = ConfigTree::load_file(bench::config_path("systems/table1.yaml"));
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  return read_gpu_config(root.child("gpu"), root.child("memory"));
}

void run_gemm(benchmark::State& state, GemmParams p) {
  const GpuConfig gpu = table1_gpu();
  p.flops_per_cycle = gpu.cu.flops_per_cycle;
  p.lds_bytes_per_cycle = gpu.cu.lds_bytes_per_cycle;
  std::uint64_t events = 0;
  double tflops = 0;
  for (auto _ : state) {
    GemmWorkload wl;
    wl.trace = make_gemm_trace(p);
    Simulator sim(1);
    GemmSystem sys(sim, gpu, std::move(wl));
    tflops = sys.run().tflops;
    events += sim.events().dispatched();
  }
  state.counters["events_per_second"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["simulated_TFLOPs"] = tflops;
}

void BM_TnlgFc2Tp8(benchmark::State& state) { run_gemm(state, gemm_preset_params("tnlg.fc2.tp8")); }
BENCHMARK(BM_TnlgFc2Tp8)->Unit(benchmark::kSecond)->Iterations(1);

void BM_Gemm1024x2048x2128(benchmark::State& state) {
  GemmParams p;
  p.m = 1024;
  p.n = 2048;
  p.k = 2128;
  run_gemm(state, p);
}
BENCHMARK(BM_Gemm1024x2048x2128)->Unit(benchmark::kMillisecond);

void BM_H200Megagpt2OpTp8(benchmark::State& state) {
  RunRequest req;
  req.system = bench::config_path("systems/h200.yaml");
  req.workload = bench::config_path("workloads/gemm/tnlg_fc2_tp8.yaml");
  req.overrides = {"workload.preset=megagpt2.op.tp8"};
  double events = 0, simulated_us = 0;
  for (auto _ : state) {
    const RunOutcome out = run_simulation(req);
    for (const auto& [k, v] : out.metrics) {
      if (k == "events") events += std::stod(v);
      if (k == "time_ps") simulated_us = std::stod(v) * 1e-6;
    }
  }
  state.counters["events_per_second"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["simulated_us"] = simulated_us;
}
BENCHMARK(BM_H200Megagpt2OpTp8)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace t3sim
