#pragma once
// The first end-to-end system: N GPUs on a ring, each with an idealized memory and
// a ring collective engine, running one reduce-scatter / all-gather / all-reduce
// with data values (or checksums) carried and checked at the end.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/collectives/ring_engine.h"
#include "models/mem/ideal_memory.h"
#include "models/net/ring.h"
#include "sim/config.h"
#include "sim/host_memory.h"

namespace t3sim {

struct CollectiveSystemConfig {
  std::uint32_t num_gpus = 8;
  NetConfig net;
  IdealMemoryConfig memory;
  RingEngineConfig engine;
};

struct CollectiveWorkload {
  CollectiveOp op = CollectiveOp::kReduceScatter;
  std::uint64_t array_bytes = 0;     // per GPU
  std::uint32_t element_bytes = 2;   // FP16
  std::string functional = "auto";   // auto | values | checksum
  std::uint64_t values_limit = 1ULL << 20;  // auto: values up to this array size
};

// Read `system` (num_gpus, net, memory, engine) and `workload` nodes.
CollectiveSystemConfig read_collective_system(ConfigNode system);
CollectiveWorkload read_collective_workload(ConfigNode workload);

// Results of one run, everything the summary, results.json and a sweep row need.
struct CollectiveResult {
  Tick time;                      // until the last GPU finished
  Tick analytical;                // (N-1)/N * S/B + (N-1) * latency (per ring pass)
  double algbw_gbps = 0;          // S / time
  double busbw_gbps = 0;          // algbw * (N-1)/N (RS, AG) or 2(N-1)/N (AR), NCCL's convention
  bool functional_ok = false;
  std::uint64_t blocks_checked = 0;
  FunctionalMode mode = FunctionalMode::kChecksum;
  nlohmann::json json;            // detailed per-GPU and per-link results
};

class CollectiveSystem {
 public:
  CollectiveSystem(Simulator& sim, const CollectiveSystemConfig& sys, const CollectiveWorkload& wl);
  ~CollectiveSystem();

  // Adds the host memory the data take (sim/host_memory.h): per GPU a checksum per
  // block of net.packet_size (98 B measured: a 1 GiB ring RS on 16 GPUs peaks at
  // 411 MB), or a word per element with values (a 64 MiB one with values at 4.2 GB).
  static void estimate_host_memory(const CollectiveSystemConfig& sys, const CollectiveWorkload& wl,
                                   HostMemoryEstimate& out);

  // Simulate to completion and check the data. Throws SimulationError on deadlock,
  // livelock, reaching `max_time` unfinished, or a failed functional check.
  CollectiveResult run(Tick max_time = Tick::max());

  // Compare every block each GPU must hold with the closed-form expectation.
  // Returns the number of blocks checked; `first_error` describes the first
  // mismatch (empty if none).
  std::uint64_t verify(std::string& first_error) const;

  // For tests and inspection.
  IdealMemory& memory(std::uint32_t gpu) { return *memories_[gpu]; }
  RingNetwork& network() { return *net_; }
  const ChunkLayout& layout() const { return layout_; }

 private:
  void preload();

  Simulator& sim_;
  CollectiveSystemConfig sys_;
  CollectiveWorkload wl_;
  FunctionalMode mode_;
  ChunkLayout layout_;
  std::vector<std::unique_ptr<Component>> gpus_;
  std::vector<std::unique_ptr<IdealMemory>> memories_;
  std::unique_ptr<RingNetwork> net_;
  std::vector<std::unique_ptr<RingCollectiveEngine>> engines_;
};

}  // namespace t3sim
