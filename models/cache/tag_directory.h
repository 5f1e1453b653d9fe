#pragma once
// The L2's directory stage (Akita's cache splits the same way: directory, bank,
// MSHR, write buffer): which line each way of each set holds, the ways' state, the
// mapping of a line to its bank and set, and the choice of a victim. No timing and no
// events: L2Cache asks it, in the look-up loop, where a line is and what to replace.
//
// Sets and banks. Each bank owns sets_per_bank consecutive global sets; a line's bank
// is an XOR-fold of its address (consecutive lines and power-of-two strides spread
// over the banks) and its set in the bank the address bits above the bank bits
// (modulo the count when it is not a power of two: 50 MB on H100/H200, 400 per bank).
// (bank, set in bank, higher bits) determines the line, since the fold only mixes the
// higher bits into the low ones: every set sees the same share of addresses.
//
// Layout. Per slot (set * assoc + way): the line it holds (tags(), kNoTag if invalid;
// a set's tags are contiguous, assoc x 8 B), an 8-bit partial tag (ptags(): a set's
// are compared 16 at a time, confirmed against the full tag; the whole array stays in
// the host's caches), and the way's Line (last use, MSHR, dirty, values held). The
// arrays are allocated by allocate(), not by the constructor, so a model that is built
// and never used (`t3sim validate`, an idle GPU's L2) does not pay for them (~70 MB
// for a 256 MB L2). Until then no line is valid.

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/cache/i_replacement.h"
#include "models/mem/mem_request.h"

namespace t3sim {

class TagDirectory {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;
  static constexpr std::uint64_t kNoTag = ~std::uint64_t{0};

  // A way's state; whether it is valid and which line it holds are in tags().
  struct Line {
    std::uint64_t last_use = 0;   // the use clock at its last hit or fill (ReplacementCandidate)
    std::uint32_t mshr = kNone;   // != kNone: waiting for its fill
    bool dirty = false;
    bool has_data = false;        // its words in the L2's value array are the line's values
    Stream dirty_stream = Stream::kCompute;  // of the request that last dirtied it
  };

  // Contract: the geometry read_l2_config accepts (powers of two for line, banks;
  // whole sets per bank). `replacement`: the policy of a full set.
  TagDirectory(std::uint64_t num_lines, std::uint32_t assoc, std::uint32_t banks, std::uint32_t line_bytes,
               std::unique_ptr<ReplacementPolicy> replacement);

  std::uint32_t assoc() const { return assoc_; }
  std::uint32_t line_shift() const { return line_shift_; }  // log2(line bytes)

  // ---- the mapping
  std::uint32_t bank_of_line(std::uint64_t line) const {
    if (bank_bits_ == 0) return 0;
    // XOR-fold of all line-address bits in bank_bits-wide chunks, as a tree: after the
    // step with shift s, chunk 0 holds the XOR of the first 2s / bank_bits chunks; the
    // last step (s < 64 <= 2s) covers all of them. The steps commute, so they run
    // unrolled from the last (fold_shifts_, at most 6).
    std::uint64_t h = line;
    switch (fold_steps_) {
      case 6: h ^= h >> fold_shifts_[5]; [[fallthrough]];
      case 5: h ^= h >> fold_shifts_[4]; [[fallthrough]];
      case 4: h ^= h >> fold_shifts_[3]; [[fallthrough]];
      case 3: h ^= h >> fold_shifts_[2]; [[fallthrough]];
      case 2: h ^= h >> fold_shifts_[1]; [[fallthrough]];
      case 1: h ^= h >> fold_shifts_[0]; break;
      default: break;
    }
    return static_cast<std::uint32_t>(h) & bank_mask_;
  }
  // The global set of `line`, given its bank (bank_of_line(line)).
  std::uint32_t set_in_bank(std::uint32_t bank, std::uint64_t line) const {
    if (sets_pow2_) [[likely]]
      return static_cast<std::uint32_t>((std::uint64_t{bank} << set_bits_) |
                                        ((line >> bank_bits_) & ((std::uint64_t{1} << set_bits_) - 1)));
    return static_cast<std::uint32_t>(std::uint64_t{bank} * sets_per_bank_ + (line >> bank_bits_) % sets_per_bank_);
  }
  std::uint32_t set_of_line(std::uint64_t line) const { return set_in_bank(bank_of_line(line), line); }
  // 8 bits of the line address above its set index (the bits that tell the lines of
  // one set apart), folded: a filter, confirmed against tags().
  std::uint8_t partial_tag(std::uint64_t line) const {
    std::uint64_t h = line >> tag_shift_;
    h ^= h >> 32;
    h ^= h >> 16;
    return static_cast<std::uint8_t>(h ^ (h >> 8));
  }

  // ---- the arrays
  void allocate();
  bool allocated() const { return !tags_.empty(); }
  std::size_t num_slots() const { return tags_.size(); }
  // The slot of `line` in `set`, or kNone.
  std::uint32_t find_in_set(std::uint32_t set, std::uint64_t line) const;
  std::uint32_t find(std::uint64_t line) const { return find_in_set(set_of_line(line), line); }
  // The way of `set` a miss takes: an invalid one first, else the policy's choice among
  // those not being filled; kNone when every way is being filled.
  std::uint32_t pick_victim(std::uint32_t set);

  Line& line(std::uint32_t slot) { return lines_[slot]; }
  const Line& line(std::uint32_t slot) const { return lines_[slot]; }
  bool valid(std::uint32_t slot) const { return tags_[slot] != kNoTag; }
  std::uint64_t line_address(std::uint32_t slot) const { return tags_[slot] << line_shift_; }
  void set_tag(std::uint32_t slot, std::uint64_t line) {
    tags_[slot] = line;
    ptags_[slot] = partial_tag(line);
  }
  void clear_tag(std::uint32_t slot) { tags_[slot] = kNoTag; }
  // Stamps a way's last use (a hit, an allocation or a fill).
  void touch(Line& l) { l.last_use = ++use_clock_; }

  // ---- the look-up loop's raw view (L2Cache::process_cached works on locals and hands
  // the use clock back before anything else reads it)
  const std::uint64_t* tags() const { return tags_.data(); }
  const std::uint8_t* ptags() const { return ptags_.data(); }
  Line* lines() { return lines_.data(); }
  std::uint64_t& use_clock() { return use_clock_; }

 private:
  std::uint32_t assoc_;
  std::uint64_t num_lines_;
  std::uint32_t bank_bits_ = 0;
  std::uint32_t bank_mask_ = 0;
  std::uint32_t set_bits_ = 0;  // floor(log2(sets per bank))
  std::uint32_t sets_per_bank_ = 1;
  bool sets_pow2_ = true;
  std::uint32_t line_shift_ = 0;
  std::uint32_t tag_shift_ = 0;  // bank_bits_ + set_bits_: a line's bits above its set
  std::array<std::uint32_t, 6> fold_shifts_{};
  std::uint32_t fold_steps_ = 0;
  std::uint64_t use_clock_ = 0;
  std::unique_ptr<ReplacementPolicy> replacement_;
  bool lru_;  // replacement_ is LRU: pick_victim decides it in its own pass
  std::vector<ReplacementCandidate> victim_candidates_;  // pick_victim's scratch, assoc entries
  std::vector<Line> lines_;
  std::vector<std::uint64_t> tags_;
  std::vector<std::uint8_t> ptags_;
};

}  // namespace t3sim
