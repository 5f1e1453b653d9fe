// The inter-GPU network (models/net/network.h) against fake memories and clients:
// delivery with data and exactly one response, latency and bandwidth, cutting into
// packets, updates, flag ordering, ring routing, fully-connected and switch
// topologies (also through the Topology interface), back-pressure, conservation,
// homogeneous mirroring, determinism and config input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "models/net/network.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

using ::testing::HasSubstr;

constexpr std::uint32_t kGranule = 16;  // bytes per data word in these tests
constexpr Tick kMemLatency = Tick::ns(10);

// 64 GB/s makes a 4 KiB packet exactly 64 ns; Table 1's 500 ns latency.
NetConfig test_config(std::string topology = "ring") {
  NetConfig c;
  c.topology = std::move(topology);
  c.link.bandwidth = Bandwidth(64'000'000'000ULL);
  c.link.latency = Tick::ns(500);
  c.packet_bytes = 4096;
  c.switch_latency = Tick::ns(100);
  return c;
}

Tick ser(const NetConfig& c, std::uint64_t bytes) { return c.link.bandwidth.transfer_time(bytes); }

// A GPU memory stand-in: fixed latency, applies writes and updates to words (one per
// kGranule bytes), logs arrivals; can be told to refuse everything (back-pressure).
class FakeMemory final : public MemTarget {
 public:
  struct Arrival {
    MemOp op;
    std::uint64_t address;
    std::uint32_t bytes;
    Tick when;
  };
  FakeMemory(Simulator& sim, Tick latency) : sim_(sim), latency_(latency) {}

  bool can_accept(const MemRequest&) const override { return !refusing_; }
  void accept(MemRequest&& r) override {
    EXPECT_FALSE(refusing_);
    EXPECT_EQ(r.stream, Stream::kCommunication);
    EXPECT_TRUE(r.uncached);
    EXPECT_EQ(r.rows, 1u);
    arrivals.push_back({r.op, r.address, r.bytes, sim_.now()});
    for (std::size_t i = 0; i < r.data.words.size(); ++i) {
      const std::uint64_t a = r.address + i * kGranule;
      if (r.op == MemOp::kWrite) words[a] = r.data.words[i];
      if (r.op == MemOp::kUpdate) words[a] += r.data.words[i];
    }
    pending_.push_back(std::move(r));
    sim_.events().schedule_callback(sim_.now() + latency_, [this] { respond(); });
  }
  void wait_for_space(MemClient* c) override { waiter_ = c; }

  // Refuse (true) or accept again (false, which retries the waiting client).
  void set_refusing(bool refusing) {
    refusing_ = refusing;
    if (!refusing_ && waiter_ != nullptr) std::exchange(waiter_, nullptr)->on_mem_retry();
  }

  std::map<std::uint64_t, std::uint64_t> words;
  std::vector<Arrival> arrivals;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> flags;  // (flag, value) as set
  std::vector<std::size_t> arrivals_at_flag;                   // arrivals.size() when each flag was set

 private:
  void respond() {
    MemRequest r = std::move(pending_.front());
    pending_.pop_front();
    r.client->on_mem_response(std::move(r));
  }
  Simulator& sim_;
  Tick latency_;
  bool refusing_ = false;
  std::deque<MemRequest> pending_;
  MemClient* waiter_ = nullptr;
};

// A requester: sends a list of requests to one target in order, honouring refusals,
// and records when each completes.
class Sender final : public MemClient {
 public:
  Sender(Simulator& sim, MemTarget& target) : sim_(sim), target_(target) {}

  void queue(MemRequest r) {
    r.client = this;
    todo_.push_back(std::move(r));
  }
  // `bytes` in requests of `chunk` bytes from `address`; with data: word i of the
  // stream is `base + i`.
  void queue_stream(std::uint64_t address, std::uint64_t bytes, std::uint32_t chunk, MemOp op = MemOp::kWrite,
                    bool with_data = true, std::uint64_t base = 1000) {
    for (std::uint64_t off = 0; off < bytes; off += chunk) {
      MemRequest r;
      r.op = op;
      r.address = address + off;
      r.bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(chunk, bytes - off));
      r.tag = off;
      if (with_data)
        for (std::uint32_t w = 0; w < r.bytes / kGranule; ++w) r.data.words.push_back(base + off / kGranule + w);
      queue(std::move(r));
    }
  }
  // Start sending (at the current simulated time).
  void start() { pump(); }

  void on_mem_response(MemRequest&& r) override {
    EXPECT_TRUE(r.data.empty());
    EXPECT_EQ(r.client, this);
    done.push_back({r.tag, sim_.now()});
  }
  void on_mem_retry() override {
    ++retries;
    pump();
  }

  std::vector<std::pair<std::uint64_t, Tick>> done;  // (tag, completion time)
  std::uint32_t refused = 0;
  std::uint32_t retries = 0;
  Tick last() const { return done.empty() ? Tick::zero() : done.back().second; }

 private:
  void pump() {
    while (!todo_.empty()) {
      todo_.front().created = sim_.now();
      if (!target_.can_accept(todo_.front())) {
        ++refused;
        target_.wait_for_space(this);
        return;
      }
      target_.accept(std::move(todo_.front()));
      todo_.pop_front();
    }
  }
  Simulator& sim_;
  MemTarget& target_;
  std::deque<MemRequest> todo_;
};

// A network with a fake memory attached to every simulated GPU.
struct Rig {
  Rig(std::uint32_t n, const NetConfig& c, NetMode mode = NetMode::kFull) : cfg(c), net(sim, "net", n, c, mode) {
    const std::uint32_t simulated = mode == NetMode::kFull ? n : 1;
    for (std::uint32_t g = 0; g < simulated; ++g) {
      mems.push_back(std::make_unique<FakeMemory>(sim, kMemLatency));
      FakeMemory* m = mems.back().get();
      net.attach(g, *m, [m](std::uint64_t flag, std::uint64_t value) {
        m->flags.emplace_back(flag, value);
        m->arrivals_at_flag.push_back(m->arrivals.size());
      });
    }
  }
  Sender& sender(std::uint32_t from, std::uint32_t to) {
    senders.push_back(std::make_unique<Sender>(sim, net.access(from).peer_memory(to)));
    return *senders.back();
  }
  Link<NetPacket>& link(const std::string& name) {
    for (auto* l : net.links())
      if (l->name() == name) return *l;
    ADD_FAILURE() << "no link " << name;
    return *net.links().front();
  }
  // Every link delivered what it sent and nothing is left anywhere.
  void expect_drained_and_conserved() {
    EXPECT_TRUE(net.idle());
    for (auto* l : net.links()) EXPECT_EQ(l->bytes_sent(), l->bytes_received()) << l->name();
    std::vector<std::string> report;
    net.report_in_flight(report);
    EXPECT_THAT(report, ::testing::IsEmpty());
  }

