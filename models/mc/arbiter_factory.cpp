// The arbitration policies' registry, and the reader of an `arbiter:` mapping. A new
// policy is a class under impl/ that registers itself there (T3SIM_REGISTER) and, if
// it has parameters, the keys it accepts below.

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "models/mc/i_arbiter.h"
#include "sim/config.h"
#include "sim/registry.h"

namespace t3sim {

namespace {

// A threshold is a count of requests or `unlimited`.
std::uint32_t parse_threshold(const ConfigValue& v, const ConfigNode& node, std::string_view key) {
  if (v.kind == ConfigValue::Kind::kScalar) {
    if (v.scalar == "unlimited") return ArbiterConfig::kUnlimited;
    const bool digits = !v.scalar.empty() && std::all_of(v.scalar.begin(), v.scalar.end(),
                                                         [](char ch) { return ch >= '0' && ch <= '9'; });
    if (digits && v.scalar.size() <= 9) {
      const auto n = std::stoul(v.scalar);
      if (n >= 1) return static_cast<std::uint32_t>(n);
    }
  }
  node.fail(key, fmt::format("expected a number of requests (>= 1) or 'unlimited', got '{}'", v.scalar));
}

}  // namespace

ArbiterPolicies& arbiter_policies() {
  static ArbiterPolicies registry;
  return registry;
}

std::vector<RegistryEntry> arbiter_types() { return arbiter_policies().listing(); }

ArbiterConfig read_arbiter_config(ConfigNode node) {
  ArbiterConfig cfg;
  cfg.type = node.get_enum("type", cfg.type, arbiter_policies().names());
  if (cfg.type == "mca") {
    if (const ConfigValue* t = node.raw("threshold")) cfg.threshold = parse_threshold(*t, node, "threshold");
    cfg.starvation_limit = node.get_uint("starvation_limit", cfg.starvation_limit, 1);
    cfg.dynamic = node.get_bool("dynamic", cfg.dynamic);
    if (const ConfigValue* list = node.raw("thresholds")) {
      if (list->kind != ConfigValue::Kind::kList || list->list.empty())
        node.fail("thresholds", "expected a non-empty list such as [5, 10, 30, unlimited]");
      cfg.thresholds.clear();
      for (const ConfigValue& item : list->list) cfg.thresholds.push_back(parse_threshold(item, node, "thresholds"));
      if (!cfg.dynamic) node.fail("thresholds", "only used with dynamic: true");
    }
    cfg.profile_cycles = node.get_uint("profile_cycles", cfg.profile_cycles, 1);
  }
  node.finish();  // other policies take no parameters: any key is an error
  return cfg;
}

std::unique_ptr<Arbiter> make_arbiter(Component& parent, const ArbiterConfig& cfg) {
  return arbiter_policies().get(cfg.type, "arbiter type").make(parent, cfg);
}

}  // namespace t3sim
