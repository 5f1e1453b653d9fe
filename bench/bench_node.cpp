// Node speed: events/s of a CU-based ring reduce-scatter (4 MB per GPU) on 4 T3
// Table 1 GPUs joined by the network, in full mode (every GPU simulated; in one event
// queue, or a partition per GPU on 1 or 2 host threads) and in homogeneous mode
// (GPU 0, peers mirrored); and the partitioned run on 2 threads beside busy host
// threads (a loaded machine, issue 43: the run should degrade toward its one-thread
// time, not wait every window for a descheduled thread). Exercises the CUs' remote stores and
// flags, the network's packets and acks, and each GPU's memory system. Also reports
// the simulated time, so a speed-up that changes the model's answer shows up here too.
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bench/bench_configs.h"

#include "models/collectives/node_collective.h"
#include "models/node/node.h"
#include "sim/config.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

NodeConfig table1_node(std::uint32_t num_gpus, NetMode mode) {
  ConfigTree tree = ConfigTree::load_file(bench::config_path("systems/table1.yaml"));
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  NodeConfig cfg = read_node_config(root, mode);
  cfg.num_gpus = num_gpus;
  return cfg;
}

void run_ring_rs(benchmark::State& state, NetMode mode, unsigned threads = 0) {
  NodeConfig cfg = table1_node(4, mode);
  cfg.partitioned = threads > 0;
  NodeCollectiveParams p;
  p.kind = CollectiveKind::named("ring-rs");
  p.array_bytes = static_cast<std::uint64_t>(state.range(0)) * 1'000'000;  // MB, as the CLI's 4MB
  p.values = false;  // timing only, like the CLI's functional=off
  std::uint64_t events = 0;
  double simulated_us = 0;
  for (auto _ : state) {
    Simulator sim(1);
    sim.set_threads(threads);
    Node node(sim, cfg);
    NodeCollective coll(node, p);
    coll.start_all();
    sim.run();
    if (!coll.all_done()) state.SkipWithError("the collective did not finish");
    events += sim.dispatched();
    Tick end = Tick::zero();
    for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) end = std::max(end, coll.finished(g));
    simulated_us = static_cast<double>(end.ps()) * 1e-6;
  }
  state.counters["events_per_second"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["simulated_us"] = simulated_us;
}

void BM_RingRsFull(benchmark::State& state) { run_ring_rs(state, NetMode::kFull); }
void BM_RingRsHomogeneous(benchmark::State& state) { run_ring_rs(state, NetMode::kHomogeneous); }
// Args: MB per GPU, host threads.
void BM_RingRsFullPartitioned(benchmark::State& state) {
  run_ring_rs(state, NetMode::kFull, static_cast<unsigned>(state.range(1)));
}

// Args: MB per GPU, host threads, busy host threads spinning beside the run (one per
// core of a 2-core machine takes it all).
void BM_RingRsFullPartitionedBesideBusyThreads(benchmark::State& state) {
  std::atomic<bool> stop{false};
  std::vector<std::jthread> busy;
  for (std::int64_t i = 0; i < state.range(2); ++i) {
    busy.emplace_back([&stop] {
      std::uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) benchmark::DoNotOptimize(++x);
    });
  }
  run_ring_rs(state, NetMode::kFull, static_cast<unsigned>(state.range(1)));
  stop = true;
}

BENCHMARK(BM_RingRsFull)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRsFullPartitioned)->Args({4, 1})->Args({4, 2})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RingRsHomogeneous)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RingRsFullPartitionedBesideBusyThreads)
    ->Args({4, 1, 2})
    ->Args({4, 2, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace t3sim
