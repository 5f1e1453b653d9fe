#include "sim/clock.h"

#include <numeric>
#include <stdexcept>

namespace t3sim {

ClockDomain::ClockDomain(std::uint64_t frequency_hz) : hz_(frequency_hz) {
  if (hz_ == 0 || hz_ > 1'000'000'000'000ULL)
    throw std::invalid_argument("clock frequency must be in (0 Hz, 1 THz]");
  const std::uint64_t g = std::gcd(std::uint64_t{1'000'000'000'000ULL}, hz_);
  num_ = 1'000'000'000'000ULL / g;
  den_ = hz_ / g;
  constexpr std::uint64_t kMax = ~std::uint64_t{0};
  edge_limit_ = kMax / num_;
  cycle_limit_ = (kMax - (num_ - 1)) / den_;
}

Cycles ClockDomain::cycle_containing(Tick t) const {
  // Largest n with floor(n * 1e12 / f) <= t, i.e. n * 1e12 / f < t + 1.
  const uint128 num = (static_cast<uint128>(t.ps()) + 1) * den_;
  return Cycles(static_cast<Cycles::rep>((num + num_ - 1) / num_ - 1));
}

}  // namespace t3sim
