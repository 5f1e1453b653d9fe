#pragma once
// The interconnect's parameters (`system.net`) and their reader.

#include <cstdint>
#include <string>

#include "sim/config.h"
#include "sim/link.h"

namespace t3sim {

// The interconnect's parameters of a Network (network.h: ring, fully-connected, switch or
// torus-2d).
struct NetConfig {
  // A name from topology_types() (i_topology.h).
  std::string topology = "ring";
  LinkConfig link{Bandwidth(75'000'000'000ULL), Tick::ns(500), 8, 64};  // T3 Table 1
  std::uint64_t packet_bytes = 4096;   // payload per packet
  // Switch topology: a packet's time inside the switch, on top of the two links'
  // latencies (NVSwitch-class switches add on the order of 100 ns).
  Tick switch_latency = Tick::ns(100);
  // torus-2d: rows of the GPU grid (0: the largest divisor of the GPU count up to
  // its square root). Read only for that topology.
  std::uint32_t torus_rows = 0;
  // Bytes a remote flag set occupies on the wire (a small header-only message).
  std::uint32_t flag_bytes = 64;
  // Network: packets a GPU may queue for one destination before its peer port
  // refuses new requests (a request is accepted whole while the queue is not full).
  std::uint32_t injection_queue_packets = 16;
};

// Reads `system.net`. Models never read YAML; this is the edge. Keys: topology (one
// of topology_types(), else a ConfigError with a did-you-mean), bandwidth, latency,
// packet_size, tx_buffer_packets, rx_buffer_packets, switch_latency, flag_size,
// injection_queue_packets; torus_rows with topology torus-2d only.
NetConfig read_net_config(ConfigNode node);

// The receive buffer (in maximum-size packets) that lets one sender keep a link busy:
// the bytes in flight during a credit's round trip (2 x latency + a packet's
// serialization), with 25 % slack, plus a packet. The default of rx_buffer_packets
// (`auto`); 64 for unlimited bandwidth.
std::uint32_t rx_buffer_for_line_rate(const NetConfig& cfg);

}  // namespace t3sim
