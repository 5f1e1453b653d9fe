#include "models/net/ring.h"

#include <stdexcept>

#include "sim/error.h"

namespace t3sim {

NetConfig read_net_config(ConfigNode node) {
  NetConfig cfg;
  cfg.topology = node.get_enum("topology", cfg.topology, {"ring", "fully-connected", "switch"});
  cfg.link.bandwidth = node.get_bandwidth("bandwidth", cfg.link.bandwidth);
  cfg.link.latency = node.get_time("latency", cfg.link.latency, Tick::zero(), Tick::ms(1000));
  cfg.packet_bytes = node.get_bytes("packet_size", cfg.packet_bytes, 1, 1ULL << 30);
  cfg.link.tx_buffer = static_cast<std::uint32_t>(
      node.get_uint("tx_buffer_packets", cfg.link.tx_buffer, 1, 1u << 20));
  cfg.link.rx_buffer = static_cast<std::uint32_t>(
      node.get_uint("rx_buffer_packets", cfg.link.rx_buffer, 1, 1u << 20));
  cfg.switch_latency = node.get_time("switch_latency", cfg.switch_latency, Tick::zero(), Tick::ms(1000));
  cfg.flag_bytes = static_cast<std::uint32_t>(node.get_bytes("flag_size", cfg.flag_bytes, 1, 1u << 20));
  cfg.injection_queue_packets = static_cast<std::uint32_t>(
      node.get_uint("injection_queue_packets", cfg.injection_queue_packets, 1, 1u << 20));
  node.finish();
  return cfg;
}

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
