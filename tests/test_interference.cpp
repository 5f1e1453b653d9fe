// Issue 41: the copy kernel (trace/copy_kernel.h) and the interference microbenchmark
// (models/system/interference/): a GEMM series beside a stream of copies.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <fstream>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/run.h"
#include "models/cu/compute_unit.h"
#include "models/system/interference/interference_system.h"
#include "tests/long_tests.h"
#include "tests/table1_node.h"
#include "trace/copy_kernel.h"

namespace t3sim {
namespace {

struct Bytes {
  std::uint64_t loaded = 0, stored = 0, remote = 0;
};

Bytes count(const KernelTrace& t) {
  Bytes b;
  for (std::uint32_t wg = 0; wg < t.num_wgs(); ++wg) {
    WgExpander x(t, wg);
    WgOp op;
    while (x.next(op)) {
      if (op.kind == TraceOpKind::kLoad) b.loaded += op.bytes();
      if (op.kind == TraceOpKind::kStore) {
        b.stored += op.bytes();
        if (op.remote()) b.remote += op.bytes();
      }
    }
  }
  return b;
}

// Every byte is loaded once and stored once, whatever the size's remainder after the
// unrolled loop (whole leftover blocks and a partial one), local or into a peer.
TEST(CopyKernel, MovesEveryByteOnce) {
  for (const std::uint64_t bytes : {64ULL << 20, (64ULL << 20) + 16 * 1234, 16ULL * 100, 786432ULL * 3 + 8192 * 5}) {
    for (const std::uint32_t ctas : {1u, 24u, 66u}) {
      for (const bool push : {false, true}) {
        CopyKernelParams p;
        p.src = 1 << 20;
        p.dst = 256 << 20;
        p.bytes = bytes;
        p.ctas = ctas;
        if (push) p.peer = 1;
        const KernelTrace t = make_copy_trace(p);
        const Bytes b = count(t);
        SCOPED_TRACE(fmt::format("{} B, {} CTAs, push {}", bytes, ctas, push));
        EXPECT_EQ(t.num_wgs(), ctas);
        EXPECT_EQ(b.loaded, bytes);
        EXPECT_EQ(b.stored, bytes);
        EXPECT_EQ(b.remote, push ? bytes : 0u);
        EXPECT_EQ(t.resources.threads_per_wg, 512u);
        EXPECT_EQ(t.resources.wfs_per_wg, 16u);
        EXPECT_EQ(t.resources.regs_per_thread, 32u);
      }
    }
  }
}

TEST(CopyKernel, RejectsWhatItCannotExpress) {
  CopyKernelParams p;
  p.bytes = 100;  // not whole int4 elements
  EXPECT_THROW(make_copy_trace(p), UserError);
  p.bytes = 1 << 20;
  p.threads = 500;  // not whole warps
  EXPECT_THROW(make_copy_trace(p), UserError);
}

// The cuBLAS Hopper GEMM CTA holds 64,512 registers (cublas_kernels.csv), so the
// measurement's copy kernel CTA (512 threads x 32 registers, ptxas) does not fit
// beside it on an SM, while two copy CTAs do.
TEST(CopyKernel, DoesNotShareAnSmWithTheH200Gemm) {
  const NodeConfig node = system_node("h200.yaml");
  GemmParams g = node.gpu.gemm;
  g.m = 1024;
  g.n = 1024;
  g.k = 256;
  const KernelTrace gemm = make_gemm_trace(g);
  EXPECT_EQ(gemm.resources.threads_per_wg * gemm.resources.regs_per_thread, 64512u);
  CopyKernelParams p;
  p.bytes = 1 << 20;
  const KernelTrace copy = make_copy_trace(p);
  const CuConfig& cu = node.gpu.cu;
  const std::uint64_t regs = std::uint64_t{gemm.resources.threads_per_wg} * gemm.resources.regs_per_thread +
                             std::uint64_t{copy.resources.threads_per_wg} * copy.resources.regs_per_thread;
  EXPECT_GT(regs, cu.registers);
  EXPECT_GE(wgs_per_cu(cu, copy.resources), 2u);
}

t3sim::RunRequest row_request(const std::vector<std::string>& overrides) {
  t3sim::RunRequest req;
  req.system = std::string(T3SIM_SOURCE_DIR) + "/configs/systems/h200.yaml";
  req.workload = std::string(T3SIM_SOURCE_DIR) + "/configs/workloads/interference/h200_row.yaml";
  req.overrides = overrides;
  req.timeline = false;
  return req;
}

t3sim::RunOutcome run_row(const std::vector<std::string>& overrides) { return t3sim::run_simulation(row_request(overrides)); }

// A row run with its outputs written to a scratch directory (removed after), and GPU 0's
// kernels as its results.json lists them (null if it lists none).
struct RowWithKernels {
  t3sim::RunOutcome out;
  nlohmann::json kernels;
};
RowWithKernels run_row_with_kernels(const std::vector<std::string>& overrides, const std::string& scratch) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / scratch;
  std::filesystem::remove_all(dir);
  t3sim::RunRequest req = row_request(overrides);
  req.output_dir = dir;
  RowWithKernels r{t3sim::run_simulation(req), {}};
  {
    std::ifstream in(dir / "results.json");
    const nlohmann::json results = nlohmann::json::parse(in)["results"];
    if (results.contains("gpu0_kernels")) r.kernels = results["gpu0_kernels"];
  }
  std::filesystem::remove_all(dir);
  return r;
}

std::string metric(const t3sim::RunOutcome& out, const std::string& name) {
  for (const auto& [key, value] : out.metrics)
    if (key == name) return value;
  ADD_FAILURE() << "no metric " << name;
  return "0";
}

// A small row end to end: GPU 0's copy engine pushing into GPU 1 beside GEMMs. The
// copy alone runs at the NVLink port's rate (net.bandwidth 396 GB/s; the engine's own
// 1.8 TB/s does not bind), keeps it beside the GEMMs (as the measurement's copy
// engines did), and a second run is identical (but for its wall time).
TEST(Interference, SmallCopyEngineRowRunsAndRepeats) {
  const std::vector<std::string> o = {"workload.gemm.preset=megagpt2.op.tp32", "workload.interferer=ce_peer_out",
                                      "workload.copy_bytes=2MiB", "workload.gemms=2"};
  const t3sim::RunOutcome a = run_row(o);
  const double alone = std::stod(metric(a, "copy_alone_GBps"));
  EXPECT_NEAR(alone, 396.0, 0.02 * 396);
  EXPECT_NEAR(std::stod(metric(a, "copy_GBps_during")), alone, 0.05 * alone);
  EXPECT_GE(std::stod(metric(a, "gemm_slowdown")), 0.99);
  EXPECT_GE(std::stoul(metric(a, "gemms")), 2u);
  const t3sim::RunOutcome b = run_row(o);
  auto without_wall = [](std::vector<std::pair<std::string, std::string>> m) {
    std::erase_if(m, [](const auto& kv) { return kv.first == "wall_s"; });
    return m;
  };
  EXPECT_EQ(without_wall(a.metrics), without_wall(b.metrics));
}

// results.json lists GPU 0's kernels with their launch, first WG and end (what
// results/h200-measurements/copy_gaps.csv measures on the machine): every GEMM, each
// later than the one before, in launch order, none ending before its first WG.
TEST(Interference, ResultsListGpu0sKernelsInLaunchOrder) {
  const RowWithKernels r = run_row_with_kernels({"workload.gemm.preset=megagpt2.op.tp32", "workload.interferer=ce_peer_out",
                                                 "workload.copy_bytes=2MiB", "workload.gemms=2"},
                                                "t3sim_interference_kernels");
  ASSERT_FALSE(r.kernels.is_null());
  std::uint64_t gemms = 0, last_launch = 0;
  for (const nlohmann::json& k : r.kernels) {
    EXPECT_EQ(k["kind"], "gemm");  // the copies of ce_peer_out are the copy engine's: no kernel
    const auto launched = k["launched_ps"].get<std::uint64_t>(), first = k["first_dispatch_ps"].get<std::uint64_t>(),
               done = k["done_ps"].get<std::uint64_t>();
    EXPECT_GE(launched, last_launch);
    EXPECT_LE(launched, first);
    EXPECT_LT(first, done);
    last_launch = launched;
    ++gemms;
  }
  EXPECT_EQ(std::to_string(gemms), metric(r.out, "gemms"));
}

// A row's GEMM time is the mean from the series' second GEMM on (the first one's end to
// the last one's, over n - 1; interference_system.h says why): with no copy, the series
// beside "nothing" is the series alone, so the slowdown is exactly 1, and its GEMM time
// follows from the kernels' ends in results.json.
TEST(Interference, GemmTimeIsTheMeanAfterTheFirstGemm) {
  const RowWithKernels r = run_row_with_kernels(
      {"workload.gemm.preset=megagpt2.op.tp32", "workload.interferer=none", "workload.gemms=2"}, "t3sim_interference_steady");
  const nlohmann::json& kernels = r.kernels;
  ASSERT_EQ(kernels.size(), 2u);
  const auto first = kernels[0]["done_ps"].get<std::uint64_t>(), last = kernels[1]["done_ps"].get<std::uint64_t>();
  EXPECT_EQ(metric(r.out, "gemm_ps"), std::to_string(last - first));
  EXPECT_EQ(metric(r.out, "gemm_alone_ps"), metric(r.out, "gemm_ps"));
  EXPECT_EQ(metric(r.out, "gemm_slowdown"), "1.0000");
}

// Back-to-back GEMMs against results/h200-measurements/gemm_steady.csv (README point
// 15): on the H200 a GEMM after another (whose C it writes back) takes what it takes on
// a clean L2 (steady / clean: megagpt2 op 88.93 / 89.86 us, lines 5 and 3; gpt3 op 44.03
// / 44.13, lines 11 and 9). gpt3 op's 50 MB of C fits the 60 MB L2, and the model's
// second and third GEMMs rewrite it in place (with the 50 MiB L2 the second took 1.21x
// the first); megagpt2 op's 100 MB does not fit, and its write-backs (1.1 TB/s) wait in
// the controllers' 512-entry write queues for the DRAM's idle time (with 32 entries the
// second GEMM took 1.23x the first; configs/systems/h200.yaml, memory.mc), and a write
// past the drain timeout goes first without starting a drain (with the drain, the TMA
// loads' deeper prefetch made the second GEMM 1.10x the first). Both within 3 % of the
// first GEMM.
TEST(Interference, BackToBackGemmsAgainstGemmSteady) {
  auto times = [](const std::string& preset, const std::string& scratch) {
    const RowWithKernels r =
        run_row_with_kernels({"workload.gemm.preset=" + preset, "workload.interferer=none", "workload.gemms=3"}, scratch);
    std::vector<double> us;
    for (const nlohmann::json& k : r.kernels)
      us.push_back(1e-6 * static_cast<double>(k["done_ps"].get<std::uint64_t>() -
                                              k["first_dispatch_ps"].get<std::uint64_t>()));
    return us;
  };
  const std::vector<double> gpt3 = times("gpt3.op.tp32", "t3sim_steady_gpt3");
  ASSERT_EQ(gpt3.size(), 3u);
  EXPECT_NEAR(gpt3[1] / gpt3[0], 1.0, 0.03) << gpt3[0] << " then " << gpt3[1];
  EXPECT_NEAR(gpt3[2] / gpt3[0], 1.0, 0.03) << gpt3[0] << " then " << gpt3[2];
  const std::vector<double> mega = times("megagpt2.op.tp8", "t3sim_steady_megagpt2");
  ASSERT_EQ(mega.size(), 3u);
  EXPECT_NEAR(mega[1] / mega[0], 1.0, 0.03) << mega[0] << " then " << mega[1];
  EXPECT_NEAR(mega[2] / mega[0], 1.0, 0.03) << mega[0] << " then " << mega[2];
}

// The kind's own inputs: a bad interferer names the key; homogeneous mode is refused.
TEST(Interference, BadInputNamesTheKey) {
  try {
    run_row({"workload.interferer=sm_lokal"});
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.interferer"), std::string::npos) << e.what();
  }
  try {
    run_row({"run.mode=homogeneous"});
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("run.mode"), std::string::npos) << e.what();
  }
  try {
    run_row({"workload.threads=500"});
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.threads"), std::string::npos) << e.what();
  }
}

