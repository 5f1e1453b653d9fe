// The DMA engine against fake memories: chunked read-then-write/update, bandwidth and
// outstanding limits, launch and completion latencies, pre-queued triggered commands,
// back-pressure, values carried.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "models/dma/dma_engine.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

constexpr std::uint32_t kGranule = 32;

// A memory with a fixed latency, an optional capacity and functional words.
class FakeMemory final : public MemTarget {
 public:
  FakeMemory(Simulator& sim, Tick latency, std::uint32_t capacity = 1u << 30)
      : sim_(sim), latency_(latency), capacity_(capacity) {}
  bool can_accept(const MemRequest&) const override { return in_flight_ < capacity_; }
  void accept(MemRequest&& r) override {
    ++in_flight_;
    max_in_flight = std::max(max_in_flight, in_flight_);
    ops.push_back(r.op);
    last_track_wg = r.track.wg;
    last_track_wf = r.track.wf;
    for (std::size_t i = 0; i < r.data.words.size(); ++i) {
      const std::uint64_t a = r.address + i * kGranule;
      if (r.op == MemOp::kRead) r.data.words[i] = words[a];
      if (r.op == MemOp::kWrite) words[a] = r.data.words[i];
      if (r.op == MemOp::kUpdate) words[a] += r.data.words[i];
    }
    pending_.push_back(std::move(r));
    sim_.events().schedule_callback(sim_.now() + latency_, [this] { respond(); });
  }
  void wait_for_space(MemClient* c) override { waiter_ = c; }
  std::map<std::uint64_t, std::uint64_t> words;
  std::vector<MemOp> ops;
  std::uint32_t max_in_flight = 0;
  std::uint32_t last_track_wg = TrackerTag::kNoWg;
  std::uint32_t last_track_wf = 0;

 private:
  void respond() {
    MemRequest r = std::move(pending_.front());
    pending_.erase(pending_.begin());
    --in_flight_;
    if (waiter_ != nullptr) std::exchange(waiter_, nullptr)->on_mem_retry();
    r.client->on_mem_response(std::move(r));
  }
  Simulator& sim_;
  Tick latency_;
  std::uint32_t capacity_;
  std::uint32_t in_flight_ = 0;
  std::vector<MemRequest> pending_;
  MemClient* waiter_ = nullptr;
};

struct Rig {
  explicit Rig(DmaConfig cfg, Tick local_latency = Tick::ns(100), Tick remote_latency = Tick::ns(500),
               std::uint32_t remote_capacity = 1u << 30)
      : root(sim, "gpu0"),
        local(sim, local_latency),
        remote(sim, remote_latency, remote_capacity),
        dma(root, "dma0", cfg, local) {}
  DmaCommand copy(std::uint64_t bytes, MemOp op = MemOp::kWrite, std::function<void()> done = {}) {
    DmaCommand c;
    c.src = 0x1000;
    c.dst = 0x80000;
    c.bytes = bytes;
    c.op = op;
    c.destination = &remote;
    c.value_granule = kGranule;
    c.on_done = std::move(done);
    return c;
  }
  Simulator sim{1};
  Component root;
  FakeMemory local, remote;
  DmaEngine dma;
};

