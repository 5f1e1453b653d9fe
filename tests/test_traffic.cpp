// Synthetic memory traffic generators and their functional reference, against a fake
// memory with a fixed latency and an optional capacity.
#include "models/traffic/traffic_generator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/component.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

using ::testing::HasSubstr;

constexpr std::uint32_t kGranule = 32;

// A memory that completes every request `latency` after accepting it, holds at most
// `capacity` at a time (refusing beyond), can be told to refuse everything, and
// applies data functionally (at accept time: memory order = accept order).
class FakeMemory final : public Component, public MemTarget {
 public:
  FakeMemory(Component& parent, Tick latency, std::size_t capacity = std::numeric_limits<std::size_t>::max())
      : Component(parent, "mem"), latency_(latency), capacity_(capacity) {}

  bool can_accept(const MemRequest& /*req*/) const override { return !refusing_ && in_flight_.size() < capacity_; }

  void accept(MemRequest&& req) override {
    EXPECT_TRUE(can_accept(req)) << "accept() without can_accept()";
    apply(req);
    Record rec{req.op, req.stream, req.uncached, req.address, req.bytes, req.created, now(), req.data.words.size()};
    records.push_back(rec);
    const std::uint64_t id = next_id_++;
    in_flight_.emplace(id, std::move(req));
    max_in_flight = std::max(max_in_flight, in_flight_.size());
    sim().events().schedule_callback(now() + latency_, [this, id] { complete(id); });
  }

  void wait_for_space(MemClient* client) override {
    if (std::find(waiters_.begin(), waiters_.end(), client) == waiters_.end()) waiters_.push_back(client);
    ++wait_calls;
  }

  void set_refusing(bool refusing) {
    refusing_ = refusing;
    if (!refusing_) notify();
  }

  // Stored word per granule (zero where never written).
  std::uint64_t word(std::uint64_t address) const {
    auto it = store.find(address);
    return it == store.end() ? 0 : it->second;
  }
  Payload peek(std::uint64_t address, std::uint32_t bytes) const {
    Payload p;
    for (std::uint64_t a = address; a < address + bytes; a += kGranule) p.words.push_back(word(a));
    return p;
  }

  struct Record {
    MemOp op;
    Stream stream;
    bool uncached;
    std::uint64_t address;
    std::uint32_t bytes;
    Tick created;
    Tick accepted;
    std::size_t words;
  };
  std::vector<Record> records;
  std::size_t max_in_flight = 0;
  std::uint64_t wait_calls = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> store;

 private:
  void apply(MemRequest& req) {
    for (std::size_t j = 0; j < req.data.words.size(); ++j) {
      const std::uint64_t a = req.address + j * kGranule;
      switch (req.op) {
        case MemOp::kRead: req.data.words[j] = word(a); break;
        case MemOp::kWrite: store[a] = req.data.words[j]; break;
        case MemOp::kUpdate: store[a] += req.data.words[j]; break;
      }
    }
  }
  void complete(std::uint64_t id) {
    auto it = in_flight_.find(id);
    MemRequest req = std::move(it->second);
    in_flight_.erase(it);
    MemClient* client = req.client;
    client->on_mem_response(std::move(req));
    notify();
  }
  void notify() {
    if (refusing_ || waiters_.empty()) return;
    std::vector<MemClient*> w;
    w.swap(waiters_);
    for (MemClient* c : w) c->on_mem_retry();
  }

  Tick latency_;
  std::size_t capacity_;
  bool refusing_ = false;
  std::uint64_t next_id_ = 0;
  std::map<std::uint64_t, MemRequest> in_flight_;
  std::vector<MemClient*> waiters_;
};

TrafficConfig default_config() {
  TrafficConfig c;
  c.name = "gen";
  c.request_size = 128;
  c.footprint = 1 << 20;
  c.max_outstanding = 8;
  c.requests = 100;
  return c;
}

// One GPU with a fake memory and any number of generators.
struct Rig {
  explicit Rig(Tick latency = Tick::ns(100), std::size_t capacity = std::numeric_limits<std::size_t>::max(),
               std::uint64_t seed = 1)
      : sim(seed), gpu(sim, "gpu0"), mem(gpu, latency, capacity) {}
  TrafficGenerator& add(const TrafficConfig& cfg) {
    gens.push_back(std::make_unique<TrafficGenerator>(gpu, cfg, sim.seed(), mem, kGranule));
    return *gens.back();
  }
  void start_all() {
    for (auto& g : gens) g->start();
  }
  Simulator sim;
  Component gpu;
  FakeMemory mem;
  std::vector<std::unique_ptr<TrafficGenerator>> gens;
};