// Issue 41 item 2: each row family of ../shared/calibration/h200/interference_2gpu.csv (a
// GEMM beside one interferer), held to the steady state the H200 shows. The file's own
// rows mix GEMMs beside the copies with GEMMs alone (the copies covered 2-100 % of the
// window, as CUDA's launch queue let them) and two runs of a row differ by up to 0.13; the
// model's row (configs/workloads/interference/h200_row.yaml, every copy covering every
// GEMM after the first) is the steady state, so that is what it is compared with
// (tools/interference_report.py relates the two through the coverage). Measured
// (results/h200-measurements/README.md):
//   * the one-GPU families (ce_local, sm_local): interfere_steady.csv (point 31,
//     tools/h200/interfere_steady.py), one unbroken stream of GEMMs, alone, then beside
//     the copies, then alone again, so both sides run at the clock the load settles to;
//     six runs each, spread 0.01-0.06;
//   * the two-GPU families (ce_peer_*, sm_push): interfere_trace_2gpu_peer.csv (point 19,
//     tools/h200/interfere_trace.py: the GEMMs wholly beside the copies over a baseline
//     timed just before; no two-GPU machine was lent for the steady method since).
// Bars, the issue's: the GEMM's slowdown within 0.08 of the measured median; a copy
// engine's rate during the GEMMs within 25 % of its median. An SM copy kernel's rate at
// 64 MiB is one draw of a quantity its phase against the GEMMs decides (the machine's own
// swings 2x between sizes 4 MiB apart), so H200CopyPhase, below, holds its mean over the
// phase for every GEMM instead. A row takes 2-6 minutes of one core (116-374 s on the
// device machine, results/h200-interference/rows_stop55.csv), so the 24 run only with
// T3SIM_LONG_TESTS=1 (all of them on 16 cores: about 8 minutes); without it each is
// skipped, and CI's budget keeps them out. They are the calibration as it stands:
// gpt3.op.tp32 beside ce_local misses by +0.094, its GEMM beside the copy engine within
// 1 % of the machine's (72.8 against 72.2 us) and alone 4.4 % fast (39.7 against 41.5),
// an isolated-GEMM residual that a 1.74x ratio amplifies; gpt3.op.tp32 beside sm_push
// misses by -0.082 against the older method's median (results/h200-interference/README.md).
struct MeasuredFamily {
  const char* preset;
  const char* interferer;
  double slowdown;          // the family's median: slowdown (interfere_steady.csv) or slowdown_inside over the rows
                            // with 20 or more chunks inside (interfere_trace_*.csv, as the report)
  double copy_during_GBps;  // median of copy_GBps_during; 0: none (ce_peer_in's copy runs on GPU 1)
                            // or not held here (an SM copy kernel: H200CopyPhase)
  const char* rows;         // where: file (results/h200-measurements/) and line numbers
};

