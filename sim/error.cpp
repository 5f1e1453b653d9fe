#include "sim/error.h"

#include <cstdio>
#include <cstdlib>

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
  std::fprintf(stderr, "t3sim: internal error at tick %llu ps in %s: %s (%s:%d)\n",
               static_cast<unsigned long long>(now.ps()), component.c_str(), message.c_str(), file,
               line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace t3sim
