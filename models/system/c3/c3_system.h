#pragma once
// Concurrent computation and communication, C3 (../shared/seeds/003): on every GPU of
// a node, a GEMM and an *independent* collective (no data dependency: FSDP's
// all-gather of the next layer's weights beside this layer's GEMM), under one of the
// configurations that run kind c3 (configuration.h; one file each under
// models/system/configurations/): its procedure says which run, its launch how the
// concurrent run starts (concurrent_spec, collective_first, below):
//
//   sequential  the GEMM, then the collective, each alone (the baseline)
//   c3          both launched at once on separate streams (order: gemm-first is the
//               paper's c3_base, comm-first its c3_sp; comm_cus: N its CU
//               partitioning)
//   conccl      the collective on the DMA engines, host-launched (§VI)
//   ideal       max(isolated GEMM, isolated collective) (§IV-B3): the critical path
//               over the isolated run's tasks (C3Run::ideal)
//
// Every run reports the isolated times (from a sequential run: the GEMM alone, then
// the CU collective alone on any CU (comm_cus does not apply), then, for conccl, the
// DMA collective alone), the run's time, each kernel's time and slowdown, the ideal speedup (GEMM + collective) /
// max(GEMM, collective), the realized speedup (GEMM + collective) / time, the fraction
// of the ideal realized (realized - 1) / (ideal - 1) (§IV-C: 1.13x is "about 21 % of
// ideal"), the taxonomy from the isolated times (G-long, C-long, GC-equal within
// 15 %, §III) and each kernel's DRAM and L2 traffic (by stream: the GEMM is the
// compute stream, the collective the communication stream).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/collectives/node_collective.h"
#include "models/node/node.h"
#include "models/system/gemm_system.h"
#include "models/system/configuration.h"
#include "models/system/result_store.h"
#include "models/system/scenario_driver.h"
#include "models/system/scenario_run.h"
#include "sim/registry.h"

namespace t3sim {

class ConfigNode;
class Experiment;
struct RunOptions;

// What a C3 run simulates (the `kind: c3` workload, read by experiments/c3.cpp).
struct C3Spec {
  GemmWorkload gemm;             // a generated GEMM (params set), on all CUs unless partitioned
  std::string gemm_label;        // "cb1 (8192 x 8192 x 8192)" or the m x n x k
  NodeCollectiveParams collective;  // the CU collective (engine kCu); conccl's DMA one is derived
  std::string values_off;            // why collective.values is false (the summary's functional check)
  std::string preset;            // a seed 003 Table II case, or ""
  std::string paper_taxonomy;    // the case's taxonomy in the paper, or ""
  std::uint32_t scale = 1;       // M and the collective's size were divided by this
  bool comm_first = false;       // c3: launch the collective first (the paper's c3_sp)
  std::uint32_t comm_cus = 0;    // CUs reserved for the communication stream (the last N); 0: none
  // False (workload `isolated: off`): a concurrent configuration's run alone, without
  // the isolated runs, so no slowdowns, ideal or speedups. For cases whose isolated CU
  // collective would take hours (a 20 GB all-gather beside a sampled GEMM).
  bool isolated = true;
  // run.sampling: the GEMM's steady stages may be skipped while it runs alone
  // (models/gpu/stage_sampler.h; homogeneous mode, one simulated GPU).
  SamplingConfig sampling;
};

// One kernel's part of a run.
struct C3KernelResult {
  Tick start, end;               // max over simulated GPUs of its launch and of its end
  Tick time() const { return end - start; }
  std::uint64_t dram_read = 0, dram_write = 0, dram_update = 0;  // GPU 0, its stream
  std::uint64_t l2_read = 0, l2_write = 0, l2_hits = 0, l2_misses = 0;  // GPU 0, its stream
};

struct C3Result {
  Tick time;                                      // the configuration's time
  bool isolated = true;                           // false: the fields from the isolated run are unset
  Tick isolated_gemm, isolated_collective;        // each alone (the CU collective)
  Tick ideal;                                     // from them: C3Run::ideal
  std::optional<Tick> isolated_dma_collective;    // conccl: the DMA collective alone
  C3KernelResult gemm, collective;                // in the run (concurrent, or the isolated ones)
  double ideal_speedup = 1, speedup = 1, fraction_of_ideal = 0;
  double gemm_slowdown = 1, collective_slowdown = 1;
  std::string taxonomy;                           // from the isolated times
  bool values_checked = false;
  std::uint64_t words_checked = 0;
  std::uint64_t extra_events = 0;                 // the isolated run's, when it is not the main one
  SamplingReport isolated_sampling, run_sampling;  // what sampling skipped in each run
  nlohmann::json json;
};

class C3Run;

// What a configuration's concurrent run (Procedure::kOverlapped) builds: the spec as its
// launch changes it (the collective kernel's priority, the CUs reserved for it:
// ConcurrentLaunch), and whether
// it starts the collective first (its launch's order, else the workload's). The
// isolated runs are the kernels alone as the workload describes them.
C3Spec concurrent_spec(const Configuration& configuration, C3Spec spec);
bool collective_first(const Configuration& configuration, const C3Spec& spec);


// One simulation on one node: the GEMM and the collective(s) placed apart in memory,
// launched as a configuration (or the sequential procedure) says: a scenario run
// (scenario_run.h) whose tasks are the GEMM and the collective(s) it built.
class C3Run : public ScenarioRun {
 public:
  enum class Coll { kCu, kDma };
  // Contract: spec.gemm.params is set. Builds the node, the CU collective (with_cu)
  // and the DMA one (with_dma), and writes their inputs (values only).
  C3Run(Simulator& sim, const NodeConfig& node, const C3Spec& spec, bool with_cu, bool with_dma);
  ~C3Run() override;

