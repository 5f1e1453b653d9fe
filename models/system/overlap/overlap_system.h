#pragma once
// A computation and the collective that depends on it (or that it depends on), the
// software ways of overlapping them (seeds 000 and 001), on every GPU of a node. Each
// workload is an *op* (ops.h; one file each under ops/): what it computes, which
// collective, and what its fused form launches. The configurations are the same for
// every op (one file each under configurations/):
//
//   sequential     the bulk-synchronous kernels one after the other: the library
//                  collective (CU-based, as RCCL's) and the compute kernel, in the
//                  order of the dependency
//   fused          the op's fused form: seed 000's persistent kernels that push their
//                  output with remote stores and flags, seed 001's copy-engine chunks
//                  with signals beside a persistent GEMM
//   ideal-overlap  max(isolated compute, isolated collective): perfect overlap
//
// Every run reports the sequential run's parts (the isolated compute and collective),
// the configuration's time, its speedup over sequential, the ideal speedup and the
// fraction of it realized; `fused` runs the sequential procedure too, on a simulator
// of its own.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/node/node.h"
#include "models/system/configuration.h"
#include "models/system/scenario_driver.h"
#include "models/system/scenario_run.h"
#include "sim/registry.h"
#include "trace/trace.h"

namespace t3sim {

class OverlapRun;
class StoreRouting;
struct RunOptions;

// A workload: its kernels and collectives on one node. A fresh op serves each run.
class OverlapOp {
 public:
  virtual ~OverlapOp() = default;
  // "all-gather + GEMM 8192 x 1376 x 4096" (the summary's first words).
  virtual std::string label() const = 0;
  // What `fused` runs, in a line.
  virtual std::string describe_fused() const = 0;
  // Builds its kernels and collectives on run.node() and preloads the values.
  // UserError for what the node cannot run.
  virtual void build(OverlapRun& run) = 0;
  // Declares the sequential procedure's two phases as chained tasks
  // (run.chain_phase: how each starts on a GPU, through run.launch_compute and
  // run.start_collective_phase, and which one the procedure runs after the other); the
  // run chains them.
  virtual void chain_sequential(OverlapRun& run) = 0;
  // GPU g at time zero: the fused form; its work reported through run.work_begins /
  // run.work_ends (run.launch_kernel does both).
  virtual void start_fused(OverlapRun& run, std::uint32_t g) = 0;
  // After the run: checks the values (words checked; the first mismatch in `error`).
  virtual std::uint64_t verify(OverlapRun& run, std::string& error) = 0;
  // Whether values are carried and checked.
  virtual bool values() const = 0;
  // The fused run's own results (results.json "fused"), after it ended: numbers, under
  // the keys fused_keys() names (also the sweep row's fused_<key> columns, 0 when the
  // configuration did not run the fused form).
  virtual nlohmann::json fused_json(OverlapRun& run) {
    (void)run;
    return nlohmann::json::object();
  }
  virtual std::vector<std::string> fused_keys() const { return {}; }
};

using OverlapOpFactory = std::function<std::unique_ptr<OverlapOp>()>;

struct OverlapResult {
  Tick time;                                 // the configuration's
  Tick sequential, isolated_compute, isolated_collective;  // the sequential run: its end and its phases
  Tick ideal;                                // max(isolated compute, isolated collective): OverlapRun::ideal
  double speedup = 1, ideal_speedup = 1, fraction_of_ideal = 0;
  Tick fused;                                // the fused run's end (zero otherwise)
  std::uint64_t flag_waits = 0;              // the fused run's blocking waits on GPU 0
  double skew = 0;                           // the fused run's end skew over GPUs (OverlapRun::skew)
  bool values_checked = false;
  std::uint64_t words_checked = 0;
  std::uint64_t extra_events = 0;            // the sequential run's, when it is not the main one
  nlohmann::json json;
};



// One simulation on one node of an op, sequential or fused: a scenario run
// (scenario_run.h) whose tasks, in the sequential procedure, are the op's two phases.
class OverlapRun : public ScenarioRun {
 public:
  enum Phase { kCompute, kCollective, kPhases };
  enum class Procedure { kSequential, kFused };
  OverlapRun(Simulator& sim, const NodeConfig& node, std::unique_ptr<OverlapOp> op, Procedure procedure);
  ~OverlapRun() override;

