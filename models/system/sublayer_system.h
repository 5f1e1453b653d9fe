#pragma once
// A transformer sub-layer of T3 Table 2 on a node: the GEMM that produces a T x H
// output on every GPU of the tensor-parallel group, and the reduce-scatter +
// all-gather that consume it, under one of the registered configurations
// (sublayer_configuration.h; each one file under configurations/, which says what
// it runs, how its phases are delimited and what it checks).
//
// The driver here is the same for every configuration: it builds the node (after
// the configuration changed its config), declares the sub-layer's tasks, starts every
// GPU (the tasks chained, or the configuration's procedure), and keeps the phases per
// GPU: the GEMM ends when its kernel ends, the RS when its collective ends (or the
// procedure reports it), the AG when its collective ends on that GPU.
//
// The tasks, chained (the sequential procedure, T3 §5.3's baseline): on every GPU the
// GEMM on all CUs; at its end the kernel boundary (its output leaves the L2 for DRAM:
// write-backs in the compute stream, overlapping the RS, so the breakdown counts them
// as GEMM writes, as T3 Figure 18 does); then a CU ring reduce-scatter of its output;
// then a CU ring all-gather (kernels in stream order per GPU; the ring's flags
// synchronize the GPUs). Functional check (small outputs): the output array starts as
// a known pattern (the GEMM's stores are timing-only and leave values alone) and must
// end as the sum over GPUs everywhere (full mode), or in GPU 0's chunks (homogeneous
// mode). Caveat: the L2 must write back and refetch a line the GEMM wrote timing-only
// before a functional read, which adds the output's size to the reduce-scatter's DRAM
// writes; breakdowns are exact with values off (the default above values_limit, so
// for every Table 2 case). Results split the time into GEMM, RS and AG (each the max over GPUs of the
// phase's end, minus the previous one) and each GPU's DRAM traffic into the three
// phases (T3 Figures 15 and 18): GEMM = the compute stream's traffic (including the
// write-back of its output from the L2 at the kernel boundary), RS and AG = the
// communication stream's between phase ends (an RS that runs beside the GEMM counts
// from the start).

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/collectives/node_collective.h"
#include "models/system/gemm_system.h"
#include "models/node/node.h"
#include "models/collectives/protocol_tuner.h"
#include "models/system/scenario_driver.h"
#include "models/system/scenario_run.h"
#include "models/system/sublayer_configuration.h"

