#pragma once
#include "models/cache/i_replacement.h"

namespace t3sim {

// Least recently used: the candidate with the oldest last use (the first such way on
// a tie).
class LruReplacement final : public ReplacementPolicy {
 public:
  std::size_t victim(std::span<const ReplacementCandidate> candidates) override;
};

}  // namespace t3sim
