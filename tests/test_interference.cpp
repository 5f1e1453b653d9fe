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
// second GEMM took 1.23x the first; configs/systems/h200.yaml, memory.mc). Both within
// 3 % of the first GEMM.
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

// Issue 41 item 2: every row of ../shared/calibration/h200/interference_2gpu.csv (the
// GEMM's slowdown and GPU 0's copy's rate during the GEMMs; `line` is the CSV's line),
// run as the model's row (configs/workloads/interference/h200_row.yaml) and held to the
// issue's bars: the slowdown within 0.08 of the measured one (the file's stated
// per-row noise), the copy's bandwidth during the overlap within 25 %. A row takes 2-6
// minutes of one core (130-370 s on the device machine, results/h200-interference/
// rows_stop54.csv), so the 48 run only with T3SIM_LONG_TESTS=1 (every row on 16 cores:
// about 12 minutes); without it each is skipped, and CI's budget keeps them out. They
// are the calibration as it stands: at stop 54, 29 of 48 slowdowns and 29 of 40 copies
// are within their bars (results/h200-interference/README.md says which rows miss and
// what is known of why).
struct MeasuredRow {
  const char* preset;
  const char* interferer;
  const char* order;
  double slowdown;
  double copy_during_GBps;  // 0: none measured (ce_peer_in's copy runs on GPU 1)
  int line;
};

constexpr MeasuredRow kMeasuredRows[] = {
    {"megagpt2.op.tp8", "ce_local", "comm-first", 1.0094, 646.5, 3},
    {"megagpt2.op.tp8", "ce_local", "gemm-first", 1.1536, 626.3, 4},
    {"megagpt2.op.tp8", "sm_local", "comm-first", 1.0124, 188.4, 5},
    {"megagpt2.op.tp8", "sm_local", "gemm-first", 1.0876, 346.7, 6},
    {"megagpt2.op.tp8", "ce_peer_out", "comm-first", 1.0852, 380.1, 7},
    {"megagpt2.op.tp8", "ce_peer_out", "gemm-first", 1.0449, 380.1, 8},
    {"megagpt2.op.tp8", "ce_peer_in", "comm-first", 1.0409, 0, 9},
    {"megagpt2.op.tp8", "ce_peer_in", "gemm-first", 1.0237, 0, 10},
    {"megagpt2.op.tp8", "ce_peer_both", "comm-first", 1.0054, 374.9, 11},
    {"megagpt2.op.tp8", "ce_peer_both", "gemm-first", 1.0781, 375.6, 12},
    {"megagpt2.op.tp8", "sm_push", "comm-first", 1.1490, 177.3, 13},
    {"megagpt2.op.tp8", "sm_push", "gemm-first", 1.1123, 194.3, 14},
    {"tnlg.fc2.tp8", "ce_local", "comm-first", 0.9885, 270.9, 16},
    {"tnlg.fc2.tp8", "ce_local", "gemm-first", 1.1040, 252.7, 17},
    {"tnlg.fc2.tp8", "sm_local", "comm-first", 1.1327, 125.7, 18},
    {"tnlg.fc2.tp8", "sm_local", "gemm-first", 1.2081, 119.6, 19},
    {"tnlg.fc2.tp8", "ce_peer_out", "comm-first", 1.0786, 381.5, 20},
    {"tnlg.fc2.tp8", "ce_peer_out", "gemm-first", 1.0288, 381.3, 21},
    {"tnlg.fc2.tp8", "ce_peer_in", "comm-first", 1.0351, 0, 22},
    {"tnlg.fc2.tp8", "ce_peer_in", "gemm-first", 0.9629, 0, 23},
    {"tnlg.fc2.tp8", "ce_peer_both", "comm-first", 0.9891, 376.7, 24},
    {"tnlg.fc2.tp8", "ce_peer_both", "gemm-first", 1.0700, 376.6, 25},
    {"tnlg.fc2.tp8", "sm_push", "comm-first", 1.1522, 116.2, 26},
    {"tnlg.fc2.tp8", "sm_push", "gemm-first", 1.2020, 115.5, 27},
    {"gpt3.op.tp32", "ce_local", "comm-first", 1.1061, 982.7, 29},
    {"gpt3.op.tp32", "ce_local", "gemm-first", 1.2072, 928.5, 30},
    {"gpt3.op.tp32", "sm_local", "comm-first", 1.2915, 161.1, 31},
    {"gpt3.op.tp32", "sm_local", "gemm-first", 1.1300, 255.2, 32},
    {"gpt3.op.tp32", "ce_peer_out", "comm-first", 1.1086, 380.4, 33},
    {"gpt3.op.tp32", "ce_peer_out", "gemm-first", 1.0497, 380.2, 34},
    {"gpt3.op.tp32", "ce_peer_in", "comm-first", 1.0790, 0, 35},
    {"gpt3.op.tp32", "ce_peer_in", "gemm-first", 0.9845, 0, 36},
    {"gpt3.op.tp32", "ce_peer_both", "comm-first", 1.1046, 375.1, 37},
    {"gpt3.op.tp32", "ce_peer_both", "gemm-first", 1.0433, 375.4, 38},
    {"gpt3.op.tp32", "sm_push", "comm-first", 1.2516, 201.1, 39},
    {"gpt3.op.tp32", "sm_push", "gemm-first", 1.0995, 152.2, 40},
    {"palm.fc2.tp32", "ce_local", "comm-first", 1.0177, 236.0, 42},
    {"palm.fc2.tp32", "ce_local", "gemm-first", 1.1307, 223.9, 43},
    {"palm.fc2.tp32", "sm_local", "comm-first", 1.1332, 113.0, 44},
    {"palm.fc2.tp32", "sm_local", "gemm-first", 1.1885, 106.3, 45},
    {"palm.fc2.tp32", "ce_peer_out", "comm-first", 1.0916, 381.0, 46},
    {"palm.fc2.tp32", "ce_peer_out", "gemm-first", 1.0458, 380.8, 47},
    {"palm.fc2.tp32", "ce_peer_in", "comm-first", 1.0400, 0, 48},
    {"palm.fc2.tp32", "ce_peer_in", "gemm-first", 0.9321, 0, 49},
    {"palm.fc2.tp32", "ce_peer_both", "comm-first", 0.9934, 376.0, 50},
    {"palm.fc2.tp32", "ce_peer_both", "gemm-first", 1.0429, 376.0, 51},
    {"palm.fc2.tp32", "sm_push", "comm-first", 1.1502, 103.8, 52},
    {"palm.fc2.tp32", "sm_push", "gemm-first", 1.2226, 103.9, 53},
};

