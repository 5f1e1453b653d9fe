// kind: memory — synthetic traffic generators against one GPU's memory system
// (models/system/memory_system.h).

#include <fmt/format.h>

#include "models/system/experiment.h"
#include "models/system/memory_system.h"
#include "sim/error.h"

namespace t3sim {
namespace {

class MemoryExperiment final : public Experiment {
 public:
  MemoryExperiment(Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run)
      : sim_(sim), memory_(read_gpu_memory_config(system.child("memory"))) {
    if (!run.configuration.empty())
      run.reject_configuration("a memory workload has no configurations: its arbitration policy is "
                               "system.memory.mc.arbiter");
    // A memory-only run uses the GPU's memory; the rest of the system file (GPU count,
    // network, engines) describes the node and is accepted but not simulated.
    for (const std::string& key : system.keys()) {
      if (key != "memory") (void)system.raw(key);
    }
    system.finish();
    if (memory_.model == MemoryModel::kIdeal)
      system.child("memory").fail("model", "a memory-only workload characterizes the memory system (L2, "
                                           "controllers, DRAM): it needs model: hbm, not ideal");
    workload_ = read_memory_workload(workload, memory_.hbm.value_granule);
    HostMemoryEstimate need;
    estimate_host_memory(memory_, 1, "system.memory", need);
    run.check_host_memory(need);
    model_ = std::make_unique<MemorySystem>(sim_, memory_, workload_);
  }

  std::string validated() const override {
    return fmt::format("ok: memory-only workload, {} generators, {} x {} channels, arbiter {}\n",
                       workload_.generators.size(), memory_.hbm.standard, memory_.hbm.channels,
                       memory_.mc.arbiter.type);
  }

  // Each generator's requests, line-sized accesses like a collective's; unknown where a
  // generator stops at a time rather than a count.
  WorkEstimate work() const override {
    WorkEstimate w;
    for (const TrafficConfig& g : workload_.generators) {
      if (g.requests == 0) return {};
      w.communication_bytes += static_cast<double>(g.requests) * g.request_size;
    }
    return w;
  }

  ExperimentResult run(Tick max_time) override {
    const MemoryResult r = model_->run(max_time);
    if (r.values_checked && !r.values.ok()) {
      throw SimulationError(fmt::format("functional check failed: {} of {} granules differ; first: {}",
                                        r.values.mismatches, r.values.checked,
                                        r.values.messages.empty() ? "" : r.values.messages.front()));
    }
    ExperimentResult out;
    out.label = "memory";
    out.json = r.json;
    out.summary = model_->summary(r);
    out.metrics = {
        {"time_ps", std::to_string(r.simulated.ps())},
        {"dram_bandwidth_GBps", fmt::format("{:.4f}", r.dram_bandwidth / 1e9)},
        {"dram_utilization", fmt::format("{:.6f}", r.dram_bandwidth / r.peak_bandwidth)},
        {"row_hit_rate", fmt::format("{:.6f}", r.row_hit_rate)},
    };
    for (int s = 0; s < kNumStreams; ++s) {
      const std::string name = to_string(static_cast<Stream>(s));
      out.metrics.emplace_back(name + "_mc_latency_mean_ns", fmt::format("{:.3f}", r.streams[s].latency_mean_ns));
      out.metrics.emplace_back(name + "_mc_latency_p99_ns", fmt::format("{:.1f}", r.streams[s].latency_p99_ns));
    }
    for (std::size_t i = 0; i < workload_.generators.size(); ++i) {
      const auto& g = r.json["generators"][i];
      const std::string name = workload_.generators[i].name;
      out.metrics.emplace_back(name + "_GBps", fmt::format("{:.4f}", g["bandwidth_GBps"].get<double>()));
      out.metrics.emplace_back(name + "_latency_mean_ns",
                               fmt::format("{:.3f}", g["latency_mean_ns"].get<double>()));
      out.metrics.emplace_back(name + "_latency_p99_ns", fmt::format("{:.1f}", g["latency_p99_ns"].get<double>()));
    }
    out.metrics.emplace_back("functional_check", r.values_checked ? "passed" : "not run");
    return out;
  }

 private:
  Simulator& sim_;
  GpuMemoryConfig memory_;
  MemoryWorkload workload_;
  std::unique_ptr<MemorySystem> model_;
};

}  // namespace

T3SIM_REGISTER(workload_kinds, "memory",
               "synthetic compute / communication traffic against one GPU's memory system (L2, MCs, HBM)",
               [](Simulator& sim, ConfigNode system, ConfigNode workload, const RunOptions& run) {
                 return std::make_unique<MemoryExperiment>(sim, system, workload, run);
               })

}  // namespace t3sim
