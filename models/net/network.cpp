#include "models/net/network.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "models/net/homogeneous_mirror.h"
#include "models/net/i_topology.h"
#include "sim/error.h"
#include "sim/simulator.h"

// How it works. Packets move between *sources* and *servers*:
//
//   sources: a GPU's injection queue for one destination, the receive end of a
//            link;
//   servers: the sending end of a link, a GPU's delivery into its memory.
//
// A source's head packet wants exactly one server (its next hop, from the routing
// table), and each server knows the sources that can feed it. A server takes head
// packets round-robin from its feeders while it can (the link has room, the memory
// accepts); when it cannot, whatever blocked it (the link's on_send_ready, the
// memory's on_mem_retry) kicks it again later. Anything that
// changes a head (an arrival, a pop, a new request) kicks the server it now wants.
// Kicks go through a worklist so that no server runs inside another.

namespace t3sim {

namespace {

constexpr std::uint32_t kNone = UINT32_MAX;
// An injection-queue entry that is a flag set rather than a request.
constexpr std::uint32_t kFlagEntry = UINT32_MAX;
// Tag of a request delivered into a memory (set when its packet is cut, in the
// packet's header): (pending slot << 16) | sender as the receiver sees it.
constexpr unsigned kSrcBits = 16;

}  // namespace

class Network::Impl {
 public:
  Impl(Network& owner, std::uint32_t num_gpus, const NetConfig& cfg, NetMode mode);

  // A request accepted from a client, until its last packet is acknowledged.
  struct Pending {
    MemRequest req;               // the original; its data are released once fully cut
    std::uint32_t cut_bytes = 0;  // payload per packet for this request
    std::uint32_t granule = 0;    // bytes per data word (0: timing-only request)
    std::uint64_t acks_left = 0;  // 0: the slot is free
  };
  // One item of an injection queue: a request being cut into packets, or a flag set.
  // Requests are cut lazily, when the link takes the next packet, so a large request
  // costs one entry, not one queued packet each.
  struct Entry {
    std::uint32_t slot = kFlagEntry;  // the sender's Pending slot
    std::uint32_t row = 0;            // the next packet starts at this row ...
    std::uint32_t offset = 0;         // ... and this byte within it
    std::uint64_t flag = 0;
    std::uint64_t value = 0;
  };

  class PeerPort;
  class Endpoint;

  enum class ServerKind : std::uint8_t { kLink, kDeliver };
  struct Server {
    ServerKind kind;
    std::uint32_t index;                 // link slot or GPU
    std::uint32_t partition = 0;         // where it runs: its node's (partitioned simulation)
    std::vector<std::uint32_t> feeders;  // sources whose packets may come here
    std::uint32_t rr = 0;                // round-robin position in feeders
    bool queued = false;                 // on the worklist
    bool blocked = false;                // kLink: can_send() said no; on_send_ready clears
  };
  enum class SourceKind : std::uint8_t { kInjection, kLinkIn };
  struct Source {
    SourceKind kind;
    std::uint32_t a;      // kInjection: sending GPU; kLinkIn: link slot
    std::uint32_t b = 0;  // kInjection: destination GPU
  };
  struct LinkSlot {
    std::unique_ptr<Link<NetPacket>> link;
    std::uint32_t from = 0, to = 0;  // node ids (Topology's: GPUs, then the switch)
    std::uint32_t server = kNone;    // its sending end
    std::uint32_t source = kNone;    // its receive end
    std::uint64_t messages = 0;
  };

  // ---- used by Network's public methods
  void attach(std::uint32_t gpu, MemTarget& memory, std::function<void(std::uint64_t, std::uint64_t)> set_flag);
  Endpoint& endpoint(std::uint32_t gpu) const;
  bool idle() const;
  void report_in_flight(std::vector<std::string>& out) const;
  nlohmann::json link_results(Tick elapsed) const;

  // ---- used by endpoints and peer ports
  void inject(PeerPort& port, MemRequest&& req);
  void inject_flag(PeerPort& port, std::uint64_t flag, std::uint64_t value);
  void wait_for_space(PeerPort& port, MemClient* client);
  void ack(std::uint32_t sender, std::uint32_t slot);
  Tick path_latency(std::uint32_t src, std::uint32_t dst) const;
  void kick(std::uint32_t server);

  // A receive buffer holds rx_buffer_packets maximum-size packets' worth of bytes (a
  // flit buffer): a 256 B DMA row or a 64 B flag takes 256 B or 64 B of it, so small
  // packets can cover the link's bandwidth-delay product too.
  std::uint64_t rx_buffer_bytes() const {
    return std::uint64_t{cfg_.link.rx_buffer} * std::max<std::uint64_t>(cfg_.packet_bytes, cfg_.flag_bytes);
  }

  // A delivered request's tag (kSrcBits above) and its two halves.
  static std::uint64_t delivery_tag(std::uint32_t slot, std::uint32_t seen) {
    return (std::uint64_t{slot} << kSrcBits) | seen;
  }
  static std::uint32_t seen_of(std::uint64_t tag) { return static_cast<std::uint32_t>(tag & ((1u << kSrcBits) - 1)); }
  static std::uint32_t slot_of(std::uint64_t tag) { return static_cast<std::uint32_t>(tag >> kSrcBits); }

  // For T3SIM_CHECK.
  Tick now() const { return owner_.now(); }
  const std::string& name() const { return owner_.name(); }

