#pragma once
// A bidirectional ring of GPUs: GPU g has one outgoing link to g+1 ("next") and one
// to g-1 ("prev"), each with its own bandwidth per direction, latency and buffers.
// Links are named under their sending GPU ("gpu3.tx_next") so each GPU's timeline
// process shows its own outgoing traffic.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/net/packet.h"
#include "sim/config.h"
#include "sim/link.h"

namespace t3sim {

// The interconnect's parameters, shared by RingNetwork (the idealized collective
// system, ring only) and Network (network.h: ring, fully-connected or switch).
struct NetConfig {
  // "ring" | "fully-connected" | "switch". RingNetwork builds a ring whatever this says.
  std::string topology = "ring";
  LinkConfig link{Bandwidth(75'000'000'000ULL), Tick::ns(500), 8, 64};  // T3 Table 1
  std::uint64_t packet_bytes = 4096;   // payload per packet
  // Switch topology: a packet's time inside the switch, on top of the two links'
  // latencies (NVSwitch-class switches add on the order of 100 ns).
  Tick switch_latency = Tick::ns(100);
  // Bytes a remote flag set occupies on the wire (a small header-only message).
  std::uint32_t flag_bytes = 64;
  // Network: packets a GPU may queue for one destination before its peer port
  // refuses new requests (a request is accepted whole while the queue is not full).
  std::uint32_t injection_queue_packets = 16;
};

// Reads `system.net`. Models never read YAML; this is the edge. Keys: topology,
// bandwidth, latency, packet_size, tx_buffer_packets, rx_buffer_packets,
// switch_latency, flag_size, injection_queue_packets.
NetConfig read_net_config(ConfigNode node);

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
