#pragma once
// Functional data that travels with simulated traffic, so a run can prove its
// reductions right (SPEC "Functional check").
//
// Element values are 64-bit integers added modulo 2^64: exact, associative and
// commutative, so a sum does not depend on the order updates arrive in (floating
// point would), while a lost, doubled or misplaced update still changes the result.
//
// A payload is either the element values themselves (small arrays: every element is
// checked) or, for large arrays, one linear checksum per block: the sum of the
// block's elements. Linear means checksum(a + b) = checksum(a) + checksum(b), so
// reducing checksums is reducing the data, and a 192 MB collective on 16 GPUs needs
// no gigabytes of payload.

#include <cstdint>
#include <string>
#include <vector>

namespace t3sim {

struct Payload {
  // values mode: one entry per element; checksum mode: one entry (the block sum).
  std::vector<std::uint64_t> words;

  bool empty() const { return words.empty(); }
  // Element-wise wrapping add; sizes must match.
  void add(const Payload& other) {
    for (std::size_t i = 0; i < words.size(); ++i) words[i] += other.words[i];
  }
  bool operator==(const Payload&) const = default;
};

enum class FunctionalMode { kValues, kChecksum };

// The input each GPU starts with: element i of GPU g is a_g * i + b_g (mod 2^64),
// with a_g, b_g drawn from the seed. Linear in i, so the sum over any element range
// has a closed form and the expected result of a 192 MB reduction costs O(1) per block.
class InputPattern {
 public:
  InputPattern(std::uint64_t seed, std::uint32_t gpu);
  std::uint64_t value(std::uint64_t element) const { return a_ * element + b_; }
  // Sum of value(i) for i in [first, first + count), mod 2^64.
  std::uint64_t range_sum(std::uint64_t first, std::uint64_t count) const;
  // The payload of elements [first, first + count) in the given mode.
  Payload payload(FunctionalMode mode, std::uint64_t first, std::uint64_t count) const;

 private:
  std::uint64_t a_, b_;
};

}  // namespace t3sim