// ---------------------------------------------------------------------------
// Timing

TEST(TrafficClosedLoop, NeverExceedsMaxOutstandingAndAchievesLittlesLaw) {
  for (std::uint32_t k : {1u, 4u, 16u, 64u}) {
    const Tick latency = Tick::ns(700);
    Rig rig(latency);
    TrafficConfig cfg = default_config();
    cfg.max_outstanding = k;
    cfg.requests = 200 * k;
    TrafficGenerator& g = rig.add(cfg);
    rig.start_all();
    rig.sim.run();
    EXPECT_TRUE(g.finished());
    EXPECT_EQ(g.completed(), cfg.requests);
    EXPECT_EQ(rig.mem.max_in_flight, k);
    const double expected = static_cast<double>(k) * cfg.request_size / latency.seconds();
    EXPECT_NEAR(g.achieved_bandwidth() / expected, 1.0, 0.01) << "K=" << k;
    // Every request waited exactly the memory's latency.
    EXPECT_DOUBLE_EQ(g.latency().mean(), 700.0);
    EXPECT_EQ(g.latency().percentile(0.99), 700.0 + 10.0);  // bucket [700, 710) reported by its upper edge
    EXPECT_EQ(g.bytes(), cfg.requests * cfg.request_size);
    // Stats are registered under the generator's name.
    EXPECT_NE(rig.sim.stats().find("gpu0.gen.latency"), nullptr);
    EXPECT_NE(rig.sim.stats().find("gpu0.gen.read_bytes"), nullptr);
  }
}

