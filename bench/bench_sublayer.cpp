// Sub-layer speed: wall time and events/s of the reference case of issue 5, the
// T-NLG FC-2 TP=8 sub-layer (T3 Table 2) under `sequential` (GEMM, ring RS, ring AG)
// on 8 T3 Table 1 GPUs: in full mode on 1 and 2 host threads (a partition per GPU;
// goal: under 60 s on the 2-core machine) and in homogeneous mode (goal: under 10 s).
// The same run as `t3sim run configs/systems/table1.yaml
// configs/workloads/gemm/tnlg_fc2_tp8.yaml --config sequential [--mode homogeneous]
// [--threads N]`, without output files. Also reports the simulated time, so a speed-up that changes
// the model's answer shows up here too.
#include <benchmark/benchmark.h>

#include "bench/bench_configs.h"

#include <string>

#include "cli/run.h"

namespace t3sim {
namespace {

std::string metric(const RunOutcome& out, const std::string& name) {
  for (const auto& [k, v] : out.metrics)
    if (k == name) return v;
  return "";
}

void run_reference(benchmark::State& state, const char* mode, unsigned threads) {
  RunRequest req;
  req.system = bench::config_path("systems/table1.yaml");
  req.workload = bench::config_path("workloads/gemm/tnlg_fc2_tp8.yaml");
  req.configuration = "sequential";
  req.overrides = {std::string("run.mode=") + mode};
  req.threads = threads;
  double events = 0, simulated_ms = 0;
  for (auto _ : state) {
    const RunOutcome out = run_simulation(req);
    events += std::stod(metric(out, "events"));
    simulated_ms = std::stod(metric(out, "time_ps")) * 1e-9;
  }
  state.counters["events_per_second"] = benchmark::Counter(events, benchmark::Counter::kIsRate);
  state.counters["simulated_ms"] = simulated_ms;
}

void BM_TnlgFc2Tp8SequentialFull(benchmark::State& state) {
  run_reference(state, "full", static_cast<unsigned>(state.range(0)));
}
BENCHMARK(BM_TnlgFc2Tp8SequentialFull)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_TnlgFc2Tp8SequentialHomogeneous(benchmark::State& state) { run_reference(state, "homogeneous", 1); }
BENCHMARK(BM_TnlgFc2Tp8SequentialHomogeneous)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace t3sim
