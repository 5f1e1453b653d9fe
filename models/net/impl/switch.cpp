// switch: GPU g has an uplink to one switch and a downlink from it; the switch
// forwards a packet to its destination's downlink after `switch_latency`.

#include "models/net/i_topology.h"
#include "models/net/net_config.h"

namespace t3sim {

namespace {

class SwitchTopology final : public Topology {
 public:
  SwitchTopology(std::uint32_t num_gpus, const NetConfig& cfg)
      : Topology(num_gpus), latency_(cfg.link.latency), switch_latency_(cfg.switch_latency) {}

  std::uint32_t switch_nodes() const override { return 1; }
  bool direct_links() const override { return false; }

  // Every GPU hangs off the one switch alike.
  bool shift_symmetric() const override { return true; }

  // The switch's traversal time is folded into its downlinks' latency: a packet
  // arrives at the same time as through a switch that forwards after
  // switch_latency, and a blocked downlink still holds it in the switch's input.
  std::vector<TopologyLink> links_of(std::uint32_t gpu) const override {
    return {{gpu, switch_node(), latency_}, {switch_node(), gpu, latency_ + switch_latency_}};
  }

  std::uint32_t next_node(std::uint32_t node, std::uint32_t dst) const override {
    return node == switch_node() ? dst : switch_node();
  }

  Tick path_latency(std::uint32_t /*src*/, std::uint32_t /*dst*/) const override {
    return latency_ * 2 + switch_latency_;
  }

 private:
  std::uint32_t switch_node() const { return num_gpus(); }

  Tick latency_;
  Tick switch_latency_;
};

}  // namespace

T3SIM_REGISTER(topologies, "switch", "an uplink to and a downlink from one switch per GPU (NVSwitch-style)",
               [](std::uint32_t num_gpus, const NetConfig& cfg) { return std::make_unique<SwitchTopology>(num_gpus, cfg); })

}  // namespace t3sim