namespace t3sim {

class ConfigNode;
class ResultStore;

struct SublayerOptions {
  std::uint32_t channels = 0;            // collective WGs; 0: one per CU
  ChannelPipelineSpec pipeline;       // ring kernels' protocol (auto unless given), FIFO and slice sizes
  std::string functional = "auto";       // auto | values | off
  std::uint64_t values_limit = 16ULL << 20;  // auto: values when the output is at most this
  // t3 / t3-mca: the all-gather after the fused RS. cu: the CU ring AG (the paper's
  // "followed by sequential all-gather", T3 §6); dma: T3's own all-gather through the
  // tracker and DMA engines (T3 §7.1; ring, or direct on a fully-connected node),
  // started once every GPU's RS is done (the driver reprograms the trackers).
  std::string t3_all_gather = "cu";
  // fused: the order the persistent WGs take the output tiles in. comm-aware: tiles
  // owned by other GPUs first, the own chunk's last (seed 000 §III); oblivious: the
  // GEMM's own tile order.
  std::string fused_order = "comm-aware";
  // fused: how the partial outputs are reduced. staging: into the owner's staging
  // slots, summed by the owner's WGs on flags; atomic: added into the owner's chunk with
  // atomic adds (applied at its memory), the owner only waiting for the flags.
  std::string fused_reduction = "staging";
};

// A CU collective's channel pipeline keys (protocol: simple | ll | ll128 | auto, the
// default; step_size, fifo_depth, slice_steps, chunk_steps over the protocol's
// defaults) from a workload or its `collective:` section; steps are whole
// `value_granule`s (the system's memory.hbm.value_granule). The sizes given are
// checked with every protocol they may run with (auto: all three).
ChannelPipelineSpec read_channel_pipeline(ConfigNode& c, std::uint32_t value_granule);
// A protocol chosen for an algorithm without the ring pipeline (direct, all-to-all,
// halving-doubling: Simple's bulk slices only) would be silently ignored: refused at
// c's `protocol` key instead.
void check_protocol_applies(ConfigNode& c, const ChannelPipelineSpec& spec, CollectiveKind kind);
// The key of the collective's workload section (`section`) behind a CollectiveParamError
// (collective/collective.h): channels, size (array_bytes), the pipeline keys
// read_channel_pipeline reads (step_size, fifo_depth, chunk_steps); `fallback` for a
// field no workload key sets. The programs' size bounds channels x chunk slices: of the
// two, the one the section sets is blamed (issue 45, D6).
const char* collective_workload_key(const CollectiveParamError& e, ConfigNode& section, const char* fallback);

// The `collective:` section of a GEMM workload (optional).
SublayerOptions read_sublayer_options(ConfigNode collective, std::uint32_t value_granule);

// DRAM bytes one GPU's memory controllers moved in a phase, by op.
struct PhaseTraffic {
  std::uint64_t read = 0, write = 0, update = 0;
  std::uint64_t total() const { return read + write + update; }
};
// What one GPU's memory controllers moved for stream `s` so far.
PhaseTraffic dram_totals(GpuMemory& mem, Stream s);

struct SublayerResult {
  Tick total, gemm, rs, ag;                     // phase times (max over GPUs of each phase end)
  PhaseTraffic traffic[3];                      // GEMM, RS, AG: mean over simulated GPUs
  bool values_checked = false;
  std::uint64_t words_checked = 0;
  std::string note;                             // a line the summary adds (ideal: the isolated runs)
  std::uint64_t extra_events = 0;               // events of simulations besides the main one
  nlohmann::json json;
};

// A reduce-scatter run alone for an ideal bound (ideal-rs-nmc's RS with near-memory
// updates): its time (the last GPU done), GPU 0's communication-stream traffic and its
// simulation's events.
struct IsolatedRs {
  Tick time;
  PhaseTraffic traffic;
  std::uint64_t events = 0;
};

// The sub-layer as an experiment (`kind: gemm` with a configuration).
class Experiment;
struct RunOptions;
std::unique_ptr<Experiment> make_sublayer_experiment(Simulator& sim, ConfigNode system, ConfigNode workload,
                                                     const RunOptions& run);

// The sub-layer as a scenario (scenario_driver.h): one run, on the main simulator, whatever
// the configuration: sequential's chained tasks (kept in the isolated-run store, and taken
// from it by the ideal bounds) or a procedure of its own (t3, fused).
class SublayerSystem final : public Scenario<SublayerResult> {
  enum Phase { kGemm, kRs, kAg, kPhases };  // also the scenario run's tasks, in this order (critical_path)

 public:
  // Contract: gemm.params is set (a generated GEMM, not a trace file). configuration:
  // a registered name (UserError listing them otherwise).
  SublayerSystem(Simulator& sim, const NodeConfig& node, GemmWorkload gemm, const SublayerOptions& opt,
                 std::string configuration, std::uint64_t seed);
  ~SublayerSystem() override;

  // Simulate to completion; throws SimulationError on a deadlock, the time limit, or
  // a failed functional check.
  SublayerResult run(Tick max_time = Tick::max());
  // Where sequential's run is kept under `key` (everything it depends on): `sequential`
  // keeps its run there, the ideal bounds take it instead of simulating it again
  // (ScenarioDriver::share_chained_run). Null: none.
  void share_sequential_run(ResultStore* store, std::string key);
  // `label`: the configuration to print (default: the one simulated).
  std::string summary(const SublayerResult& r, std::string_view label = {}) const;
  Node& node() { return run_->node(); }
  const Node& node() const { return run_->node(); }

