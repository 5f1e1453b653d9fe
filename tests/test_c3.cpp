// C3 (seed 003): a GEMM and an independent collective on one node, under the
// registered C3 configurations (models/system/c3/).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/result_directory.h"
#include "models/system/c3/c3_presets.h"
#include "models/system/c3/c3_system.h"
#include "models/system/configuration.h"
#include "models/system/experiment.h"
#include "sim/config.h"
#include "sim/hash.h"
#include "tests/table1_node.h"

namespace t3sim {
namespace {

// The MI300X-like node (304 CUs, one 256 x 256 GEMM WG per CU), GPU 0 simulated.
NodeConfig mi300x(const std::vector<std::string>& overrides = {}) {
  NodeConfig cfg = system_node("mi300x.yaml", NetMode::kHomogeneous, overrides);
  cfg.partitioned = true;
  return cfg;
}

// A GEMM of m x n x k on the node's GEMM kernel and an all-gather of `bytes`.
C3Spec spec(const NodeConfig& node, std::uint64_t m, std::uint64_t n, std::uint64_t k, std::uint64_t bytes,
            CollectiveKind kind = CollectiveKind::named("ring-ag")) {
  C3Spec s;
  GemmParams g = node.gpu.gemm;
  g.m = m;
  g.n = n;
  g.k = k;
  g.flops_per_cycle = node.gpu.cu.flops_per_cycle;
  s.gemm.trace = make_gemm_trace(g);
  s.gemm.params = g;
  s.gemm_label = "test";
  s.collective.kind = kind;
  s.collective.array_bytes = bytes;
  s.collective.channels = node.gpu.collective_channels;
  s.collective.values = bytes <= (16u << 20);
  return s;
}

C3Result run(const NodeConfig& node, const C3Spec& s, const std::string& configuration) {
  Simulator sim(1);
  C3System c3(sim, node, s, configuration, 1);
  C3Result r = c3.run();
  r.extra_events += sim.dispatched();  // all events, for determinism checks
  return r;
}

// The kernels' dispatch on GPU 0 of a concurrent run (GEMM launched as kernel
// `gemm_id`, the collective's as the other).
struct Dispatch {
  KernelStats gemm, collective;
};
Dispatch dispatch(const NodeConfig& node, C3Spec s, bool comm_first, const std::string& configuration = "c3") {
  s.comm_first = comm_first;
  const auto config = make_configuration(configuration, ConfigurationFamily::kC3);
  s = concurrent_spec(*config, s);
  Simulator sim(1);
  C3Run r(sim, node, s, /*with_cu=*/true, /*with_dma=*/false);
  {
    Simulator::InPartition in(sim, r.node().partition(0));
    r.start_together(0, collective_first(*config, s));
  }
  r.run(Tick::max());
  const std::uint32_t gemm_id = comm_first ? 1 : 0;
  return Dispatch{r.node().gpu(0).kernel_stats(gemm_id), r.node().gpu(0).kernel_stats(1 - gemm_id)};
}

// 16 x 24 = 384 tiles of 256 x 256: more WGs than the 304 CUs hold (one each).
constexpr std::uint64_t kM = 4096, kN = 6144, kK = 512;

TEST(C3Dispatch, AGemmLaunchedFirstTakesEveryFreeSlot) {
  const NodeConfig node = mi300x();
  const Dispatch d = dispatch(node, spec(node, kM, kN, kK, 8u << 20), /*comm_first=*/false);
  EXPECT_EQ(d.gemm.concurrent_slots, 304u);
  // The GEMM's first wave fills every CU: the collective's WGs wait for slots to free.
  EXPECT_EQ(d.gemm.first_dispatch, Tick::zero());
  EXPECT_GT(d.collective.first_dispatch, d.gemm.first_dispatch);
}

TEST(C3Dispatch, CommFirstKeepsTheCollectivesSlots) {
  const NodeConfig node = mi300x();
  const Dispatch d = dispatch(node, spec(node, kM, kN, kK, 8u << 20), /*comm_first=*/true);
  EXPECT_EQ(d.collective.first_dispatch, Tick::zero());
  EXPECT_EQ(d.gemm.first_dispatch, Tick::zero());
  // Gemm-first delays the collective; comm-first does not, so it ends sooner.
  const Dispatch g = dispatch(node, spec(node, kM, kN, kK, 8u << 20), /*comm_first=*/false);
  EXPECT_LT(d.collective.done, g.collective.done);
}

TEST(C3Dispatch, ReservedCusAreHonoured) {
  const NodeConfig node = mi300x();
  C3Spec s = spec(node, kM, kN, kK, 8u << 20);
  s.comm_cus = 64;
  const Dispatch d = dispatch(node, s, /*comm_first=*/false);
  // The GEMM holds 240 CUs (two stages for 384 WGs); the collective starts at once on
  // the 64 reserved for it although the GEMM was launched first.
  EXPECT_EQ(d.gemm.concurrent_slots, 240u);
  EXPECT_EQ(d.gemm.stages(), 2u);
  EXPECT_EQ(d.collective.first_dispatch, Tick::zero());
}

// c3-priority (models/system/configurations/c3_priority.cpp, one file): launched
// GEMM-first like c3_base, so the GEMM's first wave takes every CU, but as the first WGs
// end the collective's are placed before the GEMM's 80 waiting ones: it starts as soon
// as a slot frees, where c3_base places it only behind the GEMM's whole grid.
TEST(C3Dispatch, APriorityCollectiveTakesTheFirstFreedSlots) {
  const NodeConfig node = mi300x();
  const C3Spec s = spec(node, kM, kN, kK, 8u << 20);
  const Dispatch base = dispatch(node, s, /*comm_first=*/false);
  const Dispatch prio = dispatch(node, s, /*comm_first=*/false, "c3-priority");
  EXPECT_EQ(prio.gemm.first_dispatch, Tick::zero());
  EXPECT_EQ(prio.gemm.concurrent_slots, 304u) << "the GEMM's first wave is not held back";
  EXPECT_GT(prio.collective.first_dispatch, Tick::zero());
  EXPECT_LT(prio.collective.first_dispatch, base.collective.first_dispatch);
  EXPECT_LT(prio.collective.done, base.collective.done);
  // Through the experiment: its own row, the isolated times shared with c3.
  const C3Spec small = spec(node, kM, kN, kK, 1u << 20);
  const C3Result rb = run(node, small, "c3");
  const C3Result rp = run(node, small, "c3-priority");
  EXPECT_EQ(rp.isolated_gemm, rb.isolated_gemm);
  EXPECT_EQ(rp.isolated_collective, rb.isolated_collective);
  EXPECT_LE(rp.collective.end, rb.collective.end);
  EXPECT_EQ(rp.words_checked, rb.words_checked);
  EXPECT_GT(rp.words_checked, 0u) << "values checked under the priority too";
}

// Issue 44 item 2: a configuration's launch may reserve CUs for the collective (seed 003
// §V-B's CU masks) as the workload's comm_cus does; one class, registered here.
class TestReserveSixtyFour final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kOverlapped; }
  ConcurrentLaunch launch() const override {
    ConcurrentLaunch l;
    l.reserved_cus = 64;
    return l;
  }
  std::string describe(const LaunchRequest& r) const override {
    return fmt::format("GEMM first, {} CUs reserved by the configuration", r.reserved_cus);
  }
};

