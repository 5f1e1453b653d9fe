#include "models/mc/impl/fcfs.h"

namespace t3sim {

ScheduledCommand FcfsScheduler::schedule(DramQueue& active, DramQueue& /*other*/, Cycles now, Cycles& next,
                                         bool want_next) {
  QueuedRequest* const hot = active.hot.data();
  for (std::size_t i = 0; i < active.size(); ++i) {
    QueuedRequest& r = hot[i];
    if (r.hazards > 0) continue;
    r.command(dram_);
    if (r.ready > now.count() && !want_next) return {};  // the cached bound: not yet
    const Cycles t = r.exact_earliest(dram_, now);
    if (t == now) return {&active, i};
    if (want_next) next = std::min(next, t);
    return {};
  }
  return {};
}


T3SIM_REGISTER(dram_schedulers, "fcfs",
               "strict arrival order: the oldest request issues its next command when timing allows",
               [](const SchedulerParams& p) { return std::make_unique<FcfsScheduler>(p); })

}  // namespace t3sim