  // ---- for configurations
  const GemmWorkload& gemm() const { return gemm_; }
  const SublayerOptions& options() const { return opt_; }
  std::uint64_t seed() const { return seed_; }
  const std::string& configuration() const { return configuration_; }
  // Carry and check values (small outputs, collective.functional); a configuration
  // that cannot check them turns this off in build().
  bool values() const { return values_; }
  std::uint64_t array_bytes() const { return array_bytes_; }
  // The GEMM's output (the collective's array).
  std::uint64_t output_base() const;
  // A CU ring collective over the GEMM's output (sequential's RS; every
  // configuration's AG), with the sub-layer's channels, slices and seed.
  std::unique_ptr<NodeCollective> make_ring_collective(CollectiveKind kind, bool uncached, bool values);
  // Launches GPU g's GEMM: `k` brings what the procedure changes (trace,
  // staggering, store routing, values); the driver adds the CUs and the end.
  void launch_gemm(std::uint32_t g, KernelLaunch k);
  // A procedure's GPU g's reduce-scatter ended at `end` (now, or earlier for one that
  // ran beside the GEMM).
  void rs_ended(std::uint32_t g, Tick end);
  // Starts GPU g's all-gather now; its end is the sub-layer's end on g.
  void start_all_gather(std::uint32_t g, Collective& ag);
  // The critical path over the chained tasks (ScenarioRun::critical_path), the GEMM,
  // the RS and the AG weighing the times given: the ideal bounds' total.
  Tick critical_path(Tick gemm, Tick rs, Tick ag) const { return run_->critical_path({gemm, rs, ag}); }
  // The critical-path procedure's result (T3 §5.3's ideal bounds), from the chained
  // run's `r`: total = the critical path over the tasks, each weighing its time alone;
  // r.rs = the part of the RS a GEMM of sequential's length leaves exposed. `rs`: the
  // RS run alone in its place (its time the RS's weight, its traffic the RS's), or null
  // (sequential's RS). Records the isolated times in r.json["isolated"] and a line for
  // the summary.
  void make_ideal_result(SublayerResult& r, const IsolatedRs* rs) const;
  // When GPU g's GEMM kernel ended.
  Tick gemm_end(std::uint32_t g) const { return run_->ended(g, kGemm); }
  Simulator& simulator() { return run_->sim(); }
  // The GEMM kernel GPU 0 ran (its stats).
  const KernelStats& gemm_kernel_stats() const;

 private:
  // ---- the scenario (scenario_driver.h): the chained run for sequential and the ideal
  // bounds, or the configuration's own; either is one ScenarioRun on the main simulator
  const char* scenario_name() const override { return "sublayer"; }
  bool runs_chained(Procedure procedure) const override;
  bool runs_own(Procedure procedure) const override;
  void build_chained(Simulator& sim) override { build(sim); }
  void build_own(Simulator& sim) override { build(sim); }
  SublayerResult simulate_chained(Tick max_time) override { return simulate(max_time); }
  void simulate_own(Tick max_time) override;
  void drop_chained() override { run_.reset(); }
  nlohmann::json chained_entry(const SublayerResult& r) const override;
  SublayerResult chained_from_entry(const nlohmann::json& entry) const override;
  Tick chained_end(const SublayerResult& r) const override { return r.total; }

  // The node, the tasks and the configuration's procedure (or the tasks chained) on `sim`.
  void build(Simulator& sim);
  // The simulation and its result, before the configuration completes it.
  SublayerResult simulate(Tick max_time);
  void on_gemm_end(std::uint32_t g);
  // The chained tasks: the RS and AG collectives (the RS's inputs written) and each
  // task's start and dependency.
  void chain_tasks();
  // After the chained tasks: every chunk of every GPU holds the sum over GPUs.
  std::uint64_t verify_chained(std::string& error) const;

  GemmWorkload gemm_;
  SublayerOptions opt_;
  std::string configuration_;
  std::uint64_t seed_;
  std::unique_ptr<SublayerConfiguration> config_;
  SublayerProcedure* procedure_ = nullptr;  // config_'s own procedure; none: the tasks chained
  NodeConfig node_;                         // as the configuration changed it
  std::unique_ptr<ScenarioRun> run_;  // the node, and per GPU the GEMM's, RS's and AG's starts and ends
  std::unique_ptr<NodeCollective> rs_, ag_;  // the chained tasks' CU ring RS and AG
  bool values_ = false;
  std::string values_off_;  // why values_ is false (the summary's functional check line)
  std::uint64_t array_bytes_ = 0;
  std::uint32_t collective_channels_ = 0;        // of the CU ring collectives
  // per simulated GPU: the communication stream's DRAM totals at each phase end
  std::vector<std::array<PhaseTraffic, kPhases>> traffic_at_end_;
  std::vector<std::uint32_t> gemm_kernel_;
  SublayerResult own_result_;  // the own procedure's run (simulate_own)
  std::unique_ptr<ScenarioDriver<SublayerResult>> driver_;  // last: it builds the run at construction
};

}  // namespace t3sim