T3SIM_REGISTER(configurations, "test-c3-reserve-64", "c3 with the last 64 CUs reserved for the collective (a test's)",
               [] { return std::make_unique<TestReserveSixtyFour>(); })

TEST(C3Dispatch, AConfigurationMayReserveCusForTheCollective) {
  const NodeConfig node = mi300x();
  const C3Spec s = spec(node, kM, kN, kK, 8u << 20);  // the workload reserves none
  const Dispatch d = dispatch(node, s, /*comm_first=*/false, "test-c3-reserve-64");
  // As ReservedCusAreHonoured's workload-reserved 64: the GEMM on 240 CUs in two
  // stages, the collective at once on the others.
  EXPECT_EQ(d.gemm.concurrent_slots, 240u);
  EXPECT_EQ(d.gemm.stages(), 2u);
  EXPECT_EQ(d.collective.first_dispatch, Tick::zero());
  // Through the driver: reported as reserved; the isolated runs (any CU) are c3's.
  const C3Spec small = spec(node, kM, kN, kK, 1u << 20);
  const C3Result rb = run(node, small, "c3");
  const C3Result rr = run(node, small, "test-c3-reserve-64");
  EXPECT_EQ(rr.isolated_gemm, rb.isolated_gemm);
  EXPECT_EQ(rr.isolated_collective, rb.isolated_collective);
  EXPECT_EQ(rr.json["comm_cus"], 64);
  EXPECT_EQ(rr.json["describe"], "GEMM first, 64 CUs reserved by the configuration");
  EXPECT_EQ(rb.json["comm_cus"], 0);
}

