#pragma once
// An experiment: what one workload kind (`kind:` in a workload file) does with a
// system. `t3sim run` keeps one skeleton (configs, simulator, timeline, timing,
// outputs; cli/run.cpp) and asks the kind's experiment, chosen by name from the
// registry, to read its inputs and build (the factory), then to run. Each kind is one
// file under models/system/experiments/ that registers itself:
//
//   memory      synthetic traffic against one GPU's memory system
//   gemm        a GEMM alone on one GPU; with a configuration (--config), the GEMM
//               and its collective on a node (the sub-layer, sublayer_system.h)
//   collective  one collective on a node
//   c3          a GEMM and an independent collective on a node (seed 003)
//   ag_gemm     an all-gather of A, then the GEMM that consumes it (seed 001)
//   gemm_a2a    a GEMM whose output rows an all-to-all returns (seed 000, MoE)
//   gemv_ar     a partial GEMV per GPU, all-reduced (seed 000, decode)
//   embedding_a2a  embedding-bag pooling, then the all-to-all (seed 000, DLRM)
//   interference   a GEMM series beside a stream of copies (issue 41, the H200 microbenchmark)
//
// See CONTRIBUTING.md for adding a kind.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/gpu/stage_sampler.h"  // SamplingConfig
#include "models/node/node.h"  // NetMode, parse_net_mode
#include "collective/collective.h"  // CollectiveKind
#include "trace/gemm.h"  // GemmParams
#include "trace/trace.h"  // KernelTrace
#include "models/system/result_store.h"
#include "sim/config.h"
#include "sim/host_memory.h"
#include "sim/registry.h"
#include "sim/simulator.h"

namespace t3sim {

// The run options every experiment may use (read from `run.` and the command line).
struct RunOptions {
  std::uint64_t seed = 1;
  NetMode mode = NetMode::kFull;   // full: every GPU simulated; homogeneous: GPU 0, peers mirrored
  std::string configuration;       // a registered sub-layer configuration, or "" if none was given
  SourceLocation configuration_where;  // where it was given, for errors

  // Steady-state sampling of long kernels (run.sampling; models/gpu/stage_sampler.h):
  // off unless asked for. A kind that cannot sample says so (Experiment::samples).
  SamplingConfig sampling;
  SourceLocation sampling_where;
  // Where kinds that run isolated kernels first (c3) may keep and reuse those runs'
  // results (the front end's store for run.isolated_cache; a sweep's is beside its
  // CSV). Null: none.
  std::shared_ptr<ResultStore> isolated_store;
  [[noreturn]] void reject_sampling(const std::string& message) const {
    throw ConfigError(sampling_where, "run.sampling", message);
  }

  // A ConfigError at run.config: the kind takes no such configuration.
  [[noreturn]] void reject_configuration(const std::string& message) const {
    throw ConfigError(configuration_where, "run.config", message);
  }

