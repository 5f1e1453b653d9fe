// Issue 41, calibration: a cuBLAS GEMM on an H200 with k SMs held by another kernel's
// CTAs (results/h200-measurements/spin_blockers.csv, tile_order.log). The model's H200
// GEMM (configs/systems/h200.yaml: persistent, 2 tiles owned per CTA) beside a kernel
// whose WGs each fill a CU and compute for longer than the GEMM runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

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

// The GEMM's time (launch to last WG) with `held` CUs taken first by spinning WGs.
Tick gemm_time(const GpuConfig& cfg, const KernelTrace& gemm, std::uint32_t held) {
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
    EXPECT_LE(with_in_order, 1.0 + 2.0 * row.held / 132);
    EXPECT_GE(with_owned - with_in_order, 0.05);
    EXPECT_NEAR(with_owned, row.measured, 0.08);
  }
}

}  // namespace
}  // namespace t3sim
