#include "models/tracker/tracker.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {

TrackerConfig read_tracker_config(ConfigNode node) {
  TrackerConfig cfg;
  cfg.sets = static_cast<std::uint32_t>(node.get_uint("sets", cfg.sets, 1, 1u << 20));
  cfg.ways = static_cast<std::uint32_t>(node.get_uint("ways", cfg.ways, 1, 1024));
  cfg.wg_msb_bits = static_cast<std::uint32_t>(node.get_uint("wg_msb_bits", cfg.wg_msb_bits, 0, 32));
  cfg.wf_bits = static_cast<std::uint32_t>(node.get_uint("wf_bits", cfg.wf_bits, 0, 8));
  cfg.address_bits = static_cast<std::uint32_t>(node.get_uint("address_bits", cfg.address_bits, 1, 64));
  cfg.counter_bits = static_cast<std::uint32_t>(node.get_uint("counter_bits", cfg.counter_bits, 1, 64));
  cfg.trigger_latency = node.get_time("trigger_latency", cfg.trigger_latency);
  cfg.set_full = node.get_enum("set_full", "overflow", {"overflow", "stall"}) == "stall" ? SetFullPolicy::kStall
                                                                                          : SetFullPolicy::kOverflow;
  cfg.overflow_latency = node.get_time("overflow_latency", cfg.overflow_latency);
  node.finish();
  return cfg;
}

Tracker::Tracker(Component& parent, std::string_view name, const TrackerConfig& cfg)
    : Component(parent, name),
      cfg_(cfg),
      entries_(std::size_t{cfg.sets} * cfg.ways),
      accesses_(counter("accesses", "requests", "tracked writes and updates counted")),
      bytes_counted_(counter("bytes_counted", "bytes", "bytes of tracked writes and updates counted")),
      fills_(counter("fills", "entries", "entries allocated (a WF region's first tracked access)")),
      fires_(counter("triggers", "regions", "regions completed: their DMA entry marked ready")),
      set_full_stalls_(counter("set_full_stalls", "stalls",
                               "times a controller held a tracked access because its set was full")),
      overflow_regions_(counter("overflow_regions", "regions",
                                "regions counted in the backing table because their set was full")),
      overflow_accesses_(counter("overflow_accesses", "requests", "accesses counted in the backing table")),
      max_live_(counter("max_live_entries", "entries", "most entries live at once")) {}

void Tracker::program(TrackerProgram* program) {
  T3SIM_CHECK(live_ == 0 && overflow_.empty(),
              fmt::format("reprogrammed with {} live entries, {} overflowed regions", live_, overflow_.size()));
  program_ = program;
}

int Tracker::find(const TrackerTag& tag) const {
  const std::size_t base = std::size_t{tag.wg % cfg_.sets} * cfg_.ways;
  for (std::uint32_t w = 0; w < cfg_.ways; ++w) {
    const Entry& e = entries_[base + w];
    if (e.valid && e.tag == tag) return static_cast<int>(base + w);
  }
  return -1;
}

int Tracker::free_way(std::uint32_t set) const {
  const std::size_t base = std::size_t{set} * cfg_.ways;
  for (std::uint32_t w = 0; w < cfg_.ways; ++w)
    if (!entries_[base + w].valid) return static_cast<int>(base + w);
  return -1;
}

bool Tracker::can_count_tracked(const MemRequest& req) const {
  if (cfg_.set_full == SetFullPolicy::kOverflow) return true;  // a full set overflows
  if (find(req.track) >= 0) return true;
  if (program_->expected_bytes(req.track.wg, req.track.wf, req.address) == 0) return true;
  return free_way(req.track.wg % cfg_.sets) >= 0;
}

bool Tracker::add(Entry& e, std::uint64_t address, std::uint32_t bytes) {
  e.start = std::min(e.start, address);
  e.counted += bytes;
  T3SIM_CHECK(e.counted <= e.expected,
              fmt::format("WG {} WF {}: {} B counted, {} expected (an access counted twice?)", e.tag.wg, e.tag.wf,
                          e.counted, e.expected));
  return e.counted == e.expected;
}

