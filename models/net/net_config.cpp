#include "models/net/net_config.h"

#include "models/net/i_topology.h"

namespace t3sim {

NetConfig read_net_config(ConfigNode node) {
  NetConfig cfg;
  cfg.topology = node.get_enum("topology", cfg.topology, topologies().names());
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

}  // namespace t3sim
