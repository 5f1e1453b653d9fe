#pragma once
// `t3sim list`: every registry of swappable implementations, each name with its
// one-line description, so a user sees what a key accepts without reading code.
// `t3sim list --json` gives the same as data, for scripts (tools/t3sim_tools.py reads
// the configuration names from it instead of keeping copies).

#include <string>

#include <nlohmann/json.hpp>

namespace t3sim {

// The listing `t3sim list` prints: one section per registry.
std::string registry_listing();

// The same as JSON: {"configurations": {"gemm": [...], "c3": [...], "overlap": [...]},
// "workload_kinds", "arbiters", "schedulers", "replacement_policies", "topologies": [...],
// "gemm_presets": [...], "c3_presets": [...]}, each list of {"name", "description"}
// (presets add their numbers: m, n, k, tp; gemm, collective_bytes, taxonomy).
nlohmann::json registry_listing_json();

}  // namespace t3sim
