// ring: GPU g has a link to g + 1 and one to g - 1. A packet to a non-neighbour
// hops along the shorter direction, a tie going forward (to g + 1), through the
// GPUs between.

#include <algorithm>

#include "models/net/i_topology.h"
#include "models/net/net_config.h"

namespace t3sim {

namespace {

class RingTopology final : public Topology {
 public:
  RingTopology(std::uint32_t num_gpus, const NetConfig& cfg) : Topology(num_gpus), latency_(cfg.link.latency) {}

  std::uint32_t switch_nodes() const override { return 0; }
  // A ring of 2 or 3 GPUs happens to join every pair, but T3 runs its ring
  // algorithms on any ring.
  bool direct_links() const override { return false; }

  // g -> g + 1 takes each neighbour pair to the next one.
  bool shift_symmetric() const override { return true; }

  std::vector<TopologyLink> links_of(std::uint32_t gpu) const override {
    std::vector<TopologyLink> links{{gpu, (gpu + 1) % num_gpus(), latency_}};
    // Two GPUs: next and previous are the same peer; one link each way.
    if (num_gpus() > 2) links.push_back({gpu, (gpu + num_gpus() - 1) % num_gpus(), latency_});
    return links;
  }

  std::uint32_t next_node(std::uint32_t node, std::uint32_t dst) const override {
    const std::uint32_t forward = (dst + num_gpus() - node) % num_gpus();
    return forward <= num_gpus() - forward ? (node + 1) % num_gpus() : (node + num_gpus() - 1) % num_gpus();
  }

  Tick path_latency(std::uint32_t src, std::uint32_t dst) const override {
    const std::uint32_t forward = (dst + num_gpus() - src) % num_gpus();
    return latency_ * std::min(forward, num_gpus() - forward);
  }

 private:
  Tick latency_;
};

}  // namespace

T3SIM_REGISTER(topologies, "ring", "bidirectional ring: a link to each neighbour, packets take the shorter direction",
               [](std::uint32_t num_gpus, const NetConfig& cfg) { return std::make_unique<RingTopology>(num_gpus, cfg); })

}  // namespace t3sim
