// The DRAM command schedulers by name. A new scheduler adds its class under impl/ and
// one row to kSchedulers (name, one-line description, factory).

#include <functional>

#include "models/mc/i_scheduler.h"
#include "models/mc/impl/fcfs.h"
#include "models/mc/impl/fr_fcfs.h"

namespace t3sim {

namespace {

struct SchedulerType : RegistryEntry {
  std::function<std::unique_ptr<DramScheduler>(const SchedulerParams&)> make;
};

const std::vector<SchedulerType>& schedulers() {
  static const std::vector<SchedulerType> kSchedulers = {
      {{"fr-fcfs", "first ready: the oldest row hit, else the oldest ready ACT/PRE; rows held up to row_hit_cap hits"},
       [](const SchedulerParams& p) { return std::make_unique<FrFcfsScheduler>(p); }},
      {{"fcfs", "strict arrival order: the oldest request issues its next command when timing allows"},
       [](const SchedulerParams& p) { return std::make_unique<FcfsScheduler>(p); }},
  };
  return kSchedulers;
}

}  // namespace

const std::vector<RegistryEntry>& scheduler_types() {
  static const std::vector<RegistryEntry> kEntries = registry_entries(schedulers());
  return kEntries;
}

std::unique_ptr<DramScheduler> make_scheduler(std::string_view name, const SchedulerParams& params) {
  return find_registered(schedulers(), name, "DRAM scheduler").make(params);
}

}  // namespace t3sim
