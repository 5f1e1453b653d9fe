#include "sim/time.h"

#include <fmt/format.h>

namespace t3sim {

std::string to_string(Tick t) {
  const auto ps = t.ps();
  if (ps < 1'000) return fmt::format("{}ps", ps);
  if (ps < 1'000'000) return fmt::format("{:.3f}ns", t.ns());
  if (ps < 1'000'000'000) return fmt::format("{:.3f}us", t.us());
  if (ps < 1'000'000'000'000ULL) return fmt::format("{:.3f}ms", t.us() * 1e-3);
  return fmt::format("{:.3f}s", t.seconds());
}

}  // namespace t3sim