  const C3Spec& spec() const { return spec_; }
  // The CUs the GEMM may use: all but the last spec().comm_cus (reserved for the
  // communication stream); empty (every CU) when none are reserved.
  std::vector<std::uint32_t> gemm_cus() const;
  // GPU g's concurrent run: the tasks as the isolated run declares them, overlapped
  // (ScenarioRun::start_overlapped: no task waits for another), the collective(s)
  // first when `collective_first`, else the GEMM (on gemm_cus()).
  void start_together(std::uint32_t g, bool collective_first);
  // The ideal (seed 003 §IV-B3): the critical path over the tasks as declared, the
  // GEMM and the CU collective weighing their times alone; the DMA collective, conccl's
  // form of the same collective rather than more work, weighs nothing.
  Tick ideal(Tick gemm, Tick collective) const;

  // ---- the driver (the sequential procedure: start_chained, GEMM, then the CU
  // collective, then (with_dma) the DMA collective, each after the previous one ended)
  // Runs to completion (throws SimulationError on a deadlock, the time limit or a
  // failed functional check); then the kernels' results.
  void run(Tick max_time);
  C3KernelResult gemm_result();
  C3KernelResult collective_result(Coll which);
  std::uint64_t words_checked() const { return words_checked_; }
  std::uint32_t gemm_stages();
  std::uint32_t collective_channels() const { return cu_ ? cu_->channels() : 0; }
  // What sampling skipped on GPU 0 (nothing unless spec().sampling is enabled).
  SamplingReport sampling_report() { return node().gpu(0).sampling_report(); }

 private:
  Task task(Coll which) const { return which == Coll::kCu ? cu_task_ : dma_task_; }
  // Launches GPU g's GEMM now on gemm_cus().
  void launch_gemm(std::uint32_t g);
  // Starts GPU g's collective now; CU collectives run on their CU mask.
  void start_collective(std::uint32_t g, Coll which);
  struct Snapshots;  // GPU 0's communication-stream traffic at the collectives' starts and ends

