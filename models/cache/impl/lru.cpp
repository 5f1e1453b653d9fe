#include "models/cache/impl/lru.h"

namespace t3sim {

std::size_t LruReplacement::victim(std::span<const ReplacementCandidate> candidates) {
  std::size_t lru = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    if (candidates[i].last_use < candidates[lru].last_use) lru = i;
  }
  return lru;
}


T3SIM_REGISTER(replacement_policies, "lru", "least recently used way of the set",
               [](std::uint64_t) { return std::make_unique<LruReplacement>(); })

}  // namespace t3sim
