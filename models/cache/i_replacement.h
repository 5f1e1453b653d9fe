#pragma once
// The L2's replacement policy: which line of a full set a miss evicts. Chosen by
// name (`l2.replacement: lru | random`); implementations in impl/, one registry row
// each in replacement_factory.cpp.
//
// The L2 owns the per-way state a policy reads, laid out with the way's other state
// so a hit touches one host cache line: it stamps a way with its last use (a hit, an
// allocation or a fill) on a clock of its own. It fills an invalid way first and never
// evicts a way still waiting for its fill; a policy is asked only when every way is
// valid, and chooses among those not being filled. A policy is therefore unit-tested
// on hand-built candidate lists (tests/test_l2.cpp).

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "sim/registry.h"

namespace t3sim {

// A way of a full set that may be evicted.
struct ReplacementCandidate {
  std::uint32_t way = 0;       // in its set
  std::uint64_t last_use = 0;  // the L2's use clock at its last hit or fill (later = larger)
};

class ReplacementPolicy {
 public:
  virtual ~ReplacementPolicy() = default;
  // Contract: `candidates` (non-empty, in way order) are the replaceable ways of a
  // set with no invalid way; returns the index in `candidates` of the one to evict.
  // Called once per eviction, so a policy may advance state of its own (random's
  // generator); deterministic for a given seed and call sequence.
  virtual std::size_t victim(std::span<const ReplacementCandidate> candidates) = 0;
};

// The policies by name (the `replacement:` value); each registers itself in its impl/
// file, its factory taking the seed.
using ReplacementPolicies = Registry<ReplacementPolicy, std::uint64_t>;
ReplacementPolicies& replacement_policies();
// Their names and one-line descriptions, sorted by name.
std::vector<RegistryEntry> replacement_types();
// The policy `name` names (a UserError if none is registered by that name); `seed`
// makes a randomized policy's choices reproducible (the L2 passes the run seed mixed
// with its name).
std::unique_ptr<ReplacementPolicy> make_replacement(std::string_view name, std::uint64_t seed);

}  // namespace t3sim