TEST(TrafficOpenLoop, RateSpacesIssuesExactly) {
  Rig rig(Tick::ns(500));
  TrafficConfig cfg = default_config();
  cfg.rate = Bandwidth(3'000'000'000ULL);  // 3 GB/s: 128 B every 42.67 ns
  cfg.max_outstanding = 64;
  cfg.requests = 3000;
  cfg.start = Tick::ns(250);
  TrafficGenerator& g = rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  ASSERT_EQ(rig.mem.records.size(), cfg.requests);
  for (std::size_t i = 0; i < rig.mem.records.size(); ++i) {
    ASSERT_EQ(rig.mem.records[i].created, cfg.start + cfg.rate.transfer_time(i * cfg.request_size)) << i;
  }
  // Issue rate, independent of latency: (n - 1) gaps of size/rate.
  const double span = (rig.mem.records.back().created - rig.mem.records.front().created).seconds();
  EXPECT_NEAR(static_cast<double>(cfg.requests - 1) * cfg.request_size / span / 3e9, 1.0, 1e-6);
  EXPECT_EQ(rig.mem.max_in_flight, 12u);  // ceil(500 / 42.67): the closed loop never binds
  EXPECT_NEAR(g.achieved_bandwidth() / 3e9, 1.0, 0.01);
}

TEST(TrafficOpenLoop, ClosedLoopLimitCapsAnOpenLoopRate) {
  Rig rig(Tick::ns(1000));
  TrafficConfig cfg = default_config();
  cfg.rate = Bandwidth(100'000'000'000ULL);  // asks for 100 GB/s
  cfg.max_outstanding = 4;                    // allows 4 x 128 B / 1 us = 0.512 GB/s
  cfg.requests = 400;
  TrafficGenerator& g = rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  EXPECT_EQ(rig.mem.max_in_flight, 4u);
  EXPECT_NEAR(g.achieved_bandwidth() / 0.512e9, 1.0, 0.01);
}

TEST(TrafficBurst, IssuesOnlyInOnWindows) {
  Rig rig(Tick::ns(100));
  TrafficConfig cfg = default_config();
  cfg.stream = Stream::kCommunication;
  cfg.burst_on = Tick::us(2);
  cfg.burst_off = Tick::us(6);
  cfg.start = Tick::ns(300);
  cfg.requests = 0;
  cfg.duration = Tick::us(40);
  cfg.max_outstanding = 4;
  TrafficGenerator& g = rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  ASSERT_TRUE(g.finished());
  const Tick::rep period = (cfg.burst_on + cfg.burst_off).ps();
  std::set<Tick::rep> windows;
  for (const auto& r : rig.mem.records) {
    ASSERT_GE(r.created, cfg.start);
    const Tick::rep since = (r.created - cfg.start).ps();
    ASSERT_LT(since % period, cfg.burst_on.ps()) << "issued at " << to_string(r.created) << " in an off-window";
    ASSERT_LT(r.created, cfg.start + cfg.duration);
    EXPECT_EQ(r.stream, Stream::kCommunication);
    windows.insert(since / period);
  }
  EXPECT_EQ(windows.size(), 5u);  // 40 us / 8 us
  // Closed loop inside each window: 4 per 100 ns for 2 us.
  EXPECT_EQ(rig.mem.records.size(), 5u * 4u * 20u);
  // Sleeping through off-windows costs no events: about one per response + one per window.
  EXPECT_LT(rig.sim.events().dispatched(), 3 * rig.mem.records.size());
}

TEST(TrafficBurst, RateCapAppliesInsideWindows) {
  Rig rig(Tick::ns(100));
  TrafficConfig cfg = default_config();
  cfg.burst_on = Tick::us(1);
  cfg.burst_off = Tick::us(1);
  cfg.rate = Bandwidth(1'280'000'000ULL);  // one 128 B request per 100 ns
  cfg.requests = 30;
  rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  ASSERT_EQ(rig.mem.records.size(), 30u);
  for (std::size_t i = 0; i < 30; ++i) {
    // 10 per on-window, at 0, 100, ..., 900 ns of each 2 us period.
    EXPECT_EQ(rig.mem.records[i].created, Tick::us(2) * (i / 10) + Tick::ns(100) * (i % 10)) << i;
  }
}

// ---------------------------------------------------------------------------
// Addresses and operations

TEST(TrafficAddresses, SequentialWrapsAroundTheFootprint) {
  Rig rig;
  TrafficConfig cfg = default_config();
  cfg.address = 4096;
  cfg.footprint = 1024;
  cfg.requests = 20;
  rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  ASSERT_EQ(rig.mem.records.size(), 20u);
  for (std::size_t i = 0; i < 20; ++i) EXPECT_EQ(rig.mem.records[i].address, 4096 + (i % 8) * 128) << i;
}

TEST(TrafficAddresses, StridedVisitsEverySlotOncePerSweep) {
  Rig rig;
  TrafficConfig cfg = default_config();
  cfg.pattern = TrafficPattern::kStrided;
  cfg.address = 1 << 16;
  cfg.footprint = 2048;
  cfg.stride = 512;
  cfg.requests = 32;
  rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  ASSERT_EQ(rig.mem.records.size(), 32u);
  EXPECT_EQ(rig.mem.records[0].address, cfg.address);
  EXPECT_EQ(rig.mem.records[1].address, cfg.address + 512);
  EXPECT_EQ(rig.mem.records[4].address, cfg.address + 128);  // second pass, shifted by one request
  for (std::size_t sweep = 0; sweep < 2; ++sweep) {
    std::set<std::uint64_t> seen;
    for (std::size_t i = 0; i < 16; ++i) seen.insert(rig.mem.records[sweep * 16 + i].address);
    EXPECT_EQ(seen.size(), 16u);
    EXPECT_EQ(*seen.begin(), cfg.address);
    EXPECT_EQ(*seen.rbegin(), cfg.address + 2048 - 128);
  }
}

std::vector<std::uint64_t> random_addresses(std::uint64_t seed, const std::string& name = "gen") {
  Rig rig(Tick::ns(100), std::numeric_limits<std::size_t>::max(), seed);
  TrafficConfig cfg = default_config();
  cfg.name = name;
  cfg.pattern = TrafficPattern::kRandom;
  cfg.address = 3 * 1024 * 1024;
  cfg.footprint = 96 * 1024;  // 768 slots: not a power of two
  cfg.requests = 5000;
  rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  std::vector<std::uint64_t> out;
  for (const auto& r : rig.mem.records) out.push_back(r.address);
  return out;
}

TEST(TrafficAddresses, RandomIsAlignedInRangeAndDeterministic) {
  const auto a = random_addresses(7);
  ASSERT_EQ(a.size(), 5000u);
  std::set<std::uint64_t> distinct;
  for (std::uint64_t addr : a) {
    ASSERT_GE(addr, 3u * 1024 * 1024);
    ASSERT_LE(addr + 128, 3u * 1024 * 1024 + 96 * 1024);
    ASSERT_EQ((addr - 3 * 1024 * 1024) % 128, 0u);
    distinct.insert(addr);
  }
  EXPECT_GT(distinct.size(), 700u);  // 5000 draws over 768 slots cover nearly all of them
  EXPECT_EQ(random_addresses(7), a);
  EXPECT_NE(random_addresses(8), a);
  EXPECT_NE(random_addresses(7, "other"), a);  // each generator has its own stream
}

TEST(TrafficOps, MixFollowsReadFraction) {
  Rig rig(Tick::ns(10));
  TrafficConfig cfg = default_config();
  cfg.op = TrafficOp::kMix;
  cfg.read_fraction = 0.3;
  cfg.requests = 20000;
  cfg.max_outstanding = 64;
  TrafficGenerator& g = rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  const auto reads = std::count_if(rig.mem.records.begin(), rig.mem.records.end(),
                                   [](const auto& r) { return r.op == MemOp::kRead; });
  const double fraction = static_cast<double>(reads) / 20000.0;
  EXPECT_NEAR(fraction, 0.3, 5 * std::sqrt(0.3 * 0.7 / 20000));  // 5 sigma
  const auto* read_bytes = dynamic_cast<const Counter*>(rig.sim.stats().find("gpu0.gen.read_bytes"));
  const auto* write_bytes = dynamic_cast<const Counter*>(rig.sim.stats().find("gpu0.gen.write_bytes"));
  ASSERT_NE(read_bytes, nullptr);
  ASSERT_NE(write_bytes, nullptr);
  EXPECT_EQ(read_bytes->value(), static_cast<std::uint64_t>(reads) * 128);
  EXPECT_EQ(read_bytes->value() + write_bytes->value(), g.bytes());
}

TEST(TrafficOps, UpdatesBypassTheCacheAndReadsCarryPresizedPayloads) {
  Rig rig;
  TrafficConfig upd = default_config();
  upd.name = "upd";
  upd.op = TrafficOp::kUpdate;
  upd.requests = 10;
  TrafficConfig rd = default_config();
  rd.name = "rd";
  rd.values = true;
  rd.uncached = false;
  rd.requests = 10;
  TrafficConfig timing = default_config();
  timing.name = "timing";
  timing.uncached = true;
  timing.op = TrafficOp::kWrite;
  timing.requests = 10;
  rig.add(upd);
  rig.add(rd);
  rig.add(timing);
  rig.start_all();
  rig.sim.run();
  for (const auto& r : rig.mem.records) {
    if (r.op == MemOp::kUpdate) {
      EXPECT_TRUE(r.uncached);
      EXPECT_EQ(r.words, 0u);  // values: false
    } else if (r.op == MemOp::kRead) {
      EXPECT_FALSE(r.uncached);
      EXPECT_EQ(r.words, 128u / kGranule);
    } else {
      EXPECT_TRUE(r.uncached);
      EXPECT_EQ(r.words, 0u);
    }
  }
}

// ---------------------------------------------------------------------------
// Back-pressure, stop conditions, completion

TEST(TrafficBackPressure, SleepsWhileRefusedAndResumesOnRetry) {
  Rig rig(Tick::ns(100));
  TrafficConfig cfg = default_config();
  cfg.requests = 50;
  TrafficGenerator& g = rig.add(cfg);
  rig.mem.set_refusing(true);
  rig.start_all();
  // Look at 10 us (a callback, not run(until): a drained queue would be a deadlock).
  std::uint64_t events_at_10us = 0;
  std::vector<std::string> report;
  rig.sim.events().schedule_callback(Tick::us(10), [&] {
    events_at_10us = rig.sim.events().dispatched();
    EXPECT_TRUE(rig.mem.records.empty());
    EXPECT_TRUE(g.blocked());
    g.report_in_flight(report);
  });
  rig.sim.events().schedule_callback(Tick::us(20), [&] { rig.mem.set_refusing(false); });
  rig.sim.run();
  EXPECT_EQ(rig.mem.wait_calls, 1u);
  // The first issue attempt, then nothing but the watchdog (every 10 us): no polling.
  EXPECT_LE(events_at_10us, 3u);
  ASSERT_EQ(report.size(), 1u);
  EXPECT_THAT(report[0], HasSubstr("blocked: the memory refused a read at 0x0"));
  EXPECT_THAT(report[0], HasSubstr("waiting for a retry"));

  EXPECT_TRUE(g.finished());
  EXPECT_EQ(g.completed(), 50u);
  EXPECT_EQ(rig.mem.records.front().created, Tick::us(20));
  EXPECT_EQ(g.blocked_time(), Tick::us(20).ps());
}

TEST(TrafficBackPressure, NoMoreThanTheTargetHoldsAndFewEventsPerRequest) {
  Rig rig(Tick::ns(100), /*capacity=*/2);
  TrafficConfig cfg = default_config();
  cfg.max_outstanding = 16;
  cfg.requests = 1000;
  TrafficGenerator& g = rig.add(cfg);
  rig.start_all();
  rig.sim.run();
  EXPECT_TRUE(g.finished());
  EXPECT_EQ(rig.mem.max_in_flight, 2u);
  EXPECT_NEAR(g.achieved_bandwidth() / (2 * 128 / 100e-9), 1.0, 0.01);
  // Per request: the memory's completion and at most one issue event.
  EXPECT_LE(rig.sim.events().dispatched(), 2 * cfg.requests + 10);
  EXPECT_GT(g.blocked_time(), 0u);
}

TEST(TrafficBackPressure, DeadlockReportNamesTheBlockedGenerator) {
  Rig rig;
  TrafficConfig cfg = default_config();
  rig.add(cfg);
  rig.mem.set_refusing(true);
  rig.start_all();
  try {
    rig.sim.run();
    ADD_FAILURE() << "expected a deadlock";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("deadlock"));
    EXPECT_THAT(e.what(), HasSubstr("gpu0.gen: compute sequential read generator: 0 issued of 100"));
    EXPECT_THAT(e.what(), HasSubstr("waiting for a retry"));
  }
}

TEST(TrafficStop, RequestsBytesAndDuration) {
  {
    Rig rig;
    TrafficConfig cfg = default_config();
    cfg.requests = 123;
    TrafficGenerator& g = rig.add(cfg);
    rig.start_all();
    rig.sim.run();
    EXPECT_EQ(g.issued(), 123u);
    EXPECT_EQ(g.completed(), 123u);
  }
  {
    // bytes: 64KiB of 256 B requests, read through the config reader.
    const ConfigTree tree = ConfigTree::parse(
        "generators:\n  - {name: g, request_size: 256B, bytes: 64KiB, footprint: 1MiB}\n", "stop.yaml");
    const auto cfgs = read_traffic_configs(ConfigNode(&tree.root(), "", nullptr), kGranule);
    ASSERT_EQ(cfgs.size(), 1u);
    EXPECT_EQ(cfgs[0].requests, 256u);
    Rig rig;
    TrafficGenerator& g = rig.add(cfgs[0]);
    rig.start_all();
    rig.sim.run();
    EXPECT_EQ(g.bytes(), 64u * 1024);
  }
  {
    // duration: issue in [start, start + 10 us), closed loop K=4, L=100 ns -> 400.
    Rig rig(Tick::ns(100));
    TrafficConfig cfg = default_config();
    cfg.requests = 0;
    cfg.duration = Tick::us(10);
    cfg.start = Tick::us(1);
    cfg.max_outstanding = 4;
    TrafficGenerator& g = rig.add(cfg);
    rig.start_all();
    rig.sim.run();
    EXPECT_TRUE(g.finished());
    EXPECT_EQ(g.issued(), 400u);
    EXPECT_EQ(g.first_issue(), Tick::us(1));
    EXPECT_EQ(g.last_response(), Tick::us(11));
    for (const auto& r : rig.mem.records) EXPECT_LT(r.created, Tick::us(11));
  }
}

TEST(TrafficCompletion, OnFinishedCalledOnceAfterTheLastResponse) {
  Rig rig(Tick::ns(100));
  TrafficConfig a = default_config();
  a.name = "gemm";
  a.kernel = true;
  a.requests = 40;
  TrafficConfig b = default_config();
  b.name = "comm";
  b.stream = Stream::kCommunication;
  b.requests = 400;
  TrafficGenerator& ga = rig.add(a);
  TrafficGenerator& gb = rig.add(b);
  int calls_a = 0, calls_b = 0;
  Tick when_a;
  ga.set_on_finished([&] {
    ++calls_a;
    when_a = rig.sim.now();
    EXPECT_EQ(ga.completed(), 40u);
    EXPECT_TRUE(ga.finished());
  });
  gb.set_on_finished([&] { ++calls_b; });
  rig.start_all();
  rig.sim.run();
  EXPECT_EQ(calls_a, 1);
  EXPECT_EQ(calls_b, 1);
  EXPECT_EQ(when_a, ga.last_response());
  EXPECT_EQ(when_a, Tick::ns(500));  // 40 requests, 8 at a time, 100 ns each
  EXPECT_TRUE(ga.config().kernel);
  const auto* bw = dynamic_cast<const Scalar*>(rig.sim.stats().find("gpu0.gemm.achieved_bandwidth"));
  ASSERT_NE(bw, nullptr);
  EXPECT_NEAR(bw->value(), 8 * 128 / 100e-9 * 1e-9, 1e-9);
  std::vector<std::string> report;
  ga.report_in_flight(report);
  EXPECT_TRUE(report.empty());
}

// ---------------------------------------------------------------------------
// Functional reference

TEST(TrafficValues, UpdatesFromTwoStreamsSumExactly) {
  Rig rig(Tick::ns(50));
  ValueReference ref(kGranule);
  TrafficConfig a = default_config();
  a.name = "gemm_out";
  a.op = TrafficOp::kUpdate;
  a.values = true;
  a.footprint = 8192;
  a.requests = 640;  // 10 sweeps of the region
  TrafficConfig b = a;
  b.name = "rs_in";
  b.stream = Stream::kCommunication;
  b.pattern = TrafficPattern::kRandom;
  b.requests = 500;
  for (const auto& cfg : {a, b}) rig.add(cfg).set_value_reference(&ref);
  rig.start_all();
  rig.sim.run();
  EXPECT_EQ(ref.tracked(), 8192u / kGranule);
  EXPECT_EQ(ref.ambiguous(), 0u);
  const auto result = ref.check([&](std::uint64_t addr, std::uint32_t bytes) { return rig.mem.peek(addr, bytes); });
  EXPECT_TRUE(result.ok()) << (result.messages.empty() ? "" : result.messages[0]);
  EXPECT_EQ(result.checked, 8192u / kGranule);
  // The memory holds the sum of both streams' operands, not either alone.
  std::set<std::uint64_t> nonzero;
  for (const auto& e : ref.expected()) {
    if (e.value != 0) nonzero.insert(e.address);
  }
  EXPECT_EQ(nonzero.size(), 8192u / kGranule);

  // A lost update, and a misplaced one, are reported with the address.
  rig.mem.store[128] -= 1;
  rig.mem.store[4096 + 32] = rig.mem.store[4096];
  const auto bad = ref.check([&](std::uint64_t addr, std::uint32_t bytes) { return rig.mem.peek(addr, bytes); }, 1);
  EXPECT_EQ(bad.mismatches, 2u);
  ASSERT_EQ(bad.messages.size(), 1u);
  EXPECT_THAT(bad.messages[0], HasSubstr("address 0x80: expected"));
}

TEST(TrafficValues, WritesCheckAndOverlapsAreAmbiguous) {
  Rig rig(Tick::ns(50));
  ValueReference ref(kGranule);
  // One writer alone (max_outstanding 1: its rewrites are ordered): checked exactly.
  TrafficConfig w = default_config();
  w.name = "writer";
  w.op = TrafficOp::kWrite;
  w.values = true;
  w.footprint = 1024;
  w.max_outstanding = 1;
  w.requests = 20;  // wraps: the last write of each address wins
  // A second writer over the first half, and an updater over [512, 1024 + 512).
  TrafficConfig w2 = w;
  w2.name = "writer2";
  w2.footprint = 256;
  w2.requests = 2;
  TrafficConfig u = w;
  u.name = "updater";
  u.op = TrafficOp::kUpdate;
  u.address = 512;
  u.requests = 8;
  u.max_outstanding = 8;
  for (const auto& cfg : {w, w2, u}) rig.add(cfg).set_value_reference(&ref);
  rig.start_all();
  rig.sim.run();
  // [0, 256): two writers; [512, 1024): written and updated; [1024, 1536): updated only.
  EXPECT_EQ(ref.tracked(), 1536u / kGranule);
  EXPECT_EQ(ref.ambiguous(), (256u + 512u) / kGranule);
  const auto result = ref.check([&](std::uint64_t addr, std::uint32_t bytes) { return rig.mem.peek(addr, bytes); });
  EXPECT_TRUE(result.ok()) << (result.messages.empty() ? "" : result.messages[0]);
  EXPECT_EQ(result.checked, (256u + 512u) / kGranule);
  EXPECT_EQ(result.ambiguous, (256u + 512u) / kGranule);
  for (const auto& e : ref.expected()) {
    EXPECT_TRUE((e.address >= 256 && e.address < 512) || e.address >= 1024) << e.address;
  }
}

TEST(TrafficValues, ConcurrentRewritesByOneGeneratorAreAmbiguous) {
  ValueReference ref(kGranule);
  const std::uint32_t g = ref.add_source("g");
  const Payload one{{1}}, two{{2}};
  ref.on_issue(g, MemOp::kWrite, 0, one);
  ref.on_complete(g, MemOp::kWrite, 0, kGranule);
  ref.on_issue(g, MemOp::kWrite, 0, two);  // after the first completed: ordered
  ref.on_issue(g, MemOp::kWrite, 64, one);
  ref.on_issue(g, MemOp::kWrite, 64, two);  // the first is still in flight
  ASSERT_EQ(ref.expected().size(), 1u);
  EXPECT_EQ(ref.expected()[0].address, 0u);
  EXPECT_EQ(ref.expected()[0].value, 2u);
  EXPECT_EQ(ref.ambiguous(), 1u);
  const auto r = ref.check([](std::uint64_t, std::uint32_t) { return Payload{{7}}; });
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_THAT(r.messages.at(0), HasSubstr("expected 0x2 (written by g), memory holds 0x7"));
}

// ---------------------------------------------------------------------------
// Configuration

std::vector<TrafficConfig> read(const std::string& yaml) {
  const ConfigTree tree = ConfigTree::parse(yaml, "traffic.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  ConfigNode workload = root.child("workload");
  auto cfgs = read_traffic_configs(workload, kGranule);
  workload.finish();
  return cfgs;
}

std::string error_of(const std::string& yaml) {
  try {
    read(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return "";
}

TEST(TrafficConfigReader, ReadsEveryKey) {
  const auto cfgs = read(R"(workload:
  generators:
    - name: gemm
      stream: compute
      pattern: sequential
      op: read
      request_size: 128B
      address: 0
      footprint: 64MiB
      uncached: false
      max_outstanding: 64
      rate: 0
      start: 0ns
      requests: 10000
      kernel: true
    - name: rs
      stream: communication
      pattern: strided
      stride: 4KiB
      op: mix
      read_fraction: 0.7
      request_size: 256B
      address: 1GiB
      footprint: 16MiB
      uncached: true
      max_outstanding: 8
      rate: 100GB/s
      burst: {on: 2us, off: 6us}
      start: 1.5us
      duration: 100us
      values: true
    - pattern: random
      op: update
      bytes: 64KiB
)");
  ASSERT_EQ(cfgs.size(), 3u);
  const TrafficConfig& a = cfgs[0];
  EXPECT_EQ(a.name, "gemm");
  EXPECT_EQ(a.stream, Stream::kCompute);
  EXPECT_EQ(a.pattern, TrafficPattern::kSequential);
  EXPECT_EQ(a.op, TrafficOp::kRead);
  EXPECT_EQ(a.request_size, 128u);
  EXPECT_EQ(a.footprint, 64u << 20);
  EXPECT_EQ(a.max_outstanding, 64u);
  EXPECT_TRUE(a.rate.unlimited());
  EXPECT_FALSE(a.bursty());
  EXPECT_EQ(a.requests, 10000u);
  EXPECT_TRUE(a.kernel);
  EXPECT_FALSE(a.values);
  const TrafficConfig& b = cfgs[1];
  EXPECT_EQ(b.stream, Stream::kCommunication);
  EXPECT_EQ(b.pattern, TrafficPattern::kStrided);
  EXPECT_EQ(b.stride, 4096u);
  EXPECT_EQ(b.op, TrafficOp::kMix);
  EXPECT_DOUBLE_EQ(b.read_fraction, 0.7);
  EXPECT_EQ(b.address, 1ULL << 30);
  EXPECT_TRUE(b.uncached);
  EXPECT_EQ(b.rate, Bandwidth(100'000'000'000ULL));
  EXPECT_TRUE(b.bursty());
  EXPECT_EQ(b.burst_on, Tick::us(2));
  EXPECT_EQ(b.burst_off, Tick::us(6));
  EXPECT_EQ(b.start, Tick::ns(1500));
  EXPECT_EQ(b.requests, 0u);
  EXPECT_EQ(b.duration, Tick::us(100));
  EXPECT_TRUE(b.values);
  const TrafficConfig& c = cfgs[2];
  EXPECT_EQ(c.name, "gen2");  // default: gen<index>
  EXPECT_EQ(c.op, TrafficOp::kUpdate);
  EXPECT_EQ(c.requests, 512u);  // 64KiB / 128B
}

TEST(TrafficConfigReader, ErrorsNameFileLineKeyAndWhatWasExpected) {
  const std::string head = "workload:\n  generators:\n    - name: g\n      requests: 10\n";
  // line 5 is the first key after the head
  EXPECT_EQ(error_of(head + "      request_size: 100B\n"),
            "traffic.yaml:5: workload.generators[0].request_size: expected a multiple of the memory's value "
            "granule (32B), got 100B");
  EXPECT_EQ(error_of(head + "      request_size: 256B\n      footprint: 128B\n"),
            "traffic.yaml:6: workload.generators[0].footprint: must hold at least one request: 128B is smaller "
            "than request_size 256B");
  EXPECT_EQ(error_of(head + "      footprint: 1000B\n"),
            "traffic.yaml:5: workload.generators[0].footprint: expected a multiple of request_size (128B), got 1000B");
  EXPECT_EQ(error_of(head + "      bytes: 4KiB\n"),
            "traffic.yaml:5: workload.generators[0].bytes: give only one of 'requests', 'bytes' and 'duration' "
            "('requests' is given too)");
  EXPECT_EQ(error_of("workload:\n  generators:\n    - name: g\n      op: read\n"),
            "traffic.yaml:3: workload.generators[0].requests: a stop condition is required: one of 'requests', "
            "'bytes' or 'duration'");
  EXPECT_EQ(error_of(head + "      read_fraction: 0.5\n"),
            "traffic.yaml:5: workload.generators[0].read_fraction: only meaningful with op: mix (op is 'read')");
  EXPECT_EQ(error_of(head + "      op: mix\n      read_fraction: 1.5\n"),
            "traffic.yaml:6: workload.generators[0].read_fraction: 1.5 is out of range [0, 1]");
  EXPECT_EQ(error_of(head + "      pattern: sequentail\n"),
            "traffic.yaml:5: workload.generators[0].pattern: expected one of sequential, random, strided; got "
            "'sequentail' (did you mean 'sequential'?)");
  EXPECT_EQ(error_of(head + "      pattern: strided\n"),
            "traffic.yaml:3: workload.generators[0].stride: required with pattern: strided");
  EXPECT_EQ(error_of(head + "      stride: 4KiB\n"),
            "traffic.yaml:5: workload.generators[0].stride: only meaningful with pattern: strided (pattern is "
            "'sequential')");
  EXPECT_EQ(error_of(head + "      pattern: strided\n      stride: 192B\n"),
            "traffic.yaml:6: workload.generators[0].stride: expected a multiple of request_size (128B), got 192B");
  EXPECT_EQ(error_of(head + "      burst: {on: 2us}\n"),
            "traffic.yaml:5: workload.generators[0].burst.off: required: the length of each off-window, like '6us'");
  EXPECT_EQ(error_of(head + "      burst: {on: 2us, off: 1us, offf: 3us}\n"),
            "traffic.yaml:5: workload.generators[0].burst.offf: unknown key (did you mean 'off'?)");
  EXPECT_EQ(error_of(head + "      stream: communication\n      kernel: true\n"),
            "traffic.yaml:6: workload.generators[0].kernel: only a compute-stream generator can be a kernel (its "
            "end is a compute kernel boundary)");
  EXPECT_EQ(error_of(head + "      max_outstandng: 4\n"),
            "traffic.yaml:5: workload.generators[0].max_outstandng: unknown key (did you mean 'max_outstanding'?)");
  EXPECT_EQ(error_of(head + "    - name: g\n      requests: 5\n"),
            "traffic.yaml:5: workload.generators[1].name: duplicate generator name 'g' (also "
            "workload.generators[0], at traffic.yaml:3)");
  EXPECT_EQ(error_of(head + "      name2: x\n"),
            "traffic.yaml:5: workload.generators[0].name2: unknown key (did you mean 'name'?)");
  EXPECT_EQ(error_of("workload:\n  generators:\n    - name: a.b\n      requests: 1\n"),
            "traffic.yaml:3: workload.generators[0].name: expected a non-empty name of letters, digits, '_' or "
            "'-', got 'a.b'");
  EXPECT_EQ(error_of("workload:\n  generators: []\n"),
            "traffic.yaml:2: workload.generators: expected at least one traffic generator");
  EXPECT_EQ(error_of("workload:\n  generators: {name: g}\n"),
            "traffic.yaml:2: workload.generators: expected a list of traffic generators (one mapping per "
            "generator, '- name: ...')");
  EXPECT_EQ(error_of("workload:\n  generators:\n    - 5\n"),
            "traffic.yaml:3: workload.generators[0]: expected a generator mapping (name, pattern, op, ...)");
  EXPECT_EQ(error_of("workload:\n  other: 1\n"),
            "traffic.yaml:1: workload.generators: required key missing: a list of traffic generators");
}

}  // namespace
}  // namespace t3sim
