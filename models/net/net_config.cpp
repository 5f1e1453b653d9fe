#include "models/net/net_config.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "models/net/i_topology.h"

namespace t3sim {

std::uint32_t rx_buffer_for_line_rate(const NetConfig& cfg) {
  if (cfg.link.bandwidth.unlimited()) return 64;
  // A credit comes back a link latency after its packet arrived, which was a latency
  // plus its serialization after it left: that much in flight keeps the wire busy.
  const Tick round_trip = cfg.link.latency * 2 + cfg.link.bandwidth.transfer_time(cfg.packet_bytes);
  const long double bytes = static_cast<long double>(cfg.link.bandwidth.bytes_per_second()) *
                            static_cast<long double>(round_trip.ps()) * 1e-12L;
  const long double packets = std::ceil(bytes * 1.25L / static_cast<long double>(cfg.packet_bytes)) + 1;
  return static_cast<std::uint32_t>(std::clamp<long double>(packets, 2, 1u << 20));
}

NetConfig read_net_config(ConfigNode node) {
  NetConfig cfg;
  cfg.topology = node.get_enum("topology", cfg.topology, topologies().names());
  cfg.link.bandwidth = node.get_bandwidth("bandwidth", cfg.link.bandwidth);
  cfg.link.latency = node.get_time("latency", cfg.link.latency, Tick::zero(), Tick::ms(1000));
  cfg.packet_bytes = node.get_bytes("packet_size", cfg.packet_bytes, 1, 1ULL << 30);
  cfg.link.tx_buffer = static_cast<std::uint32_t>(
      node.get_uint("tx_buffer_packets", cfg.link.tx_buffer, 1, 1u << 20));
  // `auto` (the default): the link's bandwidth-delay product (rx_buffer_for_line_rate).
  const ConfigValue* rx = node.raw("rx_buffer_packets");
  cfg.link.rx_buffer = rx == nullptr || (rx->kind == ConfigValue::Kind::kScalar && rx->scalar == "auto")
                           ? rx_buffer_for_line_rate(cfg)
                           : static_cast<std::uint32_t>(node.get_uint("rx_buffer_packets", 64, 1, 1u << 20));
  cfg.switch_latency = node.get_time("switch_latency", cfg.switch_latency, Tick::zero(), Tick::ms(1000));
  cfg.flag_bytes = static_cast<std::uint32_t>(node.get_bytes("flag_size", cfg.flag_bytes, 1, 1u << 20));
  cfg.injection_queue_packets = static_cast<std::uint32_t>(
      node.get_uint("injection_queue_packets", cfg.injection_queue_packets, 1, 1u << 20));
  if (node.has("torus_rows")) {
    if (cfg.topology != "torus-2d")
      node.fail("torus_rows", fmt::format("only topology torus-2d has rows (this network is a {})", cfg.topology));
    cfg.torus_rows = static_cast<std::uint32_t>(node.get_uint("torus_rows", 1, 1, 1024));
  }
  node.finish();
  return cfg;
}

}  // namespace t3sim
