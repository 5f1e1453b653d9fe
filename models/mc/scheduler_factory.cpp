// The DRAM command schedulers' registry. A new scheduler is a class under impl/ that
// registers itself there (T3SIM_REGISTER).
#include "models/mc/i_scheduler.h"

namespace t3sim {

DramSchedulers& dram_schedulers() {
  static DramSchedulers registry;
  return registry;
}

std::vector<RegistryEntry> scheduler_types() { return dram_schedulers().listing(); }

std::unique_ptr<DramScheduler> make_scheduler(std::string_view name, const SchedulerParams& params) {
  const DramSchedulers::Entry* scheduler = dram_schedulers().find(name);
  if (scheduler == nullptr) unknown_registered_name("DRAM scheduler", name, dram_schedulers().names());
  return scheduler->make(params);
}

}  // namespace t3sim