  Network& owner_;
  const std::uint32_t n_;
  const NetConfig cfg_;
  const NetMode mode_;
  const std::unique_ptr<const Topology> topology_;
  std::vector<LinkSlot> links_;
  std::unordered_map<std::uint64_t, std::uint32_t> link_index_;  // (from, to) -> slot; construction only
  std::vector<std::uint32_t> route_;  // [node * n_ + dst] -> link slot of the next hop
  // kHomogeneous, by destination d: the GPU-to-GPU hops on GPU 0's path to d, the
  // GPUs it passes, d included (a switch is not one). All but the first hop are on
  // peers' links, which GPU 0's first link stands for again (after_link).
  std::vector<std::uint32_t> gpu_hops_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;  // simulated GPUs only
  std::vector<Server> servers_;
  std::vector<Source> sources_;
  HomogeneousMirror mirror_;  // kHomogeneous: where what GPU 0 sends d arrives
  // Servers to run, per partition: a server is only kicked from its own partition
  // (its feeders are there too), so partitions never share a worklist.
  struct Worklist {
    std::vector<std::uint32_t> servers;
    bool draining = false;
  };
  std::vector<Worklist> work_;
  // Partitioned simulation: node (GPU, or the switch) -> partition.
  std::uint32_t partition_of(std::uint32_t node) const { return partitioned_ ? node : 0; }
  bool partitioned_ = false;

 private:
  std::uint32_t route(std::uint32_t node, std::uint32_t dst) const { return route_[std::size_t{node} * n_ + dst]; }
  std::uint32_t add_server(ServerKind kind, std::uint32_t index, std::uint32_t node);
  std::uint32_t add_source(SourceKind kind, std::uint32_t a, std::uint32_t b = 0);
  void add_link(const TopologyLink& l);
  std::uint32_t find_link(std::uint32_t from, std::uint32_t to) const;
  void build_links();
  void build_routes();
  void count_gpu_hops();
  void build_feeders();

  // Which server a packet for `dst` wants once it is at the receive end of `slot`,
  // having crossed `crossed` links (kHomogeneous ring: GPU 0's link again until it
  // crossed as many as its path has GPU-to-GPU hops; kLastCrossing: delivery).
  static constexpr std::uint32_t kLastCrossing = UINT32_MAX;
  std::uint32_t after_link(std::uint32_t slot, std::uint32_t dst, std::uint32_t crossed) const;
  std::uint32_t next_hop(std::uint32_t source) const;
  const NetPacket& peek(std::uint32_t source) const;
  NetPacket take(std::uint32_t source);
  void after_take(std::uint32_t source, std::uint32_t server);
  NetPacket cut(PeerPort& port);
  bool offer(Server& sv, std::uint32_t source);
  // Whether `source` is a link's receive end at a GPU: packets that GPU relays (ring).
  bool relayed_by_gpu(std::uint32_t source) const {
    const Source& s = sources_[source];
    return s.kind == SourceKind::kLinkIn && links_[s.a].to < n_;
  }
  bool deliver(Endpoint& ep, std::uint32_t source);
  void serve(std::uint32_t server);
  void drain(Worklist& w);
  void schedule_retry(PeerPort& port);
  void retry(PeerPort& port);
};

// What a client of GPU `src` sees as peer `dst`'s memory: the injection queue to it.
class Network::Impl::PeerPort final : public MemTarget {
 public:
  PeerPort(Impl& net, std::uint32_t from, std::uint32_t to) : net_(net), src(from), dst(to) {}

  // Contract: true iff the injection queue holds fewer than injection_queue_packets
  // packets; a request of any size is then accepted whole.
  bool can_accept(const MemRequest& /*req*/) const override {
    return queued_packets < net_.cfg_.injection_queue_packets;
  }
  // Contract: can_accept() was true; kWrite / kUpdate only.
  void accept(MemRequest&& req) override { net_.inject(*this, std::move(req)); }
  // Contract: `client` gets one on_mem_retry() once the queue has room.
  void wait_for_space(MemClient* client) override { net_.wait_for_space(*this, client); }

  Impl& net_;
  const std::uint32_t src, dst;
  std::deque<Entry> queue;
  std::uint64_t queued_packets = 0;  // packets still to send (a flag counts one)
  std::vector<MemClient*> waiters;   // refused clients awaiting on_mem_retry
  std::vector<MemClient*> retrying;  // retry()'s scratch
  bool retry_scheduled = false;
  std::uint32_t first_hop = kNone;   // server of the first link
  std::uint32_t source = kNone;      // this queue, as a source
};

// One GPU's attachment to the network ("net.gpu3"): its peer ports, its requests
// awaiting acknowledgment, and the client side of deliveries into its memory.
class Network::Impl::Endpoint final : public Component, public RemoteAccess, public MemClient {
 public:
  Endpoint(Impl& net, std::uint32_t g)
      : Component(net.owner_, fmt::format("gpu{}", g)),
        net_(net),
        gpu(g),
        delivered_from(net.n_, 0),
        bytes_injected(counter("bytes_injected", "B", "payload bytes of stores and updates this GPU sent")),
        packets_sent(counter("packets", "packets", "packets this GPU sent (flag sets included)")),
        flags_sent(counter("flags_sent", "messages", "remote flag sets this GPU sent")),
        bytes_delivered(counter("bytes_delivered", "B", "payload bytes delivered into this GPU's memory")),
        flags_delivered(counter("flags_delivered", "messages", "flag sets applied at this GPU")),
        acks(counter("acks", "packets", "acknowledgments received for this GPU's packets")),
        requests_done(counter("requests_done", "requests", "requests completed back to their clients")),
        refusals(counter("refusals", "requests", "clients refused by a full injection queue")),
        memory_refusals(counter("memory_refusals", "packets",
                                "arriving packets the memory refused at first (back-pressure)")) {}

