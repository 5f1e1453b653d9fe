#pragma once
// One collective on a node of full GPU models (SPEC "Collectives"): CU-based kernels
// (collective/collective.h: ring RS / AG / AR, direct RS / AG, all-to-all) replayed on
// every simulated GPU's CUs, or DMA-based all-gather / all-to-all (direct algorithm,
// host-launched commands spread over the GPU's engines, ConCCL-style).
//
// Functional check: with values on, each GPU's array starts as a known pattern
// (models/common/payload.h InputPattern, one word per value granule) and verify()
// reads the result back through the memory system's functional state. In
// homogeneous mode only GPU 0 exists and it receives its own traffic as its peers',
// so its pattern repeats per chunk (word i of every chunk is f(i)); the result is
// then checked against what N identical GPUs would produce (e.g. RS: N * f).

#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/collectives/i_collective.h"
#include "models/collectives/protocol_tuner.h"
#include "models/node/node.h"
#include "collective/collective.h"

namespace t3sim {


// Where kernels' flags live (flag ids, FlagTable): a CU collective's from
// kCollectiveFlagBase (a sub-layer's all-gather from twice that), a fused kernel's (a GEMM
// that signals its collective: the fused configuration and the overlap ops) from
// kFusedKernelFlagBase, so the two never share a flag id.
inline constexpr std::uint64_t kCollectiveFlagBase = 1ULL << 32;
inline constexpr std::uint64_t kFusedKernelFlagBase = 1ULL << 34;

struct NodeCollectiveParams {
  CollectiveKind kind;  // ring-rs unless set
  CollectiveEngine engine = CollectiveEngine::kCu;
  std::uint64_t array_bytes = 0;     // per GPU
  std::uint32_t element_bytes = 2;
  std::uint32_t cus = 0;             // CUs the kernel may use (the last `cus` of the GPU); 0: all
  std::uint32_t channels = 0;        // WGs; 0: one per CU given (RCCL: one block per channel)
  ChannelPipelineSpec pipeline;       // ring kernels' protocol (nullopt: auto), FIFO and slice sizes
  std::uint64_t data_base = 0;       // the array (e.g. a GEMM's output)
  bool data_uncached = false;        // the array is an uncached allocation (T3's GEMM output)
  bool in_place = true;              // ring all-gather: false copies the own chunk too (CollectiveTraceParams)
  std::uint64_t flag_base = kCollectiveFlagBase;
  int priority = 0;
  bool values = false;               // carry and check functional values
  std::uint64_t seed = 1;
};

class NodeCollective final : public Collective {
 public:
  // Contract: the node outlives this. Throws UserError for impossible parameters
  // (e.g. a DMA-based reduce-scatter).
  NodeCollective(Node& node, const NodeCollectiveParams& p);

  // Write the input pattern into every simulated GPU's array (values only).
  void preload() override;
  // Launch on GPU g now (kernels or DMA commands); on_done(g) once g has finished.
  void start(std::uint32_t g, std::function<void(std::uint32_t)> on_done = {}) override;
  void start_all(std::function<void(std::uint32_t)> on_done = {});

  bool done(std::uint32_t g) const override { return done_[g]; }
  bool all_done() const;
  Tick started(std::uint32_t g) const { return started_[g]; }
  Tick finished(std::uint32_t g) const override { return finished_[g]; }

  // Compare every word of the result with the expectation; returns words checked,
  // `first_error` set on the first mismatch.
  std::uint64_t verify(std::string& first_error) const override;

  CollectiveOp op() const override { return p_.kind.op(); }
  std::string_view algorithm() const override { return p_.kind.name(); }
  CollectiveEngine engine() const override { return p_.engine; }
  const NodeCollectiveParams& params() const { return p_; }
  const CollectiveTraceParams& trace_params(std::uint32_t g) const { return trace_params_[g]; }
  std::uint32_t channels() const { return channels_; }
  // The ring kernels' protocol (the workload's, or the tuner's choice for auto).
  CollectiveProtocol protocol() const { return protocol_; }
  // The ring strides the channels run (empty: one ring, stride 1).
  const std::vector<std::uint32_t>& ring_strides() const { return ring_strides_; }
  // Distinct rings the channels run (each on its own links): at most one per channel.
  double rings_in_use() const {
    return static_cast<double>(std::min<std::size_t>(std::max<std::size_t>(ring_strides_.size(), 1), channels_));
  }

  // The link-bound lower bound of this collective on its node: a ring moves (N-1)/N
  // of the array over each link per pass (two passes for all-reduce) plus a link
  // latency per step; a direct algorithm sends S/N to each peer on its own link at
  // once. Bus bandwidth factor: NCCL's (N-1)/N for RS and AG, 2(N-1)/N for AR.
  Tick link_bound() const;
  double bus_bandwidth_factor() const;
  // results.json's "results" of a finished run of this collective alone: time,
  // bounds, bandwidths, per-GPU finish times and DRAM traffic, links, check.
  nlohmann::json results(std::uint64_t words_checked) const;

 private:
  std::uint64_t pattern(std::uint32_t gpu, std::uint64_t word) const;
  void launch_kernel(std::uint32_t g, std::size_t index);
  void start_dma(std::uint32_t g);
  void finish(std::uint32_t g);

  Node& node_;
  NodeCollectiveParams p_;
  std::uint32_t granule_;
  std::uint32_t channels_ = 0;
  CollectiveProtocol protocol_ = CollectiveProtocol::kSimple;
  std::vector<std::uint32_t> ring_strides_;  // ring kernels: the channels' ring strides (empty: 1)
  std::vector<std::uint32_t> cu_mask_;
  std::vector<CollectiveTraceParams> trace_params_;    // per simulated GPU
  std::vector<std::vector<KernelTrace>> traces_;       // per simulated GPU: 1 (2 for AR)
  std::vector<std::uint8_t> done_;  // per GPU (not vector<bool>: GPUs may run on different threads)
  std::vector<Tick> started_, finished_;
  std::vector<std::uint32_t> dma_left_;
  std::vector<std::function<void(std::uint32_t)>> on_done_;
};

}  // namespace t3sim
