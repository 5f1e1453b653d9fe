// End-to-end results against the real-hardware calibration data the issues give
// (never fitted to it: every parameter involved has its own source in the system
// YAML). Each case runs the shipped configs through the CLI's run path.
//
// Issue 16: ring reduce-scatter of 96 MiB on 4 x H200 (NCCL 2.28.9, ring), per-op
// time by channel count. Within 15 % at every point is the issue's bar.
// Issue 17: one large FP16 GEMM per system against its vendor-library throughput
// (H200: the issue's cuBLAS 8192^3 reference; MI300X: AMD's published hipBLASLt
// max-achievable-FLOPs shape). Within 10 %.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/run.h"

namespace {

const std::string kSource = T3SIM_SOURCE_DIR;

std::string metric(const t3sim::RunOutcome& out, const std::string& name) {
  for (const auto& [key, value] : out.metrics)
    if (key == name) return value;
  ADD_FAILURE() << "no metric " << name;
  return "0";
}

struct ChannelPoint {
  std::uint32_t channels;
  double measured_us;
};

void PrintTo(const ChannelPoint& p, std::ostream* os) { *os << p.channels << " channels"; }

class H200RingReduceScatter : public ::testing::TestWithParam<ChannelPoint> {};

// Homogeneous mode (GPU 0 simulated, its peers mirrored): a ring on a switch is
// symmetric, and full mode gives the same times within 0.1 % (2739 vs 2738 us at 1
// channel), in a fraction of the wall time.
TEST_P(H200RingReduceScatter, TimeIsWithin15PercentOfNccl) {
  const ChannelPoint& p = GetParam();
  t3sim::RunRequest req;
  req.system = kSource + "/configs/systems/h200.yaml";
  req.workload = kSource + "/configs/workloads/collectives/ring_rs.yaml";
  req.overrides = {"system.num_gpus=4", "workload.size=96MiB", fmt::format("workload.channels={}", p.channels),
                   "workload.functional=off", "run.mode=homogeneous"};
  req.timeline = false;
  const t3sim::RunOutcome out = t3sim::run_simulation(req);
  const double us = std::stod(metric(out, "time_ps")) * 1e-6;
  // NCCL's tuner picks Simple at 96 MiB; the summary and the sweep row say so.
  EXPECT_EQ(metric(out, "protocol"), "simple");
  EXPECT_NE(out.summary.find(fmt::format("channels           {}, protocol simple", p.channels)), std::string::npos)
      << out.summary;
  EXPECT_NEAR(us, p.measured_us, 0.15 * p.measured_us) << "simulated " << us << " us";
}

INSTANTIATE_TEST_SUITE_P(Issue16, H200RingReduceScatter,
                         ::testing::Values(ChannelPoint{1, 2933}, ChannelPoint{2, 1484}, ChannelPoint{4, 749},
                                           ChannelPoint{8, 410}, ChannelPoint{16, 289}, ChannelPoint{32, 260}),
                         [](const auto& point) { return fmt::format("channels_{}", point.param.channels); });

struct GemmPoint {
  std::string system;
  std::uint64_t m, n, k;
  double measured_tflops;
  std::string source;
};

void PrintTo(const GemmPoint& p, std::ostream* os) { *os << p.system << " " << p.m << "x" << p.n << "x" << p.k; }

class VendorGemm : public ::testing::TestWithParam<GemmPoint> {};

// A whole GEMM on one GPU with the system's own kernel (gpu.gemm) and clock; nothing
// in either system file is set from these numbers (their sources are in the YAML).
TEST_P(VendorGemm, ThroughputIsWithin10PercentOfTheVendorLibrary) {
  const GemmPoint& p = GetParam();
  t3sim::RunRequest req;
  req.system = kSource + "/configs/systems/" + p.system + ".yaml";
  req.workload = kSource + "/configs/workloads/gemm/small.yaml";
  req.overrides = {fmt::format("workload.m={}", p.m), fmt::format("workload.n={}", p.n),
                   fmt::format("workload.k={}", p.k)};
  req.timeline = false;
  const t3sim::RunOutcome out = t3sim::run_simulation(req);
  const double tflops = std::stod(metric(out, "tflops"));
  EXPECT_NEAR(tflops, p.measured_tflops, 0.10 * p.measured_tflops)
      << "simulated " << tflops << " TFLOP/s against " << p.source;
}

INSTANTIATE_TEST_SUITE_P(
    Issue17, VendorGemm,
    ::testing::Values(GemmPoint{"h200", 8192, 8192, 8192, 678.0, "cuBLAS on H200 (issue 17)"},
                      GemmPoint{"mi300x", 4096, 4864, 32896, 654.0,
                                "hipBLASLt on MI300X (AMD ROCm blog, Measuring Max-Achievable FLOPs Part 2)"}),
    [](const auto& point) { return point.param.system; });

}  // namespace