  // ---- for ops (seed(), node(), sim() and work_begins / work_ends are the scenario run's)
  // The sequential procedure: phase p starts on a GPU through `start` once the phases
  // of `ordered_after` ended there (ScenarioRun::chain_task). Order-only dependencies
  // (ScenarioRun::only_after): every op's fused form takes the one phase's output piece
  // by piece as the other writes it, so ideal-overlap runs them together.
  void chain_phase(Phase p, const std::vector<Phase>& ordered_after, TaskStart start);
  // Launches `trace` on GPU g now as the compute phase (kernel boundaries told to the
  // memory); `then` runs at its end, before the phases waiting for it start.
  void launch_compute(std::uint32_t g, const KernelTrace& trace, std::function<void()> then = {});
  // Starts GPU g's part of collective c now as the collective phase.
  void start_collective_phase(std::uint32_t g, Collective& c) { start_collective(g, task(kCollective), c); }
  // The fused form: launches `trace` on GPU g now as a compute-stream kernel (kernel
  // boundaries told to the memory), counted as work; `then` runs at its end.
  void launch_kernel(std::uint32_t g, const KernelTrace& trace, const StoreRouting* routing = nullptr,
                     std::uint32_t value_granule = 0, std::function<void()> then = {});

  // ---- the driver
  void start(std::uint32_t g) {
    if (procedure_ == Procedure::kSequential)
      start_chained(g);
    else
      op_->start_fused(*this, g);
  }
  // Runs to completion; throws SimulationError (deadlock, time limit, a failed check).
  void run(Tick max_time);
  // A phase's time: the max over GPUs of its end minus the max over GPUs of its start.
  Tick phase_time(Phase p) const { return time(task(p)); }
  // The critical path over the phases as chained (ScenarioRun::critical_path), each
  // weighing its time given: ideal-overlap's.
  Tick ideal(Tick compute, Tick collective) const;
  std::uint64_t flag_waits();  // GPU 0's CUs
  std::uint64_t words_checked() const { return words_checked_; }
  OverlapOp& op() { return *op_; }

 private:
  Task task(Phase p) const;

  std::unique_ptr<OverlapOp> op_;
  Procedure procedure_;
  std::uint64_t words_checked_ = 0;
};

// The sequential run's results (the chained run): its end and its phases alone.
struct OverlapSequential {
  Tick end, compute, collective;
  Tick ideal;  // the critical path over the phases (OverlapRun::ideal), not kept: derived
  std::uint64_t words_checked = 0;
};

// The experiment as a scenario (scenario_driver.h): the sequential run (the chained one)
// for every configuration, and `fused`'s run of its own (the op's fused form) on the main
// simulator, the sequential one then on a simulator of its own.
class OverlapSystem final : public Scenario<OverlapSequential> {
 public:
  OverlapSystem(Simulator& sim, const NodeConfig& node, OverlapOpFactory make_op, std::string configuration,
                std::uint64_t seed);
  ~OverlapSystem() override;
  OverlapResult run(Tick max_time = Tick::max());
  std::string summary(const OverlapResult& r) const;
  const std::string& configuration() const { return configuration_; }
  const OverlapOp& op() const { return *describer_; }
  const NodeConfig& node() const { return node_; }
  // The simulations run() makes: the sequential one, and the fused one where the
  // configuration is fused.
  int simulations() const { return driver_->simulations(); }
  // Where the sequential run is kept under `key` (ScenarioDriver::share_chained_run):
  // `sequential` keeps it, `fused` and `ideal-overlap` take it. Null: none.
  void share_sequential_run(ResultStore* store, std::string key) { driver_->share_chained_run(store, std::move(key)); }