// A configuration that reserves every CU leaves the GEMM none: refused at run.config,
// naming the configuration and the GPU's CU count, before anything is built.
class TestReserveAll final : public Configuration {
 public:
  Procedure procedure() const override { return Procedure::kOverlapped; }
  ConcurrentLaunch launch() const override {
    ConcurrentLaunch l;
    l.reserved_cus = 304;
    return l;
  }
};

T3SIM_REGISTER(configurations, "test-c3-reserve-all", "c3 with every CU reserved for the collective (a test's)",
               [] { return std::make_unique<TestReserveAll>(); })

TEST(C3, AConfigurationReservingEveryCuIsRefusedAtRunConfig) {
  ConfigTree system = ConfigTree::load_file(std::string(T3SIM_SOURCE_DIR) + "/configs/systems/mi300x.yaml");
  // configs/workloads/c3/small.yaml without its `kind` (the front end's key).
  ConfigTree workload = ConfigTree::parse(
      "gemm: {m: 4096, n: 4864, k: 2048}\ncollective: {collective: all_gather, size: 64MiB}\n", "workload.yaml");
  ResolvedConfig resolved;
  RunOptions options;
  options.configuration = "test-c3-reserve-all";
  options.mode = NetMode::kHomogeneous;
  Simulator sim(1);
  try {
    make_c3_experiment(sim, ConfigNode(&system.root(), "system", &resolved),
                       ConfigNode(&workload.root(), "workload", &resolved), options);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("run.config"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test-c3-reserve-all reserves 304 CUs for the collective, and the GPU has "
                                         "304 (system.gpu.num_cus): the GEMM would have none"),
              std::string::npos)
        << e.what();
  }
}

// The isolated times are the kernels alone as launched by default: reserving CUs for
// the collective changes the concurrent run, never the ideal it is measured against.
TEST(C3, ReservingCusLeavesTheIsolatedTimes) {
  const NodeConfig node = mi300x();
  C3Spec s = spec(node, kM, kN, kK, 8u << 20);
  const C3Result base = run(node, s, "c3");
  s.comm_cus = 16;  // 64 channels on 16 CUs (4 would fit by registers; LDS allows 2)
  const C3Result partitioned = run(node, s, "c3");
  EXPECT_EQ(partitioned.isolated_gemm, base.isolated_gemm);
  EXPECT_EQ(partitioned.isolated_collective, base.isolated_collective);
  EXPECT_DOUBLE_EQ(partitioned.ideal_speedup, base.ideal_speedup);
  EXPECT_NE(partitioned.time, base.time);
}

