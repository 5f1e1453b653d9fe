// The topologies by name. A new topology adds its class under impl/ with a make_*
// function (declared below), one row to kTopologies and a test in
// tests/test_network.cpp.

#include <fmt/format.h>

#include "models/net/i_topology.h"
#include "models/net/net_config.h"
#include "sim/error.h"

namespace t3sim {

// Each defined in impl/, next to its class.
std::unique_ptr<Topology> make_ring_topology(std::uint32_t num_gpus, const NetConfig& cfg);
std::unique_ptr<Topology> make_fully_connected_topology(std::uint32_t num_gpus, const NetConfig& cfg);
std::unique_ptr<Topology> make_switch_topology(std::uint32_t num_gpus, const NetConfig& cfg);

namespace {

struct Row {
  TopologyType type;
  std::unique_ptr<Topology> (*make)(std::uint32_t num_gpus, const NetConfig& cfg);
};

const std::vector<Row>& rows() {
  static const std::vector<Row> kTopologies = {
      {{"ring", "bidirectional ring: a link to each neighbour, packets take the shorter direction"},
       make_ring_topology},
      {{"fully-connected", "a link each way between every pair of GPUs"}, make_fully_connected_topology},
      {{"switch", "an uplink to and a downlink from one switch per GPU (NVSwitch-style)"}, make_switch_topology},
  };
  return kTopologies;
}

}  // namespace

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

const std::vector<TopologyType>& topology_types() {
  static const std::vector<TopologyType> kTypes = [] {
    std::vector<TopologyType> types;
    for (const Row& r : rows()) types.push_back(r.type);
    return types;
  }();
  return kTypes;
}

std::unique_ptr<Topology> make_topology(std::string_view name, std::uint32_t num_gpus, const NetConfig& cfg) {
  for (const Row& r : rows()) {
    if (name == r.type.name) return r.make(num_gpus, cfg);
  }
  internal_error(Tick::zero(), "net", fmt::format("unknown network topology '{}'", name), __FILE__, __LINE__);
}

std::uint32_t switch_nodes(const NetConfig& cfg, std::uint32_t num_gpus) {
  return make_topology(cfg.topology, num_gpus, cfg)->switch_nodes();
}

bool has_direct_links(const NetConfig& cfg, std::uint32_t num_gpus) {
  return make_topology(cfg.topology, num_gpus, cfg)->direct_links();
}

}  // namespace t3sim
