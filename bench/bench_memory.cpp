// Memory-system speed: simulated DRAM requests per wall-clock second through one GPU's
// L2 + 32 memory controllers + HBM2 channels (T3 Table 1), for a streaming and a random
// trace. Also reports the simulated bandwidth, so a speed-up that changes the model's
// answer shows up here too.
#include <benchmark/benchmark.h>

#include "bench/bench_configs.h"

#include "models/system/memory_system.h"
#include "sim/config.h"

namespace t3sim {
namespace {

GpuMemoryConfig table1_memory() {
  ConfigTree tree = ConfigTree::load_file(bench::config_path("systems/table1.yaml"));
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  return read_gpu_memory_config(root.child("memory"));
}

void run_trace(benchmark::State& state, TrafficPattern pattern, std::uint32_t request_size, std::uint64_t footprint) {
  const GpuMemoryConfig mem = table1_memory();
  TrafficConfig gen;
  gen.name = "trace";
  gen.pattern = pattern;
  gen.op = TrafficOp::kRead;
  gen.request_size = request_size;
  gen.footprint = footprint;
  gen.uncached = true;  // every request is a DRAM request
  gen.max_outstanding = 3072;
  gen.requests = static_cast<std::uint64_t>(state.range(0));
  MemoryWorkload wl;
  wl.generators = {gen};

  std::uint64_t requests = 0, events = 0;
  double bandwidth = 0;
  for (auto _ : state) {
    Simulator sim(1);
    MemorySystem system(sim, mem, wl);
    const MemoryResult r = system.run();
    requests += gen.requests;
    events += sim.events().dispatched();
    bandwidth = r.dram_bandwidth;
  }
  state.counters["dram_requests_per_second"] =
      benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["events_per_second"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["simulated_GBps"] = bandwidth / 1e9;
}

void BM_StreamingReads(benchmark::State& state) {
  run_trace(state, TrafficPattern::kSequential, 128, 256ULL << 20);
}
void BM_RandomReads(benchmark::State& state) { run_trace(state, TrafficPattern::kRandom, 64, 4ULL << 30); }

BENCHMARK(BM_StreamingReads)->Arg(200000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RandomReads)->Arg(200000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace t3sim
