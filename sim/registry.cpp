#include "sim/registry.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace t3sim {

void unknown_registered_name(std::string_view what, std::string_view name, const std::vector<std::string>& names) {
  throw UserError(fmt::format("unknown {} '{}' (registered: {})", what, name, fmt::join(names, ", ")));
}

}  // namespace t3sim
