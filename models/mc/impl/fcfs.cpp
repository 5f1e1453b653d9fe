#include "models/mc/impl/fcfs.h"

#include <algorithm>

namespace t3sim {

ScheduledCommand FcfsScheduler::schedule(DramQueue& active, DramQueue& /*other*/, Cycles now, Cycles& next,
                                         bool want_next) {
  const auto [bank, seq] = active.oldest_free(dram_);
  if (seq == BankQueue::kNone) return {};
  // It is its bank's oldest row hit or oldest row miss.
  BankQueue& q = active.found(bank, dram_);
  const bool hit = seq == q.oldest_hit;
  const DramCommand cmd = hit ? q.hit_command : q.miss_command;
  std::uint64_t& bound = hit ? q.hit_ready : q.miss_ready;
  if (bound > now.count() && !want_next) return {};  // the cached bound: not yet
  bound = dram_.earliest_in_bank(cmd, bank, q.group, Cycles(0)).count();
  if (bound <= now.count()) return {&active, bank, q.index_of(seq), cmd};
  if (want_next) next = std::min(next, Cycles(bound));
  return {};
}


T3SIM_REGISTER(dram_schedulers, "fcfs",
               "strict arrival order: the oldest request issues its next command when timing allows",
               [](const SchedulerParams& p) { return std::make_unique<FcfsScheduler>(p); })

}  // namespace t3sim
