#pragma once
// A configuration (SPEC "Configurations"): how a workload's kernels and collectives run
// together: one after the other (sequential), fused into one kernel (fused), fused
// through the tracker and near-memory updates (t3, t3-mca), at once on separate streams
// (c3, c3-priority), beside the DMA engines (conccl), or as an ideal bound
// (ideal-overlap, ideal-rs-nmc, ideal). Each configuration is one file under
// models/system/configurations/ and is registered once, by name, whatever the workload
// kind: the file gives its form for each family of kinds it runs, which that family's
// driver takes:
//
//   sub-layer  kind gemm with --config (SublayerSystem; sublayer_configuration.h)
//   c3         kind c3 (C3System; c3/c3_system.h)
//   overlap    kinds ag_gemm, gemm_a2a, gemv_ar, embedding_a2a (OverlapSystem;
//              overlap/overlap_system.h)
//
// So `sequential` is one file with three forms (GEMM, RS, AG; GEMM then collective;
// compute then collective), `fused` two, `c3` one. See CONTRIBUTING.md for adding one.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/registry.h"

namespace t3sim {

class SublayerConfiguration;
class C3Configuration;
class OverlapConfiguration;

enum class ConfigurationFamily { kSublayer, kC3, kOverlap };
// "sub-layer" | "c3" | "overlap"
const char* to_string(ConfigurationFamily family);

// One registered configuration: a factory of its form per family (unset: it does not
// run that family).
struct Configuration {
  std::function<std::unique_ptr<SublayerConfiguration>()> sublayer = {};
  std::function<std::unique_ptr<C3Configuration>()> c3 = {};
  std::function<std::unique_ptr<OverlapConfiguration>()> overlap = {};

  bool runs(ConfigurationFamily family) const;
};

using Configurations = Registry<Configuration>;
Configurations& configurations();

// The registered configurations that run `family`, sorted by name (with their
// descriptions, for `t3sim list`).
std::vector<std::string> configuration_names(ConfigurationFamily family);
std::vector<RegistryEntry> configuration_listing(ConfigurationFamily family);
// Every registered configuration's name (`--config`, run.config's choices), sorted. A
// kind given a configuration without a form for it rejects it
// (RunOptions::reject_configuration).
std::vector<std::string> configuration_names();

// Configuration `name`'s form for the family; a UserError naming the family's
// configurations when `name` is not one of them (the experiments check the name first,
// with configuration_names(family), to reject it at its key).
std::unique_ptr<SublayerConfiguration> make_sublayer_configuration(std::string_view name);
std::unique_ptr<C3Configuration> make_c3_configuration(std::string_view name);
std::unique_ptr<OverlapConfiguration> make_overlap_configuration(std::string_view name);

// Whether configuration `name` (any string) takes the sub-layer's sequential run from
// the isolated-run store (SequentialRunUse::kTake: the ideal bounds). A sweep runs such
// points after the others, so that the sequential runs they take have been kept.
bool takes_sequential_run(std::string_view name);

}  // namespace t3sim