DmaConfig fast() {
  DmaConfig c;
  c.launch_latency = Tick::us(5);
  c.completion_latency = Tick::us(2);
  c.bandwidth = Bandwidth(64'000'000'000ULL);
  c.chunk_bytes = 4096;
  c.max_outstanding = 64;
  return c;
}

TEST(Dma, HostLaunchedCopyCarriesValuesAndPaysBothLatencies) {
  Rig rig(fast());
  for (std::uint64_t i = 0; i < 1024 / kGranule; ++i) rig.local.words[0x1000 + i * kGranule] = 100 + i;
  Tick done;
  rig.dma.launch(rig.copy(1024, MemOp::kWrite, [&] { done = rig.sim.now(); }));
  rig.sim.run();
  for (std::uint64_t i = 0; i < 1024 / kGranule; ++i) EXPECT_EQ(rig.remote.words[0x80000 + i * kGranule], 100 + i);
  // 5 us launch + read 100 ns + write 500 ns (+ 16 ns serialization) + 2 us completion.
  EXPECT_EQ(done, Tick::us(5) + Tick::ns(100) + Tick::ns(500) + Tick::us(2));
  EXPECT_EQ(rig.dma.commands_done(), 1u);
}

TEST(Dma, UpdatesAddAtTheDestination) {
  Rig rig(fast());
  rig.local.words[0x1000] = 7;
  rig.remote.words[0x80000] = 35;
  rig.dma.launch(rig.copy(kGranule, MemOp::kUpdate));
  rig.sim.run();
  EXPECT_EQ(rig.remote.words[0x80000], 42u);
  EXPECT_THAT(rig.remote.ops, ::testing::ElementsAre(MemOp::kUpdate));
}

TEST(Dma, BandwidthBoundsALongCopy) {
  DmaConfig c = fast();
  c.bandwidth = Bandwidth(10'000'000'000ULL);  // 10 GB/s
  Rig rig(c, Tick::ns(10), Tick::ns(10));
  const std::uint64_t bytes = 4 << 20;
  Tick done;
  const DmaCommand cmd = rig.copy(bytes, MemOp::kWrite, [&] { done = rig.sim.now(); });
  const std::uint32_t id = rig.dma.prequeue(cmd);
  rig.dma.trigger(id);  // pre-queued: no launch or completion latency
  rig.sim.run();
  const Tick wire = c.bandwidth.transfer_time(bytes);
  // Chunks issue one chunk-time apart; the last issues at (N-1) chunk-times.
  EXPECT_GE(done, wire - c.bandwidth.transfer_time(c.chunk_bytes));
  EXPECT_LE(done.ps(), wire.ps() + Tick::us(1).ps());
}

TEST(Dma, OutstandingLimitAndBackPressure) {
  DmaConfig c = fast();
  c.max_outstanding = 4;
  c.bandwidth = Bandwidth(0);  // unlimited: only the limit paces it
  Rig rig(c, Tick::ns(100), Tick::ns(1000), /*remote capacity=*/2);
  rig.dma.trigger(rig.dma.prequeue(rig.copy(64 * 4096)));
  rig.sim.run();
  EXPECT_LE(rig.local.max_in_flight, 4u);
  EXPECT_LE(rig.remote.max_in_flight, 2u);
  EXPECT_EQ(rig.remote.ops.size(), 64u);
  EXPECT_TRUE(rig.dma.idle());
  // Each chunk spends 1 us at the remote, two at a time: about 32 us.
  EXPECT_GE(rig.sim.now(), Tick::us(32));
}

// T3 §4.2.2: a WF's output sub-tile is a 2D region; chunks stay within rows, land at
// the same row offsets at the destination and carry the tracker tag.
TEST(Dma, TwoDimensionalCommandCopiesRowsAndCarriesTheTrackerTag) {
  Rig rig(fast());
  DmaCommand c = rig.copy(256);
  c.rows = 3;
  c.row_stride = 8192;
  c.track.wg = 17;
  c.track.wf = 2;
  for (std::uint64_t r = 0; r < 3; ++r)
    for (std::uint64_t i = 0; i < 256 / kGranule; ++i) rig.local.words[0x1000 + r * 8192 + i * kGranule] = r * 100 + i;
  rig.dma.trigger(rig.dma.prequeue(c));
  rig.sim.run();
  for (std::uint64_t r = 0; r < 3; ++r)
    for (std::uint64_t i = 0; i < 256 / kGranule; ++i)
      EXPECT_EQ(rig.remote.words[0x80000 + r * 8192 + i * kGranule], r * 100 + i);
  EXPECT_EQ(rig.remote.ops.size(), 3u);  // one 256 B chunk per row, none spanning rows
  EXPECT_EQ(rig.remote.words.count(0x80000 + 256), 0u);  // nothing between rows
  EXPECT_EQ(rig.remote.last_track_wg, 17u);
  EXPECT_EQ(rig.remote.last_track_wf, 2u);
}

// Writes are posted: the outstanding limit counts reads, so a slow destination does not
// cap the engine at max_outstanding writes per round trip; the command still completes
// only once every write is acknowledged.
TEST(Dma, WritesArePostedButCompletionWaitsForTheirAcks) {
  DmaConfig c = fast();
  c.max_outstanding = 2;
  c.bandwidth = Bandwidth(0);
  Rig rig(c, Tick::ns(100), Tick::us(10));
  Tick done;
  rig.dma.trigger(rig.dma.prequeue(rig.copy(16 * 4096, MemOp::kWrite, [&] { done = rig.sim.now(); })));
  rig.sim.run();
  EXPECT_LE(rig.local.max_in_flight, 2u);
  EXPECT_GT(rig.remote.max_in_flight, 2u);  // more writes in flight than the read limit
  EXPECT_GE(done, Tick::us(10));            // after the last write's 10 us acknowledgment
  EXPECT_LT(done, Tick::us(20));            // not one 10 us round trip per pair of chunks
}

TEST(Dma, CommandsCompleteInOrderAndTriggersStartPrequeuedOnes) {
  Rig rig(fast());
  std::vector<int> order;
  const std::uint32_t a = rig.dma.prequeue(rig.copy(8192, MemOp::kWrite, [&] { order.push_back(1); }));
  const std::uint32_t b = rig.dma.prequeue(rig.copy(4096, MemOp::kWrite, [&] { order.push_back(2); }));
  rig.sim.run();
  EXPECT_TRUE(order.empty());  // nothing fires until triggered
  rig.dma.trigger(b);
  rig.dma.trigger(a);
  rig.sim.run();
  EXPECT_EQ(order, (std::vector<int>{2, 1}));
}

TEST(DmaConfigTest, ReadsUnitsAndRejectsBadInput) {
  auto read = [](const std::string& yaml) {
    ConfigTree tree = ConfigTree::parse(yaml, "sys.yaml");
    ResolvedConfig resolved;
    ConfigNode root(&tree.root(), "", &resolved);
    return read_dma_config(root.child("dma"));
  };
  const DmaConfig c = read("dma: {bandwidth: 50GB/s, chunk_size: 8KiB, launch_latency: 10us}\n");
  EXPECT_EQ(c.bandwidth.bytes_per_second(), 50'000'000'000ULL);
  EXPECT_EQ(c.chunk_bytes, 8192u);
  EXPECT_EQ(c.launch_latency, Tick::us(10));
  try {
    read("dma:\n  chunk_size: 0\n");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("sys.yaml:2: dma.chunk_size:"));
  }
  try {
    read("dma:\n  bandwith: 1GB/s\n");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("sys.yaml:2: dma.bandwith: unknown key (did you mean 'bandwidth'?)"));
  }
}

}  // namespace
}  // namespace t3sim
