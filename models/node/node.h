#pragma once
// A multi-GPU node: N GPUs (CUs + memory system), their DMA engines and the network
// joining them (SPEC "The hardware model"). In homogeneous mode only GPU 0 is built
// and the network mirrors its peers (T3 §5.1.1); everything else is the same.
//
// Wiring, per simulated GPU g:
//   gpu g CUs --remote stores / flag sets--> net.access(g) --links--> peer's memory
//   gpu g dma k --reads--> gpu g memory; --stores/updates--> net.access(g).peer_memory(d)
//   net --arriving packets--> gpu g memory (communication stream), gpu g flags

#include <cstdint>
#include <memory>
#include <vector>

#include "models/dma/dma_engine.h"
#include "models/gpu/gpu.h"
#include "models/net/network.h"

namespace t3sim {

class ConfigNode;

struct NodeConfig {
  std::uint32_t num_gpus = 8;
  NetMode mode = NetMode::kFull;
  GpuConfig gpu;
  NetConfig net;
  DmaConfig dma;
  std::uint32_t dma_engines = 4;  // per GPU
  // A run option, not a system key: simulate each GPU (and a switch) in a partition
  // of its own (Simulator::set_partitions), with the link latency as lookahead, so a
  // full-mode run can use several host threads and keeps one GPU's state in the
  // host's caches at a time. Ignored in homogeneous mode and with zero-latency links.
  bool partitioned = false;
  // The GPUs a run simulates: every one in full mode, GPU 0 alone in homogeneous mode.
  std::uint32_t simulated_gpus() const { return mode == NetMode::kFull ? num_gpus : 1; }
};

// Reads a system file's num_gpus, gpu, memory, net and dma sections (dma: engines
// plus the DmaConfig keys). The mode is a run option, passed in.
NodeConfig read_node_config(ConfigNode system, NetMode mode);
NetMode parse_net_mode(std::string_view text);  // "full" | "homogeneous"
const char* to_string(NetMode mode);

class Node {
 public:
  // Contract: cfg.num_gpus >= 2.
  Node(Simulator& sim, const NodeConfig& cfg);
  ~Node();

  const NodeConfig& config() const { return cfg_; }
  std::uint32_t num_gpus() const { return cfg_.num_gpus; }
  // GPUs actually simulated: num_gpus (full) or 1 (homogeneous, GPU 0).
  std::uint32_t simulated_gpus() const { return static_cast<std::uint32_t>(gpus_.size()); }
  Gpu& gpu(std::uint32_t g) { return *gpus_[g]; }
  const Gpu& gpu(std::uint32_t g) const { return *gpus_[g]; }
  Network& network() { return *net_; }
  std::uint32_t dma_engines() const { return cfg_.dma_engines; }
  DmaEngine& dma(std::uint32_t g, std::uint32_t engine) { return *dma_[g][engine]; }
  // Where GPU g's DMA engines store to peer `d` (the network), or its own memory (d == g).
  MemTarget& dma_destination(std::uint32_t g, std::uint32_t d);
  // The simulator partition GPU g runs in. Code that calls into GPU g outside the
  // event loop (kernel launches before the run) does so in a
  // Simulator::InPartition(sim, node.partition(g)).
  std::uint32_t partition(std::uint32_t g) const { return partitioned_ ? g : 0; }
  bool partitioned() const { return partitioned_; }

 private:
  NodeConfig cfg_;
  bool partitioned_ = false;
  std::vector<std::unique_ptr<Gpu>> gpus_;
  std::unique_ptr<Network> net_;
  std::vector<std::vector<std::unique_ptr<DmaEngine>>> dma_;
};

}  // namespace t3sim