  MemTarget& peer_memory(std::uint32_t peer) override {
    T3SIM_CHECK(peer < net_.n_ && peer != gpu, fmt::format("peer_memory({}) of {} GPUs", peer, net_.n_));
    return port(peer);
  }
  void set_peer_flag(std::uint32_t peer, std::uint64_t flag, std::uint64_t value) override {
    T3SIM_CHECK(peer < net_.n_ && peer != gpu, fmt::format("set_peer_flag({}) of {} GPUs", peer, net_.n_));
    net_.inject_flag(port(peer), flag, value);
  }
  // Made on first use: a large node's GPUs talk to few of their peers.
  PeerPort& port(std::uint32_t peer) {
    std::unique_ptr<PeerPort>& p = peers[peer];
    if (!p) {
      p = std::make_unique<PeerPort>(net_, gpu, peer);
      p->first_hop = net_.links_[net_.route(gpu, peer)].server;
      p->source = injection_source[peer];
    }
    return *p;
  }

  // A packet delivered into this GPU's memory has been applied: acknowledge it.
  void on_mem_response(MemRequest&& req) override {
    sim().note_progress();
    const std::uint32_t seen = seen_of(req.tag);
    const std::uint32_t slot = slot_of(req.tag);
    // kHomogeneous: GPU 0 sent every packet it receives (mirrored), so GPU 0 gets the ack.
    const std::uint32_t sender = net_.mode_ == NetMode::kFull ? seen : 0;
    const std::uint64_t key = (std::uint64_t{sender} << 32) | slot;
    Impl* net = &net_;
    // The acknowledgment runs at the sender, in its partition.
    sim().post(net_.partition_of(sender), now() + net_.path_latency(seen, gpu), [net, key] {
      net->ack(static_cast<std::uint32_t>(key >> 32), static_cast<std::uint32_t>(key));
    });
  }
  // The memory may take arriving packets again.
  void on_mem_retry() override {
    memory_blocked = false;
    net_.kick(deliver_server);
  }

  std::uint32_t new_slot() {
    ++pending_count;
    if (!free_slots.empty()) {
      const std::uint32_t s = free_slots.back();
      free_slots.pop_back();
      return s;
    }
    pending.emplace_back();
    return static_cast<std::uint32_t>(pending.size() - 1);
  }
  void free_slot(std::uint32_t s) {
    pending[s] = Pending{};
    free_slots.push_back(s);
    --pending_count;
  }

