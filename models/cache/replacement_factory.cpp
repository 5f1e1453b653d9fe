// The L2 replacement policies by name. A new policy adds its class under impl/ and
// one row to kPolicies (name, one-line description, factory).

#include <functional>

#include "models/cache/i_replacement.h"
#include "models/cache/impl/lru.h"
#include "models/cache/impl/random.h"

namespace t3sim {

namespace {

struct Policy : RegistryEntry {
  std::function<std::unique_ptr<ReplacementPolicy>(std::uint64_t seed)> make;
};

const std::vector<Policy>& policies() {
  static const std::vector<Policy> kPolicies = {
      {{"lru", "least recently used way of the set"},
       [](std::uint64_t) { return std::make_unique<LruReplacement>(); }},
      {{"random", "a random way of the set (splitmix64 from the run seed: deterministic)"},
       [](std::uint64_t seed) { return std::make_unique<RandomReplacement>(seed); }},
  };
  return kPolicies;
}

}  // namespace

const std::vector<RegistryEntry>& replacement_types() {
  static const std::vector<RegistryEntry> kEntries = registry_entries(policies());
  return kEntries;
}

std::unique_ptr<ReplacementPolicy> make_replacement(std::string_view name, std::uint64_t seed) {
  return find_registered(policies(), name, "L2 replacement policy").make(seed);
}

}  // namespace t3sim
