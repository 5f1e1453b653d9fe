#pragma once
#include <cstdint>
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
  ScheduledCommand schedule(DramQueue& active, DramQueue& other, Cycles now, Cycles& next, bool want_next) override;

 private:
  const HbmChannel& dram_;
  std::uint32_t row_hit_cap_;
  std::vector<std::uint32_t> hits_since_activate_;  // per bank
  // schedule()'s scratch: requests of the active queue skipped on a cached bound, its
  // ACT/PRE requests (both sized to the larger queue), requests of the other queue
  // skipped on a cached bound.
  std::vector<std::uint32_t> skipped_, row_cmds_, skipped_other_;
};

}  // namespace t3sim