  Impl& net_;
  const std::uint32_t gpu;
  std::vector<std::unique_ptr<PeerPort>> peers;  // by destination GPU; null until used
  std::vector<std::uint32_t> injection_source;   // by destination GPU: the queue's source id
  std::vector<Pending> pending;                  // by slot (the id packets carry)
  std::vector<std::uint32_t> free_slots;
  std::uint64_t pending_count = 0;
  MemTarget* memory = nullptr;
  std::function<void(std::uint64_t, std::uint64_t)> set_flag;
  std::function<void()> on_traffic;  // observe_traffic's (may be empty)
  bool memory_blocked = false;  // refused; waiting for the memory's on_mem_retry
  std::uint32_t deliver_server = kNone;
  std::vector<std::uint64_t> delivered_from;  // payload bytes by sender as seen
  Counter& bytes_injected;
  Counter& packets_sent;
  Counter& flags_sent;
  Counter& bytes_delivered;
  Counter& flags_delivered;
  Counter& acks;
  Counter& requests_done;
  Counter& refusals;
  Counter& memory_refusals;
};

// ---------------------------------------------------------------- construction

Network::Impl::Impl(Network& owner, std::uint32_t num_gpus, const NetConfig& cfg, NetMode mode)
    : owner_(owner),
      n_(num_gpus),
      cfg_(cfg),
      mode_(mode),
      topology_(make_topology(cfg.topology, num_gpus, cfg)),
      mirror_(owner, num_gpus) {
  T3SIM_CHECK(n_ >= 2 && n_ < (1u << kSrcBits), fmt::format("a network of {} GPUs", n_));
  T3SIM_CHECK(cfg_.packet_bytes >= 1 && cfg_.packet_bytes <= UINT32_MAX,
              fmt::format("packet size {} B", cfg_.packet_bytes));
  // The mirror (mirror_, deliver's `seen`) is the shift g -> g + 1 mod N; read_node_config
  // refuses the others at the config.
  T3SIM_CHECK(mode_ == NetMode::kFull || topology_->shift_symmetric(),
              fmt::format("homogeneous mode on {}, which the GPUs' shift does not map onto itself", cfg.topology));
  // Partitioned (Node::partitioned): one partition per GPU, then the switch's.
  const Simulator& sim = owner.sim();
  partitioned_ = sim.partitions() > 1;
  T3SIM_CHECK(!partitioned_ || (mode_ == NetMode::kFull && sim.partitions() == topology_->nodes()),
              fmt::format("a network of {} GPUs in {} partitions", n_, sim.partitions()));
  work_.resize(sim.partitions());
  build_links();
  build_routes();
  const std::uint32_t simulated = mode_ == NetMode::kFull ? n_ : 1;
  for (std::uint32_t g = 0; g < simulated; ++g) {
    endpoints_.push_back(std::make_unique<Endpoint>(*this, g));
    Endpoint& ep = *endpoints_.back();
    ep.deliver_server = add_server(ServerKind::kDeliver, g, g);
    ep.peers.resize(n_);
    ep.injection_source.assign(n_, kNone);
    for (std::uint32_t d = 0; d < n_; ++d)
      if (d != g) ep.injection_source[d] = add_source(SourceKind::kInjection, g, d);
  }
  count_gpu_hops();
  build_feeders();
  for (LinkSlot& ls : links_) {
    const std::uint32_t server = ls.server, source = ls.source;
    ls.link->set_on_send_ready([this, server] {
      servers_[server].blocked = false;
      kick(server);
    });
    ls.link->set_on_receive([this, source] { kick(next_hop(source)); });
  }
}

std::uint32_t Network::Impl::add_server(ServerKind kind, std::uint32_t index, std::uint32_t node) {
  servers_.push_back(Server{kind, index, partition_of(node), {}});
  return static_cast<std::uint32_t>(servers_.size() - 1);
}

std::uint32_t Network::Impl::add_source(SourceKind kind, std::uint32_t a, std::uint32_t b) {
  sources_.push_back(Source{kind, a, b});
  return static_cast<std::uint32_t>(sources_.size() - 1);
}

void Network::Impl::add_link(const TopologyLink& l) {
  const std::uint32_t from = l.from, to = l.to;
  const auto slot = static_cast<std::uint32_t>(links_.size());
  LinkSlot ls;
  LinkConfig bytes_lc = cfg_.link;
  bytes_lc.latency = l.latency;
  bytes_lc.rx_buffer_bytes = rx_buffer_bytes();
  bytes_lc.rx_buffer = 1u << 30;  // bounded in bytes only
  // Freed receive-buffer space travels back to the sender like a packet: one link
  // latency (flow-control credits on the reverse direction; they take no bandwidth).
  bytes_lc.credit_latency = cfg_.link.latency;
  ls.link = std::make_unique<Link<NetPacket>>(owner_, topology_->node_name(from) + "_" + topology_->node_name(to),
                                              bytes_lc, LinkEnds{partition_of(from), partition_of(to)});
  ls.from = from;
  ls.to = to;
  ls.server = add_server(ServerKind::kLink, slot, from);
  ls.source = add_source(SourceKind::kLinkIn, slot);
  links_.push_back(std::move(ls));
  link_index_.emplace(std::uint64_t{from} << 32 | to, slot);
}

std::uint32_t Network::Impl::find_link(std::uint32_t from, std::uint32_t to) const {
  const auto it = link_index_.find(std::uint64_t{from} << 32 | to);
  return it == link_index_.end() ? kNone : it->second;
}

// kFull: every GPU's links; kHomogeneous: only GPU 0's outgoing ones (and, for the
// switch, its downlink, which carries what the mirrored peers send it).
void Network::Impl::build_links() {
  const std::uint32_t senders = mode_ == NetMode::kFull ? n_ : 1;
  for (std::uint32_t g = 0; g < senders; ++g)
    for (const TopologyLink& l : topology_->links_of(g)) add_link(l);
}

void Network::Impl::build_routes() {
  route_.assign(std::size_t{topology_->nodes()} * n_, kNone);
  const std::uint32_t senders = mode_ == NetMode::kFull ? n_ : 1;
  for (std::uint32_t g = 0; g < senders; ++g)
    for (std::uint32_t d = 0; d < n_; ++d)
      if (d != g) route_[std::size_t{g} * n_ + d] = find_link(g, topology_->next_node(g, d));
  // A switch forwards on the destination's downlink; kHomogeneous has GPU 0's only,
  // which stands for every GPU's.
  for (std::uint32_t sw = n_; sw < topology_->nodes(); ++sw)
    for (std::uint32_t d = 0; d < n_; ++d)
      route_[std::size_t{sw} * n_ + d] = find_link(sw, topology_->next_node(sw, mode_ == NetMode::kFull ? d : 0));
}

void Network::Impl::count_gpu_hops() {
  if (mode_ != NetMode::kHomogeneous) return;
  gpu_hops_.assign(n_, 0);
  for (std::uint32_t d = 1; d < n_; ++d) {
    const std::vector<std::uint32_t> path = topology_->path(0, d);
    gpu_hops_[d] = static_cast<std::uint32_t>(
        std::count_if(path.begin() + 1, path.end(), [this](std::uint32_t node) { return node < n_; }));
  }
}

// Walk every (sender, destination) path and record, at each step, which source
// feeds which server: each server then scans only the sources that can feed it.
// Routing depends only on the destination, so paths to one destination merge: a
// walk stops at a link already walked for that destination (O(links) per one).
void Network::Impl::build_feeders() {
  std::unordered_set<std::uint64_t> known;  // (server, link source) pairs added
  known.reserve(links_.size() * 4);
  auto add_feeder = [this, &known](std::uint32_t server, std::uint32_t source) {
    if (known.insert(std::uint64_t{server} << 32 | source).second) servers_[server].feeders.push_back(source);
  };
  std::vector<std::uint32_t> walked(links_.size(), kNone);  // destination a link was last walked for
  for (std::uint32_t d = 0; d < n_; ++d) {
    for (const auto& ep : endpoints_) {
      if (d == ep->gpu) continue;
      std::uint32_t slot = route(ep->gpu, d);
      servers_[links_[slot].server].feeders.push_back(ep->injection_source[d]);  // each (s, d) once
      for (;;) {
        if (walked[slot] == d) break;
        walked[slot] = d;
        // kHomogeneous ring: a far packet re-crosses this link before it is delivered.
        if (mode_ == NetMode::kHomogeneous && links_[slot].to < n_ && gpu_hops_[d] > 1)
          add_feeder(links_[slot].server, links_[slot].source);
        const std::uint32_t next = after_link(slot, d, kLastCrossing);
        add_feeder(next, links_[slot].source);
        const Server& sv = servers_[next];
        if (sv.kind == ServerKind::kLink) {
          slot = sv.index;
          continue;
        }
        break;
      }
    }
  }
}

// ---------------------------------------------------------------- routing

std::uint32_t Network::Impl::after_link(std::uint32_t slot, std::uint32_t dst, std::uint32_t crossed) const {
  const LinkSlot& ls = links_[slot];
  if (ls.to >= n_) return links_[route(ls.to, dst)].server;  // a switch forwards
  if (mode_ == NetMode::kFull)
    return dst == ls.to ? endpoints_[dst]->deliver_server : links_[route(ls.to, dst)].server;
  // kHomogeneous: GPU 0's link stands for every GPU's in its direction, so a packet
  // with GPU-to-GPU hops left crosses it again (as the next peer relays it, sharing
  // the link with what that peer sends: GPU 0's own traffic, by symmetry); then its
  // receive end stands for GPU 0's own input.
  return crossed < gpu_hops_[dst] ? ls.server : endpoints_[0]->deliver_server;
}

std::uint32_t Network::Impl::next_hop(std::uint32_t source) const {
  const Source& s = sources_[source];
  switch (s.kind) {
    case SourceKind::kInjection: {
      const PeerPort* p = endpoints_[s.a]->peers[s.b].get();
      return p == nullptr || p->queue.empty() ? kNone : p->first_hop;
    }
    case SourceKind::kLinkIn: {
      const Link<NetPacket>& l = *links_[s.a].link;
      return l.has_message() ? after_link(s.a, l.front().dst, l.front().links_crossed) : kNone;
    }
  }
  return kNone;
}

Tick Network::Impl::path_latency(std::uint32_t src, std::uint32_t dst) const {
  return topology_->path_latency(src, dst);
}

// ---------------------------------------------------------------- moving packets

const NetPacket& Network::Impl::peek(std::uint32_t source) const {
  const Source& s = sources_[source];
  T3SIM_CHECK(s.kind == SourceKind::kLinkIn, "peek at an injection queue");
  return links_[s.a].link->front();
}

NetPacket Network::Impl::take(std::uint32_t source) {
  const Source& s = sources_[source];
  switch (s.kind) {
    case SourceKind::kInjection: return cut(*endpoints_[s.a]->peers[s.b]);
    case SourceKind::kLinkIn: return links_[s.a].link->pop();
  }
  return NetPacket{};
}

void Network::Impl::after_take(std::uint32_t source, std::uint32_t server) {
  const Source& s = sources_[source];
  switch (s.kind) {
    case SourceKind::kInjection: schedule_retry(*endpoints_[s.a]->peers[s.b]); break;
    case SourceKind::kLinkIn: {
      // The new head may want another server (a different output, or delivery).
      const std::uint32_t next = next_hop(source);
      if (next != kNone && next != server) kick(next);
      break;
    }
  }
}

// The next packet of the port's front entry. Packets never cross a row; with data,
// they are cut at multiples of the request's value granule so each carries whole words.
NetPacket Network::Impl::cut(PeerPort& port) {
  Endpoint& ep = *endpoints_[port.src];
  Entry& e = port.queue.front();
  NetPacket pkt;
  pkt.dst = port.dst;
  --port.queued_packets;
  ++ep.packets_sent;
  if (e.slot == kFlagEntry) {
    pkt.kind = NetPacket::Kind::kFlag;
    pkt.flag = e.flag;
    pkt.value = e.value;
    pkt.wire_bytes = cfg_.flag_bytes;
    ++ep.flags_sent;
    port.queue.pop_front();
    return pkt;
  }
  Pending& p = ep.pending[e.slot];
  MemRequest& r = p.req;
  const std::uint32_t len = std::min(p.cut_bytes, r.bytes - e.offset);
  // The request's header whole (op, tracker tag, ...), then what is the piece's own.
  // kHomogeneous: the packet GPU 0 sends d arrives as the one GPU -d mod N sends it.
  pkt.header = r;
  pkt.header.address = r.address + std::uint64_t{e.row} * r.row_stride + e.offset;
  pkt.header.bytes = len;
  pkt.header.rows = 1;
  pkt.header.row_stride = 0;
  pkt.header.tag = delivery_tag(e.slot, mode_ == NetMode::kFull ? port.src : (n_ - port.dst) % n_);
  pkt.wire_bytes = static_cast<std::uint32_t>((std::uint64_t{len} * r.wire_num + r.wire_den - 1) / r.wire_den);
  if (p.granule != 0) {
    const std::size_t count = len / p.granule;
    if (count == r.data.words.size()) {
      pkt.data = std::move(r.data);  // one packet carries the whole request
    } else {
      const std::size_t first = (std::uint64_t{e.row} * r.bytes + e.offset) / p.granule;
      const auto begin = r.data.words.begin() + static_cast<std::ptrdiff_t>(first);
      pkt.data.words.assign(begin, begin + static_cast<std::ptrdiff_t>(count));
    }
  }
  ep.bytes_injected += len;
  e.offset += len;
  if (e.offset == r.bytes) {
    e.offset = 0;
    ++e.row;
  }
  if (e.row == r.rows) {
    r.data = Payload{};  // all cut: the operand lives on in the packets only
    port.queue.pop_front();
  }
  return pkt;
}

// Try to move `source`'s head packet into server `sv`; false if the server is blocked.
bool Network::Impl::offer(Server& sv, std::uint32_t source) {
  switch (sv.kind) {
    case ServerKind::kLink: {
      LinkSlot& ls = links_[sv.index];
      // A GPU relaying ring traffic never waits for its own transmit buffer: the
      // packets it forwards are taken out of its receive buffers at once, so the
      // ring's buffers cannot fill in a cycle and deadlock (README, "deadlock
      // freedom"). Its injected packets and a switch's forwarding stay bounded.
      const bool relayed = relayed_by_gpu(source);
      if (!relayed) {
        if (sv.blocked) return false;
        if (!ls.link->can_send()) {
          sv.blocked = true;  // the link calls on_send_ready when it has room
          return false;
        }
      }
      NetPacket p = take(source);
      ++ls.messages;
      ++p.links_crossed;
      relayed ? ls.link->send_unbounded(std::move(p)) : ls.link->send(std::move(p));
      return true;
    }
    case ServerKind::kDeliver: return deliver(*endpoints_[sv.index], source);
  }
  return false;
}

// Hand an arrived packet to GPU `ep`'s memory (write / update) or flags.
bool Network::Impl::deliver(Endpoint& ep, std::uint32_t source) {
  const NetPacket& head = peek(source);
  if (head.kind == NetPacket::Kind::kFlag) {
    // Never refused: it arrives behind this sender's earlier packets, which are in
    // the memory's queues already.
    T3SIM_CHECK(static_cast<bool>(ep.set_flag), fmt::format("flag set arrived at unattached GPU {}", ep.gpu));
    const NetPacket p = take(source);
    ++ep.flags_delivered;
    owner_.sim().note_progress();
    ep.set_flag(p.flag, p.value);
    return true;
  }
  if (ep.memory_blocked) return false;
  T3SIM_CHECK(ep.memory != nullptr, fmt::format("packet arrived at unattached GPU {}", ep.gpu));
  // The packet's header, as this GPU takes remote traffic: in the communication
  // stream, written at the memory controller (T3 §4.3), by the NVLink port on the hub
  // beside the copy engines. Without the data (not yet moved out of the buffer):
  // targets judge by room.
  MemRequest req{head.header, Payload{}};
  req.stream = Stream::kCommunication;
  req.uncached = true;
  req.ingress = Ingress::kHub;
  req.client = &ep;
  req.created = now();
  // kHomogeneous: GPU 0's packet to d arrives where GPU -d mod N's would (address, tracker tag).
  if (mode_ == NetMode::kHomogeneous) mirror_.apply(req, head.dst);
  if (!ep.memory->can_accept(req)) {
    ep.memory_blocked = true;
    ++ep.memory_refusals;
    ep.memory->wait_for_space(&ep);
    return false;
  }
  NetPacket p = take(source);
  req.data = std::move(p.data);
  ep.bytes_delivered += req.bytes;
  ep.delivered_from[seen_of(req.tag)] += req.bytes;
  owner_.sim().note_progress();
  if (ep.on_traffic) ep.on_traffic();
  ep.memory->accept(std::move(req));
  return true;
}

void Network::Impl::serve(std::uint32_t server) {
  Server& sv = servers_[server];
  const auto n = static_cast<std::uint32_t>(sv.feeders.size());
  for (;;) {
    // A blocked link still takes what a GPU relays (offer()).
    const bool only_relayed = sv.kind == ServerKind::kLink && sv.blocked;
    std::uint32_t pick = n;
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t i = (sv.rr + k) % n;
      if (next_hop(sv.feeders[i]) == server && (!only_relayed || relayed_by_gpu(sv.feeders[i]))) {
        pick = i;
        break;
      }
    }
    if (pick == n) return;
    const std::uint32_t source = sv.feeders[pick];
    if (!offer(sv, source)) {
      if (sv.kind == ServerKind::kLink && sv.blocked && !only_relayed) continue;  // relayed packets may still go
      return;
    }
    sv.rr = (pick + 1) % n;
    after_take(source, server);
  }
}

