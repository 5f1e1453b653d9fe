// T3's sub-layer results on the paper's cases (T3 §6.1), end to end in homogeneous
// mode: t3 beats sequential on every Mega-GPT-2 / T-NLG case and stays above the
// ideal overlap, and t3-mca is as fast as t3 on the memory-intensive ones (FC-1, FC-2,
// IP; within 0.5 %: here the round-robin arbiter does not slow these GEMMs, which run
// at ~94 % of the matrix cores' peak); T3-MCA's arbitration shields a memory-intensive GEMM from the RS
// traffic, and its occupancy threshold trades the GEMM's speed against the exposed
// communication (T3 §4.5). Results compared with bounds, never exact values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "models/system/sublayer_system.h"
#include "sim/simulator.h"
#include "tests/long_tests.h"
#include "tests/table1_node.h"
#include "trace/gemm.h"

namespace t3sim {
namespace {

struct Case {
  std::string preset;
  std::vector<std::string> overrides;  // relative to configs/systems/table1.yaml
};

SublayerResult run_case(const Case& c, const char* configuration) {
  const GemmPreset& preset = find_gemm_preset(c.preset);
  const NodeConfig cfg = table1(preset.tp, NetMode::kHomogeneous, c.overrides);
  GemmParams p = gemm_preset_params(c.preset);
  p.flops_per_cycle = cfg.gpu.cu.flops_per_cycle;
  GemmWorkload wl;
  wl.trace = make_gemm_trace(p);
  wl.params = p;
  wl.tp = preset.tp;
  wl.description = c.preset;
  SublayerOptions opt;
  opt.functional = "off";
  Simulator sim(1);
  SublayerSystem sys(sim, cfg, std::move(wl), opt, configuration, 1);
  return sys.run();
}

double ms(Tick t) { return static_cast<double>(t.ps()) * 1e-9; }

// ---------------------------------------------------------------------------
// T3 §6.1.1: t3 is faster than sequential on all 16 sub-layers.

class T3BeatsSequential : public testing::TestWithParam<std::string> {};

TEST_P(T3BeatsSequential, AndStaysAboveTheIdealOverlap) {
  const Case c{GetParam(), {}};
  // CI runs two of the 16 cases (CI's budget, README.md "How long CI takes": the 16 took
  // 460 s of its 2-core ctest at stop 66): Mega-GPT-2's OP, whose GEMM fits the L2, and
  // T-NLG's IP, a memory-intensive one that also holds t3-mca to t3. The other 14 run with
  // T3SIM_LONG_TESTS=1, and the T3 reproduction (results/t3-fig16, tools/reproduce_t3.sh)
  // holds all 16 to the same claim.
  if (c.preset != "megagpt2.op.tp8" && c.preset != "tnlg.ip.tp8")
    T3SIM_SKIP_UNLESS_LONG_TESTS("one of the 14 paper cases CI leaves to the T3 reproduction");
  const SublayerResult seq = run_case(c, "sequential");
  const SublayerResult t3 = run_case(c, "t3");
  // T3 §6.1.3 on the memory-intensive sub-layers (not OP, whose GEMM fits the L2).
  if (c.preset.find(".op.") == std::string::npos) {
    const SublayerResult mca = run_case(c, "t3-mca");
    EXPECT_LE(ms(mca.total), 1.005 * ms(t3.total)) << c.preset << ": t3-mca " << ms(mca.total) << " ms, t3 "
                                                   << ms(t3.total);
  }
  EXPECT_LT(t3.total, seq.total) << c.preset << ": t3 " << ms(t3.total) << " ms, sequential " << ms(seq.total);
  // T3 §5.3: about no better than the isolated GEMM and RS perfectly overlapped,
  // then the AG. 3 % slack: fusion drops the GEMM's first-stage writes and NMC the
  // RS's reads, so OP layers may edge past it (T3 §6.1.2 says so too).
  const double ideal = ms(std::max(seq.gemm, seq.rs) + seq.ag);
  EXPECT_GE(ms(t3.total), 0.97 * ideal) << c.preset;
}

std::vector<std::string> paper_cases() {
  std::vector<std::string> names;
  for (const char* model : {"megagpt2", "tnlg"})
    for (const char* layer : {"op", "fc2", "fc1", "ip"})
      for (const char* tp : {"tp8", "tp16"}) names.push_back(fmt::format("{}.{}.{}", model, layer, tp));
  return names;
}

INSTANTIATE_TEST_SUITE_P(T3Section6, T3BeatsSequential, testing::ValuesIn(paper_cases()),
                         [](const testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           for (char& ch : n)
                             if (ch == '.') ch = '_';
                           return n;
                         });

// ---------------------------------------------------------------------------
// T3 §4.5 / §6.1.3 on a memory-intensive sub-layer: GPT-3 FC-2 at TP 32 (its GEMM
// reads ~316 MB per GPU while the RS's DMA reads and updates compete for DRAM).

Case gpt3_fc2(const std::string& arbiter) {
  if (arbiter == "round-robin") return {"gpt3.fc2.tp32", {}};
  return {"gpt3.fc2.tp32", {"memory.mc.arbiter.type=mca", "memory.mc.arbiter.threshold=" + arbiter}};
}

TEST(T3Mca, ThresholdTradesGemmSpeedForExposedCommunication) {
  const SublayerResult round_robin = run_case(gpt3_fc2("round-robin"), "t3");
  const SublayerResult low = run_case(gpt3_fc2("5"), "t3-mca");
  const SublayerResult unlimited = run_case(gpt3_fc2("unlimited"), "t3-mca");
  // Compute first (any threshold) shields the GEMM from the bursty RS traffic that
  // round-robin lets into the DRAM queues (T3 Figure 17).
  EXPECT_LT(ms(low.gemm), 0.95 * ms(round_robin.gemm));
  EXPECT_LT(ms(unlimited.gemm), 0.95 * ms(round_robin.gemm));
  // The trade-off: a low threshold keeps the queues for the GEMM (not slower than
  // unlimited) but starves the RS, whose exposed part grows.
  EXPECT_LE(ms(low.gemm), ms(unlimited.gemm));
  EXPECT_GT(ms(low.rs), 1.5 * ms(unlimited.rs));
}

}  // namespace
}  // namespace t3sim