  // The host-memory guard (sim/host_memory.h): what a run may allocate (run.host_memory,
  // else what the host has available), and where a key was written, for the error.
  std::uint64_t host_memory = UINT64_MAX;
  std::string host_memory_source = "run.host_memory";
  std::function<SourceLocation(const std::string&)> locate = [](const std::string&) { return SourceLocation{}; };
  // Throws a ConfigError at the costliest key when the estimate exceeds the budget;
  // experiments call it before they build.
  void check_host_memory(const HostMemoryEstimate& estimate) const {
    HostMemoryEstimate with_program = estimate;
    // The program before it builds anything: code, libraries, the parsed configs
    // (peak RSS of `t3sim validate` on a GEMM alone: 7.4 MiB).
    with_program.add("run.host_memory", "the program itself", 1, 8ULL << 20);
    with_program.check(host_memory, host_memory_source, locate);
    estimated_host_memory = std::max(estimated_host_memory, with_program.total());
  }
  // The largest estimate checked so far (what `validate` reports); 0 before any.
  mutable std::uint64_t estimated_host_memory = 0;
};

// What a finished experiment reports; the skeleton adds the version header, the
// simulation line and the event count.
struct ExperimentResult {
  std::string label;     // metadata.configuration: the configuration, or the kind
  nlohmann::json json;   // results.json's "results"
  std::string summary;   // the human summary's body (stdout)
  // The sweep row's metrics, in an order that depends only on the kind (and its
  // configuration's kind), not on the values; the skeleton appends events and wall_s.
  std::vector<std::pair<std::string, std::string>> metrics;
  // Events of simulations run besides the main one (isolated runs of ideal
  // configurations), counted in the reported total.
  std::uint64_t extra_events = 0;
};

// What a run will do, for `t3sim validate`'s cost estimate (issue 45): the bytes its
// simulated GPUs move, in the two forms whose cost in events differs, summed over every
// simulation the run makes (a configuration's isolated runs included). An estimate of
// the order of magnitude, not a prediction: WorkEstimate::events() says how it was
// measured and how close it comes.
struct WorkEstimate {
  // Kernels' tile loads and stores (a GEMM's, an embedding's): large requests whose L2
  // hits cost no events of their own.
  double kernel_bytes = 0;
  // A collective's or a copy's arrays, counted once per simulated GPU: line-sized
  // requests through the L2, the links and the peers' memory.
  double communication_bytes = 0;
  // Link packets between GPUs whose memory is the idealized one (no L2, no DRAM
  // commands: a packet costs a few events, not its lines').
  double ideal_memory_packets = 0;
  // Why the figure is a bound rather than an estimate ("sampling skips steady
  // stages"), or "".
  std::string caveat;
  bool known() const { return kernel_bytes + communication_bytes + ideal_memory_packets > 0; }
  WorkEstimate scaled(double runs) const {
    WorkEstimate w = *this;
    w.kernel_bytes *= runs;
    w.communication_bytes *= runs;
    w.ideal_memory_packets *= runs;
    return w;
  }
  // The events the bytes will cost (experiment.cpp: its constants and their sources).
  double events() const;
  // Host CPU seconds for those events at this machine's typical rate.
  double cpu_seconds() const;
};

// The bytes a generated GEMM's WGs load and store: every output tile loads its rows of A
// and columns of B over K and stores itself (trace/gemm.h's kernel, without the L2).
double gemm_access_bytes(const GemmParams& gemm);
// A trace's loads and stores, from the first WG of each program times its WG count
// (every WG of a program moves the same bytes in the generated kernels; a trace file's
// may not, which an estimate tolerates).
double trace_access_bytes(const KernelTrace& trace);
// A collective's array bytes for WorkEstimate::communication_bytes on `gpus` simulated
// GPUs: each reads and writes its array once; an all-reduce is a reduce-scatter and an
// all-gather, twice that.
double collective_work_bytes(CollectiveKind kind, std::uint64_t array_bytes, std::uint32_t gpus);

class Experiment {
 public:
  virtual ~Experiment() = default;
  // The one line `t3sim validate` prints once everything is read and built.
  virtual std::string validated() const = 0;
  // Simulates to completion. Throws SimulationError (deadlock, livelock, the time
  // limit, a failed functional check).
  virtual ExperimentResult run(Tick max_time) = 0;
  // Whether it honours run.sampling (skips steady GEMM stages); the run refuses
  // sampling for a kind that does not.
  virtual bool samples() const { return false; }
  // The fraction of the run's work done so far (0-1), for the progress line's ETA;
  // negative: not known (the default). Called between events, from the thread that
  // runs the simulation.
  virtual double progress() { return -1.0; }
  // What the run will do, for validate's cost estimate; unknown (the default): validate
  // prints none.
  virtual WorkEstimate work() const { return {}; }
};

// Workload kinds by name. The factory reads the system and workload sections (every
// key, finishing both: unknown keys are errors) and builds the model on `sim`; it
// throws UserError (ConfigError naming file, line and key) for bad input.
using ExperimentRegistry = Registry<Experiment, Simulator&, ConfigNode /*system*/, ConfigNode /*workload*/,
                                    const RunOptions&>;
ExperimentRegistry& workload_kinds();


}  // namespace t3sim