void Network::Impl::kick(std::uint32_t server) {
  if (server == kNone) return;
  Worklist& w = work_[servers_[server].partition];
  if (!servers_[server].queued) {
    servers_[server].queued = true;
    w.servers.push_back(server);
  }
  if (!w.draining) drain(w);
}

void Network::Impl::drain(Worklist& w) {
  w.draining = true;
  // Index, not iterator: serving may append.
  for (std::size_t i = 0; i < w.servers.size(); ++i) {
    const std::uint32_t server = w.servers[i];
    servers_[server].queued = false;
    serve(server);
  }
  w.servers.clear();
  w.draining = false;
}

// ---------------------------------------------------------------- requests and acks

void Network::Impl::inject(PeerPort& port, MemRequest&& req) {
  T3SIM_CHECK(req.op != MemOp::kRead, "remote reads are not supported: peer_memory() takes writes and updates");
  T3SIM_CHECK(port.can_accept(req), "accept() while can_accept() is false");
  T3SIM_CHECK(req.bytes > 0 && req.rows > 0 && req.client != nullptr,
              fmt::format("empty or client-less request at 0x{:x}", req.address));
  T3SIM_CHECK(req.rows == 1 || req.row_stride >= req.bytes,
              fmt::format("{} rows of {} B overlap with a {} B stride", req.rows, req.bytes, req.row_stride));
  std::uint32_t granule = 0;
  if (!req.data.empty()) {
    const std::uint64_t words = req.data.words.size();
    T3SIM_CHECK(req.total_bytes() % words == 0 && req.bytes % (req.total_bytes() / words) == 0,
                fmt::format("{} data words for {} x {} B", words, req.rows, req.bytes));
    granule = static_cast<std::uint32_t>(req.total_bytes() / words);
  }
  T3SIM_CHECK(req.wire_num >= req.wire_den && req.wire_den > 0,
              fmt::format("wire expansion {}/{} below one", req.wire_num, req.wire_den));
  // A packet's wire bytes (payload x wire_num / wire_den) stay within packet_size.
  const auto packet = static_cast<std::uint32_t>(std::max<std::uint64_t>(
      1, cfg_.packet_bytes * req.wire_den / req.wire_num));
  const std::uint32_t cut_bytes = granule == 0 ? packet : std::max(granule, packet / granule * granule);
  const std::uint64_t per_row = (std::uint64_t{req.bytes} + cut_bytes - 1) / cut_bytes;

  Endpoint& ep = *endpoints_[port.src];
  if (ep.on_traffic) ep.on_traffic();
  const std::uint32_t slot = ep.new_slot();
  Pending& p = ep.pending[slot];
  p.cut_bytes = cut_bytes;
  p.granule = granule;
  p.acks_left = per_row * req.rows;
  p.req = std::move(req);
  port.queued_packets += p.acks_left;
  port.queue.push_back(Entry{slot});
  kick(port.first_hop);
}

