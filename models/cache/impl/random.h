#pragma once
#include <cstdint>

#include "models/cache/i_replacement.h"

namespace t3sim {

// Uniformly random among the candidates, from a splitmix64 sequence started at the
// seed: the same seed and misses evict the same ways.
class RandomReplacement final : public ReplacementPolicy {
 public:
  explicit RandomReplacement(std::uint64_t seed) : state_(seed) {}
  std::size_t victim(std::span<const ReplacementCandidate> candidates) override;

 private:
  std::uint64_t state_;
};

}  // namespace t3sim