// Every configuration checks the collective's values under concurrency, and never
// beats the ideal.
TEST(C3, ValuesSurviveConcurrencyAndNoConfigurationBeatsTheIdeal) {
  const NodeConfig node = mi300x();
  for (CollectiveKind kind : {CollectiveKind::named("ring-ag"), CollectiveKind::named("all-to-all")}) {
    const C3Spec s = spec(node, kM, kN, kK, 8u << 20, kind);
    const C3Result ideal = run(node, s, "ideal");
    const C3Result seq = run(node, s, "sequential");
    EXPECT_EQ(seq.time, ideal.isolated_gemm + ideal.isolated_collective);
    EXPECT_EQ(ideal.time, std::max(ideal.isolated_gemm, ideal.isolated_collective));
    for (bool comm_first : {false, true}) {
      C3Spec c = s;
      c.comm_first = comm_first;
      const C3Result r = run(node, c, "c3");
      EXPECT_TRUE(r.values_checked);
      EXPECT_GT(r.words_checked, 0u);
      EXPECT_GE(r.time, ideal.time) << to_string(kind) << " comm_first " << comm_first;
      EXPECT_LE(r.time, seq.time * 2) << "a concurrent run far slower than sequential";
      EXPECT_LE(r.fraction_of_ideal, 1.0);
      EXPECT_GE(r.gemm_slowdown, 1.0);
    }
    const C3Result dma = run(node, s, "conccl");
    EXPECT_TRUE(dma.values_checked);
    EXPECT_GT(dma.words_checked, 0u);
    ASSERT_TRUE(dma.isolated_dma_collective.has_value());
  }
}

// isolated = false: the concurrent run alone gives the same kernels' times and traffic
// as the full run (the isolated runs are on a simulator of their own), and no ratios.
TEST(C3, ConcurrentRunWithoutIsolatedRunsIsTheSame) {
  const NodeConfig node = mi300x();
  for (const char* configuration : {"c3", "conccl"}) {
    const C3Spec s = spec(node, kM, kN, kK, 8u << 20);
    C3Spec alone = s;
    alone.isolated = false;
    const C3Result full = run(node, s, configuration);
    const C3Result conc = run(node, alone, configuration);
    EXPECT_FALSE(conc.isolated);
    EXPECT_EQ(conc.time, full.time) << configuration;
    EXPECT_EQ(conc.gemm.end, full.gemm.end) << configuration;
    EXPECT_EQ(conc.collective.end, full.collective.end) << configuration;
    EXPECT_EQ(conc.gemm.dram_read, full.gemm.dram_read) << configuration;
    EXPECT_EQ(conc.isolated_gemm, Tick()) << configuration;
    EXPECT_FALSE(conc.isolated_dma_collective.has_value());
    EXPECT_EQ(conc.fraction_of_ideal, 0.0);
    EXPECT_LT(conc.extra_events, full.extra_events) << "the isolated kernels were simulated";
    EXPECT_TRUE(conc.values_checked);
  }
  C3Spec seq = spec(node, kM, kN, kK, 8u << 20);
  seq.isolated = false;
  Simulator sim(1);
  EXPECT_THROW(C3System(sim, node, seq, "sequential", 1), std::invalid_argument);
}

// ConCCL frees the CUs: a compute-bound GEMM slows less beside the DMA collective
// than beside the CU collective given CUs first.
TEST(C3, DmaOffloadSlowsAComputeBoundGemmLess) {
  const NodeConfig node = mi300x();
  // 16 x 19 = 304 tiles: one wave on all CUs, two when the collective holds some.
  C3Spec s = spec(node, 4096, 4864, 2048, 64u << 20);
  s.comm_first = true;
  const C3Result cu = run(node, s, "c3");
  const C3Result dma = run(node, s, "conccl");
  EXPECT_LT(dma.gemm_slowdown, cu.gemm_slowdown);
  EXPECT_GT(cu.gemm_slowdown, 1.5);   // its second wave waits for the CUs it lost
  EXPECT_LT(dma.gemm_slowdown, 1.1);  // memory interference only
}