  NetConfig cfg;
  Simulator sim{1};
  Network net;
  std::vector<std::unique_ptr<FakeMemory>> mems;
  std::vector<std::unique_ptr<Sender>> senders;
};

MemRequest store(std::uint64_t address, std::uint32_t bytes, MemOp op = MemOp::kWrite, std::uint64_t first_word = 0) {
  MemRequest r;
  r.op = op;
  r.address = address;
  r.bytes = bytes;
  for (std::uint32_t w = 0; w < bytes / kGranule; ++w) r.data.words.push_back(first_word + w);
  return r;
}

TEST(Network, IdleNetworkSchedulesNothing) {
  Rig rig(4, test_config());
  EXPECT_TRUE(rig.sim.events().empty());
  EXPECT_TRUE(rig.net.idle());
  EXPECT_EQ(rig.net.links().size(), 8u);
  EXPECT_EQ(rig.link("net.gpu0_gpu1").name(), "net.gpu0_gpu1");
  EXPECT_EQ(rig.link("net.gpu0_gpu3").name(), "net.gpu0_gpu3");
}

// What an acknowledgment (or T3's all-gather notice) takes between two GPUs.
TEST(Network, PathLatencyPerTopologyAndZeroToItself) {
  Rig ring(8, test_config("ring"));
  EXPECT_EQ(ring.net.path_latency(3, 3), Tick::zero());
  EXPECT_EQ(ring.net.path_latency(0, 1), Tick::ns(500));
  EXPECT_EQ(ring.net.path_latency(0, 7), Tick::ns(500));   // the short way round
  EXPECT_EQ(ring.net.path_latency(1, 5), Tick::ns(2000));  // four hops either way
  Rig fc(4, test_config("fully-connected"));
  EXPECT_EQ(fc.net.path_latency(0, 2), Tick::ns(500));
  EXPECT_EQ(fc.net.path_latency(2, 2), Tick::zero());
  Rig sw(4, test_config("switch"));
  EXPECT_EQ(sw.net.path_latency(1, 3), Tick::ns(1100));  // up, switch, down
}

// ---- topologies through their interface (i_topology.h)

// GPU g's links as "from_to@latency-in-ns", in creation order.
std::vector<std::string> links_of(const Topology& t, std::uint32_t gpu) {
  std::vector<std::string> names;
  for (const TopologyLink& l : t.links_of(gpu))
    names.push_back(fmt::format("{}_{}@{}", t.node_name(l.from), t.node_name(l.to), l.latency.ps() / 1000));
  return names;
}

