#include "sim/registry.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

std::vector<std::string> registered_names(const std::vector<RegistryEntry>& entries) {
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (const RegistryEntry& e : entries) names.push_back(e.name);
  return names;
}

void unknown_registered_name(std::string_view what, std::string_view name, const std::vector<std::string>& names) {
  throw UserError(fmt::format("unknown {} '{}' (registered: {})", what, name, fmt::join(names, ", ")));
}

}  // namespace t3sim
