// Golden results: small, fast runs that cover every path of `t3sim run`, with their
// exact outputs pinned in tests/golden/<case>/: results.json's results in full
// (results.json, without what varies between builds and checkouts), and every
// statistic through a digest (stats.digest: the row count and a 64-bit FNV-1a hash of
// stats.csv and of results.json's stats section, whose full arrays stats.csv leaves
// out; the files themselves are tens of MB for a node). A refactor that claims "results
// identical" is checked here byte for byte; a change that must move a number updates
// the pinned files in the same commit and says which and why in its message.
//
// Regenerate after an intended change (then review `git diff tests/golden`):
//   T3SIM_UPDATE_GOLDEN=1 ./build/tests/test_golden
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/run.h"

namespace {

namespace fs = std::filesystem;

const fs::path kSource = T3SIM_SOURCE_DIR;

struct GoldenCase {
  std::string name;  // folder under tests/golden/
  std::string system, workload, configuration;
  std::vector<std::string> overrides;
  unsigned threads = 1;
};

// Failures name the case, not its bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

// Every path: a ring on the idealized memory, the memory system alone under MCA, a GEMM alone,
// a GEMM beside a copy engine or a copy kernel (kind interference),
// the sub-layer under each configuration in both modes, DMA- and CU-based node
// collectives on other topologies, and a partitioned run on two host threads.
const std::vector<GoldenCase>& cases() {
  static const std::vector<GoldenCase> kCases = {
      {"ideal_ring_rs", "configs/systems/ring8.yaml", "configs/workloads/ring_rs.yaml", "",
       {"system.num_gpus=4", "workload.size=1MB"}},
      {"memory_mca", "configs/systems/table1.yaml", "configs/workloads/memory/contention.yaml", "",
       {"system.memory.mc.arbiter.type=mca", "workload.generators[0].requests=20000",
        "workload.generators[1].duration=10us", "workload.generators[2].duration=10us"}},
      {"gemm_small", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "", {}},
      {"sublayer_sequential_full", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml",
       "sequential", {"system.num_gpus=4", "run.mode=full"}},
      {"sublayer_sequential_homogeneous", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml",
       "sequential", {"system.num_gpus=4", "run.mode=homogeneous"}},
      {"sublayer_t3_full", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "t3",
       {"system.num_gpus=4", "run.mode=full"}},
      {"sublayer_t3_homogeneous", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "t3",
       {"system.num_gpus=4", "run.mode=homogeneous"}},
      {"sublayer_t3mca_full", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "t3-mca",
       {"system.num_gpus=4", "run.mode=full"}},
      {"sublayer_t3mca_homogeneous", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "t3-mca",
       {"system.num_gpus=4", "run.mode=homogeneous"}},
      {"sublayer_ideal_overlap_full", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml",
       "ideal-overlap", {"system.num_gpus=4", "run.mode=full"}},
      {"sublayer_ideal_overlap_homogeneous", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml",
       "ideal-overlap", {"system.num_gpus=4", "run.mode=homogeneous"}},
      {"sublayer_ideal_rs_nmc_homogeneous", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml",
       "ideal-rs-nmc", {"system.num_gpus=4", "run.mode=homogeneous"}},
      {"sublayer_t3_dma_ag_full", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "t3",
       {"system.num_gpus=4", "run.mode=full", "workload.collective.t3_all_gather=dma"}},
      // Protocols (issue 16): auto picks LL for a small RS on Table 1, LL128 for a
      // medium all-reduce on H200 (LL128 enabled there).
      {"ring_ll_table1", "configs/systems/table1.yaml", "configs/workloads/collectives/ring_rs.yaml", "",
       {"system.num_gpus=4", "workload.size=256KiB", "workload.cus=8"}},
      {"ring_ll128_h200", "configs/systems/h200.yaml", "configs/workloads/collectives/ring_rs.yaml", "",
       {"system.num_gpus=4", "workload.collective=ring-ar", "workload.size=4MiB", "run.mode=homogeneous"}},
      {"sublayer_t3_direct_full", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "t3",
       {"system.num_gpus=4", "run.mode=full", "system.net.topology=fully-connected"}},
      {"dma_all_gather", "configs/systems/mi300x.yaml", "configs/workloads/collectives/dma_all_gather.yaml", "",
       {"system.num_gpus=4", "workload.size=2MB"}},
      {"direct_rs_fully_connected", "configs/systems/table1.yaml", "configs/workloads/collectives/ring_rs.yaml", "",
       {"system.num_gpus=4", "system.net.topology=fully-connected", "workload.collective=direct-rs",
        "workload.size=2MB"}},
      // Issue 44 item 3's registered algorithm: recursive halving-doubling (full mode only).
      {"rhd_ar_fully_connected_full", "configs/systems/table1.yaml", "configs/workloads/collectives/ring_rs.yaml", "",
       {"system.num_gpus=4", "system.net.topology=fully-connected", "workload.collective=rhd-ar",
        "workload.size=2MB", "run.mode=full"}},
      {"ring_rs_switch_homogeneous", "configs/systems/table1.yaml", "configs/workloads/collectives/ring_rs.yaml", "",
       {"system.num_gpus=4", "system.net.topology=switch", "workload.size=2MB", "run.mode=homogeneous"}},
      {"ring_rs_partitioned_2_threads", "configs/systems/table1.yaml", "configs/workloads/collectives/ring_rs.yaml",
       "", {"system.num_gpus=4", "workload.size=2MB"}, 2},
      // Issue 44 item 1, before the drivers merge: the sub-layer's fused configuration and
      // kind c3 in both orders and on the copy engines (one wave of MI300X tiles beside a
      // 4 MiB all-gather, homogeneous mode).
      {"sublayer_fused_homogeneous", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml", "fused",
       {"system.num_gpus=4", "run.mode=homogeneous"}},
      {"c3_gemm_first_homogeneous", "configs/systems/mi300x.yaml", "configs/workloads/c3/small.yaml", "c3",
       {"system.num_gpus=4", "run.mode=homogeneous", "workload.gemm.k=256", "workload.collective.size=4MiB",
        "workload.order=gemm-first"}},
      {"c3_comm_first_homogeneous", "configs/systems/mi300x.yaml", "configs/workloads/c3/small.yaml", "c3",
       {"system.num_gpus=4", "run.mode=homogeneous", "workload.gemm.k=256", "workload.collective.size=4MiB",
        "workload.order=comm-first"}},
      {"c3_conccl_homogeneous", "configs/systems/mi300x.yaml", "configs/workloads/c3/small.yaml", "conccl",
       {"system.num_gpus=4", "run.mode=homogeneous", "workload.gemm.k=256", "workload.collective.size=4MiB"}},
      // Stop 62: c3-priority with a wave and a half of tiles (so slots free while the
      // collective waits), and a ring RS on a 2 x 2 torus (full mode).
      {"c3_priority_homogeneous", "configs/systems/mi300x.yaml", "configs/workloads/c3/small.yaml", "c3-priority",
       {"system.num_gpus=4", "run.mode=homogeneous", "workload.gemm.m=6144", "workload.gemm.k=256",
        "workload.collective.size=4MiB"}},
      {"ring_rs_torus_2d", "configs/systems/table1.yaml", "configs/workloads/collectives/ring_rs.yaml", "",
       {"system.num_gpus=4", "system.net.topology=torus-2d", "workload.size=2MB"}},
      // The four overlap kinds (seeds 000 and 001) under sequential and fused, each a
      // small case of its shipped workload.
      {"ag_gemm_sequential", "configs/systems/mi300x.yaml", "configs/workloads/ag_gemm/seed001.yaml", "sequential",
       {"system.num_gpus=4", "workload.gemm.m=2048", "workload.gemm.n=1024", "workload.gemm.k=256"}},
      {"ag_gemm_fused", "configs/systems/mi300x.yaml", "configs/workloads/ag_gemm/seed001.yaml", "fused",
       {"system.num_gpus=4", "workload.gemm.m=2048", "workload.gemm.n=1024", "workload.gemm.k=256"}},
      {"gemm_a2a_sequential", "configs/systems/mi210x4.yaml", "configs/workloads/gemm_a2a/moe.yaml", "sequential",
       {"workload.gemm.m=1024", "workload.gemm.n=1024", "workload.gemm.k=1024"}},
      {"gemm_a2a_fused", "configs/systems/mi210x4.yaml", "configs/workloads/gemm_a2a/moe.yaml", "fused",
       {"workload.gemm.m=1024", "workload.gemm.n=1024", "workload.gemm.k=1024"}},
      {"gemv_ar_sequential", "configs/systems/mi210x4.yaml", "configs/workloads/gemv_ar/decode.yaml", "sequential",
       {"workload.gemv.m=1024", "workload.gemv.k=1024"}},
      {"gemv_ar_fused", "configs/systems/mi210x4.yaml", "configs/workloads/gemv_ar/decode.yaml", "fused",
       {"workload.gemv.m=1024", "workload.gemv.k=1024"}},
      {"embedding_a2a_sequential", "configs/systems/mi210x4.yaml", "configs/workloads/embedding_a2a/dlrm.yaml",
       "sequential", {"workload.batch=64", "workload.tables=8"}},
      {"embedding_a2a_fused", "configs/systems/mi210x4.yaml", "configs/workloads/embedding_a2a/dlrm.yaml", "fused",
       {"workload.batch=64", "workload.tables=8"}},
      // Kind interference (issue 41's mechanisms): a small GEMM on GPU 0 of two H200s beside
      // a copy engine pushing to the peer, the 24-CTA copy kernel copying locally, and
      // the copy kernel pushing to the peer.
      {"interference_ce_peer_out", "configs/systems/h200.yaml", "configs/workloads/interference/h200_row.yaml", "",
       {"workload.gemm={m: 2048, n: 1024, k: 256}", "workload.interferer=ce_peer_out", "workload.copy_bytes=1MiB",
        "workload.gemms=2", "workload.window_copies=2"}},
      {"interference_sm_local", "configs/systems/h200.yaml", "configs/workloads/interference/h200_row.yaml", "",
       {"workload.gemm={m: 2048, n: 1024, k: 256}", "workload.interferer=sm_local", "workload.copy_bytes=1MiB",
        "workload.gemms=2", "workload.window_copies=2"}},
      {"interference_sm_push_gemm_first", "configs/systems/h200.yaml",
       "configs/workloads/interference/h200_row.yaml", "",
       {"workload.gemm={m: 2048, n: 1024, k: 256}", "workload.interferer=sm_push", "workload.copy_bytes=1MiB",
        "workload.gemms=2", "workload.window_copies=2", "workload.order=gemm-first"}},
  };
  return kCases;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// results.json without what differs between builds, checkouts and refactors that keep
// the model: version, git revision, the command line (absolute paths), the resolved
// configuration (a new key with its default changes no result) and the event count (an
// exact speed-up may save events).
// `stats_digest` gets the digest of its stats section and of stats.csv.
std::string pinned_results(const fs::path& dir, std::string& stats_digest) {
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "results.json"));
  nlohmann::json& meta = j["metadata"];
  for (const char* key : {"version", "git_revision", "command_line", "resolved_config", "events"}) meta.erase(key);
  const std::string csv = slurp(dir / "stats.csv");
  stats_digest = fmt::format("stats.csv {} rows, fnv1a64 {:016x}\nresults.json stats {} entries, fnv1a64 {:016x}\n",
                             std::count(csv.begin(), csv.end(), '\n'), fnv1a(csv), j["stats"].size(),
                             fnv1a(j["stats"].dump()));
  j.erase("stats");
  return j.dump(1) + "\n";
}

