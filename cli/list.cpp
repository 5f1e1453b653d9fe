#include "cli/list.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "collective/i_collective_algorithm.h"
#include "models/cache/i_replacement.h"
#include "models/mc/i_arbiter.h"
#include "models/mc/i_scheduler.h"
#include "models/net/i_topology.h"
#include "models/system/c3/c3_presets.h"
#include "models/system/configuration.h"
#include "models/system/experiment.h"
#include "sim/registry.h"
#include "trace/gemm.h"

namespace t3sim {

namespace {

// One section of the listing: its title, the key it names in configs, where it sits in
// the JSON form, and its entries.
struct Section {
  const char* title;
  const char* key;
  const char* json_path;  // "configurations/gemm" nests one level
  std::vector<RegistryEntry> entries;
  std::vector<nlohmann::json> details = {};  // per entry, merged into its JSON object (presets)
  bool in_text = true, in_json = true;       // where it is listed
};

// Every configuration once, with the kinds it runs (text); per family (JSON, as the
// tools read it: configurations/gemm, c3, overlap).
std::vector<RegistryEntry> configurations_with_kinds() {
  struct Family {
    ConfigurationFamily family;
    const char* kinds;
  };
  const Family families[] = {{ConfigurationFamily::kSublayer, "gemm"},
                             {ConfigurationFamily::kC3, "c3"},
                             {ConfigurationFamily::kOverlap, "ag_gemm, gemm_a2a, gemv_ar, embedding_a2a"}};
  std::vector<RegistryEntry> out;
  for (const Configurations::Entry& e : configurations().entries()) {
    const std::unique_ptr<Configuration> c = e.make();
    std::vector<std::string> kinds;
    for (const Family& f : families)
      if (c->runs(f.family)) kinds.emplace_back(f.kinds);
    out.push_back({e.name, fmt::format("{} [kinds: {}]", e.description, fmt::join(kinds, ", "))});
  }
  return out;
}

std::vector<Section> sections() {
  std::vector<Section> out = {
      {"configurations", "--config, run.config", "", configurations_with_kinds(), {}, true, false},
      {"", "", "configurations/gemm", configuration_listing(ConfigurationFamily::kSublayer), {}, false},
      {"", "", "configurations/c3", configuration_listing(ConfigurationFamily::kC3), {}, false},
      {"", "", "configurations/overlap", configuration_listing(ConfigurationFamily::kOverlap), {}, false},
      {"workload kinds", "workload kind", "workload_kinds", workload_kinds().listing()},
      {"MC arbiters", "system.memory.mc.arbiter.type", "arbiters", arbiter_types()},
      {"DRAM command schedulers", "system.memory.mc.scheduler", "schedulers", scheduler_types()},
      {"L2 replacement policies", "system.memory.l2.replacement", "replacement_policies", replacement_types()},
      {"network topologies", "system.net.topology", "topologies", topology_types()},
      {"collective algorithms", "workload collective (kinds collective, c3)", "collective_algorithms",
       collective_algorithms().listing()},
  };
  Section presets{"GEMM presets", "workload preset", "gemm_presets", {}};
  for (const GemmPreset& p : gemm_presets()) {
    presets.entries.push_back(
        {p.name, fmt::format("{} {}: {} x {} x {}, TP {}", p.model, p.layer, p.m, p.n, p.k, p.tp)});
    presets.details.push_back({{"m", p.m}, {"n", p.n}, {"k", p.k}, {"tp", p.tp}});
  }
  out.push_back(std::move(presets));
  Section c3_cases{"C3 presets", "kind c3, workload preset", "c3_presets", {}};
  for (const C3Case& c : t3sim::c3_cases()) {
    const C3Gemm& g = find_c3_gemm(c.gemm);
    c3_cases.entries.push_back({c.name, fmt::format("{} ({} x {} x {}) with a {:.3f} GiB collective; {}, {}", c.gemm,
                                                    g.m, g.n, g.k, static_cast<double>(c.collective_bytes) / (1ULL << 30),
                                                    c.taxonomy, c.source)});
    c3_cases.details.push_back(
        {{"gemm", c.gemm}, {"collective_bytes", c.collective_bytes}, {"taxonomy", c.taxonomy}});
  }
  out.push_back(std::move(c3_cases));
  return out;
}

}  // namespace

std::string registry_listing() {
  std::string out;
  for (const Section& s : sections()) {
    if (!s.in_text) continue;
    out += fmt::format("{} ({}):\n", s.title, s.key);
    std::size_t width = 0;
    for (const RegistryEntry& e : s.entries) width = std::max(width, e.name.size());
    for (const RegistryEntry& e : s.entries) out += fmt::format("  {:<{}}  {}\n", e.name, width, e.description);
    out += "\n";
  }
  out.pop_back();
  return out;
}

nlohmann::json registry_listing_json() {
  nlohmann::json out = nlohmann::json::object();
  for (const Section& s : sections()) {
    if (!s.in_json) continue;
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 0; i < s.entries.size(); ++i) {
      nlohmann::json entry = {{"name", s.entries[i].name}, {"description", s.entries[i].description}};
      if (i < s.details.size()) entry.update(s.details[i]);
      list.push_back(std::move(entry));
    }
    out[nlohmann::json::json_pointer(std::string("/") + s.json_path)] = std::move(list);
  }
  return out;
}

}  // namespace t3sim