void PrintTo(const MeasuredRow& r, std::ostream* os) {
  *os << r.preset << " beside " << r.interferer << ", " << r.order << " (interference_2gpu.csv line " << r.line << ")";
}

class H200InterferenceRow : public ::testing::TestWithParam<MeasuredRow> {};

TEST_P(H200InterferenceRow, SlowdownWithin008AndCopyWithin25Percent) {
  if (std::getenv("T3SIM_LONG_TESTS") == nullptr)
    GTEST_SKIP() << "a row simulates for minutes: T3SIM_LONG_TESTS=1 runs it";
  const MeasuredRow& m = GetParam();
  const t3sim::RunOutcome out = run_row({fmt::format("workload.gemm.preset={}", m.preset),
                                         fmt::format("workload.interferer={}", m.interferer),
                                         fmt::format("workload.order={}", m.order)});
  const std::string where = fmt::format("interference_2gpu.csv line {}", m.line);
  EXPECT_NEAR(std::stod(metric(out, "gemm_slowdown")), m.slowdown, 0.08) << where;
  if (m.copy_during_GBps > 0) {
    const std::string during = metric(out, "copy_GBps_during");
    ASSERT_FALSE(during.empty()) << where << ": no copy ended inside the GEMMs' window";
    EXPECT_NEAR(std::stod(during), m.copy_during_GBps, 0.25 * m.copy_during_GBps) << where;
  }
}

INSTANTIATE_TEST_SUITE_P(Issue41, H200InterferenceRow, ::testing::ValuesIn(kMeasuredRows),
                         [](const ::testing::TestParamInfo<MeasuredRow>& row) {
                           std::string name = fmt::format("{}_{}_{}", row.param.preset, row.param.interferer,
                                                          row.param.order);
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace t3sim
