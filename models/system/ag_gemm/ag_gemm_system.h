#pragma once
// The consumer all-gather + GEMM (../shared/seeds/001): on every GPU of a node, A is
// all-gathered (GPU r holds rows [r x M/N, (r + 1) x M/N) of A[M x K]) and multiplied
// by the GPU's own B[K x N] (N: its share of the columns), under one of the
// registered configurations (one file each under configurations/):
//
//   sequential     the library all-gather (CU-based, as RCCL's), then the library GEMM
//   fused          the copy-engine all-gather in chunks on several streams, each chunk
//                  followed by a signal, beside a persistent GEMM whose tiles wait for
//                  their chunk's signal (trace/consumer_gemm.h), own rows first
//   ideal-overlap  max(isolated all-gather, isolated GEMM): perfect overlap
//
// Every run reports the sequential run's parts (the isolated all-gather and GEMM), the
// configuration's time, its speedup over sequential, the ideal speedup and the
// fraction of it realized.
//
// The fused host side (seed 001's producer, Triton-distributed's
// cp_engine_producer_all_gather_full_mesh_push_multi_stream): one host thread submits,
// for each peer in rank order from g + 1 and each chunk of g's rows, a copy of the
// chunk into the peer's gathered A and a copy of a flag into the peer's signals, on
// stream (peer index mod streams); then (launch_order: copies-first, the library's)
// it launches the GEMM. Every submission costs the host thread dma.launch_latency
// (models/dma: command k reaches its engine (k + 1) launch latencies after the
// start), so the GEMM's launch waits for 2 x (N - 1) x chunks of them;
// `launch_order: gemm-first` launches the GEMM first. Streams map to engines round
// robin (HIP keeps a stream on one SDMA engine and gives concurrent streams different
// free engines: ROCm clr rocblit.cpp).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/collectives/node_collective.h"
#include "models/node/node.h"
#include "sim/registry.h"
#include "trace/consumer_gemm.h"
#include "trace/gemm.h"

namespace t3sim {

class ConfigNode;
class Experiment;
struct RunOptions;

struct AgGemmSpec {
  GemmParams gemm;                 // M: all GPUs' rows of A; N: this GPU's columns
  std::string gemm_label;          // "8192 x 1376 x 4096"
  NodeCollectiveParams ag;         // the library's CU all-gather of A (data_base set by the run)
  std::uint64_t chunk_rows = 256;  // rows per copy-engine copy and signal (seed 001)
  std::uint32_t streams = 0;       // copy-engine streams; 0: one per GPU (seed 001)
  bool swizzle = true;             // the consumer's tiles in delivery order, own rows first
  bool copies_first = true;        // the host submits the copies, then launches the GEMM
  std::uint32_t grid = 0;          // persistent WGs; 0: one per CU (seed 001)
};

struct AgGemmResult {
  Tick time;                        // the configuration's
  Tick sequential, isolated_ag, isolated_gemm;  // the sequential run: its end and its parts
  Tick ideal;                       // max(isolated AG, isolated GEMM)
  double speedup = 1, ideal_speedup = 1, fraction_of_ideal = 0;
  // The fused run (zero otherwise): the GEMM's launch (after the host's submissions)
  // and end, the copy engines' last signal, and the consumer's blocking waits (GPU 0).
  Tick fused_gemm_launch, fused_gemm_end, fused_copies_end;
  std::uint64_t flag_waits = 0;
  bool values_checked = false;
  std::uint64_t words_checked = 0;
  std::uint64_t extra_events = 0;   // the sequential run's, when it is not the main one
  nlohmann::json json;
};

// A configuration: whether its time needs the fused run, and how its time follows.
class AgGemmConfiguration {
 public:
  virtual ~AgGemmConfiguration() = default;
  // True: the configuration's own run is the fused one (the sequential run then runs
  // on a simulator of its own, for the baseline).
  virtual bool fused() const = 0;
  virtual Tick time(const AgGemmResult& r) const = 0;
  virtual std::string describe(const AgGemmSpec& spec) const = 0;
};

using AgGemmConfigurations = Registry<AgGemmConfiguration>;
AgGemmConfigurations& ag_gemm_configurations();

// One simulation on one node: the gathered A (the CU all-gather's array, which also
// preloads and checks the values), B and C after it, and either procedure.
class AgGemmRun {
 public:
  AgGemmRun(Simulator& sim, const NodeConfig& node, const AgGemmSpec& spec);
  ~AgGemmRun();
  // GPU g: the CU all-gather, then the library GEMM.
  void start_sequential(std::uint32_t g);
  // GPU g: the copy-engine all-gather and the consumer GEMM.
  void start_fused(std::uint32_t g);
  // Runs to completion; throws SimulationError (deadlock, time limit, a failed check).
  void run(Tick max_time);
  Tick end() const;                 // max over GPUs of the last kernel's end
  Tick ag_end() const;              // sequential: max over GPUs of the all-gather's end
  Tick gemm_launch() const, copies_end() const;
  std::uint64_t flag_waits() const;
  std::uint64_t words_checked() const { return words_checked_; }
  std::uint64_t events() const;
  Node& node() { return *node_; }
  const ConsumerGemmParams& consumer(std::uint32_t g) const { return consumer_[g]; }

 private:
  void launch_gemm(std::uint32_t g, const KernelTrace& trace);

  Simulator& sim_;
  AgGemmSpec spec_;
  std::unique_ptr<Node> node_;
  std::unique_ptr<NodeCollective> ag_;
  KernelTrace library_gemm_;
  std::vector<ConsumerGemmParams> consumer_;  // per simulated GPU
  std::vector<KernelTrace> consumer_traces_;  // per simulated GPU (built by start_fused)
  std::vector<Tick> ag_end_, gemm_launch_, gemm_end_, copies_end_;
  std::vector<std::uint32_t> copies_left_;
  std::uint64_t words_checked_ = 0;
};

// The experiment: the configuration's run on `sim`, plus the sequential run on a
// simulator of its own for fused.
class AgGemmSystem {
 public:
  AgGemmSystem(Simulator& sim, const NodeConfig& node, AgGemmSpec spec, std::string configuration,
               std::uint64_t seed);
  ~AgGemmSystem();
  AgGemmResult run(Tick max_time = Tick::max());
  std::string summary(const AgGemmResult& r) const;
  const AgGemmSpec& spec() const { return spec_; }

 private:
  Simulator& sim_;
  NodeConfig node_;
  AgGemmSpec spec_;
  std::string configuration_;
  std::unique_ptr<AgGemmConfiguration> config_;
  std::unique_ptr<Simulator> own_sim_;
  std::unique_ptr<AgGemmRun> seq_, fused_;
};

}  // namespace t3sim
