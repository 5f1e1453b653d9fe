#include "cli/list.h"

#include <vector>

#include <fmt/format.h>

#include "models/cache/i_replacement.h"
#include "models/mc/i_arbiter.h"
#include "models/mc/i_scheduler.h"
#include "models/net/i_topology.h"
#include "models/system/overlap/overlap_system.h"
#include "models/system/c3/c3_presets.h"
#include "models/system/c3/c3_system.h"
#include "models/system/experiment.h"
#include "models/system/sublayer_configuration.h"
#include "sim/registry.h"
#include "trace/gemm.h"

namespace t3sim {

namespace {

void section(std::string& out, const char* title, const char* key, const std::vector<RegistryEntry>& entries) {
  out += fmt::format("{} ({}):\n", title, key);
  std::size_t width = 0;
  for (const RegistryEntry& e : entries) width = std::max(width, e.name.size());
  for (const RegistryEntry& e : entries) out += fmt::format("  {:<{}}  {}\n", e.name, width, e.description);
  out += "\n";
}

}  // namespace

std::string registry_listing() {
  std::string out;
  section(out, "configurations", "--config, run.config; kind gemm", sublayer_configurations().listing());
  section(out, "C3 configurations", "--config, run.config; kind c3", c3_configurations().listing());
  section(out, "overlap configurations", "--config, run.config; kinds ag_gemm, gemm_a2a, gemv_ar, embedding_a2a",
          overlap_configurations().listing());
  section(out, "workload kinds", "workload kind", workload_kinds().listing());
  section(out, "MC arbiters", "system.memory.mc.arbiter.type", arbiter_types());
  section(out, "DRAM command schedulers", "system.memory.mc.scheduler", scheduler_types());
  section(out, "L2 replacement policies", "system.memory.l2.replacement", replacement_types());
  section(out, "network topologies", "system.net.topology", topology_types());
  std::vector<RegistryEntry> presets;
  for (const GemmPreset& p : gemm_presets())
    presets.push_back({p.name, fmt::format("{} {}: {} x {} x {}, TP {}", p.model, p.layer, p.m, p.n, p.k, p.tp)});
  section(out, "GEMM presets", "workload preset", presets);
  std::vector<RegistryEntry> c3_cases;
  for (const C3Case& c : t3sim::c3_cases()) {
    const C3Gemm& g = find_c3_gemm(c.gemm);
    c3_cases.push_back({c.name, fmt::format("{} ({} x {} x {}) with a {:.3f} GiB collective; {}, {}", c.gemm, g.m, g.n,
                                            g.k, static_cast<double>(c.collective_bytes) / (1ULL << 30), c.taxonomy,
                                            c.source)});
  }
  section(out, "C3 presets", "kind c3, workload preset", c3_cases);
  out.pop_back();
  return out;
}

}  // namespace t3sim
