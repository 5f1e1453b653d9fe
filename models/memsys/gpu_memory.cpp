#include "models/memsys/gpu_memory.h"

#include <stdexcept>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {

// Routes the L2's memory-side requests to the controller of their channel. Pure
// wiring (the crossbar has no modelled latency): can_accept and back-pressure are the
// controller's own.
class GpuMemory::Router final : public MemTarget {
 public:
  Router(const AddressMap& map, std::vector<std::unique_ptr<MemoryController>>& mcs) : map_(map), mcs_(mcs) {}
  bool can_accept(const MemRequest& req) const override {
    const std::uint32_t ch = map_.channel(req.address);
    if (mcs_[ch]->can_accept(req)) return true;
    if (!refused_[ch]) {
      refused_[ch] = true;
      refused_list_.push_back(ch);
    }
    return false;
  }
  void accept(MemRequest&& req) override { target(req).accept(std::move(req)); }
  std::uint32_t num_queues() const override { return static_cast<std::uint32_t>(mcs_.size()); }
  std::uint32_t queue_of(const MemRequest& req) const override { return map_.channel(req.address); }
  void wait_for_queue_space(MemClient* client, std::uint32_t queue) override { mcs_[queue]->wait_for_space(client); }
  void wait_for_space(MemClient* client) override {
    // The client (the L2) waits for every channel that refused it since it last
    // registered: whichever frees first wakes it.
    for (std::uint32_t ch : refused_list_) {
      mcs_[ch]->wait_for_space(client);
      refused_[ch] = false;
    }
    refused_list_.clear();
  }

 private:
  MemoryController& target(const MemRequest& req) const { return *mcs_[map_.channel(req.address)]; }
  const AddressMap& map_;
  std::vector<std::unique_ptr<MemoryController>>& mcs_;
  mutable std::vector<bool> refused_ = std::vector<bool>(mcs_.size(), false);
  mutable std::vector<std::uint32_t> refused_list_;
};

GpuMemoryConfig read_gpu_memory_config(ConfigNode memory) {
  GpuMemoryConfig cfg;
  static constexpr const char* kHierarchyKeys[] = {"hbm", "address_map", "mc", "l2", "tracker"};
  static constexpr const char* kIdealKeys[] = {"latency", "bandwidth"};
  if (memory.get_enum("model", "hbm", {"hbm", "ideal"}) == "ideal") {
    cfg.model = MemoryModel::kIdeal;
    for (const char* key : kHierarchyKeys)
      if (memory.has(key))
        memory.fail(key, "applies to model: hbm only (the ideal memory has no L2, controllers or DRAM)");
    cfg.ideal.latency = memory.get_time("latency", cfg.ideal.latency, Tick::zero(), Tick::ms(1));
    cfg.ideal.bandwidth = memory.get_bandwidth("bandwidth", cfg.ideal.bandwidth);
    cfg.ideal.value_granule = cfg.hbm.value_granule;
    memory.finish();
    return cfg;
  }
  for (const char* key : kIdealKeys)
    if (memory.has(key))
      memory.fail(key, "applies to model: ideal only (model hbm takes its timing from hbm, mc and l2)");
  cfg.hbm = read_hbm_config(memory.child("hbm"));
  cfg.address_map = read_address_map_config(memory.child("address_map"), cfg.hbm);
  cfg.mc = read_mc_config(memory.child("mc"));
  cfg.tracker = read_tracker_config(memory.child("tracker"));
  ConfigNode l2 = memory.child("l2");
  cfg.l2 = read_l2_config(l2);
  cfg.l2.value_granule = cfg.hbm.value_granule;
  if (cfg.l2.line_bytes % cfg.hbm.value_granule != 0) {
    l2.fail("line_size", fmt::format("expected a multiple of hbm.value_granule ({} B), got {} B",
                                     cfg.hbm.value_granule, cfg.l2.line_bytes));
  }
  if (cfg.address_map.interleave_bytes < cfg.l2.line_bytes) {
    memory.child("address_map").fail("interleave",
        fmt::format("expected at least the L2 line size ({} B) so a line stays in one channel, got {} B",
                    cfg.l2.line_bytes, cfg.address_map.interleave_bytes));
  }
  memory.finish();
  return cfg;
}