  C3Spec spec_;
  std::unique_ptr<NodeCollective> cu_, dma_;
  Task gemm_task_ = 0, cu_task_ = 0, dma_task_ = 0;
  std::vector<std::uint32_t> gemm_kernel_;
  std::unique_ptr<Snapshots> snap_;
  std::uint64_t words_checked_ = 0;
};

// The isolated runs' results (the chained run): each kernel alone, from the sequential
// run or the isolated-run store.
struct C3Isolated {
  C3KernelResult gemm, cu;
  std::optional<C3KernelResult> dma;
  std::uint64_t words_checked = 0;
  std::uint32_t stages = 0, channels = 0;
  SamplingReport sampling;
  Tick ideal;  // the critical path over the run's tasks (C3Run::ideal), not kept: derived
};

// The C3 experiment as a scenario (scenario_driver.h): the isolated run (the chained
// one: the GEMM, then the CU collective, then conccl's DMA one, each alone) whenever the
// workload asks for isolated runs, and a concurrent configuration's run of its own (the
// overlapped procedure, its launch applied). The driver runs the isolated run on the main
// simulator when it is the only run, else on one of its own, and keeps it in (or takes it
// from) the isolated-run store.
class C3System final : public Scenario<C3Isolated> {
 public:
  // configuration: a registered name (UserError listing them otherwise). Builds the
  // sequential run's node and collectives (UserError for ones that cannot run).
  C3System(Simulator& sim, const NodeConfig& node, C3Spec spec, std::string configuration, std::uint64_t seed);
  ~C3System() override;
  C3Result run(Tick max_time = Tick::max());
  std::string summary(const C3Result& r) const;
  // Keep the isolated run's results in `store` (which must outlive the run) under `key`
  // (the text of everything the isolated run depends on: the binary, the system, the
  // workload but for order and comm_cus, mode, seed, DMA, sampling), and reuse them
  // when a run with the same key finds them: a sweep's c3_base, c3_sp and
  // CU-partitioned points of one case then simulate the isolated kernels once
  // (ScenarioDriver::share_chained_run: every configuration but sequential takes them).
  // The results are the same either way (the run is deterministic). An entry whose
  // fields are missing or of the wrong type is simulated again, with a warning, and
  // replaced.
  void set_isolated_store(ResultStore* store, std::string key) { driver_->share_chained_run(store, std::move(key)); }
  const C3Spec& spec() const { return spec_; }
  const std::string& configuration() const { return configuration_; }

 private:
  // ---- the scenario (scenario_driver.h)
  const char* scenario_name() const override { return "c3"; }
  bool runs_chained(Procedure procedure) const override;
  bool runs_own(Procedure procedure) const override { return procedure == Procedure::kOverlapped; }
  void build_chained(Simulator& sim) override;
  void build_own(Simulator& sim) override;
  C3Isolated simulate_chained(Tick max_time) override;
  void simulate_own(Tick max_time) override;
  void drop_chained() override { seq_.reset(); }
  nlohmann::json chained_entry(const C3Isolated& iso) const override;
  C3Isolated chained_from_entry(const nlohmann::json& entry) const override;
  Tick chained_end(const C3Isolated& iso) const override;

  // The concurrent run's results (simulate_own).
  struct Concurrent {
    C3KernelResult gemm, collective;
    std::uint64_t words_checked = 0;
    std::uint32_t stages = 0, channels = 0;
    SamplingReport sampling;
  };
  // The configuration's time given the run (its procedure's: the isolated times'
  // sum, the ideal, or the concurrent run's end) and its one-line description.
  Tick configuration_time(const C3Result& r) const;
  std::string describe() const;
  bool concurrent() const { return config_->procedure() == Procedure::kOverlapped; }
  bool uses_dma() const { return config_->launch().collective_on_dma; }
  nlohmann::json result_json(const C3Result& r, const C3Isolated& iso, std::uint32_t stages,
                             std::uint32_t channels) const;

  Simulator& sim_;
  NodeConfig node_;
  C3Spec spec_;
  std::string configuration_;
  std::unique_ptr<Configuration> config_;
  std::unique_ptr<C3Run> seq_;   // the isolated run (build_chained), dropped once run
  std::unique_ptr<C3Run> conc_;  // the concurrent run (build_own)
  Concurrent concurrent_;
  std::unique_ptr<ScenarioDriver<C3Isolated>> driver_;  // last: it builds the first run at construction
};

// `kind: c3` as an experiment.
std::unique_ptr<Experiment> make_c3_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                               const RunOptions& run);

// The taxonomy of two isolated times (seed 003 §III): GC-equal when within 15 % of
// each other (the longer at most 1.15x the shorter), else G-long or C-long.
std::string c3_taxonomy(Tick gemm, Tick collective);

}  // namespace t3sim
