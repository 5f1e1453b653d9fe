#pragma once
#include <algorithm>
#include <bit>
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
                                                      bool want_next) {
    return scan_for<true>(active, other, now, next, want_next);
  }
  // Whether scan would find a command to issue at `now`: that command, not yet chosen
  // (no state changes but the cached bounds scan updates too; choose() it to issue it
  // at `now` as scan would have), or none, after lowering `next` as scan with
  // want_next does. The controller's look at the next cycle.
  ScheduledCommand look(DramQueue& active, DramQueue& other, Cycles now, Cycles& next) {
    return scan_for<false>(active, other, now, next, true);
  }
  // Issues what look() returned, as scan would have on returning it.
  ScheduledCommand choose(const ScheduledCommand& c) {
    count_choice(c);
    return c;
  }

 private:
  const HbmChannel& dram_;
  std::uint32_t row_hit_cap_;
  std::vector<std::uint32_t> hits_since_activate_;  // per bank

  void count_choice(const ScheduledCommand& c) {
    if (is_column(c.command)) {
      ++hits_since_activate_[c.bank];
    } else if (c.command == DramCommand::kActivate) {
      hits_since_activate_[c.bank] = 0;  // a row opens: its hits are counted from here
    }
  }
  // kChoose: the choice is issued (its row-hit count kept), else only looked at.
  template <bool kChoose>
  [[gnu::always_inline]] inline ScheduledCommand scan_for(DramQueue& active, DramQueue& other, Cycles now,
                                                          Cycles& next, bool want_next);
};

inline constexpr Cycles kFrFcfsNever{std::numeric_limits<Cycles::rep>::max()};

template <bool kChoose>
inline ScheduledCommand FrFcfsScheduler::scan_for(DramQueue& active, DramQueue& other, Cycles now_c, Cycles& next,
                                                  bool want_next) {
  // FR-FCFS in two passes over the active queue's banks: the column commands (row hits)
  // first, and only when none of them issues the ACT/PRE commands. A bank's oldest row
  // hit stands for its other hits and its oldest row miss for its other misses
  // (BankQueue: the same command, whose timing depends on the bank alone), so the
  // oldest request that can issue is the oldest of these that can. The passes read
  // one BankQueue line per bank and no request.
  //
  // Rows that requests waiting on nothing older still hit are not closed under their
  // hits (until row_hit_cap), or FR-FCFS would thrash rows: the first pass collects
  // those banks (`hit_banks`) for the precharges of the second.
  const HbmChannel& dram = dram_;
  const std::uint64_t now = now_c.count();
  std::uint64_t hit_banks = 0;
  // Nothing issuing this cycle means sleeping until the earliest cycle any of these
  // requests may issue: `soonest` collects it. Without want_next it is not needed, and
  // a command whose cached bound lies ahead is passed over without reading DRAM state.
  Cycles soonest = kFrFcfsNever;
  auto can_issue_now = [&](std::uint64_t& bound, DramCommand cmd, std::uint32_t bank, std::uint32_t group) {
    if (bound > now && !want_next) return false;
    bound = dram.earliest_in_bank(cmd, bank, group, Cycles(0)).count();
    if (bound <= now) return true;
    soonest = std::min(soonest, Cycles(bound));
    return false;
  };
  // The choice so far: the oldest request that can issue now.
  struct Choice {
    DramQueue* queue = nullptr;
    std::uint32_t bank = 0;
    std::uint64_t seq = BankQueue::kNone;
    DramCommand command = DramCommand::kRead;
  } chosen;

  for (std::uint64_t m = active.occupied_banks; m != 0; m &= m - 1) {
    const auto b = static_cast<std::uint32_t>(std::countr_zero(m));
    BankQueue& q = active.found(b, dram);
    if (q.oldest_hit == BankQueue::kNone) continue;
    hit_banks |= std::uint64_t{1} << b;
    if (q.oldest_hit > chosen.seq) continue;  // an older one issues
    if (can_issue_now(q.hit_ready, q.hit_command, b, q.group)) chosen = {&active, b, q.oldest_hit, q.hit_command};
  }
  if (chosen.queue == nullptr) {
    // No column command issues: the oldest ACT/PRE that can, never closing a row that
    // hits still wait for (below row_hit_cap hits since its ACT).
    for (std::uint64_t m = active.occupied_banks; m != 0; m &= m - 1) {
      const auto b = static_cast<std::uint32_t>(std::countr_zero(m));
      BankQueue& q = active.banks[b];  // found above
      if (q.oldest_miss == BankQueue::kNone || q.oldest_miss > chosen.seq) continue;
      if (q.miss_command == DramCommand::kPrecharge && (hit_banks >> b & 1) != 0 &&
          hits_since_activate_[b] < row_hit_cap_)
        continue;
      if (can_issue_now(q.miss_ready, q.miss_command, b, q.group)) chosen = {&active, b, q.oldest_miss, q.miss_command};
    }
  }
  if (chosen.queue == nullptr) {
    // Nothing in the active queue can issue: open or close a row for the other queue
    // meanwhile (ACT/PRE do not use the data bus, so no turnaround), never closing a
    // row the active queue still hits. Its requests count for `soonest` too, or the
    // slot would only be used by chance. (The other queue is the H200's 512-entry
    // write queue while reads are active.)
    for (std::uint64_t m = other.occupied_banks; m != 0; m &= m - 1) {
      const auto b = static_cast<std::uint32_t>(std::countr_zero(m));
      BankQueue& q = other.found(b, dram);
      if (q.oldest_miss == BankQueue::kNone || q.oldest_miss > chosen.seq) continue;
      if (q.miss_command == DramCommand::kPrecharge && (hit_banks >> b & 1) != 0) continue;
      if (can_issue_now(q.miss_ready, q.miss_command, b, q.group)) chosen = {&other, b, q.oldest_miss, q.miss_command};
    }
  }
  if (chosen.queue == nullptr) {
    if (want_next) next = std::min(next, soonest);
    return {};
  }
  const ScheduledCommand c{chosen.queue, chosen.bank, chosen.queue->banks[chosen.bank].index_of(chosen.seq),
                           chosen.command};
  if constexpr (kChoose) count_choice(c);
  return c;
}

}  // namespace t3sim