GpuMemory::GpuMemory(Component& parent, std::string_view name, const GpuMemoryConfig& cfg)
    : Component(parent, name), cfg_(cfg), map_(cfg.address_map, cfg.hbm) {
  if (cfg.model == MemoryModel::kIdeal) {
    ideal_ = std::make_unique<IdealMemory>(*this, "ideal", cfg.ideal);
    return;
  }
  tracker_ = std::make_unique<Tracker>(*this, "tracker", cfg.tracker);
  for (std::uint32_t c = 0; c < cfg.hbm.channels; ++c) {
    hbm_.push_back(std::make_unique<HbmChannel>(*this, fmt::format("hbm{}", c), cfg.hbm));
    mcs_.push_back(std::make_unique<MemoryController>(*this, fmt::format("mc{}", c), cfg.mc, *hbm_.back(), map_, c));
    mcs_.back()->set_admission_observer(tracker_.get());  // T3 §4.2.1: counts what enters the DRAM queues
  }
  router_ = std::make_unique<Router>(map_, mcs_);
  L2Config l2 = cfg.l2;
  l2.value_granule = cfg.hbm.value_granule;
  l2_ = std::make_unique<L2Cache>(*this, "l2", l2, *router_);
}

GpuMemory::~GpuMemory() = default;

L2Cache& GpuMemory::l2() {
  T3SIM_CHECK(l2_ != nullptr, "the ideal memory has no L2");
  return *l2_;
}

Tracker& GpuMemory::tracker() {
  T3SIM_CHECK(tracker_ != nullptr, "the ideal memory has no tracker");
  return *tracker_;
}

Tick GpuMemory::last_response() const {
  if (ideal_) return ideal_->last_response();
  Tick last = Tick::zero();
  for (const auto& mc : mcs_) last = std::max(last, mc->last_response());
  return last;
}

void GpuMemory::add_skipped_traffic(Stream s, const McStreamStats& dram, const L2Cache::StreamTotals& l2) {
  McStreamStats& d = skipped_dram_[index(s)];
  L2Cache::StreamTotals& c = skipped_l2_[index(s)];
  for (int o = 0; o < kNumMemOps; ++o) {
    d.requests[o] += dram.requests[o];
    d.bytes[o] += dram.bytes[o];
    c.bytes[o] += l2.bytes[o];
  }
  d.row_hits += dram.row_hits;
  d.row_misses += dram.row_misses;
  d.row_conflicts += dram.row_conflicts;
  c.hits += l2.hits;
  c.misses += l2.misses;
}

L2Cache::StreamTotals GpuMemory::l2_stream_totals(Stream s) const {
  L2Cache::StreamTotals t = ideal_ ? L2Cache::StreamTotals{} : l2_->stream_totals(s);
  const L2Cache::StreamTotals& k = skipped_l2_[index(s)];
  for (int o = 0; o < kNumMemOps; ++o) t.bytes[o] += k.bytes[o];
  t.hits += k.hits;
  t.misses += k.misses;
  return t;
}

McStreamStats GpuMemory::stream_totals(Stream s) const {
  McStreamStats total = skipped_dram_[index(s)];
  if (ideal_) {
    for (MemOp op : {MemOp::kRead, MemOp::kWrite, MemOp::kUpdate}) {
      total.requests[index(op)] += ideal_->requests(s, op);
      total.bytes[index(op)] += ideal_->bytes(s, op);
    }
    return total;
  }
  for (const auto& mc : mcs_) {
    const McStreamStats m = mc->stream_stats(s);
    for (int o = 0; o < kNumMemOps; ++o) {
      total.requests[o] += m.requests[o];
      total.bytes[o] += m.bytes[o];
    }
    total.row_hits += m.row_hits;
    total.row_misses += m.row_misses;
    total.row_conflicts += m.row_conflicts;
  }
  return total;
}

// The ideal memory has no arbiter to tell: the loops below find no controller.
void GpuMemory::kernel_begin() {
  for (auto& mc : mcs_) mc->kernel_begin();
}