TEST(Topology, TheRegistryNamesEachTopologyOnceWithADescription) {
  std::vector<std::string> names;
  for (const RegistryEntry& t : topology_types()) {
    names.push_back(t.name);
    EXPECT_FALSE(t.description.empty()) << t.name;
    EXPECT_EQ(make_topology(t.name, 4, test_config(t.name))->num_gpus(), 4u) << t.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fully-connected", "ring", "switch", "torus-2d"}));
}

TEST(Topology, RingLinksNeighboursAndRoutesTheShortWayTieForward) {
  const auto ring = make_topology("ring", 5, test_config("ring"));
  EXPECT_EQ(ring->switch_nodes(), 0u);
  EXPECT_EQ(ring->nodes(), 5u);
  EXPECT_FALSE(ring->direct_links());
  EXPECT_EQ(links_of(*ring, 0), (std::vector<std::string>{"gpu0_gpu1@500", "gpu0_gpu4@500"}));
  EXPECT_EQ(links_of(*ring, 4), (std::vector<std::string>{"gpu4_gpu0@500", "gpu4_gpu3@500"}));
  EXPECT_EQ(ring->path(0, 2), (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(ring->path(0, 3), (std::vector<std::uint32_t>{0, 4, 3}));  // backwards is shorter
  EXPECT_EQ(ring->path(3, 3), (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(ring->path_latency(0, 3), Tick::ns(1000));
  EXPECT_EQ(ring->path_latency(1, 0), Tick::ns(500));
  const auto even = make_topology("ring", 4, test_config("ring"));
  EXPECT_EQ(even->path(1, 3), (std::vector<std::uint32_t>{1, 2, 3}));  // a tie goes forward
  EXPECT_EQ(even->path(3, 1), (std::vector<std::uint32_t>{3, 0, 1}));
  // Two GPUs: next and previous are the same peer, one link each way.
  const auto pair = make_topology("ring", 2, test_config("ring"));
  EXPECT_EQ(links_of(*pair, 0), std::vector<std::string>{"gpu0_gpu1@500"});
  EXPECT_EQ(links_of(*pair, 1), std::vector<std::string>{"gpu1_gpu0@500"});
}

TEST(Topology, FullyConnectedHasALinkPerPairAndOneHop) {
  const auto fc = make_topology("fully-connected", 4, test_config("fully-connected"));
  EXPECT_EQ(fc->switch_nodes(), 0u);
  EXPECT_TRUE(fc->direct_links());
  EXPECT_EQ(links_of(*fc, 2), (std::vector<std::string>{"gpu2_gpu0@500", "gpu2_gpu1@500", "gpu2_gpu3@500"}));
  EXPECT_EQ(fc->path(0, 3), (std::vector<std::uint32_t>{0, 3}));
  EXPECT_EQ(fc->path(3, 1), (std::vector<std::uint32_t>{3, 1}));
  EXPECT_EQ(fc->path_latency(0, 3), Tick::ns(500));
}

TEST(Topology, SwitchGoesUpAndDownThroughOneSwitchNode) {
  const auto sw = make_topology("switch", 4, test_config("switch"));
  EXPECT_EQ(sw->switch_nodes(), 1u);
  EXPECT_EQ(sw->nodes(), 5u);
  EXPECT_FALSE(sw->direct_links());
  EXPECT_EQ(sw->node_name(4), "sw");
  // The switch's 100 ns are folded into the downlink.
  EXPECT_EQ(links_of(*sw, 2), (std::vector<std::string>{"gpu2_sw@500", "sw_gpu2@600"}));
  EXPECT_EQ(sw->path(1, 3), (std::vector<std::uint32_t>{1, 4, 3}));
  EXPECT_EQ(sw->path_latency(1, 3), Tick::ns(1100));
}

// The network creates exactly the topology's links, GPU by GPU, under their names.
TEST(Topology, TheNetworkBuildsItsTopologysLinksInOrder) {
  for (const RegistryEntry& t : topology_types()) {
    for (const NetMode mode : {NetMode::kFull, NetMode::kHomogeneous}) {
      if (mode == NetMode::kHomogeneous && !make_topology(t.name, 4, test_config(t.name))->shift_symmetric())
        continue;  // refused (TorusTwoD.HomogeneousModeIsRefusedAtTheTopologyKey)
      Rig rig(4, test_config(t.name), mode);
      const Topology& topology = rig.net.topology();
      std::vector<std::string> expected;
      for (std::uint32_t g = 0; g < (mode == NetMode::kFull ? 4u : 1u); ++g)
        for (const TopologyLink& l : topology.links_of(g))
          expected.push_back("net." + topology.node_name(l.from) + "_" + topology.node_name(l.to));
      std::vector<std::string> built;
      for (const Link<NetPacket>* l : rig.net.links()) built.push_back(l->name());
      EXPECT_EQ(built, expected) << t.name << " " << (mode == NetMode::kFull ? "full" : "homogeneous");
    }
  }
}

// torus-2d (impl/torus_2d.cpp): 8 GPUs as 2 x 4 by default (the largest divisor up to
// sqrt 8), row by row; a ring along each row and each column, dimension-order routes.
TEST(Topology, TorusTwoDLinksFourNeighboursAndRoutesColumnsThenRows) {
  const auto t = make_topology("torus-2d", 8, test_config("torus-2d"));
  EXPECT_EQ(t->switch_nodes(), 0u);
  EXPECT_FALSE(t->direct_links());
  EXPECT_FALSE(t->shift_symmetric()) << "GPU 3 is not GPU 4's neighbour";
  EXPECT_FALSE(t->problem().has_value());
  // GPU 5 = row 1, column 1: columns 2 and 0 of its row, then row 0 (two rows: one link).
  EXPECT_EQ(links_of(*t, 5), (std::vector<std::string>{"gpu5_gpu6@500", "gpu5_gpu4@500", "gpu5_gpu1@500"}));
  // 0 -> 6 (row 1, column 2): along row 0 to column 2 (a tie: forward), then down.
  EXPECT_EQ(t->path(0, 6), (std::vector<std::uint32_t>{0, 1, 2, 6}));
  EXPECT_EQ(t->path(0, 7), (std::vector<std::uint32_t>{0, 3, 7}));  // column 3 is one step back
  EXPECT_EQ(t->path_latency(0, 6), Tick::ns(1500));
  EXPECT_EQ(t->path_latency(7, 0), Tick::ns(1000));
  // 16 GPUs: 4 x 4, four links each, at most 2 + 2 hops.
  const auto sq = make_topology("torus-2d", 16, test_config("torus-2d"));
  EXPECT_EQ(sq->links_of(5).size(), 4u);
  EXPECT_EQ(sq->path_latency(0, 10), Tick::ns(2000));
  // One row is a ring, which the shift does map onto itself.
  NetConfig one_row = test_config("torus-2d");
  one_row.torus_rows = 1;
  const auto ring = make_topology("torus-2d", 5, one_row);
  EXPECT_TRUE(ring->shift_symmetric());
  EXPECT_EQ(links_of(*ring, 0), (std::vector<std::string>{"gpu0_gpu1@500", "gpu0_gpu4@500"}));
  // Rows that do not divide the GPUs: a problem naming the key.
  NetConfig three = test_config("torus-2d");
  three.torus_rows = 3;
  const auto bad = make_topology("torus-2d", 8, three);
  ASSERT_TRUE(bad->problem().has_value());
  EXPECT_EQ(bad->problem()->key, "torus_rows");
  EXPECT_THAT(bad->problem()->message, HasSubstr("8 GPUs do not fill 3 rows"));
}

// Every GPU pair's path on a torus is the sum of its two rings' short ways, and every
// route ends where it should (the network's routing tables walk these).
TEST(Topology, TorusTwoDPathsAreShortestPerDimension) {
  NetConfig cfg = test_config("torus-2d");
  cfg.torus_rows = 3;
  const auto t = make_topology("torus-2d", 12, cfg);  // 3 x 4
  for (std::uint32_t s = 0; s < 12; ++s)
    for (std::uint32_t d = 0; d < 12; ++d) {
      const auto path = t->path(s, d);
      ASSERT_EQ(path.back(), d);
      const std::uint32_t dc = std::min((d % 4 + 4 - s % 4) % 4, (s % 4 + 4 - d % 4) % 4);
      const std::uint32_t dr = std::min((d / 4 + 3 - s / 4) % 3, (s / 4 + 3 - d / 4) % 3);
      EXPECT_EQ(path.size() - 1, dc + dr) << s << " -> " << d;
      EXPECT_EQ(t->path_latency(s, d), Tick::ns(500) * (dc + dr)) << s << " -> " << d;
    }
}

TEST(Topology, CallersWithoutANetworkAskThroughTheConfig) {
  EXPECT_EQ(switch_nodes(test_config("switch"), 8), 1u);
  EXPECT_EQ(switch_nodes(test_config("ring"), 8), 0u);
  EXPECT_TRUE(has_direct_links(test_config("fully-connected"), 8));
  EXPECT_FALSE(has_direct_links(test_config("ring"), 8));
  EXPECT_FALSE(has_direct_links(test_config("switch"), 8));
}

TEST(Network, StoreToANeighbourArrivesWithItsDataAndCompletesOnce) {
  Rig rig(4, test_config());
  Sender& s = rig.sender(0, 1);
  MemRequest r = store(0x1000, 1024, MemOp::kWrite, 500);
  r.tag = 77;
  s.queue(std::move(r));
  s.start();
  rig.sim.run();
  ASSERT_EQ(s.done.size(), 1u);
  EXPECT_EQ(s.done[0].first, 77u);
  const Tick one_way = ser(rig.cfg, 1024) + rig.cfg.link.latency;
  ASSERT_EQ(rig.mems[1]->arrivals.size(), 1u);
  EXPECT_EQ(rig.mems[1]->arrivals[0].when, one_way);
  // There, applied, and acknowledged back over the path's latency.
  EXPECT_EQ(s.done[0].second, one_way + kMemLatency + rig.cfg.link.latency);
  for (std::uint32_t w = 0; w < 1024 / kGranule; ++w) EXPECT_EQ(rig.mems[1]->words[0x1000 + w * kGranule], 500 + w);
  EXPECT_EQ(rig.net.bytes_delivered(1, 0), 1024u);
  EXPECT_TRUE(rig.mems[0]->arrivals.empty());
  EXPECT_EQ(rig.link("net.gpu0_gpu1").bytes_sent(), 1024u);
  rig.expect_drained_and_conserved();
}

TEST(Network, ALongStreamRunsAtTheLinkBandwidth) {
  Rig rig(2, test_config());
  Sender& s = rig.sender(0, 1);
  const std::uint64_t bytes = 4 << 20;
  s.queue_stream(0, bytes, 64 << 10);
  s.start();
  rig.sim.run();
  ASSERT_EQ(s.done.size(), bytes / (64 << 10));
  const Tick wire = ser(rig.cfg, bytes);
  const Tick fixed = rig.cfg.link.latency * 2 + kMemLatency;
  EXPECT_GE(s.last(), wire + fixed);
  EXPECT_LE(static_cast<double>((s.last() - fixed).ps()), static_cast<double>(wire.ps()) * 1.01);
  EXPECT_GT(s.refused, 0u);  // the injection queue, not the client, paced it
  const nlohmann::json j = rig.net.link_results(s.last());
  ASSERT_EQ(j["links"].size(), 2u);
  EXPECT_EQ(j["links"][0]["name"], "net.gpu0_gpu1");
  EXPECT_EQ(j["links"][0]["from"], "gpu0");
  EXPECT_EQ(j["links"][0]["to"], "gpu1");
  EXPECT_EQ(j["links"][0]["bytes_sent"], bytes);
  EXPECT_EQ(j["links"][0]["messages"], bytes / 4096);
  EXPECT_GT(j["links"][0]["utilization"].get<double>(), 0.97);
  EXPECT_EQ(j["totals"]["bytes_received"], bytes);
  for (std::uint64_t w = 0; w < bytes / kGranule; w += 997) EXPECT_EQ(rig.mems[1]->words[w * kGranule], 1000 + w);
  rig.expect_drained_and_conserved();
}

NetConfig read(const std::string& yaml) {
  ConfigTree tree = ConfigTree::parse(yaml, "sys.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  return read_net_config(root.child("net"));
}

// Flow control reaches line rate (issue 16): with the default receive buffer (the
// bandwidth-delay product) one long transfer keeps every link on its path >= 95 % busy
// on every topology, at NVLink-4-class bandwidth; 64 packets of 4 KiB cover only
// about half of it (credits come back too late).
TEST(Network, TheDefaultReceiveBufferLetsOneTransferReachLineRate) {
  for (const char* topology : {"ring", "fully-connected", "switch"}) {
    for (const bool bdp : {true, false}) {
      NetConfig c = test_config(topology);
      c.link.bandwidth = Bandwidth(450'000'000'000ULL);
      c.link.rx_buffer = bdp ? rx_buffer_for_line_rate(c) : 64;
      Rig rig(2, c);
      Sender& s = rig.sender(0, 1);
      const std::uint64_t bytes = 32 << 20;
      s.queue_stream(0, bytes, 64 << 10);
      s.start();
      rig.sim.run();
      ASSERT_EQ(s.done.size(), bytes / (64 << 10)) << topology;
      // Utilization over the transfer's own span: its bytes / (the time from the
      // first send to the last byte's arrival less one latency) x bandwidth.
      const Tick span = s.last() - c.link.latency * 2 - kMemLatency;
      const double achieved = static_cast<double>(bytes) / (static_cast<double>(span.ps()) * 1e-12) /
                              static_cast<double>(c.link.bandwidth.bytes_per_second());
      if (bdp) {
        EXPECT_GE(achieved, 0.95) << topology << ": " << c.link.rx_buffer << " packets";
      } else {
        EXPECT_LT(achieved, 0.65) << topology;
      }
      rig.expect_drained_and_conserved();
    }
  }
  NetConfig h200 = test_config("switch");
  h200.link.bandwidth = Bandwidth(450'000'000'000ULL);
  EXPECT_EQ(rx_buffer_for_line_rate(h200), 140u);  // 450 GB/s x 1.009 us x 1.25 / 4 KiB, + 1
  EXPECT_EQ(read("net: {bandwidth: 450GB/s}\n").link.rx_buffer, 140u);
  EXPECT_EQ(read("net: {bandwidth: 450GB/s, rx_buffer_packets: auto}\n").link.rx_buffer, 140u);
  EXPECT_EQ(read("net: {bandwidth: 450GB/s, rx_buffer_packets: 64}\n").link.rx_buffer, 64u);
}

TEST(Network, PacketsAreCutAtThePacketSizeAndNeverCrossARow) {
  Rig rig(2, test_config());
  Sender& s = rig.sender(0, 1);
  MemRequest tile = store(0x10000, 6000 * 3, MemOp::kWrite, 1);  // words for 3 rows of 6000 B
  tile.bytes = 6000;
  tile.rows = 3;
  tile.row_stride = 8192;
  s.queue(std::move(tile));
  s.start();
  rig.sim.run();
  ASSERT_EQ(s.done.size(), 1u);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> got;
  for (const auto& a : rig.mems[1]->arrivals) got.emplace_back(a.address, a.bytes);
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> want = {
      {0x10000, 4096}, {0x10000 + 4096, 1904},                 // row 0
      {0x10000 + 8192, 4096}, {0x10000 + 8192 + 4096, 1904},   // row 1
      {0x10000 + 16384, 4096}, {0x10000 + 16384 + 4096, 1904}  // row 2
  };
  EXPECT_EQ(got, want);
  // Row r's words land in row r (the gaps carry none).
  for (std::uint32_t r = 0; r < 3; ++r)
    for (std::uint32_t w = 0; w < 6000 / kGranule; ++w)
      EXPECT_EQ(rig.mems[1]->words[0x10000 + r * 8192 + w * kGranule], 1 + r * (6000 / kGranule) + w);
  EXPECT_EQ(rig.mems[1]->words.size(), 3u * 6000 / kGranule);
  rig.expect_drained_and_conserved();
}

TEST(Network, WithDataPacketsHoldWholeWordsAndWithoutDataTheSameCuts) {
  NetConfig c = test_config();
  c.packet_bytes = 1000;  // not a multiple of the 16 B granule: cut at 992
  Rig rig(2, c);
  Sender& s = rig.sender(0, 1);
  s.queue(store(0, 2048));
  MemRequest timing_only;
  timing_only.op = MemOp::kWrite;
  timing_only.address = 0x8000;
  timing_only.bytes = 2500;
  s.queue(std::move(timing_only));
  s.start();
  rig.sim.run();
  ASSERT_EQ(s.done.size(), 2u);
  std::vector<std::uint32_t> sizes;
  for (const auto& a : rig.mems[1]->arrivals) sizes.push_back(a.bytes);
  EXPECT_EQ(sizes, (std::vector<std::uint32_t>{992, 992, 64, 1000, 1000, 500}));
  EXPECT_EQ(rig.mems[1]->words.size(), 2048u / kGranule);
  rig.expect_drained_and_conserved();
}

TEST(Network, UpdatesAddAtThePeer) {
  Rig rig(3, test_config("fully-connected"));
  rig.mems[2]->words[0x40] = 35;
  Sender& s = rig.sender(0, 2);
  s.queue(store(0x40, kGranule, MemOp::kUpdate, 7));
  s.start();
  rig.sim.run();
  EXPECT_EQ(rig.mems[2]->words[0x40], 42u);
  ASSERT_EQ(rig.mems[2]->arrivals.size(), 1u);
  EXPECT_EQ(rig.mems[2]->arrivals[0].op, MemOp::kUpdate);
  rig.expect_drained_and_conserved();
}

TEST(Network, AFlagArrivesBehindEarlierDataButDoesNotWaitForAcks) {
  Rig rig(4, test_config());
  Sender& s = rig.sender(0, 1);
  s.queue_stream(0, 64 << 10, 16 << 10);  // 16 packets in 4 requests
  s.start();
  rig.net.access(0).set_peer_flag(1, 5, 9);
  rig.sim.run();
  ASSERT_EQ(rig.mems[1]->flags.size(), 1u);
  EXPECT_EQ(rig.mems[1]->flags[0], std::make_pair(std::uint64_t{5}, std::uint64_t{9}));
  EXPECT_EQ(rig.mems[1]->arrivals_at_flag[0], 16u);  // every data packet was in the memory first
  EXPECT_EQ(s.done.size(), 4u);
  rig.expect_drained_and_conserved();
}

TEST(Network, FlagsAreNeverRefusedAndKeepTheirOrder) {
  Rig rig(2, test_config());
  for (std::uint64_t v = 1; v <= 40; ++v) rig.net.access(0).set_peer_flag(1, 3, v);  // past the queue bound
  rig.sim.run();
  ASSERT_EQ(rig.mems[1]->flags.size(), 40u);
  for (std::uint64_t v = 1; v <= 40; ++v) EXPECT_EQ(rig.mems[1]->flags[v - 1].second, v);
  EXPECT_EQ(rig.link("net.gpu0_gpu1").bytes_sent(), 40u * rig.cfg.flag_bytes);
  rig.expect_drained_and_conserved();
}

TEST(Network, RingRoutesANonNeighbourTheShortWayThroughTheMiddleGpu) {
  Rig rig(5, test_config());
  Sender& forward = rig.sender(0, 2);   // 0 -> 1 -> 2
  Sender& backward = rig.sender(0, 3);  // 0 -> 4 -> 3
  forward.queue(store(0, 4096));
  backward.queue(store(0, 4096));
  forward.start();
  backward.start();
  rig.sim.run();
  EXPECT_EQ(rig.link("net.gpu0_gpu1").bytes_sent(), 4096u);
  EXPECT_EQ(rig.link("net.gpu1_gpu2").bytes_sent(), 4096u);
  EXPECT_EQ(rig.link("net.gpu0_gpu4").bytes_sent(), 4096u);
  EXPECT_EQ(rig.link("net.gpu4_gpu3").bytes_sent(), 4096u);
  EXPECT_EQ(rig.link("net.gpu2_gpu3").bytes_sent(), 0u);
  EXPECT_EQ(rig.mems[1]->arrivals.size(), 0u);  // forwarded, not delivered
  EXPECT_EQ(rig.net.bytes_delivered(2, 0), 4096u);
  EXPECT_EQ(rig.net.bytes_delivered(3, 0), 4096u);
  // Store and forward: two serializations and two latencies; acks come back over two links.
  const Tick expected = (ser(rig.cfg, 4096) + rig.cfg.link.latency) * 2 + kMemLatency + rig.cfg.link.latency * 2;
  EXPECT_EQ(forward.last(), expected);
  EXPECT_EQ(backward.last(), expected);
  rig.expect_drained_and_conserved();
}

TEST(Network, RingTieGoesForward) {
  Rig rig(4, test_config());
  Sender& s = rig.sender(1, 3);  // two hops either way
  s.queue(store(0, 256));
  s.start();
  rig.sim.run();
  EXPECT_EQ(rig.link("net.gpu1_gpu2").bytes_sent(), 256u);
  EXPECT_EQ(rig.link("net.gpu2_gpu3").bytes_sent(), 256u);
  EXPECT_EQ(rig.link("net.gpu1_gpu0").bytes_sent(), 0u);
  rig.expect_drained_and_conserved();
}

// Every GPU of a ring storing to every other at once (a fused kernel's remote tile
// stores): the far stores cross middle GPUs, whose receive buffers would otherwise
// fill with packets waiting for their own full transmit buffers, in a cycle around
// the ring. GPUs relay without waiting for their transmit buffers, so it drains
// (this deadlocked with 5 us links before they did).
TEST(Network, RingAllToAllWithLongLinksDrains) {
  NetConfig c = test_config();
  c.link.latency = Tick::us(5);
  Rig rig(4, c);
  std::vector<Sender*> senders;
  for (std::uint32_t from = 0; from < 4; ++from)
    for (std::uint32_t to = 0; to < 4; ++to) {
      if (to == from) continue;
      Sender& s = rig.sender(from, to);
      for (int i = 0; i < 64; ++i) s.queue(store(std::uint64_t(i) << 20, 64u << 10));
      senders.push_back(&s);
    }
  for (Sender* s : senders) s->start();
  rig.sim.run();
  for (std::uint32_t to = 0; to < 4; ++to)
    for (std::uint32_t from = 0; from < 4; ++from)
      if (from != to) {
        EXPECT_EQ(rig.net.bytes_delivered(to, from), 64u * (64u << 10)) << from << " -> " << to;
      }
  rig.expect_drained_and_conserved();
}

TEST(Network, FullyConnectedPairsAreIndependent) {
  const std::uint64_t bytes = 2 << 20;
  Rig rig(3, test_config("fully-connected"));
  Sender& a = rig.sender(0, 1);
  Sender& b = rig.sender(0, 2);
  a.queue_stream(0, bytes, 64 << 10);
  b.queue_stream(0, bytes, 64 << 10);
  a.start();
  b.start();
  rig.sim.run();
  EXPECT_EQ(rig.net.links().size(), 6u);
  const Tick fixed = rig.cfg.link.latency * 2 + kMemLatency;
  const double alone = static_cast<double>((ser(rig.cfg, bytes) + fixed).ps());
  EXPECT_NEAR(static_cast<double>(a.last().ps()) / alone, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(b.last().ps()) / alone, 1.0, 0.01);
  rig.expect_drained_and_conserved();
}

TEST(Network, SwitchSendersShareTheReceiversDownlink) {
  const std::uint64_t bytes = 2 << 20;
  Rig rig(3, test_config("switch"));
  EXPECT_EQ(rig.net.links().size(), 6u);
  Sender& a = rig.sender(0, 2);
  Sender& b = rig.sender(1, 2);
  a.queue_stream(0, bytes, 64 << 10);
  b.queue_stream(bytes, bytes, 64 << 10);
  a.start();
  b.start();
  rig.sim.run();
  // Both finish at about the time the downlink needs for both streams: half of it
  // each. Plus the fixed part: the first packet's uplink serialization, latencies
  // both ways (two links and the switch each), the memory.
  const Tick path = rig.cfg.link.latency * 2 + rig.cfg.switch_latency;
  const Tick fixed = ser(rig.cfg, 4096) + path * 2 + kMemLatency;
  const double shared = static_cast<double>((ser(rig.cfg, 2 * bytes) + fixed).ps());
  EXPECT_NEAR(static_cast<double>(a.last().ps()) / shared, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(b.last().ps()) / shared, 1.0, 0.01);
  EXPECT_GE(std::min(a.last(), b.last()), ser(rig.cfg, 2 * bytes) - ser(rig.cfg, 64 << 10));
  EXPECT_EQ(rig.link("net.sw_gpu2").bytes_sent(), 2 * bytes);
  EXPECT_EQ(rig.link("net.gpu0_sw").bytes_sent(), bytes);
  EXPECT_EQ(rig.link("net.gpu1_sw").bytes_sent(), bytes);
  rig.expect_drained_and_conserved();
}

TEST(Network, SwitchAddsItsLatencyBetweenTwoLinks) {
  Rig rig(4, test_config("switch"));
  Sender& s = rig.sender(3, 1);
  s.queue(store(0, 4096));
  s.start();
  rig.sim.run();
  const Tick one_way = (ser(rig.cfg, 4096) + rig.cfg.link.latency) * 2 + rig.cfg.switch_latency;
  ASSERT_EQ(rig.mems[1]->arrivals.size(), 1u);
  EXPECT_EQ(rig.mems[1]->arrivals[0].when, one_way);
  EXPECT_EQ(s.last(), one_way + kMemLatency + rig.cfg.link.latency * 2 + rig.cfg.switch_latency);
  rig.expect_drained_and_conserved();
}

TEST(Network, ARefusingMemoryStallsTheSenderAndNothingIsLost) {
  const std::uint64_t bytes = 1 << 20;
  Rig rig(2, test_config());
  rig.mems[1]->set_refusing(true);
  Sender& s = rig.sender(0, 1);
  s.queue_stream(0, bytes, 4096);
  s.start();
  bool stalled = false, nothing_arrived = false;
  rig.sim.events().schedule_callback(Tick::us(50), [&] {
    stalled = !rig.net.access(0).peer_memory(1).can_accept(MemRequest{});
    nothing_arrived = rig.mems[1]->arrivals.empty();
    rig.mems[1]->set_refusing(false);
  });
  rig.sim.run();
  EXPECT_TRUE(stalled);
  EXPECT_TRUE(nothing_arrived);
  EXPECT_GT(s.refused, 0u);
  EXPECT_EQ(s.done.size(), bytes / 4096);
  EXPECT_EQ(rig.mems[1]->words.size(), bytes / kGranule);
  for (std::uint64_t w = 0; w < bytes / kGranule; w += 101) EXPECT_EQ(rig.mems[1]->words[w * kGranule], 1000 + w);
  EXPECT_EQ(rig.net.bytes_delivered(1, 0), bytes);
  rig.expect_drained_and_conserved();
}

// The same in homogeneous mode, through the mirrored second hop of a far peer.
TEST(Network, HomogeneousBackPressureThroughAMirroredHopLosesNothing) {
  const std::uint64_t bytes = 1 << 20;  // more than the buffers on the way hold
  Rig rig(6, test_config(), NetMode::kHomogeneous);
  rig.mems[0]->set_refusing(true);
  Sender& s = rig.sender(0, 2);
  s.queue_stream(0, bytes, 4096);
  s.start();
  bool stalled = false;
  rig.sim.events().schedule_callback(Tick::us(50), [&] {
    stalled = !rig.net.access(0).peer_memory(2).can_accept(MemRequest{});
    rig.mems[0]->set_refusing(false);
  });
  rig.sim.run();
  EXPECT_TRUE(stalled);
  EXPECT_EQ(s.done.size(), bytes / 4096);
  EXPECT_EQ(rig.net.bytes_delivered(0, 4), bytes);
  EXPECT_EQ(rig.mems[0]->words.size(), bytes / kGranule);
  rig.expect_drained_and_conserved();
}

TEST(Network, ADeadlockReportSaysWhatWaits) {
  Rig rig(2, test_config());
  rig.mems[1]->set_refusing(true);
  Sender& s = rig.sender(0, 1);
  s.queue_stream(0, 1 << 20, 4096);
  s.start();
  try {
    rig.sim.run();
    ADD_FAILURE() << "expected a deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("net: gpu0: "));
    EXPECT_THAT(e.what(), HasSubstr("requests awaiting acknowledgments"));
    EXPECT_THAT(e.what(), HasSubstr("net: gpu0 -> gpu1: "));
    EXPECT_THAT(e.what(), HasSubstr("net: gpu1: arrived packets wait for its memory"));
  }
}

TEST(Network, HomogeneousMirrorsPeersOntoGpuZero) {
  NetConfig c = test_config();
  Rig rig(4, c, NetMode::kHomogeneous);
  ASSERT_EQ(rig.net.links().size(), 2u);  // gpu0_gpu1, gpu0_gpu3
  Sender& near = rig.sender(0, 1);
  Sender& far = rig.sender(0, 2);
  near.queue(store(0x100, 4096, MemOp::kWrite, 10));
  far.queue(store(0x200000, 4096, MemOp::kWrite, 20));
  near.start();
  far.start();
  rig.sim.run();
  // GPU 0 receives what GPU 3 (= -1 mod 4) and GPU 2 (= -2 mod 4) would send it.
  EXPECT_EQ(rig.net.bytes_delivered(0, 3), 4096u);
  EXPECT_EQ(rig.net.bytes_delivered(0, 2), 4096u);
  EXPECT_EQ(rig.net.bytes_delivered(0, 1), 0u);
  EXPECT_EQ(rig.mems[0]->words[0x100], 10u);
  EXPECT_EQ(rig.mems[0]->words[0x200000], 20u);
  // The far store took its first hop on gpu0_gpu1 (a tie goes forward), then crossed
  // it again standing for GPU 1's gpu1_gpu2 (GPU 0's link stands for every GPU's in
  // its direction).
  EXPECT_EQ(rig.link("net.gpu0_gpu1").bytes_sent(), 3u * 4096);
  EXPECT_EQ(rig.link("net.gpu0_gpu3").bytes_sent(), 0u);
  const Tick hop = ser(c, 4096) + c.link.latency;
  // Same times as the full system gives GPU 0's sends (single packets, no contention
  // except the shared first link: the far packet follows the near one by 64 ns).
  EXPECT_EQ(near.last(), hop + kMemLatency + c.link.latency);
  EXPECT_EQ(far.last(), ser(c, 4096) + hop * 2 + kMemLatency + c.link.latency * 2);
  rig.expect_drained_and_conserved();

  // The full ring, for comparison.
  Rig full(4, c);
  Sender& fnear = full.sender(0, 1);
  Sender& ffar = full.sender(0, 2);
  fnear.queue(store(0x100, 4096));
  ffar.queue(store(0x200000, 4096));
  fnear.start();
  ffar.start();
  full.sim.run();
  EXPECT_EQ(fnear.last(), near.last());
  EXPECT_EQ(ffar.last(), far.last());
}

TEST(Network, HomogeneousSwitchAndFullyConnectedUseGpuZerosOwnLinks) {
  {
    Rig rig(4, test_config("switch"), NetMode::kHomogeneous);
    ASSERT_EQ(rig.net.links().size(), 2u);
    Sender& s = rig.sender(0, 1);
    s.queue(store(0, 4096));
    s.start();
    rig.sim.run();
    EXPECT_EQ(rig.link("net.gpu0_sw").bytes_sent(), 4096u);
    EXPECT_EQ(rig.link("net.sw_gpu0").bytes_sent(), 4096u);
    EXPECT_EQ(rig.net.bytes_delivered(0, 3), 4096u);
    rig.expect_drained_and_conserved();
  }
  {
    Rig rig(4, test_config("fully-connected"), NetMode::kHomogeneous);
    ASSERT_EQ(rig.net.links().size(), 3u);
    for (std::uint32_t d = 1; d < 4; ++d) {
      Sender& s = rig.sender(0, d);
      s.queue(store(d << 20, 1024));
      s.start();
    }
    rig.sim.run();
    for (std::uint32_t d = 1; d < 4; ++d) {
      EXPECT_EQ(rig.link(fmt::format("net.gpu0_gpu{}", d)).bytes_sent(), 1024u);
      EXPECT_EQ(rig.net.bytes_delivered(0, 4 - d), 1024u);
    }
    rig.expect_drained_and_conserved();
  }
}

// All-to-all on a fully-connected or switched node is symmetric: GPU 0 alone,
// mirrored, sees exactly what it sees in the full system.
class HomogeneousVsFull : public ::testing::TestWithParam<std::string> {};

TEST_P(HomogeneousVsFull, MatchOnASymmetricAllToAll) {
  const NetConfig c = test_config(GetParam());
  auto run = [&c](NetMode mode) {
    Rig rig(4, c, mode);
    const std::uint32_t senders = mode == NetMode::kFull ? 4 : 1;
    std::vector<Sender*> from_gpu0;
    for (std::uint32_t g = 0; g < senders; ++g)
      for (std::uint32_t k = 1; k < 4; ++k) {
        Sender& s = rig.sender(g, (g + k) % 4);
        s.queue_stream(std::uint64_t{k} << 24, 256 << 10, 16 << 10);  // same address per offset k
        s.start();
        if (g == 0) from_gpu0.push_back(&s);
      }
    rig.sim.run();
    std::vector<Tick> times;
    for (Sender* s : from_gpu0)
      for (const auto& d : s->done) times.push_back(d.second);
    std::vector<std::pair<std::uint64_t, Tick>> arrivals;
    for (const auto& a : rig.mems[0]->arrivals) arrivals.emplace_back(a.address, a.when);
    std::sort(arrivals.begin(), arrivals.end());
    rig.expect_drained_and_conserved();
    return std::make_pair(times, arrivals);
  };
  const auto full = run(NetMode::kFull);
  const auto homogeneous = run(NetMode::kHomogeneous);
  EXPECT_EQ(full.first, homogeneous.first);
  EXPECT_EQ(full.second, homogeneous.second);
}

INSTANTIATE_TEST_SUITE_P(Topologies, HomogeneousVsFull, ::testing::Values("fully-connected", "switch"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           return std::string(p.param == "switch" ? "Switch" : "FullyConnected");
                         });

// On a ring the far stores are relayed by the middle GPU on its own link, beside what
// it sends itself; homogeneous mode relays them on GPU 0's link again (which stands
// for every GPU's link in its direction), so the relays compete with GPU 0's own
// traffic as they do in the full ring. The round-robin between a link's sources
// interleaves them a little differently, so the all-to-all's end agrees closely, not
// exactly.
TEST(Network, HomogeneousRingRelaysCompeteLikeTheFullRing) {
  auto last = [](NetMode mode, std::uint64_t* relayed_bytes) {
    Rig rig(4, test_config("ring"), mode);
    const std::uint32_t senders = mode == NetMode::kFull ? 4 : 1;
    std::vector<Sender*> all;
    for (std::uint32_t g = 0; g < senders; ++g)
      for (std::uint32_t k = 1; k < 4; ++k) {
        Sender& s = rig.sender(g, (g + k) % 4);
        s.queue_stream(std::uint64_t{k} << 24, 256 << 10, 16 << 10);
        s.start();
        all.push_back(&s);
      }
    rig.sim.run();
    rig.expect_drained_and_conserved();
    *relayed_bytes = rig.link("net.gpu0_gpu1").bytes_sent();
    // The node's all-to-all ends when its last store is acknowledged (in homogeneous
    // mode GPU 0's stand for every GPU's).
    Tick end;
    for (Sender* s : all) end = std::max(end, s->last());
    return static_cast<double>(end.ps());
  };
  std::uint64_t full_bytes = 0, homogeneous_bytes = 0;
  const double full = last(NetMode::kFull, &full_bytes), homogeneous = last(NetMode::kHomogeneous, &homogeneous_bytes);
  // gpu0_gpu1 carries GPU 0's stores to 1 and 2 (a tie goes forward) and relays GPU
  // 3's to 1: three streams of 256 KiB in both modes.
  EXPECT_EQ(full_bytes, 3u * (256u << 10));
  EXPECT_EQ(homogeneous_bytes, full_bytes);
  // 13.80 vs 14.36 us; delaying relays without a link instead (before) gave 10.27.
  EXPECT_NEAR(homogeneous / full, 1.0, 0.05) << full << " vs " << homogeneous;
}

TEST(Network, IdenticalRunsGiveIdenticalTimes) {
  auto run = [] {
    Rig rig(6, test_config());
    std::vector<Tick> times;
    for (std::uint32_t g = 0; g < 6; ++g)
      for (std::uint32_t d = 0; d < 6; ++d) {
        if (d == g) continue;
        Sender& s = rig.sender(g, d);
        s.queue_stream(std::uint64_t{g} << 24, 48 << 10, 12 << 10, d % 2 ? MemOp::kUpdate : MemOp::kWrite);
        s.start();
        rig.net.access(g).set_peer_flag(d, g, 1);
      }
    rig.sim.run();
    for (const auto& s : rig.senders)
      for (const auto& d : s->done) times.push_back(d.second);
    for (const auto& m : rig.mems)
      for (const auto& a : m->arrivals) times.push_back(a.when);
    rig.expect_drained_and_conserved();
    return times;
  };
  const auto a = run();
  const auto b = run();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST(Network, LargeNodesBuildAndRoute) {
  for (const char* topology : {"ring", "switch"}) {
    Simulator sim(1);
    Network net(sim, "net", 1024, test_config(topology), NetMode::kFull);
    EXPECT_TRUE(net.idle()) << topology;
  }
  Simulator sim(1);
  Network net(sim, "net", 64, test_config("fully-connected"), NetMode::kFull);
  EXPECT_EQ(net.links().size(), 64u * 63);
}


TEST(NetworkConfig, ReadsTheNewKeysWithDefaults) {
  const NetConfig d = read("net: {}\n");
  EXPECT_EQ(d.topology, "ring");
  EXPECT_EQ(d.switch_latency, Tick::ns(100));
  EXPECT_EQ(d.flag_bytes, 64u);
  EXPECT_EQ(d.injection_queue_packets, 16u);
  const NetConfig c =
      read("net:\n  topology: switch\n  switch_latency: 250ns\n  flag_size: 32\n  injection_queue_packets: 4\n");
  EXPECT_EQ(c.topology, "switch");
  EXPECT_EQ(c.switch_latency, Tick::ns(250));
  EXPECT_EQ(c.flag_bytes, 32u);
  EXPECT_EQ(c.injection_queue_packets, 4u);
  EXPECT_EQ(read("net: {topology: fully-connected}\n").topology, "fully-connected");
}

TEST(NetworkConfig, AnUnknownTopologyNamesTheKey) {
  try {
    read("net:\n  topology: torus\n");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "net.topology");
    EXPECT_THAT(e.what(), HasSubstr("sys.yaml:2: net.topology: expected one of fully-connected, ring, switch, torus-2d"));
  }
  try {
    read("net:\n  topology: ring\n  torus_rows: 2\n");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "net.torus_rows");
    EXPECT_THAT(e.what(), HasSubstr("only topology torus-2d has rows (this network is a ring)"));
  }
  EXPECT_EQ(read("net: {topology: torus-2d, torus_rows: 2}\n").torus_rows, 2u);
  try {
    read("net:\n  topology: swich\n");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "net.topology");
    EXPECT_THAT(e.what(), HasSubstr("(did you mean 'switch'?)"));
  }
  try {
    read("net:\n  injection_queue_packets: 0\n");
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("net.injection_queue_packets"));
  }
}

}  // namespace
}  // namespace t3sim
