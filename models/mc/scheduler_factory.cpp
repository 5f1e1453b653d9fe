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
  return dram_schedulers().get(name, "DRAM scheduler").make(params);
}

}  // namespace t3sim
