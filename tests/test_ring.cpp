// The first vertical slice: ring RS / AG / AR on N GPUs, against the alpha-beta
// formula, with the data checked.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "models/system/collective_system.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

// Table 1's links with a memory fast enough not to matter (the analytical model
// has no memory term).
CollectiveSystemConfig fast_memory_ring(std::uint32_t n) {
  CollectiveSystemConfig cfg;
  cfg.num_gpus = n;
  cfg.memory.latency = Tick::ns(1);
  cfg.memory.bandwidth = Bandwidth(10'000'000'000'000ULL);  // 10 TB/s
  return cfg;
}

CollectiveResult run_once(const CollectiveSystemConfig& cfg, const CollectiveWorkload& wl,
                          std::uint64_t seed = 1) {
  Simulator sim(seed);
  CollectiveSystem sys(sim, cfg, wl);
  return sys.run();
}

struct AnalyticCase {
  std::uint32_t gpus;
  std::uint64_t bytes;
};

class RingAnalytic : public ::testing::TestWithParam<std::tuple<CollectiveOp, AnalyticCase>> {};

TEST_P(RingAnalytic, WithinTwoPercentOfAlphaBeta) {
  const auto [op, c] = GetParam();
  CollectiveWorkload wl;
  wl.op = op;
  wl.array_bytes = c.bytes;
  const CollectiveResult r = run_once(fast_memory_ring(c.gpus), wl);
  const double n = c.gpus, s = static_cast<double>(c.bytes);
  const double passes = op == CollectiveOp::kAllReduce ? 2 : 1;
  // Independent of the simulator's own formula: (N-1)/N * S/B + (N-1) * latency per pass.
  const double expected_ps = passes * ((n - 1) / n * s / 75e9 * 1e12 + (n - 1) * 500e3);
  const double got_ps = static_cast<double>(r.time.ps());
  EXPECT_NEAR(got_ps / expected_ps, 1.0, 0.02)
      << to_string(op) << " N=" << c.gpus << " S=" << c.bytes << " got " << got_ps << " ps";
  // Never faster than the model: the link is the bottleneck.
  EXPECT_GE(got_ps, expected_ps * 0.999);
  EXPECT_TRUE(r.functional_ok);
}

std::vector<AnalyticCase> analytic_cases() {
  std::vector<AnalyticCase> cases;
  for (std::uint32_t n : {2u, 4u, 8u, 16u})
    for (std::uint64_t mb : {1ULL, 6ULL, 48ULL, 192ULL}) cases.push_back({n, mb * 1'000'000});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<RingAnalytic::ParamType>& info) {
  const auto& [op, c] = info.param;
  return fmt::format("{}_N{}_{}B", to_string(op), c.gpus, c.bytes);
}

INSTANTIATE_TEST_SUITE_P(ReduceScatterAndAllGather, RingAnalytic,
                         ::testing::Combine(::testing::Values(CollectiveOp::kReduceScatter,
                                                             CollectiveOp::kAllGather),
                                            ::testing::ValuesIn(analytic_cases())),
                         case_name);
INSTANTIATE_TEST_SUITE_P(AllReduce, RingAnalytic,
                         ::testing::Combine(::testing::Values(CollectiveOp::kAllReduce),
                                            ::testing::Values(AnalyticCase{4, 6'000'000},
                                                              AnalyticCase{8, 48'000'000})),
                         case_name);

// Element-exact check on awkward sizes: chunks of unequal length, a partial last packet.
TEST(RingFunctional, ValuesModeIsExactForEveryOpAndAwkwardSizes) {
  for (CollectiveOp op : {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather, CollectiveOp::kAllReduce})
    for (std::uint32_t n : {2u, 3u, 5u, 8u}) {
      CollectiveSystemConfig cfg = fast_memory_ring(n);
      cfg.net.packet_bytes = 256;
      CollectiveWorkload wl;
      wl.op = op;
      wl.array_bytes = 2 * 1237;  // 1237 FP16 elements
      wl.functional = "values";
      const CollectiveResult r = run_once(cfg, wl);
      EXPECT_TRUE(r.functional_ok) << to_string(op) << " N=" << n;
      EXPECT_EQ(r.mode, FunctionalMode::kValues);
      EXPECT_GT(r.blocks_checked, 0u);
    }
}

