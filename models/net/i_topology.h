#pragma once
// The shape of a node's network: the links joining its GPUs (and a switch), the way
// a packet goes from one GPU to another, and that way's latency. A Topology only
// describes: Network (network.h) builds its links and routing tables from it once,
// at construction, so the per-packet path never calls it, except path_latency once
// per acknowledgment. Chosen by name (`system.net.topology`) from the registry
// (topology_registry.cpp); each topology is one class in impl/ that registers itself.
//
// Nodes are numbered GPUs first (0 .. num_gpus - 1), then switches (num_gpus ..
// nodes() - 1).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/registry.h"
#include "sim/time.h"

namespace t3sim {

struct NetConfig;

// One direction of a link between two nodes.
struct TopologyLink {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  Tick latency;  // from the end of serialization to arrival
};

class Topology {
 public:
  explicit Topology(std::uint32_t num_gpus) : num_gpus_(num_gpus) {}
  virtual ~Topology() = default;

  std::uint32_t num_gpus() const { return num_gpus_; }
  // Nodes that are not GPUs (a switch), each simulated in a partition of its own.
  virtual std::uint32_t switch_nodes() const = 0;
  // True if every GPU pair has its own link at any number of GPUs, so T3's direct
  // algorithms (§7.1) apply instead of its ring ones.
  virtual bool direct_links() const = 0;
  // Contract: gpu < num_gpus. The links GPU `gpu` owns, in the order the network
  // creates them: its outgoing links and, through a switch, the downlink reaching
  // it. The network has GPU 0's, then GPU 1's, ...; homogeneous mode only GPU 0's.
  virtual std::vector<TopologyLink> links_of(std::uint32_t gpu) const = 0;
  // Contract: node < nodes(), dst < num_gpus, node != dst. The node a packet at
  // `node` bound for GPU `dst` goes to next, over the link from `node` to it.
  virtual std::uint32_t next_node(std::uint32_t node, std::uint32_t dst) const = 0;
  // Contract: src, dst < num_gpus, src != dst. The latency of the path from src to
  // dst without bandwidth (the sum of its links' latencies): what an
  // acknowledgment takes.
  virtual Tick path_latency(std::uint32_t src, std::uint32_t dst) const = 0;
  // Whether shifting every GPU's number by one (g -> g + 1 mod N) maps the topology
  // onto itself: its links, routes and latencies. Homogeneous mode (network.h)
  // simulates GPU 0 and mirrors its peers by exactly that shift (what GPU 0 sends GPU
  // d is what GPU N - d sends GPU 0), so it refuses a topology that answers no
  // (node.cpp's read_node_config, at system.net.topology).
  virtual bool shift_symmetric() const = 0;
  // A problem with this topology at this GPU count ("8 GPUs do not fill 3 rows"), with
  // the `system.net` key it concerns; empty when there is none. Checked where the
  // GPU count is known (read_node_config).
  struct Problem {
    std::string key;
    std::string message;
  };
  virtual std::optional<Problem> problem() const { return std::nullopt; }

  std::uint32_t nodes() const { return num_gpus_ + switch_nodes(); }
  // "gpu3", or "sw" for the switch: the parts of a link's name ("net.gpu3_sw").
  std::string node_name(std::uint32_t node) const;
  // Contract: src, dst < num_gpus. The nodes a packet from src to dst passes
  // through, src and dst included (next_node, step by step).
  std::vector<std::uint32_t> path(std::uint32_t src, std::uint32_t dst) const;

 private:
  std::uint32_t num_gpus_;
};

// The topologies by name (`system.net.topology`); each registers itself in its impl/
// file, its factory taking the GPU count and the network's config.
using Topologies = Registry<Topology, std::uint32_t, const NetConfig&>;
Topologies& topologies();
// Their names and one-line descriptions, sorted by name.
std::vector<RegistryEntry> topology_types();

// Contract: `name` is one of topology_types() (read_net_config checks), num_gpus >= 2.
std::unique_ptr<Topology> make_topology(std::string_view name, std::uint32_t num_gpus, const NetConfig& cfg);

// The configured topology's answers, for callers that need them without a Network
// (a Node sizing its partitions before it builds one).
std::uint32_t switch_nodes(const NetConfig& cfg, std::uint32_t num_gpus);
bool has_direct_links(const NetConfig& cfg, std::uint32_t num_gpus);

}  // namespace t3sim
