#pragma once
// Simulated time. Tick is an integer count of picoseconds; Cycles counts edges of
// one clock. They are distinct types so a cycle count can never be used as a time
// by accident: the only way between them is a ClockDomain (sim/clock.h).
//
// Integer time keeps runs deterministic: the Akita simulator moved off floating
// point time after it made event order depend on rounding.

#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace t3sim {

// 128-bit intermediate for exact time arithmetic (GCC/Clang builtin; __extension__
// keeps -Wpedantic quiet about it).
__extension__ using uint128 = unsigned __int128;

class Tick {
 public:
  using rep = std::uint64_t;

  constexpr Tick() = default;
  constexpr explicit Tick(rep picoseconds) : ps_(picoseconds) {}

  static constexpr Tick zero() { return Tick(0); }
  static constexpr Tick max() { return Tick(std::numeric_limits<rep>::max()); }
  static constexpr Tick ps(rep v) { return Tick(v); }
  static constexpr Tick ns(rep v) { return Tick(v * 1'000); }
  static constexpr Tick us(rep v) { return Tick(v * 1'000'000); }
  static constexpr Tick ms(rep v) { return Tick(v * 1'000'000'000); }

  constexpr rep ps() const { return ps_; }
  constexpr double ns() const { return static_cast<double>(ps_) * 1e-3; }
  constexpr double us() const { return static_cast<double>(ps_) * 1e-6; }
  constexpr double ms() const { return static_cast<double>(ps_) * 1e-9; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr auto operator<=>(const Tick&) const = default;
  constexpr Tick& operator+=(Tick o) { ps_ += o.ps_; return *this; }
  constexpr Tick& operator-=(Tick o) { ps_ -= o.ps_; return *this; }
  friend constexpr Tick operator+(Tick a, Tick b) { return Tick(a.ps_ + b.ps_); }
  friend constexpr Tick operator-(Tick a, Tick b) { return Tick(a.ps_ - b.ps_); }
  friend constexpr Tick operator*(Tick a, rep k) { return Tick(a.ps_ * k); }
  friend constexpr Tick operator*(rep k, Tick a) { return Tick(a.ps_ * k); }

 private:
  rep ps_ = 0;
};

class Cycles {
 public:
  using rep = std::uint64_t;

  constexpr Cycles() = default;
  constexpr explicit Cycles(rep n) : n_(n) {}
  constexpr rep count() const { return n_; }

  constexpr auto operator<=>(const Cycles&) const = default;
  constexpr Cycles& operator+=(Cycles o) { n_ += o.n_; return *this; }
  friend constexpr Cycles operator+(Cycles a, Cycles b) { return Cycles(a.n_ + b.n_); }
  friend constexpr Cycles operator-(Cycles a, Cycles b) { return Cycles(a.n_ - b.n_); }

 private:
  rep n_ = 0;
};

// "1.234us" style, for messages and summaries (not for results files, which carry ps).
std::string to_string(Tick t);

// Data rate in bytes per second. Serialization time is computed exactly in integer
// picoseconds (rounded up), so a link never goes faster than its configured rate.
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  constexpr explicit Bandwidth(std::uint64_t bytes_per_second) : bps_(bytes_per_second) {}
  constexpr std::uint64_t bytes_per_second() const { return bps_; }
  constexpr bool unlimited() const { return bps_ == 0; }
  constexpr auto operator<=>(const Bandwidth&) const = default;

  // Time to push `bytes` through at this rate; zero when unlimited.
  constexpr Tick transfer_time(std::uint64_t bytes) const {
    if (bps_ == 0) return Tick::zero();
    const uint128 num = static_cast<uint128>(bytes) * 1'000'000'000'000ULL;
    return Tick(static_cast<Tick::rep>((num + bps_ - 1) / bps_));
  }

 private:
  std::uint64_t bps_ = 0;  // 0 = unlimited
};

}  // namespace t3sim