// The check must notice a lost update, a doubled one, or data in the wrong place.
TEST(RingFunctional, CheckDetectsLostDoubledAndMisplacedData) {
  for (const char* mode : {"values", "checksum"}) {
    CollectiveSystemConfig cfg = fast_memory_ring(4);
    CollectiveWorkload wl;
    wl.array_bytes = 64 * 1024;
    wl.functional = mode;
    Simulator sim;
    CollectiveSystem sys(sim, cfg, wl);
    ASSERT_TRUE(sys.run().functional_ok);
    std::string err;
    ASSERT_GT(sys.verify(err), 0u);
    ASSERT_TRUE(err.empty()) << err;

    // GPU 2 owns chunk 2 after reduce-scatter: apply one contribution twice.
    const auto blk = sys.layout().block(2, 3);
    const std::uint64_t addr = blk.first_element * sys.layout().element_bytes();
    const Payload good = *sys.memory(2).peek(addr);
    Payload doubled = good;
    doubled.add(InputPattern(sim.seed(), 1).payload(
        std::string(mode) == "values" ? FunctionalMode::kValues : FunctionalMode::kChecksum,
        blk.first_element, blk.elements));
    sys.memory(2).preload(addr, doubled);
    EXPECT_EQ((sys.verify(err), err.empty()), false) << mode;
    EXPECT_NE(err.find("gpu2 chunk 2 block 3"), std::string::npos) << err;

    // Misplaced: the right data of another block.
    err.clear();
    const auto other = sys.layout().block(2, 4);
    sys.memory(2).preload(addr, *sys.memory(2).peek(other.first_element * sys.layout().element_bytes()));
    EXPECT_FALSE((sys.verify(err), err.empty())) << mode;
  }
}

TEST(RingFunctional, LargeArraysUseChecksumsAndStillVerify) {
  CollectiveWorkload wl;
  wl.array_bytes = 192'000'000;
  wl.op = CollectiveOp::kAllReduce;
  const CollectiveResult r = run_once(fast_memory_ring(4), wl);
  EXPECT_EQ(r.mode, FunctionalMode::kChecksum);
  EXPECT_TRUE(r.functional_ok);
  // AR leaves every chunk on every GPU: 4 GPUs x 192 MB / 4 KiB blocks (rounded up per chunk).
  EXPECT_EQ(r.blocks_checked, 4u * 4u * ((48'000'000 + 4095) / 4096));
}

TEST(RingConservation, EveryLinkDeliversWhatItSent) {
  CollectiveSystemConfig cfg;  // default (slower) memory: back-pressure and queues in play
  cfg.num_gpus = 5;
  cfg.net.link.rx_buffer = 2;
  cfg.net.link.tx_buffer = 1;
  CollectiveWorkload wl;
  wl.op = CollectiveOp::kAllReduce;
  wl.array_bytes = 3'000'000;
  Simulator sim;
  CollectiveSystem sys(sim, cfg, wl);
  const CollectiveResult r = sys.run();
  EXPECT_TRUE(r.functional_ok);
  std::uint64_t total = 0;
  for (const auto* link : sys.network().links()) {
    EXPECT_EQ(link->bytes_sent(), link->bytes_received()) << link->name();
    EXPECT_TRUE(link->idle()) << link->name();
    total += link->bytes_sent();
  }
  // N GPUs each send one chunk (S/N) in each of the 2(N-1) steps: 2 (N-1) S in all.
  EXPECT_EQ(total, 2ULL * 4 * 3'000'000);
}

TEST(RingDeterminism, SameSeedSameTimeDifferentSeedSameTime) {
  CollectiveWorkload wl;
  wl.array_bytes = 6'000'000;
  const auto a = run_once(CollectiveSystemConfig{}, wl, 7);
  const auto b = run_once(CollectiveSystemConfig{}, wl, 7);
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(a.json.dump(), b.json.dump());
  // Data values don't change timing.
  EXPECT_EQ(run_once(CollectiveSystemConfig{}, wl, 8).time, a.time);
}

TEST(RingMemory, SlowMemoryMakesTheRingSlowerThanTheFormula) {
  CollectiveSystemConfig slow = fast_memory_ring(8);
  slow.memory.bandwidth = Bandwidth(50'000'000'000ULL);  // slower than 3 accesses x 75 GB/s
  CollectiveWorkload wl;
  wl.array_bytes = 48'000'000;
  const auto fast = run_once(fast_memory_ring(8), wl);
  const auto r = run_once(slow, wl);
  EXPECT_GT(static_cast<double>(r.time.ps()), 1.5 * static_cast<double>(fast.time.ps()));
  EXPECT_TRUE(r.functional_ok);
}

}  // namespace
}  // namespace t3sim
