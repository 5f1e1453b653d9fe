#include "models/system/experiment.h"

#include <algorithm>

#include "models/system/overlap/overlap_system.h"
#include "models/system/c3/c3_system.h"
#include "models/system/sublayer_configuration.h"

namespace t3sim {

ExperimentRegistry& workload_kinds() {
  static ExperimentRegistry registry;
  return registry;
}

std::vector<std::string> configuration_names() {
  std::vector<std::string> names = sublayer_configurations().names();
  for (std::string& n : c3_configurations().names()) names.push_back(std::move(n));
  for (std::string& n : overlap_configurations().names()) names.push_back(std::move(n));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace t3sim
