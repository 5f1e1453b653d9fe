// The topologies' registry and what every topology shares. A new topology is a class
// under impl/ that registers itself there (T3SIM_REGISTER), and a test in
// tests/test_network.cpp.

#include <fmt/format.h>

#include "models/net/i_topology.h"
#include "models/net/net_config.h"
#include "sim/error.h"

namespace t3sim {

std::string Topology::node_name(std::uint32_t node) const {
  return node < num_gpus_ ? fmt::format("gpu{}", node) : std::string("sw");
}

std::vector<std::uint32_t> Topology::path(std::uint32_t src, std::uint32_t dst) const {
  std::vector<std::uint32_t> nodes_passed{src};
  while (nodes_passed.back() != dst) {
    // A route that revisits a node would never arrive.
    if (nodes_passed.size() > nodes())
      internal_error(Tick::zero(), "net", fmt::format("no path from GPU {} to GPU {}", src, dst), __FILE__, __LINE__);
    nodes_passed.push_back(next_node(nodes_passed.back(), dst));
  }
  return nodes_passed;
}

Topologies& topologies() {
  static Topologies registry;
  return registry;
}

std::vector<RegistryEntry> topology_types() { return topologies().listing(); }

std::unique_ptr<Topology> make_topology(std::string_view name, std::uint32_t num_gpus, const NetConfig& cfg) {
  if (const Topologies::Entry* topology = topologies().find(name)) return topology->make(num_gpus, cfg);
  internal_error(Tick::zero(), "net", fmt::format("unknown network topology '{}'", name), __FILE__, __LINE__);
}

std::uint32_t switch_nodes(const NetConfig& cfg, std::uint32_t num_gpus) {
  return make_topology(cfg.topology, num_gpus, cfg)->switch_nodes();
}

bool has_direct_links(const NetConfig& cfg, std::uint32_t num_gpus) {
  return make_topology(cfg.topology, num_gpus, cfg)->direct_links();
}

}  // namespace t3sim
