// Issue 41, calibration: a cuBLAS GEMM on an H200 with k SMs held by another kernel's
// CTAs (results/h200-measurements/spin_blockers.csv, tile_order.log). The model's H200
// GEMM (configs/systems/h200.yaml: persistent, 2 tiles owned per CTA) beside a kernel
// whose WGs each fill a CU and compute for longer than the GEMM runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/cu/compute_unit.h"
#include "models/gpu/gpu.h"
#include "sim/config.h"
#include "sim/simulator.h"
#include "trace/gemm.h"
#include "trace/trace.h"

namespace t3sim {
namespace {

GpuConfig h200() {
  ConfigTree tree = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/systems/h200.yaml");
  ResolvedConfig resolved;
  ConfigNode root(&tree.root(), "", &resolved);
  return read_gpu_config(root.child("gpu"), root.child("memory"));
}

// The GEMM's time (launch to last WG) with `held` CUs taken first by spinning WGs; with
// `link_traffic`, the GPU's NVLink port carries traffic from the GEMM's launch on.
Tick gemm_time(const GpuConfig& cfg, const KernelTrace& gemm, std::uint32_t held, bool link_traffic = false) {
  std::string text = fmt::format(
      "t3trace 1\nkernel spin\nresources wfs=1 threads=64 lds_bytes={}\nprogram p\n  compute 400000000\nend\nwgs {}\n",
      cfg.cu.lds_bytes, std::max(held, 1u));
  for (std::uint32_t w = 0; w < std::max(held, 1u); ++w) text += fmt::format("wg {} p\n", w);
  const KernelTrace spin = parse_trace(text, "spin.trace");
  Simulator sim(1);
  Gpu gpu(sim, "gpu0", cfg);
  if (held > 0) gpu.launch(KernelLaunch{&spin, {}, 0, Stream::kCompute, [] {}});
  Tick start, done;
  sim.events().schedule_callback(Tick::us(1), [&] {
    start = sim.now();
    if (link_traffic) gpu.note_link_traffic();
    gpu.launch(KernelLaunch{&gemm, {}, 0, Stream::kCompute, [&] { done = sim.now(); }});
  });
  sim.run();
  return done - start;
}

// cuBLAS's GEMM slows 1.18-1.42x with any 1-24 SMs held (spin_blockers.csv; tile_order.log):
// each CTA owns its first two tiles, and a CTA that finds no SM does them after every
// other tile. The model's H200 GEMM within 0.08 of the back-to-back rows of
// spin_blockers.csv for gpt3.op.tp32 (2048 x 12288 x 384, the shortest measured): 2 SMs
// held 1.181x, 6 held 1.227x; and the mechanism: at least 5 points more than with the
// tiles all handed out in order, which costs about the held CUs' share.
TEST(HeldSms, AGemmRunsItsHeldCtasTilesLastAndSlowsAsCublasDoes) {
  GpuConfig cfg = h200();
  ASSERT_EQ(cfg.gemm.persistent_static_tiles, 2u);
  GemmParams p = gemm_preset_params("gpt3.op.tp32", cfg.gemm);
  p.flops_per_cycle = cfg.cu.flops_per_cycle;
  const KernelTrace owned = make_gemm_trace(p);
  p.persistent_static_tiles = 0;
  const KernelTrace in_order = make_gemm_trace(p);
  const double alone = static_cast<double>(gemm_time(cfg, owned, 0).ps());
  struct Row {
    std::uint32_t held;
    double measured;
  };
  for (const Row row : {Row{2, 1.181}, Row{6, 1.227}}) {
    const double with_owned = static_cast<double>(gemm_time(cfg, owned, row.held).ps()) / alone;
    const double with_in_order = static_cast<double>(gemm_time(cfg, in_order, row.held).ps()) / alone;
    SCOPED_TRACE(fmt::format("{} CUs held: {:.3f} owning 2 tiles (measured {:.3f}), {:.3f} in order", row.held,
                             with_owned, row.measured, with_in_order));
    // Tiles in order cost about the share of the CUs lost: two per held CU, whose TPC no
    // 2-CTA cluster can take (gpu.cluster_group_cus).
    EXPECT_LE(with_in_order, 1.0 + 2.0 * (2 * row.held) / 132);
    EXPECT_GE(with_owned - with_in_order, 0.05);
    EXPECT_NEAR(with_owned, row.measured, 0.08);
  }
}

// Hopper places a thread-block cluster's CTAs together, and a 2-CTA cluster needs both
// SMs of a TPC (results/h200-measurements/cluster_gpc.csv, tools/h200/cluster_gpc.cu):
// with k SMs held by a kernel of one CTA per SM, a grid of 132 2-CTA clusters' CTAs of
// one per SM places 132 - 2k at once for k = 1-12 and 108 for 16 and 24 (the 12 TPCs the
// scheduler fills first, both SMs of each). h200.yaml's cluster groups give the same
// counts exactly; placed WG by WG (no groups) the probe would take 132 - k.
TEST(HeldSms, AClusterNeedsBothCusOfItsGroupAsOnTheH200) {
  const GpuConfig cfg = h200();
  ASSERT_EQ(cfg.cluster_group_cus, 2u);
  auto kernel = [&](const char* name, std::uint32_t wgs, std::uint64_t cycles, bool clustered) {
    std::string text = fmt::format("t3trace 1\nkernel {}\nresources wfs=1 threads=64 lds_bytes={}{}\nprogram p\n"
                                   "  compute {}\nend\nwgs {}\n",
                                   name, cfg.cu.lds_bytes, clustered ? fmt::format(" persistent={} cluster=2", wgs) : "",
                                   cycles, wgs);
    for (std::uint32_t w = 0; w < wgs; ++w) text += fmt::format("wg {} p\n", w);
    return parse_trace(text, std::string(name) + ".trace");
  };
  const KernelTrace probe = kernel("probe", cfg.num_cus, 1'000'000, true);
  struct Row {
    std::uint32_t held, placed;  // cluster_gpc.csv's "held" rows with cluster 2, lines 58-75
  };
  for (const Row row : {Row{0, 132}, Row{1, 130}, Row{2, 128}, Row{3, 126}, Row{6, 120}, Row{8, 116}, Row{12, 108},
                        Row{16, 108}, Row{24, 108}}) {
    for (const bool groups : {true, false}) {
      GpuConfig c = cfg;
      if (!groups) c.cluster_group_cus = c.cluster_group_block = 0;
      const KernelTrace spin = kernel("spin", std::max(row.held, 1u), 400'000'000, false);
      Simulator sim(1);
      Gpu gpu(sim, "gpu0", c);
      if (row.held > 0) gpu.launch(KernelLaunch{&spin, {}, 0, Stream::kCompute, [] {}});
      sim.events().schedule_callback(Tick::us(1), [&] { gpu.launch(KernelLaunch{&probe, {}, 0, Stream::kCompute, [] {}}); });
      std::uint32_t busy = 0;
      sim.events().schedule_callback(Tick::us(10), [&] {
        for (std::uint32_t i = 0; i < gpu.num_cus(); ++i) busy += gpu.cu(i).can_host(probe.resources) ? 0 : 1;
      });
      sim.run(Tick::us(20));
      EXPECT_EQ(busy - row.held, groups ? row.placed : 132 - row.held) << row.held << " held, groups " << groups;
    }
  }
}

// The model's H200 GEMMs of the other three shapes of interference_2gpu.csv, each with its
// cuBLAS tile (gemm_kernel_for), beside k = 2, 6, 24 held CUs, against
// spin_blockers_all.csv's back-to-back rows (zero operands, 1,950-1,980 MHz; the
// slowdown is a ratio of rounds of tiles; gpt3.op.tp32's are the test above): every
// point within 0.11, and every one within 0.08 but palm.fc2 at 6 held. When written (and at 8 held, run by
// hand: palm.fc2 1.278 / 1.213, megagpt2.op 1.196 / 1.123, tnlg.fc2 1.263 / 1.254) the
// one outside was palm.fc2 at 6 held, 1.232 against 1.336 (the machine's own palm.fc2 at
// 8 held is 1.213, below its 6). With the clusters placed WG by WG, palm.fc2 at 6 held
// came out 1.191 and tnlg.fc2 1.147 (1.271 measured).
struct HeldRow {
  const char* preset;
  // 2, 6, 24 held (spin_blockers_all.csv: palm.fc2 lines 14, 15, 18; megagpt2.op 24, 25,
  // 28; tnlg.fc2 34, 35, 38)
  double measured[3];
  int within;          // points within 0.08
};
void PrintTo(const HeldRow& row, std::ostream* os) { *os << row.preset; }

class HeldSmsShape : public ::testing::TestWithParam<HeldRow> {};

TEST_P(HeldSmsShape, SlowsAsCublasDoesWithItsClustersPlacedWhole) {
  const GpuConfig cfg = h200();
  const HeldRow& row = GetParam();
  const std::uint32_t held[3] = {2, 6, 24};
  GemmParams p = gemm_preset_params(row.preset, cfg.gemm);
  p = gemm_preset_params(row.preset, cfg.gemm_kernel_for(p.m, p.n, p.k));
  p.flops_per_cycle = cfg.cu.flops_per_cycle;
  const KernelTrace gemm = make_gemm_trace(p);
  ASSERT_EQ(gemm.resources.cluster, 2u);
  const double alone = static_cast<double>(gemm_time(cfg, gemm, 0).ps());
  int within = 0;
  for (int i = 0; i < 3; ++i) {
    const double slowdown = static_cast<double>(gemm_time(cfg, gemm, held[i]).ps()) / alone;
    SCOPED_TRACE(fmt::format("{} CUs held: {:.3f} (measured {:.3f})", held[i], slowdown, row.measured[i]));
    EXPECT_NEAR(slowdown, row.measured[i], 0.11);
    within += std::abs(slowdown - row.measured[i]) <= 0.08 ? 1 : 0;
  }
  EXPECT_GE(within, row.within);
}

INSTANTIATE_TEST_SUITE_P(Issue41, HeldSmsShape,
                         ::testing::Values(HeldRow{"palm.fc2.tp32", {1.2335, 1.3363, 1.2994}, 2},
                                           HeldRow{"megagpt2.op.tp8", {1.1065, 1.1448, 1.2287}, 3},
                                           HeldRow{"tnlg.fc2.tp8", {1.1525, 1.2708, 1.3408}, 3}),
                         [](const ::testing::TestParamInfo<HeldRow>& param) {
                           std::string name = param.param.preset;
                           for (char& c : name)
                             if (c == '.') c = '_';
                           return name;
                         });

// Issue 41, stop 60: NVLink traffic draws from the power cap's budget. With another
// GPU reading or writing this one's memory over NVLink (50-372 GB/s, its L2 only),
// back-to-back GEMMs at the cap ran at 0.959-0.978 of the SM clock they had alone and
// took 1.022-1.041x as long (results/h200-measurements/ce_read_source_sweep.csv,
// README point 27). The model's H200 GEMM with its port busy runs its matrix steps, and
// every other SM-clocked time, at gpu.cu.link_busy_compute_clock (the clocks' ratio
// 1.030): within the measured range (a little more or less than the ratio, as the
// last round of tiles falls).
TEST(PowerCap, NvlinkTrafficSlowsAGemmAsTheMachinesClockDrops) {
  const GpuConfig cfg = h200();
  ASSERT_GT(cfg.cu.link_busy_compute_clock_hz, 0u);
  const double clocks = static_cast<double>(cfg.cu.compute_clock_hz) / static_cast<double>(cfg.cu.link_busy_compute_clock_hz);
  for (const char* preset : {"megagpt2.op.tp8", "gpt3.op.tp32"}) {
    GemmParams p = gemm_preset_params(preset, cfg.gemm);
    p = gemm_preset_params(preset, cfg.gemm_kernel_for(p.m, p.n, p.k));
    p.flops_per_cycle = cfg.cu.flops_per_cycle;
    const KernelTrace gemm = make_gemm_trace(p);
    const double alone = static_cast<double>(gemm_time(cfg, gemm, 0).ps());
    const double busy = static_cast<double>(gemm_time(cfg, gemm, 0, /*link_traffic=*/true).ps()) / alone;
    SCOPED_TRACE(fmt::format("{}: {:.4f} with the port busy (clocks {:.4f})", preset, busy, clocks));
    EXPECT_GE(busy, 1.015);
    EXPECT_LE(busy, 1.045);
  }
}

}  // namespace
}  // namespace t3sim
