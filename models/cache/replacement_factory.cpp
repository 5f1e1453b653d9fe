// The L2 replacement policies' registry. A new policy is a class under impl/ that
// registers itself there (T3SIM_REGISTER).
#include "models/cache/i_replacement.h"

namespace t3sim {

ReplacementPolicies& replacement_policies() {
  static ReplacementPolicies registry;
  return registry;
}

std::vector<RegistryEntry> replacement_types() { return replacement_policies().listing(); }

std::unique_ptr<ReplacementPolicy> make_replacement(std::string_view name, std::uint64_t seed) {
  return replacement_policies().get(name, "L2 replacement policy").make(seed);
}

}  // namespace t3sim