void Network::Impl::inject_flag(PeerPort& port, std::uint64_t flag, std::uint64_t value) {
  // Never refused, so it may take the queue past its bound; it stays in FIFO order.
  ++port.queued_packets;
  port.queue.push_back(Entry{kFlagEntry, 0, 0, flag, value});
  kick(port.first_hop);
}

void Network::Impl::wait_for_space(PeerPort& port, MemClient* client) {
  if (std::find(port.waiters.begin(), port.waiters.end(), client) == port.waiters.end()) {
    port.waiters.push_back(client);
    ++endpoints_[port.src]->refusals;
  }
  schedule_retry(port);  // only if there is room already (no lost wake-up)
}

// Retries run from an event, never inside the server loop that freed the room, so a
// client that sends again from on_mem_retry() does not re-enter it.
void Network::Impl::schedule_retry(PeerPort& port) {
  if (port.retry_scheduled || port.waiters.empty() || port.queued_packets >= cfg_.injection_queue_packets) return;
  port.retry_scheduled = true;
  PeerPort* pp = &port;
  owner_.sim().events().schedule_callback(now(), [this, pp] { retry(*pp); });
}

void Network::Impl::retry(PeerPort& port) {
  port.retry_scheduled = false;
  port.retrying.clear();
  port.retrying.swap(port.waiters);  // a client refused again re-registers into port.waiters
  for (MemClient* c : port.retrying) c->on_mem_retry();
}

