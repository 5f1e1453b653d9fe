#include "models/common/payload.h"

#include "sim/hash.h"

namespace t3sim {

InputPattern::InputPattern(std::uint64_t seed, std::uint32_t gpu)
    : a_(splitmix64(seed * 0x100000001b3ULL + 2 * gpu) | 1),
      b_(splitmix64(seed * 0x100000001b3ULL + 2 * gpu + 1)) {}

}  // namespace t3sim
