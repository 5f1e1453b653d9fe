#pragma once
// Functional data that travels with simulated traffic, so a run can prove its
// reductions right (SPEC "Functional check").
//
// Values are 64-bit integers added modulo 2^64: exact, associative and commutative,
// so a sum does not depend on the order updates arrive in (floating point would),
// while a lost, doubled or misplaced update still changes the result. The memory
// system keeps one word per value granule (HbmConfig::value_granule): the word
// stands for the elements the granule holds.

#include <cstdint>
#include <vector>

namespace t3sim {

struct Payload {
  // One word per value granule of the bytes carried, in address order.
  std::vector<std::uint64_t> words;

  bool empty() const { return words.empty(); }
  // Element-wise wrapping add; sizes must match.
  void add(const Payload& other) {
    for (std::size_t i = 0; i < words.size(); ++i) words[i] += other.words[i];
  }
  bool operator==(const Payload&) const = default;
};

// The input each GPU starts with: word i of GPU g is a_g * i + b_g (mod 2^64), with
// a_g, b_g drawn from the seed, so every GPU's data differ and an expected result
// costs O(1) per word.
class InputPattern {
 public:
  InputPattern(std::uint64_t seed, std::uint32_t gpu);
  std::uint64_t value(std::uint64_t word) const { return a_ * word + b_; }

 private:
  std::uint64_t a_, b_;
};

}  // namespace t3sim
