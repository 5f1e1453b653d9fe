#pragma once
// The memory-only workload: synthetic traffic generators (models/traffic) driving one
// GPU's memory system (models/memsys) with nothing else simulated, to characterize
// L2 + memory controllers + HBM alone and to sweep MC arbitration against a synthetic
// compute stream and a bursty communication stream (T3 §4.5, §6.1.2).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/memsys/gpu_memory.h"
#include "models/traffic/traffic_generator.h"
#include "sim/simulator.h"

namespace t3sim {

class ConfigNode;

struct MemoryWorkload {
  std::vector<TrafficConfig> generators;
  bool check_values = true;  // compare memory with the generators' reference at the end
};

// Reads a `kind: memory` workload: `generators:` (see models/traffic/README.md) and
// `check_values`. `value_granule` comes from the system's HBM.
MemoryWorkload read_memory_workload(ConfigNode workload, std::uint32_t value_granule);

// Per-stream totals over all channels of the GPU.
struct StreamMemoryStats {
  std::uint64_t requests[kNumMemOps] = {};
  std::uint64_t bytes[kNumMemOps] = {};
  std::uint64_t row_hits = 0, row_misses = 0, row_conflicts = 0;
  double latency_mean_ns = 0, latency_p99_ns = 0;  // at the memory controllers
  double dram_queue_occupancy_mean = 0;            // summed over channels
};

struct MemoryResult {
  Tick simulated;
  double dram_bandwidth = 0;  // bytes/s moved by all DRAM requests over the run
  double peak_bandwidth = 0;
  std::array<StreamMemoryStats, kNumStreams> streams;
  double row_hit_rate = 0;
  ValueReference::CheckResult values;
  bool values_checked = false;
  nlohmann::json json;  // everything above plus per-generator results
};

class MemorySystem {
 public:
  MemorySystem(Simulator& sim, const GpuMemoryConfig& memory, const MemoryWorkload& workload);
  ~MemorySystem();

  // Runs until every generator finished (or max_time: a SimulationError).
  MemoryResult run(Tick max_time = Tick::max());
  // The human summary of a result (stdout of `t3sim run`).
  std::string summary(const MemoryResult& r) const;

  GpuMemory& memory() { return *memory_; }
  TrafficGenerator& generator(std::size_t i) { return *generators_[i]; }

 private:
  Simulator& sim_;
  MemoryWorkload workload_;
  Component gpu_;
  std::unique_ptr<GpuMemory> memory_;
  ValueReference reference_;
  std::vector<std::unique_ptr<TrafficGenerator>> generators_;
  std::size_t kernels_running_ = 0;
};

}  // namespace t3sim