 private:
  // ---- the scenario (scenario_driver.h)
  const char* scenario_name() const override { return "overlap"; }
  bool runs_chained(Procedure procedure) const override {
    (void)procedure;
    return true;  // every configuration reports the sequential run's parts
  }
  bool runs_own(Procedure procedure) const override { return procedure == Procedure::kOwn; }
  void build_chained(Simulator& sim) override;
  void build_own(Simulator& sim) override;
  OverlapSequential simulate_chained(Tick max_time) override;
  void simulate_own(Tick max_time) override;
  void drop_chained() override { seq_.reset(); }
  nlohmann::json chained_entry(const OverlapSequential& r) const override;
  OverlapSequential chained_from_entry(const nlohmann::json& entry) const override;
  Tick chained_end(const OverlapSequential& r) const override { return r.end; }

  // The fused run's results (simulate_own).
  struct Fused {
    Tick end;
    double skew = 0;
    std::uint64_t flag_waits = 0, words_checked = 0;
    nlohmann::json json;
  };
  // The configuration's procedure (configuration.h): chained, critical path, or its own,
  // the op's fused form; its time given the runs, and its one-line description.
  bool fused() const { return config_->procedure() == Procedure::kOwn; }
  Tick configuration_time(const OverlapResult& r) const;
  std::string describe() const;

  NodeConfig node_;
  OverlapOpFactory make_op_;
  std::string configuration_;
  std::unique_ptr<Configuration> config_;
  std::unique_ptr<OverlapOp> describer_;  // labels and descriptions
  std::unique_ptr<OverlapRun> seq_;       // the sequential run (build_chained), dropped once run
  std::unique_ptr<OverlapRun> fused_;     // the fused run (build_own)
  Fused fused_result_;
  std::unique_ptr<ScenarioDriver<OverlapSequential>> driver_;  // last: it builds the first run at construction
};

// An op kind as an experiment (`t3sim run`): the summary, results.json and the sweep
// row (configuration, workload, times, speedups, the fused run's keys). A UserError
// building it (a collective the node cannot run) becomes a ConfigError at the
// workload's `collective` section's channels. With run.isolated_store, the sequential
// run is kept there under everything it depends on (the build, mode, seed, system and
// workload), and taken by fused and ideal-overlap (scenario_driver.h). For validate's cost estimate (WorkEstimate), one simulation
// of the op moves `kernel_bytes_per_gpu` through each simulated GPU's kernels and runs
// `library_collective` (its sequential collective) once.
class ConfigNode;
class Experiment;
struct NodeCollectiveParams;
std::unique_ptr<Experiment> make_overlap_experiment(Simulator& sim, const NodeConfig& node, OverlapOpFactory op,
                                                    const std::string& configuration, const RunOptions& run,
                                                    ConfigNode system, ConfigNode workload,
                                                    double kernel_bytes_per_gpu,
                                                    const NodeCollectiveParams& library_collective);

// An op kind's `collective:` section: the sequential CU collective of `kind` over
// `array_bytes` (channels: the library's by default; the ring pipeline keys;
// functional: auto | values | off, auto meaning values up to values_limit). Values
// need `whole` (the op's chunks and tiles in whole value granules); `what` names those
// in the error when values were asked for; `values_bytes` is what values_limit is
// compared with (0: the array). Finishes the section.
struct NodeCollectiveParams;
struct CollectiveKind;
NodeCollectiveParams read_overlap_collective(ConfigNode coll, const NodeConfig& node, CollectiveKind kind,
                                             std::uint64_t array_bytes, std::uint32_t element_bytes, bool whole,
                                             const std::string& what, std::uint64_t seed,
                                             std::uint64_t values_bytes = 0);

// The CLI's reading of a configuration for an op kind: the name given (default
// `fused`), checked against the registry (RunOptions::reject_configuration).
std::string overlap_configuration(const RunOptions& run, const char* kind);

// An op kind's host-memory check before anything is built (RunOptions::check_host_memory):
// the simulated GPUs, the values a functional collective checks (`value_copies` words
// per value granule of its array; 0: not counted) and the persistent kernel's tiles,
// spelled out at ~2 KiB each with their K loop (trace/fused_gemm.h): `tiles` per
// simulated GPU, charged to `tiles_key` as `tiles_what`.
void check_overlap_host_memory(const RunOptions& run, const NodeConfig& node, const NodeCollectiveParams& collective,
                               std::uint32_t value_copies, const std::string& tiles_key, const std::string& tiles_what,
                               std::uint64_t tiles);

}  // namespace t3sim
