#pragma once
#include "models/mc/i_scheduler.h"

namespace t3sim {

// Strict first come, first served: the oldest request of the active queue that waits
// on no older one (hazards) issues its next command (ACT, PRE or column) when its
// timing allows, and nothing younger passes it; no row-hit reordering. (A request
// with hazards waits for an older one in the other queue, which the controller serves
// once every request of the active queue has hazards: passing it over reorders
// nothing that could issue, and waiting for it would never end.)
class FcfsScheduler final : public DramScheduler {
 public:
  explicit FcfsScheduler(const SchedulerParams& params) : dram_(params.dram) {}
  ScheduledCommand schedule(DramQueue& active, DramQueue& other, Cycles now, Cycles& next, bool want_next) override;

 private:
  const HbmChannel& dram_;
};

}  // namespace t3sim