void GpuMemory::kernel_end() {
  for (auto& mc : mcs_) mc->kernel_end();
}

// Host bytes per element, measured as peak RSS of `t3sim validate` while one key grows
// (table1.yaml, 8 GPUs; rounded up): an L2 line's tag state 25 B, a channel with its
// controller, queues' fixed part and bank state 26 KiB, a controller queue entry 32 B,
// a tracker entry 39 B.
// The ideal memory's state is the values it holds, which the workloads that carry
// values count.
void estimate_host_memory(const GpuMemoryConfig& cfg, std::uint32_t gpus, const std::string& prefix,
                          HostMemoryEstimate& out) {
  if (cfg.model == MemoryModel::kIdeal) return;
  const std::string of = fmt::format(" of {} GPU{}", gpus, gpus == 1 ? "" : "s");
  out.add(prefix + ".l2.size", "L2 tags" + of, std::uint64_t{gpus} * (cfg.l2.size_bytes / cfg.l2.line_bytes), 32);
  out.add(prefix + ".hbm.channels", "memory channels" + of, std::uint64_t{gpus} * cfg.hbm.channels, 32 * 1024);
  const std::uint64_t queue = std::uint64_t{cfg.mc.read_queue_size} + cfg.mc.write_queue_size +
                              2 * std::uint64_t{cfg.mc.ingress_queue_size};
  out.add(prefix + ".mc.read_queue_size", "memory-controller queues" + of,
          std::uint64_t{gpus} * cfg.hbm.channels * queue, 48);
  out.add(prefix + ".tracker.sets", "tracker entries" + of,
          std::uint64_t{gpus} * cfg.tracker.sets * cfg.tracker.ways, 48);
  // What a run allocates as it goes: its events, the controllers' queues and the L2's
  // line work grow with the requests in flight, which the L2's transactions bound.
  // 1.5 KiB per transaction: heaptrack of a GEMM alone on h200.yaml (tnlg.fc2.tp8,
  // max_transactions 16384): 14.7 MB of event-queue buckets, 5.7 MB of controller
  // queues and 4.9 MB of L2 line work at the peak (issue 45).
  out.add(prefix + ".l2.max_transactions", "requests in flight and their events" + of,
          std::uint64_t{gpus} * cfg.l2.max_transactions, 1536);
}

Payload GpuMemory::peek(std::uint64_t address, std::uint32_t bytes) const {
  if (ideal_) return ideal_->peek(address, bytes);
  const std::uint32_t granule = cfg_.hbm.value_granule;
  if (address % granule != 0 || bytes % granule != 0)
    throw std::invalid_argument(fmt::format("peek [{:#x}, +{}) is not aligned to the value granule ({} B)",
                                            address, bytes, granule));
  Payload out;
  out.words.reserve(bytes / granule);
  const std::uint64_t unit = map_.interleave_bytes();
  for (std::uint64_t a = address; a < address + bytes;) {
    const std::uint64_t piece = std::min<std::uint64_t>(address + bytes - a, unit - a % unit);
    const Payload p = hbm_[map_.channel(a)]->peek(map_.channel_local(a), static_cast<std::uint32_t>(piece));
    out.words.insert(out.words.end(), p.words.begin(), p.words.end());
    a += piece;
  }
  l2_->overlay(address, bytes, out);
  return out;
}

void GpuMemory::preload(std::uint64_t address, const Payload& data) {
  if (ideal_) {
    ideal_->preload(address, data);
    return;
  }
  const std::uint32_t granule = cfg_.hbm.value_granule;
  const std::uint64_t unit = map_.interleave_bytes();
  const std::uint64_t bytes = data.words.size() * granule;
  for (std::uint64_t a = address; a < address + bytes;) {
    const std::uint64_t piece = std::min<std::uint64_t>(address + bytes - a, unit - a % unit);
    Payload p;
    const auto first = data.words.begin() + static_cast<std::ptrdiff_t>((a - address) / granule);
    p.words.assign(first, first + static_cast<std::ptrdiff_t>(piece / granule));
    hbm_[map_.channel(a)]->preload(map_.channel_local(a), p);
    a += piece;
  }
}

}  // namespace t3sim
