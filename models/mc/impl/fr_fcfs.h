#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "models/mc/i_scheduler.h"

namespace t3sim {

// FR-FCFS (first ready, first come first served) over the active queue: the oldest
// ready column command (row hit), else the oldest ready ACT/PRE. A bank's open row is
// not closed while a ready hit to it waits, up to row_hit_cap hits since its ACT. When
// nothing in the active queue can issue, a row is opened or closed for the other queue
// meanwhile (ACT/PRE do not use the data bus), never one the active queue still hits.
class FrFcfsScheduler final : public DramScheduler {
 public:
  explicit FrFcfsScheduler(const SchedulerParams& params);
  // Defined below, in the header: it is the scan every memory cycle of every run
  // makes, so the controller calls it directly (the class is final) where it can be
  // inlined, which the virtual call through DramScheduler cannot.
  ScheduledCommand schedule(DramQueue& active, DramQueue& other, Cycles now, Cycles& next, bool want_next) override {
    return scan(active, other, now, next, want_next);
  }
  [[gnu::always_inline]] inline ScheduledCommand scan(DramQueue& active, DramQueue& other, Cycles now, Cycles& next,
                                                      bool want_next);

 private:
  const HbmChannel& dram_;
  std::uint32_t row_hit_cap_;
  std::vector<std::uint32_t> hits_since_activate_;  // per bank
  // schedule()'s scratch: requests of the active queue skipped on a cached bound, its
  // ACT/PRE requests (both sized to the larger queue), requests of the other queue
  // skipped on a cached bound.
  std::vector<std::uint32_t> skipped_, row_cmds_, skipped_other_;
};

inline constexpr Cycles kFrFcfsNever{std::numeric_limits<Cycles::rep>::max()};
inline constexpr std::size_t kFrFcfsNone = ~std::size_t{0};

inline ScheduledCommand FrFcfsScheduler::scan(DramQueue& active, DramQueue& other, Cycles now_c, Cycles& next,
                                           bool want_next) {
  // FR-FCFS in two passes: the column commands (row hits) first, and only when none of
  // them issues the ACT/PRE commands, kept in queue order (`row_cmds`) meanwhile: a
  // ready ACT waiting behind row hits costs no timing check per cycle.
  //
  // Rows that requests waiting on nothing older still hit are not closed under their
  // hits (until row_hit_cap), or FR-FCFS would thrash rows. A hazard-free request hits
  // its bank's open row exactly when its next command is a column command, so the
  // first pass collects those banks (`hit_banks`) for the precharges of the second.
  //
  // Members are read into locals first: the stores to a request's cached command (a
  // byte, which may alias anything) would otherwise reload them at every entry.
  const HbmChannel& dram = dram_;
  std::uint32_t* const hits_since_activate = hits_since_activate_.data();
  const std::uint32_t row_hit_cap = row_hit_cap_;
  std::uint64_t hit_banks = 0;  // at most 64 banks (checked by the controller)
  auto precharge_held = [&](const QueuedRequest& h, bool below_cap_only) {
    const std::uint32_t b = h.bank;
    if (below_cap_only && hits_since_activate[b] >= row_hit_cap) return false;
    return (hit_banks >> b & 1) != 0;
  };
  const std::uint64_t now = now_c.count();
  // Nothing issuing this cycle means sleeping until the earliest cycle any of these
  // requests may issue: `soonest` collects it from the exact bounds computed on the
  // way, and the requests skipped on a cached bound are listed for the exact pass.
  // (The cached bounds only ever make a request wait that could not issue anyway, so
  // when they are refreshed changes nothing but the work done.)
  Cycles soonest = kFrFcfsNever;
  // Scratch lists sized to the larger queue's capacity at construction: no checks.
  std::uint32_t* const skipped = skipped_.data();
  std::uint32_t* const row_cmds = row_cmds_.data();
  std::size_t n_skipped = 0, n_row = 0;
  QueuedRequest* const hot = active.hot.data();
  const std::size_t n = active.size();
  for (std::size_t i = 0; i < n; ++i) {
    QueuedRequest& h = hot[i];
    if (h.hazards > 0) continue;
    const DramCommand cmd = h.command(dram);
    if (!is_column(cmd)) {
      row_cmds[n_row++] = static_cast<std::uint32_t>(i);
      continue;
    }
    hit_banks |= std::uint64_t{1} << h.bank;
    if (h.ready > now) {
      if (want_next) skipped[n_skipped++] = static_cast<std::uint32_t>(i);
      continue;
    }
    const Cycles t = h.exact_earliest(dram, now_c);
    if (t != now_c) {
      soonest = std::min(soonest, t);
      continue;
    }
    ++hits_since_activate[h.bank];
    return {&active, i};
  }
  // No column command issues: the oldest ACT/PRE that can. A bank's oldest one stands
  // for the bank's others (the same command, whose timing depends on the bank alone; see
  // the other queue's pass below).
  std::size_t other_ready = kFrFcfsNone;
  std::uint64_t row_banks_seen = 0;
  for (std::size_t k = 0; k < n_row; ++k) {
    const std::uint32_t i = row_cmds[k];
    QueuedRequest& h = hot[i];
    if ((row_banks_seen >> h.bank & 1) != 0) continue;
    row_banks_seen |= std::uint64_t{1} << h.bank;
    if (h.cmd == static_cast<std::uint8_t>(DramCommand::kPrecharge) && precharge_held(h, true)) continue;
    if (h.ready > now) {
      if (want_next) skipped[n_skipped++] = i;
      continue;
    }
    const Cycles t = h.exact_earliest(dram, now_c);
    if (t != now_c) {
      soonest = std::min(soonest, t);
      continue;
    }
    other_ready = i;
    break;
  }
  DramQueue* row_queue = &active;
  skipped_other_.clear();
  if (other_ready == kFrFcfsNone) {
    // Nothing in the active queue can issue: open or close a row for the other queue
    // meanwhile (ACT/PRE do not use the data bus, so no turnaround), never closing a
    // row the active queue still hits.
    //
    // Only a bank's oldest ACT/PRE request is looked at: the others of that bank need
    // the same command (PRE while a row is open, ACT while none is: a bank's requests'
    // commands are recomputed together when it opens or closes), and its timing depends
    // on the bank alone (exact_earliest: command, bank, group), so they issue no sooner
    // and wake nothing sooner. (The other queue is the H200's 512-entry write queue while reads are
    // active: this pass was most of the controllers' time there.)
    std::uint64_t looked_at = 0;
    for (std::size_t i = 0; i < other.size() && other_ready == kFrFcfsNone; ++i) {
      QueuedRequest& h = other.hot[i];
      if (h.hazards > 0 || (looked_at >> h.bank & 1) != 0) continue;
      const DramCommand cmd = h.command(dram);
      if (is_column(cmd)) continue;
      looked_at |= std::uint64_t{1} << h.bank;
      if (cmd == DramCommand::kPrecharge && precharge_held(h, false)) continue;
      if (h.ready > now) {
        if (want_next) skipped_other_.push_back(static_cast<std::uint32_t>(i));
        continue;
      }
      const Cycles t = h.exact_earliest(dram, now_c);
      if (t == now_c) {
        other_ready = i;
        row_queue = &other;
      } else {
        soonest = std::min(soonest, t);  // wake for it too, or the slot is only used by chance
      }
    }
  }
  if (other_ready == kFrFcfsNone) {
    if (!want_next) return {};
    // Nothing issues: the exact bounds of the skipped requests complete `soonest`.
    for (std::size_t k = 0; k < n_skipped; ++k) soonest = std::min(soonest, hot[skipped[k]].exact_earliest(dram, now_c));
    for (const std::uint32_t i : skipped_other_) soonest = std::min(soonest, other.hot[i].exact_earliest(dram, now_c));
    next = std::min(next, soonest);
    return {};
  }
  // A row opens (its hits are counted from here) or closes.
  if (row_queue->hot[other_ready].cmd == static_cast<std::uint8_t>(DramCommand::kActivate))
    hits_since_activate[row_queue->hot[other_ready].bank] = 0;
  return {row_queue, other_ready};
}

}  // namespace t3sim