// Runs a case into `out` (emptied first); shuffle_ties: --debug-shuffle-ties's seed.
void run_case(const GoldenCase& c, const fs::path& out, std::uint64_t shuffle_ties = 0) {
  fs::remove_all(out);
  t3sim::RunRequest req;
  req.system = kSource / c.system;
  req.workload = kSource / c.workload;
  req.configuration = c.configuration;
  req.overrides = c.overrides;
  req.output_dir = out;
  req.timeline = false;
  req.threads = c.threads;
  req.shuffle_ties = shuffle_ties;
  t3sim::run_simulation(req);
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, OutputsMatchThePinnedFiles) {
  const GoldenCase& c = GetParam();
  const fs::path out = fs::temp_directory_path() / ("t3sim_golden_" + c.name);
  run_case(c, out);

  std::string stats;
  const std::string results = pinned_results(out, stats);
  const fs::path golden = kSource / "tests/golden" / c.name;
  if (std::getenv("T3SIM_UPDATE_GOLDEN") != nullptr) {
    spit(golden / "results.json", results);
    spit(golden / "stats.digest", stats);
  }
  ASSERT_TRUE(fs::exists(golden / "results.json")) << "no pinned results: run with T3SIM_UPDATE_GOLDEN=1";
  // EXPECT_TRUE on equality, not EXPECT_EQ: the files are large, and a diff of them
  // is better read with `diff` than in the test log.
  EXPECT_TRUE(results == slurp(golden / "results.json"))
      << "results.json differs: diff " << (golden / "results.json") << " against the run's, in " << out;
  EXPECT_EQ(stats, slurp(golden / "stats.digest"))
      << "the statistics differ: stats.csv of the run is in " << out
      << " (regenerate the goldens on the previous commit to diff against its stats.csv)";
  if (!HasFailure()) fs::remove_all(out);
}

// The canonical event order (sim/event_queue.h): inserting same-time events in a
// random order (two seeds) changes no byte of the pinned outputs. Every golden case,
// each path of `t3sim run` (one queue, partitions on two threads, c3 and the fused
// overlap's own simulators).
TEST_P(Golden, ShuffledSameTimeInsertionGivesTheSameOutputs) {
  const GoldenCase& c = GetParam();
  for (const std::uint64_t seed : {7ULL, 1234567ULL}) {
    const fs::path out = fs::temp_directory_path() / fmt::format("t3sim_golden_shuffled_{}_{}", c.name, seed);
    run_case(c, out, seed);
    std::string stats;
    const std::string results = pinned_results(out, stats);
    const fs::path golden = kSource / "tests/golden" / c.name;
    EXPECT_TRUE(results == slurp(golden / "results.json")) << "seed " << seed << ": results.json differs, in " << out;
    EXPECT_EQ(stats, slurp(golden / "stats.digest")) << "seed " << seed << ": the statistics differ, in " << out;
    if (!HasFailure()) fs::remove_all(out);
  }
}

INSTANTIATE_TEST_SUITE_P(Runs, Golden, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& param) { return param.param.name; });

}  // namespace
