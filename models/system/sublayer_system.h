#pragma once
// A transformer sub-layer of T3 Table 2 on a node: the GEMM that produces a T x H
// output on every GPU of the tensor-parallel group, and the collective that
// consumes it, under one of SPEC's configurations.
//
// `sequential` (the paper's baseline): on every GPU, the GEMM on all CUs, then a
// CU-based ring reduce-scatter of its output, then a ring all-gather (kernels in
// stream order per GPU; the ring's flags synchronize the GPUs). Results split the
// time into GEMM, RS and AG, and each GPU's DRAM traffic into the three phases
// (T3 Figures 15 and 18, Sequential bars): GEMM = the compute stream's traffic
// (including the write-back of its output from the L2 at the kernel boundary), RS
// and AG = the communication stream's between phase ends.
//
// `t3` (T3 §4): the GEMM's output is allocated uncached and its stores are
// near-memory updates; it is fused with the reduce-scatter through the tracker and
// pre-queued DMA updates (T3Collective: ring, or direct on a fully-connected
// node), with staggered WG scheduling and round-robin MC arbitration; then the CU
// ring all-gather. `t3-mca`: the same with T3's MC arbitration (MCA, T3 §4.5): the
// system's `mca` arbiter if it names one (a threshold sweep), else dynamic MCA.
// Phases: GEMM = until the GEMM kernel ends; RS = the exposed rest of the fused RS;
// AG. Traffic: GEMM = the compute stream (reads and the output's local updates), RS
// = the communication stream until the RS ends (DMA reads, arriving updates), AG =
// after. Functional check: each GPU's chunk after the fused RS.
//
// Functional check, sequential (small outputs): the output array starts as a known pattern (the
// GEMM's stores are timing-only and leave values alone) and must end as the sum
// over GPUs everywhere (full mode), or GPU 0's chunk after the reduce-scatter
// (homogeneous mode). Caveat: the L2 must write back and refetch a line the GEMM
// wrote timing-only before a functional read, which adds the output's size to the
// reduce-scatter's DRAM writes; breakdowns are exact with values off (the default
// above values_limit, so for every Table 2 case).

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/collectives/node_collective.h"
#include "models/system/gemm_system.h"
#include "models/system/node.h"
#include "models/t3/t3_collective.h"

namespace t3sim {

class ConfigNode;

struct SublayerOptions {
  std::uint32_t channels = 0;            // collective WGs; 0: one per CU
  // Per WG per flag-synchronized iteration: RCCL's 256 threads x 16 B x unroll 2 = 8 KiB.
  // Each slice ends with a release (wait for the remote stores' acks) and a flag, so
  // one channel moves about a slice per round trip: few channels are latency-bound.
  std::uint64_t slice_bytes = 8 * 1024;
  std::string functional = "auto";       // auto | values | off
  std::uint64_t values_limit = 16ULL << 20;  // auto: values when the output is at most this
  // t3 / t3-mca: the all-gather after the fused RS. cu: the CU ring AG (the paper's
  // "followed by sequential all-gather", T3 §6); dma: T3's own all-gather through the
  // tracker and DMA engines (T3 §7.1; ring, or direct on a fully-connected node),
  // started once every GPU's RS is done (the driver reprograms the trackers).
  std::string t3_all_gather = "cu";
};

// The `collective:` section of a GEMM workload (optional).
SublayerOptions read_sublayer_options(ConfigNode collective);

// DRAM bytes one GPU's memory controllers moved in a phase, by op.
struct PhaseTraffic {
  std::uint64_t read = 0, write = 0, update = 0;
  std::uint64_t total() const { return read + write + update; }
};

struct SublayerResult {
  Tick total, gemm, rs, ag;                     // phase times (max over GPUs of each phase end)
  PhaseTraffic traffic[3];                      // GEMM, RS, AG: mean over simulated GPUs
  bool values_checked = false;
  std::uint64_t words_checked = 0;
  nlohmann::json json;
};

// T3 §5.3 Ideal-RS+NMC's reduce-scatter: the ring RS with near-memory updates on its
// own (T3Collective without a producer: the output is already in memory, each
// GPU DMA-updates its first chunk at once and every later one when the tracker has
// seen the incoming update), on the same node. Time = the last GPU done; traffic =
// GPU 0's communication stream.
struct IsolatedRs {
  Tick time;
  PhaseTraffic traffic;
  std::uint64_t events = 0;
};
IsolatedRs run_isolated_rs_nmc(const NodeConfig& node, const GemmWorkload& gemm, std::uint64_t seed);

struct SublayerResult;
// T3 §5.3's ideal configurations from isolated runs: turns sequential's result `r`
// (GEMM, RS and AG each alone) into `configuration`'s: total = max(GEMM, rs) + AG,
// r.rs = the part of rs a GEMM of sequential's length leaves exposed. `nmc`: the
// isolated RS with NMC (ideal-rs-nmc; its traffic replaces the RS traffic), or null
// (ideal-overlap: sequential's RS). Records the isolated times in r.json["isolated"].
void make_ideal_result(SublayerResult& r, std::string_view configuration, const IsolatedRs* nmc);

class SublayerSystem {
 public:
  // Contract: gemm.params is set (a generated GEMM, not a trace file).
  // configuration: sequential | t3 | t3-mca (UserError otherwise).
  SublayerSystem(Simulator& sim, const NodeConfig& node, GemmWorkload gemm, const SublayerOptions& opt,
                 std::string configuration, std::uint64_t seed);
  ~SublayerSystem();

  // Simulate to completion; throws SimulationError on a deadlock, the time limit, or
  // a failed functional check.
  SublayerResult run(Tick max_time = Tick::max());
  // `label`: the configuration to print (default: the one simulated).
  std::string summary(const SublayerResult& r, std::string_view label = {}) const;
  Node& node() { return *node_; }

 private:
  enum Phase { kGemm, kRs, kAg, kPhases };
  void on_phase_end(std::uint32_t g, Phase phase);
  void on_t3_part_done(std::uint32_t g);
  void on_rs_notice(std::uint32_t g);
  std::string rs_label() const;

  Simulator& sim_;
  GemmWorkload gemm_;
  SublayerOptions opt_;
  std::string configuration_;
  std::unique_ptr<Node> node_;
  std::unique_ptr<NodeCollective> rs_, ag_;
  bool t3_ = false;
  KernelTrace t3_trace_;                         // the GEMM with uncached update stores
  std::unique_ptr<T3Collective> fused_;
  std::unique_ptr<T3Collective> t3_ag_;          // t3_all_gather: dma
  std::vector<std::uint8_t> t3_parts_done_;      // per GPU: GEMM done + RS done (2 = both)
  std::vector<std::uint32_t> rs_notices_;        // per GPU: GPUs whose RS it knows done (T3's DMA AG)
  std::vector<Tick> ag_start_;                   // per GPU: its all-gather started
  bool cu_ag_checked_ = false;                   // the CU AG moves T3's chunks (values checked)
  bool values_ = false;
  std::uint64_t array_bytes_ = 0;
  // per simulated GPU: phase end times and DRAM totals at each phase end
  std::vector<std::array<Tick, kPhases>> phase_end_;
  std::vector<std::array<PhaseTraffic, kPhases>> traffic_at_end_;
  std::vector<std::uint32_t> gemm_kernel_;
  std::vector<std::uint8_t> gpu_done_;  // per GPU: its all-gather ended
  std::uint64_t words_checked_ = 0;
  std::string check_error_;
};

}  // namespace t3sim