void Network::Impl::ack(std::uint32_t sender, std::uint32_t slot) {
  Endpoint& ep = *endpoints_[sender];
  ++ep.acks;
  Pending& p = ep.pending[slot];
  T3SIM_CHECK(p.acks_left > 0, fmt::format("acknowledgment for idle request slot {} of GPU {}", slot, sender));
  if (--p.acks_left > 0) return;
  MemRequest done = std::move(p.req);
  ep.free_slot(slot);  // before the callback: the client may send a new request from it
  done.data = Payload{};
  ++ep.requests_done;
  owner_.sim().note_progress();
  MemClient* client = done.client;
  client->on_mem_response(std::move(done));
}

// ---------------------------------------------------------------- introspection

void Network::Impl::attach(std::uint32_t gpu, MemTarget& memory,
                           std::function<void(std::uint64_t, std::uint64_t)> set_flag) {
  Endpoint& ep = endpoint(gpu);
  T3SIM_CHECK(ep.memory == nullptr, fmt::format("GPU {} attached twice", gpu));
  ep.memory = &memory;
  ep.set_flag = std::move(set_flag);
}

Network::Impl::Endpoint& Network::Impl::endpoint(std::uint32_t gpu) const {
  T3SIM_CHECK(gpu < endpoints_.size(),
              fmt::format("GPU {} is not simulated ({} of {} GPUs are)", gpu, endpoints_.size(), n_));
  return *endpoints_[gpu];
}

bool Network::Impl::idle() const {
  for (const LinkSlot& ls : links_)
    if (!ls.link->idle()) return false;
  for (const auto& ep : endpoints_) {
    if (ep->pending_count > 0) return false;
    for (const auto& port : ep->peers)
      if (port && !port->queue.empty()) return false;
  }
  return true;
}

