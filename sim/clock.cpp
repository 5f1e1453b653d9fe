#include "sim/clock.h"

#include <stdexcept>

namespace t3sim {

namespace {
constexpr uint128 kPsPerSecond = 1'000'000'000'000ULL;
}

ClockDomain::ClockDomain(std::uint64_t frequency_hz) : hz_(frequency_hz) {
  if (hz_ == 0 || hz_ > 1'000'000'000'000ULL)
    throw std::invalid_argument("clock frequency must be in (0 Hz, 1 THz]");
}

Tick ClockDomain::edge(Cycles n) const {
  return Tick(static_cast<Tick::rep>(static_cast<uint128>(n.count()) * kPsPerSecond / hz_));
}

Cycles ClockDomain::cycle_at_or_after(Tick t) const {
  const uint128 num = static_cast<uint128>(t.ps()) * hz_;
  return Cycles(static_cast<Cycles::rep>((num + kPsPerSecond - 1) / kPsPerSecond));
}

Cycles ClockDomain::cycle_containing(Tick t) const {
  // Largest n with floor(n * 1e12 / f) <= t, i.e. n * 1e12 / f < t + 1.
  const uint128 num = (static_cast<uint128>(t.ps()) + 1) * hz_;
  return Cycles(static_cast<Cycles::rep>((num + kPsPerSecond - 1) / kPsPerSecond - 1));
}

}  // namespace t3sim
