#include "models/cache/impl/random.h"

#include "sim/hash.h"

namespace t3sim {

std::size_t RandomReplacement::victim(std::span<const ReplacementCandidate> candidates) {
  // The splitmix64 stream (sim/hash.h): mix the state, advance it by the increment.
  const std::uint64_t z = splitmix64(state_);
  state_ += 0x9E3779B97F4A7C15ULL;
  return static_cast<std::size_t>(z % candidates.size());
}


T3SIM_REGISTER(replacement_policies, "random", "a random way of the set (splitmix64 from the run seed: deterministic)",
               [](std::uint64_t seed) { return std::make_unique<RandomReplacement>(seed); })

}  // namespace t3sim