constexpr MeasuredFamily kMeasuredFamilies[] = {
    {"megagpt2.op.tp8", "ce_local", 1.378, 622.0, "interfere_steady.csv 3-8"},
    {"megagpt2.op.tp8", "sm_local", 1.138, 0, "interfere_steady.csv 9-14"},
    {"megagpt2.op.tp8", "ce_peer_out", 1.072, 380.2, "interfere_trace_2gpu_peer.csv 3-6"},
    {"megagpt2.op.tp8", "ce_peer_in", 1.047, 0, "interfere_trace_2gpu_peer.csv 7-10"},
    {"megagpt2.op.tp8", "ce_peer_both", 1.112, 375.1, "interfere_trace_2gpu_peer.csv 11-14"},
    {"megagpt2.op.tp8", "sm_push", 1.199, 0, "interfere_trace_2gpu_peer.csv 16-18"},
    {"tnlg.fc2.tp8", "ce_local", 1.070, 246.0, "interfere_steady.csv 15-20"},
    {"tnlg.fc2.tp8", "sm_local", 1.149, 0, "interfere_steady.csv 21-26"},
    {"tnlg.fc2.tp8", "ce_peer_out", 1.027, 380.8, "interfere_trace_2gpu_peer.csv 19-22"},
    {"tnlg.fc2.tp8", "ce_peer_in", 1.010, 0, "interfere_trace_2gpu_peer.csv 23-26"},
    {"tnlg.fc2.tp8", "ce_peer_both", 1.016, 376.3, "interfere_trace_2gpu_peer.csv 27-30"},
    {"tnlg.fc2.tp8", "sm_push", 1.175, 0, "interfere_trace_2gpu_peer.csv 31-34"},
    {"gpt3.op.tp32", "ce_local", 1.741, 929.5, "interfere_steady.csv 27-32"},
    {"gpt3.op.tp32", "sm_local", 1.270, 0, "interfere_steady.csv 33-38"},
    {"gpt3.op.tp32", "ce_peer_out", 1.111, 380.4, "interfere_trace_2gpu_peer.csv 35-38"},
    {"gpt3.op.tp32", "ce_peer_in", 1.046, 0, "interfere_trace_2gpu_peer.csv 39-42"},
    {"gpt3.op.tp32", "ce_peer_both", 1.151, 375.4, "interfere_trace_2gpu_peer.csv 43-46"},
    {"gpt3.op.tp32", "sm_push", 1.366, 0, "interfere_trace_2gpu_peer.csv 47-50"},
    {"palm.fc2.tp32", "ce_local", 1.096, 216.4, "interfere_steady.csv 39-44"},
    {"palm.fc2.tp32", "sm_local", 1.152, 0, "interfere_steady.csv 45-50"},
    {"palm.fc2.tp32", "ce_peer_out", 1.018, 380.7, "interfere_trace_2gpu_peer.csv 51-54"},
    {"palm.fc2.tp32", "ce_peer_in", 0.993, 0, "interfere_trace_2gpu_peer.csv 55-58"},
    {"palm.fc2.tp32", "ce_peer_both", 1.014, 376.1, "interfere_trace_2gpu_peer.csv 59-62"},
    {"palm.fc2.tp32", "sm_push", 1.204, 0, "interfere_trace_2gpu_peer.csv 63-66"},
};

