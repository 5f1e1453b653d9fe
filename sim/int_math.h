#pragma once
// Integer helpers the trace generators and models share, and the byte count the run
// summaries print (one definition each, so that no file keeps its own copy in an
// anonymous namespace: CONTRIBUTING.md's unity-build rule).

#include <cstdint>

namespace t3sim {

// ceil(a / b), b > 0.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
// The smallest multiple of b at or above a, b > 0.
constexpr std::uint64_t align_up(std::uint64_t a, std::uint64_t b) { return ceil_div(a, b) * b; }
// A byte count or address as a trace expression's signed coefficient.
constexpr std::int64_t i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }
// A byte count in decimal megabytes, as the run summaries print traffic.
constexpr double megabytes(std::uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

}  // namespace t3sim
