#include "models/common/payload.h"

#include "sim/hash.h"
#include "sim/time.h"

namespace t3sim {

InputPattern::InputPattern(std::uint64_t seed, std::uint32_t gpu)
    : a_(splitmix64(seed * 0x100000001b3ULL + 2 * gpu) | 1),
      b_(splitmix64(seed * 0x100000001b3ULL + 2 * gpu + 1)) {}

std::uint64_t InputPattern::range_sum(std::uint64_t first, std::uint64_t count) const {
  // sum_{i=first}^{first+count-1} i = count*first + count*(count-1)/2, computed mod 2^64
  // (the halving is done in 128 bits before truncating).
  const uint128 c = count;
  const std::uint64_t tri = static_cast<std::uint64_t>(c * (c - (count ? 1 : 0)) / 2);
  const std::uint64_t index_sum = count * first + tri;
  return a_ * index_sum + b_ * count;
}

Payload InputPattern::payload(FunctionalMode mode, std::uint64_t first, std::uint64_t count) const {
  Payload p;
  if (mode == FunctionalMode::kChecksum) {
    p.words.push_back(range_sum(first, count));
  } else {
    p.words.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) p.words.push_back(value(first + i));
  }
  return p;
}

}  // namespace t3sim
