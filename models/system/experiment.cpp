#include "models/system/experiment.h"

namespace t3sim {

ExperimentRegistry& workload_kinds() {
  static ExperimentRegistry registry;
  return registry;
}

}  // namespace t3sim
