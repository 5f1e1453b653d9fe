// Ring reduce-scatter / all-gather / all-reduce on configs/systems/ring8.yaml: T3
// Table 1's links, the default GPU (80 CUs) and the idealized memory, so the links
// alone bound the collective. The time against the link-bound (alpha-beta) formula,
// the data checked, conservation and determinism; and the idealized memory itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/collectives/node_collective.h"
#include "models/mem/ideal_memory.h"
#include "models/node/node.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"
#include "tests/table1_node.h"

namespace t3sim {
namespace {

NodeConfig ring8(std::uint32_t gpus, const std::vector<std::string>& overrides = {}) {
  NodeConfig cfg = system_node("ring8.yaml", NetMode::kFull, overrides);
  cfg.num_gpus = gpus;
  return cfg;
}

struct RingRun {
  Tick time;
  std::uint64_t words_checked = 0;
  std::string error;
  std::string results;  // results.json's "results", dumped
  std::uint64_t link_bytes = 0;
};

RingRun run_ring(const NodeConfig& cfg, CollectiveKind kind, std::uint64_t bytes, bool values,
                 std::uint64_t seed = 1) {
  Simulator sim(seed);
  Node node(sim, cfg);
  NodeCollectiveParams p;
  p.kind = kind;
  p.array_bytes = bytes;
  p.values = values;
  p.seed = seed;
  NodeCollective c(node, p);
  c.preload();
  c.start_all();
  sim.run();
  RingRun r;
  EXPECT_TRUE(c.all_done());
  for (std::uint32_t g = 0; g < node.simulated_gpus(); ++g) r.time = std::max(r.time, c.finished(g));
  r.words_checked = c.verify(r.error);
  r.results = c.results(r.words_checked).dump();
  for (const Link<NetPacket>* l : node.network().links()) {
    EXPECT_EQ(l->bytes_sent(), l->bytes_received()) << l->name();
    EXPECT_TRUE(l->idle()) << l->name();
    r.link_bytes += l->bytes_sent();
  }
  return r;
}

double passes(CollectiveKind k) { return k == CollectiveKind::named("ring-ar") ? 2.0 : 1.0; }

// ---------------------------------------------------------------------------
// The link-bound formula.

struct AnalyticCase {
  CollectiveKind kind;
  std::uint32_t gpus;
  std::uint64_t bytes;
  bool values = true;
};

class RingAnalytic : public ::testing::TestWithParam<AnalyticCase> {};

TEST_P(RingAnalytic, WithinTwoPercentOfTheLinkBound) {
  const AnalyticCase c = GetParam();
  const RingRun r = run_ring(ring8(c.gpus), c.kind, c.bytes, c.values);
  const double n = c.gpus, s = static_cast<double>(c.bytes), bw = 75e9, latency = 500e-9;
  // Independent of the simulator's own formula: (N-1)/N * S/B + (N-1) * latency per pass.
  const double formula = passes(c.kind) * ((n - 1) / n * s / bw + (n - 1) * latency);
  const double got = static_cast<double>(r.time.ps()) * 1e-12;
  EXPECT_NEAR(got / formula, 1.0, 0.02) << to_string(c.kind) << " N=" << c.gpus << " S=" << c.bytes << ": " << got
                                        << " s";
  // The formula charges a latency per step; the channels pipeline their pieces, so
  // only the bytes each link must carry and the last one's flight are a hard bound.
  EXPECT_GE(got, passes(c.kind) * (n - 1) / n * s / bw + latency);
  EXPECT_EQ(r.error, "");
  if (c.values) {
    EXPECT_GT(r.words_checked, 0u);
  }
}

std::vector<AnalyticCase> analytic_cases() {
  std::vector<AnalyticCase> cases;
  for (CollectiveKind k : {CollectiveKind::named("ring-rs"), CollectiveKind::named("ring-ag")})
    for (std::uint32_t n : {2u, 4u, 8u, 16u}) cases.push_back({k, n, 48'000'000});
  cases.push_back({CollectiveKind::named("ring-ar"), 4, 48'000'000});
  cases.push_back({CollectiveKind::named("ring-ar"), 8, 48'000'000});
  // The README's first command: 192 MB on 8 GPUs (timing only, as the run's default).
  cases.push_back({CollectiveKind::named("ring-rs"), 8, 192'000'000, false});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<AnalyticCase>& info) {
  return fmt::format("{}_N{}_{}B", to_string(info.param.kind.op()), info.param.gpus, info.param.bytes);
}

INSTANTIATE_TEST_SUITE_P(Ring8, RingAnalytic, ::testing::ValuesIn(analytic_cases()), case_name);

// ---------------------------------------------------------------------------
// Values.

// Chunks of unequal length: 1237 words do not split evenly over 2, 3, 5 or 8 GPUs.
TEST(RingFunctional, ValuesAreExactForEveryOpAndUnevenChunks) {
  for (CollectiveKind k :
       {CollectiveKind::named("ring-rs"), CollectiveKind::named("ring-ag"), CollectiveKind::named("ring-ar")})
    for (std::uint32_t n : {2u, 3u, 5u, 8u}) {
      const RingRun r = run_ring(ring8(n), k, 32 * 1237, true);
      EXPECT_EQ(r.error, "") << to_string(k) << " N=" << n;
      EXPECT_GT(r.words_checked, 0u) << to_string(k) << " N=" << n;
    }
}

// The check must notice a doubled contribution and data in the wrong place.
TEST(RingFunctional, CheckDetectsDoubledAndMisplacedData) {
  Simulator sim(1);
  Node node(sim, ring8(4));
  NodeCollectiveParams p;
  p.kind = CollectiveKind::named("ring-rs");
  p.array_bytes = 64 * 1024;
  p.values = true;
  NodeCollective c(node, p);
  c.preload();
  c.start_all();
  sim.run();
  std::string error;
  ASSERT_GT(c.verify(error), 0u);
  ASSERT_EQ(error, "");

  // GPU 2 owns chunk 2 after the reduce-scatter: add one GPU's contribution twice.
  const std::uint32_t granule = node.config().gpu.memory.hbm.value_granule;
  const std::uint64_t address = collective_chunk(c.trace_params(0), 2).first + 3 * granule;
  GpuMemory& mem = node.gpu(2).memory();
  Payload doubled = mem.peek(address, granule);
  doubled.words[0] += InputPattern(p.seed, 1).value(address / granule);
  mem.preload(address, doubled);
  EXPECT_GT(c.verify(error), 0u);
  EXPECT_NE(error.find(fmt::format("gpu2 word {:#x}", address)), std::string::npos) << error;

  // Misplaced: the right value of the next word.
  error.clear();
  mem.preload(address, mem.peek(address + granule, granule));
  c.verify(error);
  EXPECT_NE(error, "");
}

// ---------------------------------------------------------------------------
// Links, memory, determinism.

TEST(RingConservation, EveryLinkDeliversWhatItSentUnderBackPressure) {
  // One packet of transmit buffer and two of receive buffer: credits in play.
  const NodeConfig cfg = ring8(5, {"net.tx_buffer_packets=1", "net.rx_buffer_packets=2"});
  const std::uint64_t bytes = 3'000'000;
  const RingRun r = run_ring(cfg, CollectiveKind::named("ring-ar"), bytes, true);
  EXPECT_EQ(r.error, "");
  // Each GPU sends (N-1)/N of the array per pass, two passes: 2 (N-1) S over all links,
  // plus the FIFOs' flags (64 B per slice of 80 channels' small slices here: 1.7 %).
  const double data = 2.0 * 4 * bytes;
  EXPECT_GE(static_cast<double>(r.link_bytes), data);
  EXPECT_LT(static_cast<double>(r.link_bytes), data * 1.03);
}

TEST(RingDeterminism, SameSeedSameResultsAndValuesDoNotChangeTheTime) {
  const NodeConfig cfg = ring8(8);
  const RingRun a = run_ring(cfg, CollectiveKind::named("ring-rs"), 6'000'000, true, 7);
  const RingRun b = run_ring(cfg, CollectiveKind::named("ring-rs"), 6'000'000, true, 7);
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(a.results, b.results);
  EXPECT_EQ(run_ring(cfg, CollectiveKind::named("ring-rs"), 6'000'000, true, 8).time, a.time);
  EXPECT_EQ(run_ring(cfg, CollectiveKind::named("ring-rs"), 6'000'000, false, 7).time, a.time);
}

TEST(RingMemory, SlowIdealMemoryMakesTheRingSlowerThanTheFormula) {
  // An RS moves three bytes through memory per byte on the link (the received slice
  // read, the local one read, the sum written at the next GPU): 50 GB/s cannot feed 75.
  const std::uint64_t bytes = 12'000'000;
  const RingRun fast = run_ring(ring8(8), CollectiveKind::named("ring-rs"), bytes, true);
  const RingRun slow = run_ring(ring8(8, {"memory.bandwidth=50GB/s"}), CollectiveKind::named("ring-rs"), bytes, true);
  EXPECT_GT(static_cast<double>(slow.time.ps()), 1.5 * static_cast<double>(fast.time.ps()));
  EXPECT_EQ(slow.error, "");
}

TEST(RingConfig, SystemKeysOfTheIdealMemoryAndTheRetiredEngine) {
  auto read = [](const std::string& extra) {
    ConfigTree tree = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/systems/ring8.yaml");
    tree.apply_override(extra);
    ResolvedConfig resolved;
    return read_node_config(ConfigNode(&tree.root(), "", &resolved), NetMode::kFull);
  };
  const NodeConfig cfg = read("num_gpus=8");
  EXPECT_EQ(cfg.gpu.memory.model, MemoryModel::kIdeal);
  EXPECT_EQ(cfg.gpu.memory.ideal.latency, Tick::ns(100));
  EXPECT_EQ(cfg.gpu.memory.ideal.bandwidth.bytes_per_second(), 1'000'000'000'000ULL);
  EXPECT_EQ(cfg.gpu.num_cus, GpuConfig{}.num_cus);  // no gpu: section, the defaults
  auto message = [&](const std::string& extra) {
    try {
      read(extra);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("collective_engine.max_outstanding_reads=16").find("collective_engine: no longer a system key"),
            std::string::npos)
      << message("collective_engine.max_outstanding_reads=16");
  EXPECT_NE(message("memory.l2.size=1MiB").find("memory.l2: applies to model: hbm only"), std::string::npos)
      << message("memory.l2.size=1MiB");
  EXPECT_NE(message("memory.model=hbm").find("memory.latency: applies to model: ideal only"), std::string::npos)
      << message("memory.model=hbm");
}

// ---------------------------------------------------------------------------
// The idealized memory behind MemTarget.

class Recorder final : public MemClient {
 public:
  explicit Recorder(Simulator& sim) : sim_(sim) {}
  void on_mem_response(MemRequest&& req) override {
    times.push_back(sim_.now());
    done.push_back(std::move(req));
  }
  std::vector<Tick> times;
  std::vector<MemRequest> done;

 private:
  Simulator& sim_;
};

MemRequest request(MemOp op, std::uint64_t address, std::uint32_t bytes, MemClient* client,
                   std::vector<std::uint64_t> words = {}) {
  MemRequest r;
  r.op = op;
  r.stream = Stream::kCommunication;
  r.address = address;
  r.bytes = bytes;
  r.client = client;
  r.data.words = std::move(words);
  return r;
}

TEST(IdealMemory, OneFifoDataPathThenTheLatency) {
  Simulator sim(1);
  Component root(sim, "gpu0");
  IdealMemory mem(root, "ideal", IdealMemoryConfig{});  // 100 ns, 1 TB/s
  Recorder rec(sim);
  ASSERT_TRUE(mem.can_accept(request(MemOp::kRead, 0, 1000, &rec)));
  mem.accept(request(MemOp::kRead, 0, 1000, &rec));
  mem.accept(request(MemOp::kWrite, 4096, 2000, &rec));
  sim.run();
  ASSERT_EQ(rec.times.size(), 2u);
  EXPECT_EQ(rec.times[0], Tick::ns(1) + Tick::ns(100));  // 1000 B at 1 TB/s, then the latency
  EXPECT_EQ(rec.times[1], Tick::ns(3) + Tick::ns(100));  // queued behind the first
  EXPECT_EQ(mem.requests(Stream::kCommunication, MemOp::kRead), 1u);
  EXPECT_EQ(mem.bytes(Stream::kCommunication, MemOp::kWrite), 2000u);
  EXPECT_EQ(mem.last_response(), rec.times[1]);
}

TEST(IdealMemory, KeepsValuesWrittenUpdatedAndReadInRows) {
  Simulator sim(1);
  Component root(sim, "gpu0");
  IdealMemory mem(root, "ideal", IdealMemoryConfig{});  // 32 B words
  Recorder rec(sim);
  mem.preload(0, Payload{{1, 2, 3, 4}});
  mem.accept(request(MemOp::kUpdate, 32, 64, &rec, {10, 20}));
  mem.accept(request(MemOp::kWrite, 1 << 20, 32, &rec, {7}));  // another page
  MemRequest rows = request(MemOp::kRead, 0, 32, &rec, {0, 0, 0});
  rows.rows = 3;
  rows.row_stride = 64;  // words 0, 2, 4
  mem.accept(std::move(rows));
  mem.accept(request(MemOp::kRead, 0, 64, &rec));  // timing only: no values back
  sim.run();
  EXPECT_EQ(mem.peek(0, 128).words, (std::vector<std::uint64_t>{1, 12, 23, 4}));
  EXPECT_EQ(mem.peek(1 << 20, 32).words, std::vector<std::uint64_t>{7});
  ASSERT_EQ(rec.done.size(), 4u);
  EXPECT_EQ(rec.done[2].data.words, (std::vector<std::uint64_t>{1, 23, 0}));  // word 4 never written
  EXPECT_TRUE(rec.done[3].data.empty());
}

TEST(IdealMemory, GpuMemoryWithModelIdealHasNoHierarchy) {
  Simulator sim(1);
  Component root(sim, "gpu0");
  GpuMemoryConfig cfg;
  cfg.model = MemoryModel::kIdeal;
  GpuMemory mem(root, "mem", cfg);
  EXPECT_EQ(mem.channels(), 0u);
  Recorder rec(sim);
  ASSERT_TRUE(mem.can_accept(request(MemOp::kWrite, 0, 32, &rec, {5})));
  mem.accept(request(MemOp::kWrite, 0, 32, &rec, {5}));
  sim.run();
  EXPECT_EQ(mem.peek(0, 32).words, std::vector<std::uint64_t>{5});
  EXPECT_EQ(mem.stream_totals(Stream::kCommunication).bytes[index(MemOp::kWrite)], 32u);
  EXPECT_THROW(mem.l2(), InternalError);
}

}  // namespace
}  // namespace t3sim