void Tracker::count_tracked(const MemRequest& req) {
  int i = find(req.track);
  if (i < 0) {
    if (!overflow_.empty() && overflow_.count(key(req.track)) > 0) {
      overflow(req);  // the region lives in the backing table: count it there
      return;
    }
    const std::uint64_t expected = program_->expected_bytes(req.track.wg, req.track.wf, req.address);
    if (expected == 0) return;  // not tracked here
    i = free_way(req.track.wg % cfg_.sets);
    if (i < 0) {
      T3SIM_CHECK(cfg_.set_full == SetFullPolicy::kOverflow,
                  "on_admit() into a full set (the controller must check can_admit first)");
      overflow_.emplace(key(req.track), Entry{true, req.track, req.address, 0, expected});
      ++overflow_regions_;
      overflow(req);
      return;
    }
    Entry& e = entries_[static_cast<std::size_t>(i)];
    e = Entry{true, req.track, req.address, 0, expected};
    ++live_;
    ++fills_;
    if (live_ > max_live_.value()) max_live_ += live_ - max_live_.value();
  }
  Entry& e = entries_[static_cast<std::size_t>(i)];
  ++accesses_;
  bytes_counted_ += req.bytes;
  if (!add(e, req.address, req.bytes)) return;
  e.valid = false;
  --live_;
  complete(e.tag);
  // An entry freed: controllers holding set-full accesses try again.
  waking_.swap(waiters_);
  for (AdmissionWaiter* w : waking_) w->on_admission_room();
  waking_.clear();
}

// set_full: overflow. The access is already admitted; its count lands in the backing
// table overflow_latency later (all with the same latency, so in admission order).
void Tracker::overflow(const MemRequest& req) {
  ++accesses_;
  ++overflow_accesses_;
  bytes_counted_ += req.bytes;
  const std::uint64_t k = key(req.track);
  const std::uint64_t address = req.address;
  const std::uint32_t bytes = req.bytes;
  sim().events().schedule_callback(now() + cfg_.overflow_latency,
                                   [this, k, address, bytes] { count_overflowed(k, address, bytes); });
}

void Tracker::count_overflowed(std::uint64_t k, std::uint64_t address, std::uint32_t bytes) {
  const auto it = overflow_.find(k);
  T3SIM_CHECK(it != overflow_.end(), "an overflowed access of a region no longer in the backing table");
  if (!add(it->second, address, bytes)) return;
  const TrackerTag tag = it->second.tag;
  overflow_.erase(it);
  complete(tag);
}

void Tracker::complete(TrackerTag tag) {
  ++fires_;
  sim().events().schedule_callback(now() + cfg_.trigger_latency, [this, tag] { fire(tag); });
}

void Tracker::fire(TrackerTag tag) {
  sim().note_progress();
  program_->on_region_ready(tag.wg, tag.wf);
}

void Tracker::wait_for_room(AdmissionWaiter* w) {
  if (std::find(waiters_.begin(), waiters_.end(), w) != waiters_.end()) return;
  ++set_full_stalls_;
  waiters_.push_back(w);
}

std::uint64_t Tracker::size_bytes() const {
  const std::uint64_t bits_per_entry =
      std::uint64_t{cfg_.wg_msb_bits} + cfg_.wf_bits + cfg_.address_bits + cfg_.counter_bits;
  return (std::uint64_t{cfg_.sets} * cfg_.ways * bits_per_entry + 7) / 8;
}

void Tracker::report_in_flight(std::vector<std::string>& out) const {
  if (live_ == 0 && waiters_.empty() && overflow_.empty()) return;
  std::string list;
  std::uint32_t shown = 0;
  for (const Entry& e : entries_) {
    if (!e.valid) continue;
    if (shown++ == 8) {
      list += " ...";
      break;
    }
    list += fmt::format(" (WG {} WF {}: {}/{} B from {:#x})", e.tag.wg, e.tag.wf, e.counted, e.expected, e.start);
  }
  out.push_back(fmt::format("{} live entries{}; {} regions in the backing table; {} controllers held on a full set",
                            live_, list, overflow_.size(), waiters_.size()));
}

}  // namespace t3sim
