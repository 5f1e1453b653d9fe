#pragma once
// The T3 tracker (T3 §4.2.1, Figure 9): at a GPU's memory controllers, it counts the
// writes and updates of each producer WF's output region, and once a region has
// received all it expects (wf_tile_size x updates_per_element) it marks the
// region's pre-programmed DMA entry ready (T3 §4.2.2) and frees its entry.
//
//   sets x ways entries; set = WG id mod sets (the WG-id LSBs), tag = (WG id / sets,
//   WF id) (the WG-id MSBs and the WF id); each entry: tag, the region's start
//   address (the lowest address seen) and an access counter (bytes here).
//
// What is tracked, and what happens when a region is complete, is programmed ahead
// of the kernel (the address-space configuration, T3 §4.4) through TrackerProgram.
// Counting happens when a write or update enters a DRAM queue (T3: "once the
// accesses are enqueued in the memory controller queue"), so the queue order that
// makes near-memory updates atomic also orders the DMA's read after them.
//
// Set full (a tracked access whose (WG, WF) has no entry and whose set has no free
// way), by `set_full` (the paper does not say):
//  - overflow (default): the region is counted in a backing table in memory instead
//    (a counter read-modify-write per access, `overflow_latency` later); the access is
//    admitted at once and the region's later accesses are counted there too, so it
//    completes, later. Never blocks, so a tracker smaller than a stage's regions
//    (T-NLG TP4's 272-WG chunks on 256 sets) costs trigger delay, not a deadlock.
//    Counted as `overflow_regions` / `overflow_accesses`.
//  - stall: the controller holds the access at the head of its stream's ingress
//    queue (can_admit() false) until an entry of any set frees, as a cache holds a
//    miss when its MSHRs are full. Counted as `set_full_stalls`. It can deadlock: the
//    held access may block (head of line) the accesses that would complete the live
//    entries; the watchdog's deadlock report then lists them.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/mc/i_admission_observer.h"
#include "models/mem/mem_request.h"
#include "sim/component.h"
#include "sim/event_queue.h"
#include "sim/stats.h"

namespace t3sim {

class ConfigNode;

enum class SetFullPolicy : std::uint8_t { kOverflow, kStall };

struct TrackerConfig {
  std::uint32_t sets = 256;  // indexed by WG-id LSBs (T3: 8 bits)
  std::uint32_t ways = 8;    // per set (T3: up to eight WFs per WG, one WG per set)
  // Only for the size report (T3 §4.2.1 comes to 19 KB): bits per entry field.
  std::uint32_t wg_msb_bits = 4;   // log2(max WGs per stage / sets)
  std::uint32_t wf_bits = 3;       // eight WFs per WG
  std::uint32_t address_bits = 48; // start (virtual) address
  std::uint32_t counter_bits = 21; // accesses counted
  // From the access that completes a region to its DMA entry being ready.
  Tick trigger_latency = Tick::zero();
  SetFullPolicy set_full = SetFullPolicy::kOverflow;
  // overflow: from an access's admission to its count in the backing table (one DRAM
  // counter read-modify-write, uncontended; a simplification: it takes no DRAM
  // bandwidth).
  Tick overflow_latency = Tick::ns(100);
};

// Reads `tracker:` (sets, ways, wg_msb_bits, wf_bits, address_bits, counter_bits,
// trigger_latency, set_full: overflow | stall, overflow_latency).
TrackerConfig read_tracker_config(ConfigNode node);

// The tracker's programming (the address-space configuration, T3 §4.4).
class TrackerProgram {
 public:
  virtual ~TrackerProgram() = default;
  // Contract: the bytes of writes and updates the output region of (wg, wf) expects
  // here before it is complete (its bytes x updates_per_element), if a write by
  // (wg, wf) at `address` is tracked on this GPU; 0 if it is not. No side effects.
  virtual std::uint64_t expected_bytes(std::uint32_t wg, std::uint8_t wf, std::uint64_t address) const = 0;
  // Contract: called once per region, when its last expected byte was counted (plus
  // the trigger latency): fire its DMA entry (or record it complete).
  virtual void on_region_ready(std::uint32_t wg, std::uint8_t wf) = 0;
};

// Every memory controller of the GPU reports its admissions to the tracker (it is
// their AdmissionObserver): the tracker counts the writes and updates among them, and
// under set_full: stall holds a tracked one whose set is full.
class Tracker final : public Component, public AdmissionObserver {
 public:
  Tracker(Component& parent, std::string_view name, const TrackerConfig& cfg);

