#pragma once
// A clock domain converts between Cycles of one clock and Ticks (picoseconds).
//
// Edge n of a clock at f Hz is at floor(n * 1e12 / f) ps. Computing every edge from
// n (instead of adding a rounded period) means a 1.4 GHz clock (714.28... ps) never
// drifts, and two components on the same clock agree on every edge.

#include <cstdint>
#include <string>

#include "sim/time.h"

namespace t3sim {

class ClockDomain {
 public:
  ClockDomain() = default;
  // Contract: frequency_hz > 0 and at most 1 THz (one edge per picosecond).
  explicit ClockDomain(std::uint64_t frequency_hz);

  std::uint64_t frequency_hz() const { return hz_; }

  // Tick of edge n.
  Tick edge(Cycles n) const {
    const std::uint64_t c = n.count();
    if (c <= edge_limit_) return Tick(den_ == 1 ? c * num_ : c * num_ / den_);  // whole-ps periods: no division
    return Tick(static_cast<Tick::rep>(static_cast<uint128>(c) * num_ / den_));
  }
  // Index of the first edge at or after t.
  Cycles cycle_at_or_after(Tick t) const {
    const std::uint64_t p = t.ps();
    if (p <= cycle_limit_) return Cycles((p * den_ + num_ - 1) / num_);
    return Cycles(static_cast<Cycles::rep>((static_cast<uint128>(p) * den_ + num_ - 1) / num_));
  }
  // Index of the last edge at or before t (the cycle that t lies in).
  Cycles cycle_containing(Tick t) const;
  // First edge at or after t.
  Tick next_edge(Tick t) const { return edge(cycle_at_or_after(t)); }
  // Length of n cycles starting from edge 0 (exact, rounded down like edge()).
  Tick duration(Cycles n) const { return edge(n); }
  // Edge that lies n cycles after the first edge at or after t.
  Tick edge_after(Tick t, Cycles n) const { return edge(cycle_at_or_after(t) + n); }

 private:
  // Edge n is at floor(n * 1e12 / hz) ps = floor(n * num_ / den_) with num_ / den_ the
  // period 1e12 / hz in lowest terms: the same value, in 64-bit arithmetic whenever it
  // cannot overflow (the limits), in 128-bit otherwise.
  std::uint64_t hz_ = 1'000'000'000;
  std::uint64_t num_ = 1'000;
  std::uint64_t den_ = 1;
  std::uint64_t edge_limit_ = ~std::uint64_t{0} / 1'000;  // largest n with n * num_ in 64 bits
  std::uint64_t cycle_limit_ = ~std::uint64_t{0} - 999;   // largest t with t * den_ + num_ - 1 in 64 bits
};

}  // namespace t3sim