void Network::Impl::report_in_flight(std::vector<std::string>& out) const {
  for (const auto& ep : endpoints_) {
    if (ep->pending_count > 0) {
      const Pending* oldest = nullptr;
      for (const Pending& p : ep->pending)
        if (p.acks_left > 0 && (oldest == nullptr || p.req.created < oldest->req.created)) oldest = &p;
      out.push_back(fmt::format("gpu{}: {} requests awaiting acknowledgments; oldest: {} of {} x {} B at 0x{:x} "
                                "issued at {} ps, {} packets unacknowledged",
                                ep->gpu, ep->pending_count, to_string(oldest->req.op), oldest->req.rows,
                                oldest->req.bytes, oldest->req.address, oldest->req.created.ps(),
                                oldest->acks_left));
    }
    for (const auto& port : ep->peers) {
      if (!port || port->queue.empty()) continue;
      out.push_back(fmt::format("gpu{} -> gpu{}: {} packets queued to send, {} clients waiting for space", port->src,
                                port->dst, port->queued_packets, port->waiters.size()));
    }
    if (ep->memory_blocked)
      out.push_back(fmt::format("gpu{}: arrived packets wait for its memory to accept (retry pending)", ep->gpu));
  }
}

nlohmann::json Network::Impl::link_results(Tick elapsed) const {
  auto utilization = [elapsed](Tick busy) {
    return elapsed.ps() == 0 ? 0.0 : static_cast<double>(busy.ps()) / static_cast<double>(elapsed.ps());
  };
  nlohmann::json links = nlohmann::json::array();
  std::uint64_t sent = 0, received = 0, messages = 0;
  Tick busy;
  for (const LinkSlot& ls : links_) {
    const Link<NetPacket>& l = *ls.link;
    links.push_back({{"name", l.name()},
                     {"from", topology_->node_name(ls.from)},
                     {"to", topology_->node_name(ls.to)},
                     {"bytes_sent", l.bytes_sent()},
                     {"bytes_received", l.bytes_received()},
                     {"messages", ls.messages},
                     {"busy_ps", l.busy_time().ps()},
                     {"utilization", utilization(l.busy_time())}});
    sent += l.bytes_sent();
    received += l.bytes_received();
    messages += ls.messages;
    busy += l.busy_time();
  }
  const double mean = links_.empty() ? 0.0 : utilization(busy) / static_cast<double>(links_.size());
  return {{"links", links},
          {"totals",
           {{"bytes_sent", sent},
            {"bytes_received", received},
            {"messages", messages},
            {"busy_ps", busy.ps()},
            {"mean_utilization", mean}}}};
}

// ---------------------------------------------------------------- Network

Network::Network(Simulator& sim, std::string_view name, std::uint32_t num_gpus, const NetConfig& cfg, NetMode mode)
    : Component(sim, std::string(name)), impl_(std::make_unique<Impl>(*this, num_gpus, cfg, mode)) {}

Network::~Network() = default;

void Network::attach(std::uint32_t gpu, MemTarget& memory,
                     std::function<void(std::uint64_t flag, std::uint64_t value)> set_flag) {
  impl_->attach(gpu, memory, std::move(set_flag));
}

void Network::observe_traffic(std::uint32_t gpu, std::function<void()> on_traffic) {
  impl_->endpoint(gpu).on_traffic = std::move(on_traffic);
}

RemoteAccess& Network::access(std::uint32_t gpu) { return impl_->endpoint(gpu); }
void Network::add_mirror_blocks(std::uint64_t base, std::uint64_t block_bytes) {
  if (impl_->mode_ == NetMode::kHomogeneous) impl_->mirror_.add_blocks(base, block_bytes);
}
void Network::add_mirror_translator(MirrorTranslator translate) {
  if (impl_->mode_ == NetMode::kHomogeneous) impl_->mirror_.add_translator(std::move(translate));
}

std::uint32_t Network::num_gpus() const { return impl_->n_; }
Tick Network::path_latency(std::uint32_t src, std::uint32_t dst) const {
  T3SIM_CHECK(src < impl_->n_ && dst < impl_->n_, fmt::format("path_latency({}, {}) of {} GPUs", src, dst, impl_->n_));
  return src == dst ? Tick::zero() : impl_->path_latency(src, dst);
}
NetMode Network::mode() const { return impl_->mode_; }
const Topology& Network::topology() const { return *impl_->topology_; }
const NetConfig& Network::config() const { return impl_->cfg_; }

std::vector<Link<NetPacket>*> Network::links() const {
  std::vector<Link<NetPacket>*> all;
  all.reserve(impl_->links_.size());
  for (const auto& ls : impl_->links_) all.push_back(ls.link.get());
  return all;
}

nlohmann::json Network::link_results(Tick elapsed) const { return impl_->link_results(elapsed); }

bool Network::idle() const { return impl_->idle(); }

std::uint64_t Network::bytes_delivered(std::uint32_t gpu, std::uint32_t src) const {
  T3SIM_CHECK(src < impl_->n_, fmt::format("bytes_delivered from GPU {} of {}", src, impl_->n_));
  return impl_->endpoint(gpu).delivered_from[src];
}

void Network::report_in_flight(std::vector<std::string>& out) const { impl_->report_in_flight(out); }

}  // namespace t3sim