void PrintTo(const MeasuredFamily& f, std::ostream* os) {
  *os << f.preset << " beside " << f.interferer << " (" << f.rows << ")";
}

class H200InterferenceFamily : public ::testing::TestWithParam<MeasuredFamily> {};

TEST_P(H200InterferenceFamily, SteadySlowdownWithin008AndCopyWithin25Percent) {
  T3SIM_SKIP_UNLESS_LONG_TESTS("a row simulates for minutes");
  const MeasuredFamily& m = GetParam();
  const t3sim::RunOutcome out = run_row({fmt::format("workload.gemm.preset={}", m.preset),
                                         fmt::format("workload.interferer={}", m.interferer)});
  const std::string where = fmt::format("results/h200-measurements/{}", m.rows);
  EXPECT_NEAR(std::stod(metric(out, "gemm_slowdown")), m.slowdown, 0.08) << where;
  if (m.copy_during_GBps > 0) {
    const std::string during = metric(out, "copy_GBps_during");
    ASSERT_FALSE(during.empty()) << where << ": no copy ended inside the GEMMs' window";
    EXPECT_NEAR(std::stod(during), m.copy_during_GBps, 0.25 * m.copy_during_GBps) << where;
  }
}

// Issue 41 item 2, the copy kernel's rate beside the GEMMs over its phase. A copy kernel
// beside back-to-back GEMMs runs packed (3-4 CTAs on 6-8 SMs) and, when it ends inside a
// GEMM, the next one waits for that GEMM's tail; when it ends in a GEMM's last fifth the
// next one finds 24 SMs free and spreads (an 85 us copy instead of ~350). Measured
// (results/h200-interference/copy_phase/, tools/h200/copy_phase.cu: 32-94 MiB copies
// beside gpt3.op, megagpt2.op, palm.fc2 and tnlg.fc2): of 122 packed copies that ended in
// a GEMM's last fifth 117 were followed by a spread copy, of 560 that ended before
// 0.7 of a GEMM 1. So the rate at one size depends on where the copy's end falls against
// the GEMMs' period: 155 to 640 GB/s for gpt3.op between sizes 2 MiB apart, and the
// 64 MiB rows of interference_2gpu.csv are one draw of it (palm.fc2: the machine's rate
// falls from the spread regime to the packed one between 56 and 60 MiB, the model's
// between 64 and 68, so at 64 MiB they sit on either side: 116 against 205 GB/s). The
// quantity the mechanisms decide is the rate over the phase: the mean over 16 sizes, 32
// to 92 MiB in steps of 4, within the issue's 25 %. Sixteen rows of 2-7 minutes each:
// T3SIM_LONG_TESTS=1 only (16 cores: about 7 minutes a GEMM).
struct CopyPhaseSweep {
  const char* preset;
  const char* interferer;      // sm_local (one H200) or sm_push (into GPU 1; copy_phase_push.csv)
  std::uint32_t min_gemms;     // workload.gemms (palm.fc2's row otherwise holds 5 GEMMs: 1-2 copies)
  double measured_mean_GBps;   // the mean of copy_phase.py's rate column over the same 16 sizes
  const char* source;
};

