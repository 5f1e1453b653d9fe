#include "models/cache/tag_directory.h"

#include <algorithm>
#include <bit>
#include <span>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "models/cache/impl/lru.h"

namespace t3sim {

TagDirectory::TagDirectory(std::uint64_t num_lines, std::uint32_t assoc, std::uint32_t banks,
                           std::uint32_t line_bytes, std::unique_ptr<ReplacementPolicy> replacement)
    : assoc_(assoc),
      num_lines_(num_lines),
      replacement_(std::move(replacement)),
      lru_(dynamic_cast<LruReplacement*>(replacement_.get()) != nullptr),
      victim_candidates_(assoc) {
  bank_bits_ = static_cast<std::uint32_t>(std::countr_zero(banks));
  bank_mask_ = banks - 1;
  // (A geometry the L2 rejects still builds: it throws after this, with the key.)
  if (assoc > 0 && banks > 0) sets_per_bank_ = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(num_lines / assoc / banks));
  sets_pow2_ = std::has_single_bit(sets_per_bank_);
  // Not a power of two: the partial tag starts above the largest power of two below
  // the count (a filter only).
  set_bits_ = static_cast<std::uint32_t>(std::bit_width(sets_per_bank_) - 1);
  line_shift_ = static_cast<std::uint32_t>(std::countr_zero(line_bytes));
  tag_shift_ = bank_bits_ + set_bits_;
  if (bank_bits_ > 0) {
    for (std::uint32_t shift = bank_bits_; shift < 64; shift <<= 1) fold_shifts_[fold_steps_++] = shift;
  }
}

void TagDirectory::allocate() {
  lines_.resize(num_lines_);
  tags_.assign(num_lines_, kNoTag);
  ptags_.assign(num_lines_, 0);
}

std::uint32_t TagDirectory::find_in_set(std::uint32_t set, std::uint64_t line) const {
  // Ways whose partial tag matches are candidates; the full tag decides (invalid slots
  // hold kNoTag, which no line address equals). A line is in at most one way.
  const std::uint32_t base = set * assoc_;
  const std::uint8_t want = partial_tag(line);
  const std::uint8_t* pt = ptags_.data() + base;
  std::uint32_t way = 0;
#if defined(__SSE2__)
  const __m128i w = _mm_set1_epi8(static_cast<char>(want));
  for (; way + 16 <= assoc_; way += 16) {
    auto m = static_cast<std::uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pt + way)), w)));
    while (m != 0) {
      const std::uint32_t slot = base + way + static_cast<std::uint32_t>(std::countr_zero(m));
      if (tags_[slot] == line) return slot;
      m &= m - 1;
    }
  }
#endif
  for (; way < assoc_; ++way) {
    if (pt[way] == want && tags_[base + way] == line) return base + way;
  }
  return kNone;
}

std::uint32_t TagDirectory::pick_victim(std::uint32_t set) {
  const std::uint32_t base = set * assoc_;
  if (lru_) {
    // LRU, the default, decided in this one pass (LruReplacement's rule: the oldest
    // last use, the first way on a tie): every eviction of every run comes here, and
    // a second pass over a candidate list costs mispredicted branches.
    std::uint32_t lru = kNone;
    for (std::uint32_t slot = base; slot < base + assoc_; ++slot) {
      if (!valid(slot)) return slot;  // an invalid way first, whatever the policy
      const Line& l = lines_[slot];
      if (l.mshr != kNone) continue;  // being filled: not replaceable
      if (lru == kNone || l.last_use < lines_[lru].last_use) lru = slot;
    }
    return lru;
  }
  ReplacementCandidate* const candidates = victim_candidates_.data();  // assoc entries
  std::uint32_t n = 0;
  for (std::uint32_t way = 0; way < assoc_; ++way) {
    const std::uint32_t slot = base + way;
    if (!valid(slot)) return slot;  // an invalid way first, whatever the policy
    const Line& l = lines_[slot];
    if (l.mshr != kNone) continue;  // being filled: not replaceable
    candidates[n++] = ReplacementCandidate{way, l.last_use};
  }
  if (n == 0) return kNone;
  return base + candidates[replacement_->victim(std::span<const ReplacementCandidate>(candidates, n))].way;
}

}  // namespace t3sim
