#pragma once
// A configuration (SPEC "Configurations"): how a workload's tasks (the kernels and
// collectives a kind declares on its ScenarioRun, scenario_run.h) run together. Each
// configuration is one class in one file under models/system/configurations/,
// registered once by name whatever the workload kind. What it says is the kind's
// business only where it has a procedure of its own:
//
//   its procedure  kChained: each task alone, after what it depends on (sequential);
//                  kCriticalPath: no run of its own, the longest path over the tasks'
//                  data dependencies, each task weighing its time alone (the ideal
//                  bounds); kOverlapped: the tasks at once on separate streams, the
//                  order-only dependencies dropped (c3, c3-priority, conccl); kOwn: a
//                  procedure of its own, one form per family it runs (fused, t3)
//   its launch     an overlapped one's levers (seed 003 §V-VI): which task launches
//                  first, the collective kernel's priority, the CUs reserved for the
//                  collective, the collective on the DMA engines
//
// One driver (ScenarioDriver, scenario_driver.h) makes the runs a procedure needs, for
// every kind; each kind (a Scenario) says what they mean for its tasks (their times,
// their description). The procedures each family admits:
//
//   sub-layer  kind gemm with --config (SublayerSystem): chained, critical path, own
//   c3         kind c3 (C3System): chained, critical path, overlapped
//   overlap    kinds ag_gemm, gemm_a2a, gemv_ar, embedding_a2a (OverlapSystem):
//              chained, critical path, own (the op's fused form)
//
// So `sequential` is one class, `procedure() { return Procedure::kChained; }`, and runs
// every kind. See CONTRIBUTING.md for adding one.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/registry.h"

namespace t3sim {

class SublayerConfiguration;

enum class ConfigurationFamily { kSublayer, kC3, kOverlap };
// "sub-layer" | "c3" | "overlap"
const char* to_string(ConfigurationFamily family);

// How a configuration runs a scenario's declared tasks (above).
enum class Procedure { kChained, kCriticalPath, kOverlapped, kOwn };

// An overlapped configuration's launch (seed 003 §V-VI), applied to its concurrent run
// only (the isolated runs are the kernels alone as the workload describes them).
struct ConcurrentLaunch {
  // The collective's task launched first; unset: the workload's order.
  std::optional<bool> collective_first;
  // The collective kernel's priority: the dispatcher places a higher one's WGs first as
  // slots free (models/gpu/gpu.h); 0 leaves the workload's.
  std::uint32_t collective_priority = 0;
  // The collective on the DMA engines instead of the CUs (a copy collective only).
  bool collective_on_dma = false;
  // CUs reserved for the collective's stream, the last N (seed 003 §V-B's CU masks; the
  // GEMM gets the others); unset: the workload's (kind c3's comm_cus).
  std::optional<std::uint32_t> reserved_cus;
};

// What the workload asks of a concurrent run, for a configuration's description.
struct LaunchRequest {
  bool collective_first = false;  // the workload's order
  std::uint32_t reserved_cus = 0;  // CUs reserved for the collective (its comm_cus)
};

class Configuration {
 public:
  virtual ~Configuration() = default;
  virtual Procedure procedure() const = 0;
  // Whether it runs the family's kinds. By default: chained and critical path every
  // family, overlapped the one whose tasks are independent (c3), own those it has a
  // form for.
  virtual bool runs(ConfigurationFamily family) const;

  // ---- overlapped
  virtual ConcurrentLaunch launch() const { return {}; }
  // One line on what it ran (the summary; results' "describe").
  virtual std::string describe(const LaunchRequest& request) const {
    (void)request;
    return {};
  }

  // ---- own procedures (and a sub-layer form of a generic one that needs more)
  // Its sub-layer form (sublayer_configuration.h); null: the sub-layer driver's own form
  // of its procedure, or none for kOwn.
  virtual std::unique_ptr<SublayerConfiguration> sublayer() const;
  // Whether it runs an overlap op's fused form (OverlapOp::start_fused).
  virtual bool runs_fused_form() const { return false; }
};

using Configurations = Registry<Configuration>;
Configurations& configurations();

// The registered configurations that run `family`, sorted by name (with their
// descriptions, for `t3sim list`).
std::vector<std::string> configuration_names(ConfigurationFamily family);
std::vector<RegistryEntry> configuration_listing(ConfigurationFamily family);
// Every registered configuration's name (`--config`, run.config's choices), sorted. A
// kind given a configuration that does not run its family rejects it
// (RunOptions::reject_configuration).
std::vector<std::string> configuration_names();

// Configuration `name`, which must run `family`; a UserError naming the family's
// configurations otherwise (the experiments check the name first, with
// configuration_names(family), to reject it at its key).
std::unique_ptr<Configuration> make_configuration(std::string_view name, ConfigurationFamily family);
// Its sub-layer form: its own (Configuration::sublayer), else the sub-layer driver's
// form of its procedure (sublayer_form).
std::unique_ptr<SublayerConfiguration> make_sublayer_configuration(std::string_view name);

// Whether a sweep runs configuration `name`'s points (any string) after the others,
// because it takes a kind's chained run from the isolated-run store (scenario_driver.h)
// that `sequential`'s points keep: the critical-path and overlapped configurations. Not
// an own procedure's (fused takes the overlap kinds' sequential run, but the sub-layer's
// fused, which takes none, is a sweep's longest point: held back, it would lengthen it).
bool takes_chained_run(std::string_view name);

// ", the last N CUs reserved for the collective" for N > 0, else "": the end of a
// concurrent configuration's description.
std::string reserved_cus_note(std::uint32_t reserved_cus);

}  // namespace t3sim
