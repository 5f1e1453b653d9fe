#pragma once
// Deterministic hashes: the same on every platform and run (std::hash is not
// guaranteed to be), for seeding per-component random streams and deriving values.

#include <cstdint>
#include <string_view>

namespace t3sim {

// splitmix64 (Steele, Lea, Flood 2014): a well-mixed function of one word; iterating
// x += 0x9E3779B97F4A7C15 and mixing gives a small, fast random stream.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// FNV-1a of a string (names -> seeds).
constexpr std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return h;
}

}  // namespace t3sim