// A DMA collective is host-launched: one host thread submits a transfer per peer,
// one after another, and learns of each completion after a sync latency (seed 003
// §VI-C), which the CU kernel pays none of.
TEST(C3, DmaCollectivesPayLaunchAndSync) {
  const C3Spec small = spec(mi300x(), 1024, 1024, 256, 1u << 20);
  const NodeConfig free = mi300x({"dma.launch_latency=0ns", "dma.completion_latency=0ns"});
  const NodeConfig costly = mi300x({"dma.launch_latency=20us", "dma.completion_latency=10us"});
  const C3Result a = run(free, small, "conccl");
  const C3Result b = run(costly, small, "conccl");
  // The last of 7 transfers (one per peer) reaches its engine 7 x 20 us after the
  // start and ends 10 us after its last write: 150 us more, less a little, as it no
  // longer shares the memory with the 6 before it (done by then).
  const Tick added = *b.isolated_dma_collective - *a.isolated_dma_collective;
  EXPECT_GE(added, Tick::us(145));
  EXPECT_LE(added, Tick::ns(150500));
  EXPECT_EQ(b.isolated_collective, a.isolated_collective);  // the CU kernel pays neither
}

TEST(C3, SameSeedSameEverything) {
  const NodeConfig node = mi300x();
  C3Spec s = spec(node, kM, kN, kK, 8u << 20);
  const C3Result a = run(node, s, "c3");
  const C3Result b = run(node, s, "c3");
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(a.extra_events, b.extra_events);
  EXPECT_EQ(a.json.dump(), b.json.dump());
}

std::size_t files_in(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".json" ? 1 : 0;
  return n;
}

C3Result run_cached(const NodeConfig& node, const C3Spec& s, const std::string& configuration,
                    const std::filesystem::path& dir, const std::string& key) {
  Simulator sim(1);
  C3System c3(sim, node, s, configuration, 1);
  ResultDirectory store(dir);
  c3.set_isolated_store(&store, key);
  C3Result r = c3.run();
  r.extra_events += sim.dispatched();
  return r;
}

// The isolated run's results are kept under their key and reused: a cached run's
// results (events included) are the uncached run's, byte for byte.
TEST(C3, IsolatedRunsAreCachedUnderTheirKeyAndReusedExactly) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("t3sim_c3_cache_{}", static_cast<long>(::getpid()));
  std::filesystem::remove_all(dir);
  const NodeConfig node = mi300x();
  C3Spec s = spec(node, kM, kN, kK, 8u << 20);
  const C3Result first = run_cached(node, s, "c3", dir, "case A");
  EXPECT_EQ(files_in(dir), 1u);
  EXPECT_EQ(first.json.dump(), run(node, s, "c3").json.dump());
  s.comm_first = true;
  const C3Result uncached = run(node, s, "c3");
  const C3Result hit = run_cached(node, s, "c3", dir, "case A");
  EXPECT_EQ(files_in(dir), 1u);  // reused, not run again
  EXPECT_EQ(hit.json.dump(), uncached.json.dump());
  EXPECT_EQ(hit.extra_events, uncached.extra_events);
  EXPECT_EQ(hit.isolated_gemm, first.isolated_gemm);
  // Another key is another entry; a file holding another key (a hash collision, or a
  // torn file) is a miss that is simulated and rewritten.
  (void)run_cached(node, s, "c3", dir, "case B");
  EXPECT_EQ(files_in(dir), 2u);
  for (const auto& e : std::filesystem::directory_iterator(dir)) std::ofstream(e.path()) << "{\"key\": \"other\"";
  EXPECT_EQ(run_cached(node, s, "c3", dir, "case A").json.dump(), uncached.json.dump());
  std::filesystem::remove_all(dir);
}