constexpr CopyPhaseSweep kCopyPhaseSweeps[] = {
    // The local copy kernel (copy_phase/copy_phase.md and copy_phase_long.csv; the model's
    // means at stops 61 and 64: 241.7, 208.7, 153.3, 165.1 GB/s).
    {"gpt3.op.tp32", "sm_local", 4, 239.3, "copy_phase.csv"},
    {"megagpt2.op.tp8", "sm_local", 4, 179.6, "copy_phase.csv"},
    {"palm.fc2.tp32", "sm_local", 10, 147.5, "copy_phase_long.csv"},
    {"tnlg.fc2.tp8", "sm_local", 10, 160.4, "copy_phase_long.csv"},
    // The push into the peer over the same sizes (copy_phase_push.md, push2_summary.md; the
    // model's means at stops 62 and 63: 205.1, 153.1, 190.6, 167.6 GB/s).
    {"gpt3.op.tp32", "sm_push", 4, 179.6, "copy_phase_push.csv"},
    {"palm.fc2.tp32", "sm_push", 10, 138.5, "copy_phase_push.csv"},
    {"megagpt2.op.tp8", "sm_push", 4, 162.3, "copy_phase_push2.csv"},
    {"tnlg.fc2.tp8", "sm_push", 10, 145.5, "copy_phase_push2.csv"},
};

