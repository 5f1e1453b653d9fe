#pragma once
// One GPU's memory system: L2 -> channel router -> one memory controller per HBM
// channel -> HBM channel (SPEC "How a byte flows", step 3).
//
//   requester --MemTarget--> gpuN.l2 --(misses, write-backs, uncached, updates)-->
//       router (address map: channel) --> gpuN.mcK --> gpuN.hbmK
//
// Everything enters through the L2, which bypasses uncached requests and updates
// straight to the controllers (T3 §4.3), so a cached copy is never stale.
//
// `memory.model: ideal` puts an IdealMemory (models/mem: latency + bandwidth, one
// FIFO) in their place, behind the same port: no L2, controllers, HBM or tracker.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/cache/l2_cache.h"
#include "models/hbm/hbm_channel.h"
#include "models/mc/address_map.h"
#include "models/mc/memory_controller.h"
#include "models/mem/ideal_memory.h"
#include "models/mem/mem_request.h"
#include "models/tracker/tracker.h"
#include "sim/component.h"
#include "sim/host_memory.h"

namespace t3sim {

class ConfigNode;

enum class MemoryModel : std::uint8_t {
  kHbm,    // L2 + memory controllers + HBM channels (+ T3's tracker)
  kIdeal,  // an IdealMemory: latency + bandwidth, nothing else
};

struct GpuMemoryConfig {
  MemoryModel model = MemoryModel::kHbm;
  IdealMemoryConfig ideal;  // model ideal (its value granule is hbm.value_granule's)
  // The hierarchy of model hbm. With model ideal only hbm.value_granule is used: the
  // functional word size every requester reads from here.
  HbmConfig hbm;
  AddressMapConfig address_map;
  McConfig mc;
  L2Config l2;
  TrackerConfig tracker;  // T3 tracker at the controllers (idle unless programmed)
};

// Reads a `memory:` section: model hbm (hbm, address_map, mc, l2, tracker) or
// model ideal (latency, bandwidth).
GpuMemoryConfig read_gpu_memory_config(ConfigNode memory);

// Adds the host memory of `gpus` such memory systems (sim/host_memory.h); keys under
// `prefix` ("system.memory").
void estimate_host_memory(const GpuMemoryConfig& cfg, std::uint32_t gpus, const std::string& prefix,
                          HostMemoryEstimate& out);

class GpuMemory final : public Component, public MemTarget {
 public:
  GpuMemory(Component& parent, std::string_view name, const GpuMemoryConfig& cfg);
  ~GpuMemory() override;

  // MemTarget: every request goes through the L2 (or to the ideal memory).
  bool can_accept(const MemRequest& req) const override { return ideal_ ? true : l2_->can_accept(req); }
  void accept(MemRequest&& req) override {
    if (ideal_) {
      ideal_->accept(std::move(req));
    } else {
      l2_->accept(std::move(req));
    }
  }
  void wait_for_space(MemClient* client) override {
    if (!ideal_) l2_->wait_for_space(client);
  }

  // The local compute kernel started / ended: every controller's arbiter is told
  // (MCA profiles the kernel alone and drains communication at its end, T3 §4.5).
  void kernel_begin();
  void kernel_end();

  const GpuMemoryConfig& config() const { return cfg_; }
  // The hierarchy's parts (model hbm). Contract: not called on an ideal memory (the
  // experiments that need them refuse `memory.model: ideal` at the config edge).
  std::uint32_t channels() const { return static_cast<std::uint32_t>(mcs_.size()); }
  L2Cache& l2();
  // The T3 tracker every controller counts writes and updates into (T3 §4.2.1).
  Tracker& tracker();
  MemoryController& mc(std::uint32_t i) { return *mcs_[i]; }
  HbmChannel& hbm(std::uint32_t i) { return *hbm_[i]; }
  const AddressMap& address_map() const { return map_; }
  // One stream's request and row-buffer counts summed over every controller (the
  // per-controller histograms are left out: latency and occupancy stay null); an
  // ideal memory's requests and bytes (no rows).
  McStreamStats stream_totals(Stream s) const;
  // One stream's requests at the L2 (L2Cache::stream_totals); the ideal memory has no
  // L2: zero. Both totals include what sampling skipped (add_skipped_traffic).
  L2Cache::StreamTotals l2_stream_totals(Stream s) const;
  // Steady-state sampling (models/gpu/stage_sampler.h) skipped stages with this traffic:
  // counted in the totals above, not in the controllers' and the L2's own statistics.
  void add_skipped_traffic(Stream s, const McStreamStats& dram, const L2Cache::StreamTotals& l2);
  // When the latest DRAM response left a controller: write-backs of dirty L2 lines
  // drain after the requests that caused them were acknowledged.
  Tick last_response() const;

  // Functional state outside simulated time: what the GPU would read at [address,
  // address + bytes) (DRAM contents overlaid with dirty L2 lines), and initial data.
  Payload peek(std::uint64_t address, std::uint32_t bytes) const;
  void preload(std::uint64_t address, const Payload& data);

 private:
  class Router;

  GpuMemoryConfig cfg_;
  AddressMap map_;
  std::vector<std::unique_ptr<HbmChannel>> hbm_;
  std::vector<std::unique_ptr<MemoryController>> mcs_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<L2Cache> l2_;
  std::unique_ptr<Tracker> tracker_;
  std::unique_ptr<IdealMemory> ideal_;  // model ideal: instead of all the above
  std::array<McStreamStats, kNumStreams> skipped_dram_{};       // counts only
  std::array<L2Cache::StreamTotals, kNumStreams> skipped_l2_{};
};

}  // namespace t3sim
