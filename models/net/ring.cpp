#include "models/net/ring.h"

#include <stdexcept>

#include "sim/error.h"

namespace t3sim {

RingNetwork::RingNetwork(const std::vector<Component*>& gpus, const NetConfig& cfg) {
  if (gpus.size() < 2) throw std::invalid_argument("a ring needs at least two GPUs");
  // Simulating a ring when the file asks for another topology would be a silent wrong answer.
  if (cfg.topology != "ring")
    throw UserError("net.topology: this system simulates a ring only, got '" + cfg.topology + "'");
  for (Component* gpu : gpus) {
    next_.push_back(std::make_unique<Link<Packet>>(*gpu, "tx_next", cfg.link));
    prev_.push_back(std::make_unique<Link<Packet>>(*gpu, "tx_prev", cfg.link));
  }
}

std::vector<Link<Packet>*> RingNetwork::links() const {
  std::vector<Link<Packet>*> all;
  for (const auto& l : next_) all.push_back(l.get());
  for (const auto& l : prev_) all.push_back(l.get());
  return all;
}

}  // namespace t3sim