void PrintTo(const CopyPhaseSweep& s, std::ostream* os) {
  *os << s.preset << " beside " << s.interferer << " (" << s.source << ")";
}

class H200CopyPhase : public ::testing::TestWithParam<CopyPhaseSweep> {};

TEST_P(H200CopyPhase, CopyKernelRateOverThePhaseWithin25Percent) {
  const CopyPhaseSweep& s = GetParam();
  // A measured mean of zero would make the bar zero wide (6c45abd had left five so).
  ASSERT_GT(s.measured_mean_GBps, 0.0) << s.source;
  T3SIM_SKIP_UNLESS_LONG_TESTS("sixteen rows simulate for minutes each");
  double sum = 0;
  int sizes = 0;
  for (int mib = 32; mib <= 92; mib += 4, ++sizes) {
    const t3sim::RunOutcome out =
        run_row({fmt::format("workload.gemm.preset={}", s.preset), fmt::format("workload.interferer={}", s.interferer),
                 fmt::format("workload.copy_bytes={}MiB", mib), fmt::format("workload.gemms={}", s.min_gemms)});
    const std::string during = metric(out, "copy_GBps_during");
    ASSERT_FALSE(during.empty()) << mib << " MiB: no copy ended inside the GEMMs' window";
    sum += std::stod(during);
  }
  const double mean = sum / sizes;
  EXPECT_NEAR(mean, s.measured_mean_GBps, 0.25 * s.measured_mean_GBps)
      << "mean over 32-92 MiB against results/h200-interference/copy_phase/" << s.source;
}

INSTANTIATE_TEST_SUITE_P(Issue41, H200CopyPhase, ::testing::ValuesIn(kCopyPhaseSweeps),
                         [](const ::testing::TestParamInfo<CopyPhaseSweep>& sweep) {
                           std::string name = fmt::format("{}_{}", sweep.param.preset, sweep.param.interferer);
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

INSTANTIATE_TEST_SUITE_P(Issue41, H200InterferenceFamily, ::testing::ValuesIn(kMeasuredFamilies),
                         [](const ::testing::TestParamInfo<MeasuredFamily>& family) {
                           std::string name = fmt::format("{}_{}", family.param.preset, family.param.interferer);
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace t3sim
