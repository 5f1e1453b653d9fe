#include "models/mc/impl/fr_fcfs.h"

#include <algorithm>
#include <limits>

namespace t3sim {

FrFcfsScheduler::FrFcfsScheduler(const SchedulerParams& params)
    : dram_(params.dram),
      row_hit_cap_(params.row_hit_cap),
      hits_since_activate_(params.dram.config().banks(), 0) {}


T3SIM_REGISTER(dram_schedulers, "fr-fcfs",
               "first ready: the oldest row hit, else the oldest ready ACT/PRE; rows held up to row_hit_cap hits",
               [](const SchedulerParams& p) { return std::make_unique<FrFcfsScheduler>(p); })

}  // namespace t3sim
