// fully-connected: a link each way between every pair of GPUs; every packet takes
// the one link from its source to its destination.

#include "models/net/i_topology.h"
#include "models/net/net_config.h"

namespace t3sim {

namespace {

class FullyConnectedTopology final : public Topology {
 public:
  FullyConnectedTopology(std::uint32_t num_gpus, const NetConfig& cfg)
      : Topology(num_gpus), latency_(cfg.link.latency) {}

  std::uint32_t switch_nodes() const override { return 0; }
  bool direct_links() const override { return true; }

  // Every pair has its link: any renumbering maps it onto itself.
  bool shift_symmetric() const override { return true; }

  std::vector<TopologyLink> links_of(std::uint32_t gpu) const override {
    std::vector<TopologyLink> links;
    for (std::uint32_t d = 0; d < num_gpus(); ++d)
      if (d != gpu) links.push_back({gpu, d, latency_});
    return links;
  }

  std::uint32_t next_node(std::uint32_t /*node*/, std::uint32_t dst) const override { return dst; }
  Tick path_latency(std::uint32_t /*src*/, std::uint32_t /*dst*/) const override { return latency_; }

 private:
  Tick latency_;
};

}  // namespace

T3SIM_REGISTER(topologies, "fully-connected", "a link each way between every pair of GPUs",
               [](std::uint32_t num_gpus, const NetConfig& cfg) { return std::make_unique<FullyConnectedTopology>(num_gpus, cfg); })

}  // namespace t3sim
