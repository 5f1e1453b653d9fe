#pragma once
// The inter-GPU network of a node (SPEC "Interconnect"): GPUs joined by links of a
// given bandwidth per direction, latency and packet size, in one of three
// topologies:
//   ring             GPU g has a link to g+1 and one to g-1 (bidirectional ring);
//                    packets to a non-neighbour hop along the shorter direction.
//   fully-connected  one link each way per pair of GPUs.
//   switch           GPU g has an uplink to a switch and a downlink from it; the
//                    switch forwards after `switch_latency` (NVSwitch-style).
//
// What crosses it: remote stores and remote updates from a GPU's CUs or DMA engines
// (a MemRequest handed to peer_memory(peer), cut into packets of at most
// packet_size), and remote flag sets (a small message). At the destination a packet
// becomes a request to that GPU's memory in the communication stream, bypassing its
// L2 (T3 §4.3: remote traffic is written at the memory controller). When every
// packet of a request has been applied there, an acknowledgment travels back (after
// the path's latency; acknowledgments are assumed small and take no link bandwidth)
// and the requester gets its one on_mem_response().
//
// Back-pressure everywhere: a sender's peer_memory() refuses when its injection
// queue is full; a link transmits only with a credit at the receiver (a credit
// reaches the sender one link latency after the receiver frees its space); a node
// that cannot deliver a packet to its memory (or forward it) leaves it in the
// link's receive buffer, which stops the upstream link.
//
// Partitioned simulation (Simulator::set_partitions, one partition per GPU and one
// for the switch): each node's part of the network runs in its partition; links,
// credits and acknowledgments cross between partitions after at least one link
// latency, the lookahead.
//
// Modes (T3 §5.1.1): kFull simulates every GPU. kHomogeneous simulates GPU 0 only
// and mirrors its peers: a packet GPU 0 sends to peer d crosses GPU 0's own
// outgoing link(s) and is then delivered to GPU 0 itself as the packet GPU (-d mod
// N) would have sent it (same data; same address, except in registered block
// regions, see add_mirror_blocks). On symmetric workloads this is exactly the
// traffic GPU 0 would receive.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/payload.h"
#include "models/mem/mem_request.h"
#include "models/mem/remote_access.h"  // what the network offers each GPU
#include "models/net/homogeneous_mirror.h"
#include "models/net/i_topology.h"
#include "models/net/net_config.h"
#include "sim/component.h"
#include "sim/link.h"

namespace t3sim {

enum class NetMode { kFull, kHomogeneous };

// One message on a link: a piece of a remote write or update, or a flag set.
struct NetPacket {
  enum class Kind : std::uint8_t { kRequest, kFlag };
  // kRequest: the sender's request header, copied whole when the piece is cut and
  // carried unchanged to the destination, whose memory's request is made of it. The
  // cut sets only what is the piece's own: its address and bytes, one row, and the
  // tag that finds the sender's request again (its pending slot and the sender as the
  // receiver sees it).
  RequestHeader header;
  Payload data;                  // kRequest: the piece's functional words (empty: timing only)
  std::uint64_t flag = 0;        // kFlag
  std::uint64_t value = 0;       // kFlag
  std::uint32_t dst = 0;         // destination GPU
  std::uint32_t wire_bytes = 0;  // what the link serializes (payload x wire expansion, or flag_bytes)
  std::uint16_t links_crossed = 0;  // links it has been sent on (kHomogeneous: GPU-to-GPU hops done)
  Kind kind = Kind::kRequest;
  std::uint64_t size_bytes() const { return wire_bytes; }
};

class Network final : public Component {
 public:
  // Contract: num_gpus >= 2; cfg.topology is one of topology_types(). Link names:
  // "net.gpu0_gpu1" (ring, fully-connected), "net.gpu0_sw" / "net.sw_gpu0" (switch).
  Network(Simulator& sim, std::string_view name, std::uint32_t num_gpus, const NetConfig& cfg, NetMode mode);
  ~Network() override;

  // Contract: called once per simulated GPU before the run (kFull: all GPUs;
  // kHomogeneous: GPU 0 only). `memory` takes the arriving requests (it must
  // outlive the network); `set_flag` applies an arriving flag set.
  void attach(std::uint32_t gpu, MemTarget& memory,
              std::function<void(std::uint64_t flag, std::uint64_t value)> set_flag);
  // Optional: `on_traffic` runs whenever GPU `gpu`'s port injects a request or a data
  // packet arrives for it (in that GPU's partition). The H200's SM clock under the power
  // cap drops while its NVLink port carries traffic (models/cu/sm_clock.h).
  void observe_traffic(std::uint32_t gpu, std::function<void()> on_traffic);
  RemoteAccess& access(std::uint32_t gpu);
  // Homogeneous mode's mirror rules (homogeneous_mirror.h; ignored in kFull): a
  // region of N blocks, one per GPU, whose block index shifts with the sender; and a
  // custom rule (T3's fused RS), consulted before the block regions, in order.
  void add_mirror_blocks(std::uint64_t base, std::uint64_t block_bytes);
  using MirroredWrite = t3sim::MirroredWrite;
  using MirrorTranslator = t3sim::MirrorTranslator;
  void add_mirror_translator(MirrorTranslator translate);

  std::uint32_t num_gpus() const;
  NetMode mode() const;
  // The topology NetConfig::topology names: its links, routes and properties.
  const Topology& topology() const;
  // Latency of the path from src to dst without bandwidth: what an acknowledgment
  // takes (hops x latency on a ring, latency fully-connected, 2 x latency +
  // switch_latency through the switch); zero from a GPU to itself.
  Tick path_latency(std::uint32_t src, std::uint32_t dst) const;
  const NetConfig& config() const;
  // Every simulated link (kHomogeneous: only GPU 0's).
  std::vector<Link<NetPacket>*> links() const;
  // Per link: {"name", "from", "to", "bytes_sent", "bytes_received", "messages",
  // "busy_ps", "utilization" (busy / elapsed)}, plus totals.
  nlohmann::json link_results(Tick elapsed) const;
  // No packet queued, on a wire, in a receive buffer or awaiting an ack.
  bool idle() const;
  // Payload bytes of writes and updates delivered into `gpu`'s memory from `src`, as
  // `gpu` sees the sender (kHomogeneous: the mirrored peer -d mod N). A traffic matrix.
  std::uint64_t bytes_delivered(std::uint32_t gpu, std::uint32_t src) const;

  void report_in_flight(std::vector<std::string>& out) const override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace t3sim