// Issue 45, D7: an entry is checked before it is trusted (a checksum over its contents,
// every field present and of its type, a regular file only); a bad one is simulated
// again, with a warning naming the file, and rewritten where it can be. Before, an
// edited number was printed as a result, a wrong type or a directory was exit 1, and a
// FIFO hung the run.
TEST(C3, DamagedIsolatedCacheEntriesAreSimulatedAgain) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("t3sim_c3_damaged_{}", static_cast<long>(::getpid()));
  std::filesystem::remove_all(dir);
  const NodeConfig node = mi300x();
  // A small case (16 WGs, 1 MiB): the test is about the cache, not the timing.
  C3Spec s = spec(node, 1024, 1024, 256, 1u << 20);
  s.comm_first = true;
  const C3Result uncached = run(node, s, "c3");
  (void)run_cached(node, s, "c3", dir, "case A");
  ASSERT_EQ(files_in(dir), 1u);
  const std::filesystem::path entry = std::filesystem::directory_iterator(dir)->path();
  auto read_entry = [&] {
    std::ifstream in(entry);
    return nlohmann::json::parse(in);
  };
  auto write_entry = [&](const nlohmann::json& j) { std::ofstream(entry) << j.dump(); };
  auto expect_simulated_again = [&](const std::string& what) {
    const C3Result r = run_cached(node, s, "c3", dir, "case A");
    EXPECT_EQ(r.json.dump(), uncached.json.dump()) << what;
  };
  const nlohmann::json good = read_entry();
  ASSERT_TRUE(good.contains("checksum"));
  // An edited number: the checksum no longer matches.
  nlohmann::json edited = good;
  edited["gemm"]["end_ps"] = edited["gemm"]["end_ps"].get<std::uint64_t>() * 10;
  write_entry(edited);
  expect_simulated_again("edited number");
  EXPECT_EQ(read_entry().dump(), good.dump()) << "rewritten";
  // A field of the wrong type, its checksum recomputed by whoever edited it.
  nlohmann::json typed = good;
  typed["stages"] = "four";
  typed.erase("checksum");
  typed["checksum"] = fnv1a(typed.dump());
  write_entry(typed);
  expect_simulated_again("wrong type");
  // A missing field, the same way.
  nlohmann::json missing = good;
  missing["collective"].erase("l2_hits");
  missing.erase("checksum");
  missing["checksum"] = fnv1a(missing.dump());
  write_entry(missing);
  expect_simulated_again("missing field");
  // Not a regular file: a directory, then a FIFO (opening one would block).
  std::filesystem::remove(entry);
  std::filesystem::create_directory(entry);
  expect_simulated_again("directory");
  std::filesystem::remove(entry);
  ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
  expect_simulated_again("fifo");
  EXPECT_TRUE(std::filesystem::is_regular_file(entry)) << "the FIFO is replaced by the entry";
  std::filesystem::remove_all(dir);
}

// GPU 0's dispatch of a 1 MiB ring all-gather of `channels` channels masked to `cus` CUs.
KernelStats masked_all_gather(const NodeConfig& node, std::uint32_t channels, std::uint32_t cus) {
  Simulator sim(1);
  Node n(sim, node);
  NodeCollectiveParams p;
  p.kind = CollectiveKind::named("ring-ag");
  p.array_bytes = 1u << 20;
  p.channels = channels;
  p.cus = cus;
  NodeCollective ag(n, p);
  ag.start_all();
  sim.run();
  EXPECT_TRUE(ag.all_done());
  return n.gpu(0).kernel_stats(0);
}

