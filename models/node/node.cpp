#include "models/node/node.h"

#include <memory>

#include <fmt/format.h>

#include "models/net/i_topology.h"
#include "sim/config.h"
#include "collective/collective.h"
#include "sim/error.h"

namespace t3sim {

NetMode parse_net_mode(std::string_view text) {
  if (text == "full") return NetMode::kFull;
  if (text == "homogeneous") return NetMode::kHomogeneous;
  throw UserError(fmt::format("simulation mode '{}': expected full or homogeneous", text));
}

const char* to_string(NetMode mode) { return mode == NetMode::kFull ? "full" : "homogeneous"; }

NodeConfig read_node_config(ConfigNode system, NetMode mode) {
  NodeConfig cfg;
  cfg.mode = mode;
  cfg.num_gpus = static_cast<std::uint32_t>(system.get_uint("num_gpus", cfg.num_gpus, 2, 1024));
  // Checked before any GPU is built (issue 21, C09: 1024 GPUs were built first).
  if (cfg.num_gpus > kCollectiveMaxGpus)
    system.fail("num_gpus", fmt::format("{} GPUs: a node of full GPU models has at most {} (the collective "
                                        "kernels are generated and tested up to that)",
                                        cfg.num_gpus, kCollectiveMaxGpus));
  // The first slice's ring engine read its reads in flight here; collectives are CU
  // kernels now, whose loads in flight are the CUs' own.
  if (system.has("collective_engine"))
    system.fail("collective_engine", "no longer a system key: collectives run as CU kernels (in-flight loads: "
                                     "gpu.cu.max_inflight_load_bytes; channels, protocol and pipeline: the "
                                     "workload's keys)");
  cfg.gpu = read_gpu_config(system.child("gpu"), system.child("memory"));
  cfg.net = read_net_config(system.child("net"));
  {
    // The topology at this GPU count: its own problems, and whether homogeneous mode's
    // mirror (GPU 0 shifted by one GPU at a time) is one of its symmetries.
    const std::unique_ptr<Topology> topology = make_topology(cfg.net.topology, cfg.num_gpus, cfg.net);
    ConfigNode net = system.child("net");
    if (const auto problem = topology->problem()) net.fail(problem->key, problem->message);
    if (mode == NetMode::kHomogeneous && !topology->shift_symmetric())
      net.fail("topology", fmt::format("run.mode homogeneous simulates GPU 0 and mirrors its peers by shifting the GPUs' "
                                       "numbers, which does not map {} on {} GPUs onto itself: run.mode full",
                                       cfg.net.topology, cfg.num_gpus));
  }
  ConfigNode dma = system.child("dma");
  cfg.dma_engines = static_cast<std::uint32_t>(dma.get_uint("engines", cfg.dma_engines, 1, 256));
  cfg.dma = read_dma_config(dma);
  // A DMA chunk is one read and one write or near-memory update; with values it carries
  // whole words, so it is a multiple of the memory's value granule.
  const std::uint32_t granule = cfg.gpu.memory.hbm.value_granule;
  if (cfg.dma.chunk_bytes % granule != 0)
    dma.fail("chunk_size", fmt::format("{} B is not a multiple of system.memory.hbm.value_granule ({} B): a DMA chunk "
                                       "carries whole words",
                                       cfg.dma.chunk_bytes, granule));
  system.finish();
  return cfg;
}

Node::Node(Simulator& sim, const NodeConfig& cfg) : cfg_(cfg) {
  if (cfg.num_gpus < 2) throw std::invalid_argument("a node needs at least two GPUs");
  const std::uint32_t simulated = cfg.simulated_gpus();
  // Partitions: the GPUs, then the switch. Every interaction between them crosses a
  // link (a packet, its credit, its acknowledgment), which takes at least a link's
  // latency: the lookahead.
  partitioned_ = cfg.partitioned && cfg.mode == NetMode::kFull && cfg.net.link.latency > Tick::zero();
  if (partitioned_) sim.set_partitions(cfg.num_gpus + switch_nodes(cfg.net, cfg.num_gpus), cfg.net.link.latency);
  net_ = std::make_unique<Network>(sim, "net", cfg.num_gpus, cfg.net, cfg.mode);
  for (std::uint32_t g = 0; g < simulated; ++g) {
    Simulator::InPartition in(sim, partition(g));
    gpus_.push_back(std::make_unique<Gpu>(sim, fmt::format("gpu{}", g), cfg.gpu));
    Gpu& gpu = *gpus_.back();
    net_->attach(g, gpu.memory(), [&gpu](std::uint64_t flag, std::uint64_t value) { gpu.land_flag(flag, value); });
    if (gpu.has_power_cap()) net_->observe_traffic(g, [&gpu] { gpu.note_link_traffic(); });
    gpu.connect(net_->access(g));
    dma_.emplace_back();
    for (std::uint32_t e = 0; e < cfg.dma_engines; ++e)
    {
      dma_.back().push_back(std::make_unique<DmaEngine>(gpu, fmt::format("dma{}", e), cfg.dma, gpu.memory()));
      dma_.back().back()->connect(net_->access(g));
      gpu.add_skippable(*dma_.back().back());  // sampling fast-forwards its copies with the GPU's kernel
    }
  }
}

Node::~Node() = default;

MemTarget& Node::dma_destination(std::uint32_t g, std::uint32_t d) {
  if (d == g) return gpus_[g]->memory();
  return net_->access(g).peer_memory(d);
}

}  // namespace t3sim