  // Contract: the program must outlive the tracker's use; nullptr = nothing tracked.
  // Reprogramming requires no live entries.
  void program(TrackerProgram* program);

  // AdmissionObserver, watching writes and updates (T3 counts them, not reads).
  // can_admit: false iff `req` is a tracked write/update with no entry for its
  // (WG, WF) and a full set under set_full: stall (the controller must hold it).
  // on_admit: counts a write or update entering a DRAM queue (untracked ones and reads
  // are ignored); a tracked one completing its region frees the entry and calls
  // on_region_ready (after trigger_latency, from an event: never re-entrantly).
  // Counting more than a region expects is an internal error (an update doubled).
  // wait_for_room: woken the next time an entry frees.
  bool watches(MemOp op) const override { return op != MemOp::kRead; }
  bool can_admit(const MemRequest& req) const override { return !counts(req) || can_count_tracked(req); }
  void on_admit(const MemRequest& req) override {
    if (counts(req)) count_tracked(req);
  }
  void wait_for_room(AdmissionWaiter* w) override;

  // Regions being counted: in entries, and (overflow) in the backing table.
  std::uint32_t live_entries() const { return live_; }
  std::size_t overflowed_regions() const { return overflow_.size(); }
  std::uint64_t regions_completed() const { return fires_.value(); }
  std::uint64_t overflows() const { return overflow_regions_.value(); }
  // Storage the entries take (T3 §4.2.1), in bytes.
  std::uint64_t size_bytes() const;
  const TrackerConfig& config() const { return cfg_; }

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  // Inline so every controller's writes pay one test while nothing is programmed.
  bool counts(const MemRequest& req) const {
    return program_ != nullptr && req.track.tracked() && req.op != MemOp::kRead;
  }
  bool can_count_tracked(const MemRequest& req) const;
  void count_tracked(const MemRequest& req);
  struct Entry {
    bool valid = false;
    TrackerTag tag;              // the region's (wg, wf)
    std::uint64_t start = 0;     // lowest address counted
    std::uint64_t counted = 0;   // bytes
    std::uint64_t expected = 0;  // bytes
  };
  // The entry of the tag in its set, or -1.
  int find(const TrackerTag& tag) const;
  int free_way(std::uint32_t set) const;
  // The backing table's key of the tag's (wg, wf).
  static std::uint64_t key(const TrackerTag& tag) { return (std::uint64_t{tag.wg} << 8) | tag.wf; }
  // Adds bytes to an entry (in the tracker or the backing table); true if complete.
  bool add(Entry& e, std::uint64_t address, std::uint32_t bytes);
  // A region received all it expects: fire it after trigger_latency, from an event.
  void complete(TrackerTag tag);
  void overflow(const MemRequest& req);
  void count_overflowed(std::uint64_t key, std::uint64_t address, std::uint32_t bytes);
  void fire(TrackerTag tag);

  TrackerConfig cfg_;
  TrackerProgram* program_ = nullptr;
  std::vector<Entry> entries_;  // set * ways + way
  std::uint32_t live_ = 0;
  // set_full: overflow: regions counted in the backing table (by key()).
  std::unordered_map<std::uint64_t, Entry> overflow_;
  std::vector<AdmissionWaiter*> waiters_;
  std::vector<AdmissionWaiter*> waking_;  // scratch

  Counter& accesses_;
  Counter& bytes_counted_;
  Counter& fills_;
  Counter& fires_;
  Counter& set_full_stalls_;
  Counter& overflow_regions_;
  Counter& overflow_accesses_;
  Counter& max_live_;
};

}  // namespace t3sim
