#include "sim/error.h"

#include <fmt/format.h>

namespace t3sim {

std::string SourceLocation::str() const {
  if (file.empty()) return "<default>";
  if (line == 0) return file;
  return fmt::format("{}:{}", file, line);
}

ConfigError::ConfigError(SourceLocation where, std::string key, std::string message)
    : UserError(fmt::format("{}: {}{}{}", where.str(), key, key.empty() ? "" : ": ", message)),
      where_(std::move(where)),
      key_(std::move(key)),
      message_(std::move(message)) {}

void internal_error(Tick now, const std::string& component, const std::string& message,
                    const char* file, int line) {
  throw InternalError(fmt::format("internal error at t={} ({} ps) in {}: {} ({}:{})", to_string(now), now.ps(),
                                  component, message, file, line));
}

}  // namespace t3sim