// RCCL's kernels take 32 KiB of LDS per WG on MI300X (gpu.collective.lds_per_wg): a
// CU's 64 KiB holds two channels, so 8 CUs hold 16 of the 64 at once.
TEST(C3Dispatch, TheLibrarysLdsBoundsTheChannelsPerCu) {
  const NodeConfig node = mi300x();
  ASSERT_EQ(node.gpu.collective_lds_per_wg, 32u << 10);
  const KernelStats k = masked_all_gather(node, 64, 8);
  EXPECT_EQ(k.concurrent_slots, 16u);
  EXPECT_EQ(k.stages(), 4u);
}

// NCCL's CTAs hold 61,440 of an H200 SM's 65,536 registers
// (gpu.collective.registers_per_wg): one channel per SM, so 24 channels on 8 SMs run
// 8 at a time; with the simulated WG's own 8,192 registers 8 fit on an SM (by
// threads), 64 on the 8 SMs.
TEST(C3Dispatch, TheLibrarysRegistersBoundTheChannelsPerSm) {
  for (const bool library : {true, false}) {
    NodeConfig node = system_node("h200.yaml", NetMode::kHomogeneous,
                                  library ? std::vector<std::string>{} : std::vector<std::string>{"gpu.collective.registers_per_wg=0"});
    node.partitioned = true;
    ASSERT_EQ(node.gpu.collective_registers_per_wg, library ? 61440u : 0u);
    const KernelStats k = masked_all_gather(node, 24, 8);
    EXPECT_EQ(k.concurrent_slots, library ? 8u : 64u);
    EXPECT_EQ(k.stages(), library ? 3u : 1u);
  }
}

// Full mode (every GPU simulated) and homogeneous mode (GPU 0, its peers mirrored)
// agree on a symmetric C3 run, and both check the collective's values.
TEST(C3, FullAndHomogeneousModesAgree) {
  C3Result r[2];
  for (int m = 0; m < 2; ++m) {
    NodeConfig node = table1(4, m == 0 ? NetMode::kFull : NetMode::kHomogeneous, {"net.topology=fully-connected"});
    node.partitioned = true;
    C3Spec s = spec(node, 2560, 1024, 1024, 4u << 20);  // 80 tiles of 256 x 128: one per CU
    s.comm_first = true;
    r[m] = run(node, s, "c3");
    EXPECT_TRUE(r[m].values_checked);
    EXPECT_GT(r[m].words_checked, 0u);
  }
  const double full = static_cast<double>(r[0].time.ps()), homogeneous = static_cast<double>(r[1].time.ps());
  EXPECT_NEAR(homogeneous / full, 1.0, 0.02) << full << " vs " << homogeneous;
  EXPECT_NEAR(static_cast<double>(r[1].isolated_collective.ps()) / static_cast<double>(r[0].isolated_collective.ps()),
              1.0, 0.02);
}

TEST(C3, TaxonomyIsWithinFifteenPercentOrTheLongerOne) {
  EXPECT_EQ(c3_taxonomy(Tick(115), Tick(100)), "GC-equal");
  EXPECT_EQ(c3_taxonomy(Tick(100), Tick(115)), "GC-equal");
  EXPECT_EQ(c3_taxonomy(Tick(116), Tick(100)), "G-long");
  EXPECT_EQ(c3_taxonomy(Tick(100), Tick(116)), "C-long");
}

TEST(C3Presets, TableTwoCasesNameTableOneGemms) {
  EXPECT_EQ(c3_cases().size(), 15u);
  EXPECT_EQ(c3_gemms().size(), 7u);
  for (const C3Case& c : c3_cases()) EXPECT_EQ(find_c3_gemm(c.gemm).tag, c.gemm) << c.name;
  // mb1_896M: mb1's 57344 x 8192 FP16 weights, all-gathered.
  EXPECT_EQ(find_c3_case("mb1_896M").collective_bytes, 57344ULL * 8192 * 2);
  EXPECT_EQ(find_c3_case("cb5_1.63G").collective_bytes, 106496ULL * 8192 * 2);
  EXPECT_THROW(find_c3_case("mb1_897M"), UserError);
}

}  // namespace
}  // namespace t3sim
