#pragma once
// A bidirectional ring of GPUs: GPU g has one outgoing link to g+1 ("next") and one
// to g-1 ("prev"), each with its own bandwidth per direction, latency and buffers.
// Links are named under their sending GPU ("gpu3.tx_next") so each GPU's timeline
// process shows its own outgoing traffic.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/net/net_config.h"
#include "models/net/packet.h"
#include "sim/config.h"
#include "sim/link.h"

namespace t3sim {

class RingNetwork {
 public:
  // Contract: gpus.size() >= 2; each gpu outlives the network.
  RingNetwork(const std::vector<Component*>& gpus, const NetConfig& cfg);

  std::uint32_t size() const { return static_cast<std::uint32_t>(next_.size()); }
  // Outgoing link from g to g+1 (mod N) and from g to g-1.
  Link<Packet>& to_next(std::uint32_t g) { return *next_[g]; }
  Link<Packet>& to_prev(std::uint32_t g) { return *prev_[g]; }
  // Incoming links of g.
  Link<Packet>& from_prev(std::uint32_t g) { return *next_[(g + size() - 1) % size()]; }
  Link<Packet>& from_next(std::uint32_t g) { return *prev_[(g + 1) % size()]; }

  // Every link, for per-link results and conservation checks.
  std::vector<Link<Packet>*> links() const;

 private:
  std::vector<std::unique_ptr<Link<Packet>>> next_, prev_;
};

}  // namespace t3sim
