// The t3sim executable as a user meets it: exit codes, messages, outputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <iterator>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("t3sim_cli_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                       static_cast<long>(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs t3sim from the source dir with stdout and stderr captured separately.
  Result t3sim(const std::string& args) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = fmt::format("cd '{}' && '{}' {} >'{}' 2>'{}'", T3SIM_SOURCE_DIR, T3SIM_BINARY,
                                        args, out.string(), err.string());
    const int status = std::system(cmd.c_str());
    return Result{WEXITSTATUS(status), slurp(out), slurp(err)};
  }
  // `t3sim run ARGS` is bad input: exit 2, `expected` on stderr, nothing on stdout, no
  // results written.
  void expect_bad_input(const std::string& args, const std::string& expected) {
    const auto r = t3sim(fmt::format("run {} -o '{}'", args, (dir_ / "o").string()));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_FALSE(fs::exists(dir_ / "o" / "results.json")) << args;
  }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  fs::path dir_;
};

const std::string kSystem = "configs/systems/ring8.yaml";
const std::string kSmall = "configs/examples/quickstart.yaml";

// `t3sim list` prints every registry, each name with its description.
TEST_F(Cli, ListPrintsTheRegistries) {
  const auto r = t3sim("list");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* expected :
       {"configurations (--config, run.config):", "  sequential ", "  t3-mca ", "  ideal-rs-nmc ", "  conccl ",
        "[kinds: gemm, c3, ag_gemm, gemm_a2a, gemv_ar, embedding_a2a]", "[kinds: c3]", "collective algorithms",
        "  rhd-ar ", "  ag_gemm ", "  gemm_a2a ", "  gemv_ar ", "  embedding_a2a ", "C3 presets", "  mb1_896M ",
        "workload kinds (workload kind):", "  memory ", "  collective ", "MC arbiters", "  mca ", "DRAM command schedulers", "  fcfs ",
        "L2 replacement policies", "  lru ", "network topologies", "  fully-connected ", "GEMM presets",
        "  tnlg.fc2.tp8 "}) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\n" << r.out;
  }
}

// `t3sim list --json`: the same registries as data, the text listing's names in each.
TEST_F(Cli, ListJsonGivesTheRegistriesAsData) {
  const auto r = t3sim("list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  auto names = [&](const nlohmann::json& list) {
    std::vector<std::string> out;
    for (const auto& e : list) {
      EXPECT_TRUE(e.contains("description")) << e.dump();
      out.push_back(e.at("name").get<std::string>());
    }
    return out;
  };
  EXPECT_THAT(names(j["configurations"]["gemm"]), ::testing::IsSupersetOf({"sequential", "t3", "t3-mca", "fused"}));
  EXPECT_THAT(names(j["configurations"]["c3"]), ::testing::IsSupersetOf({"c3", "conccl", "sequential"}));
  EXPECT_THAT(names(j["configurations"]["overlap"]), ::testing::IsSupersetOf({"fused", "ideal-overlap", "sequential"}));
  EXPECT_THAT(names(j["workload_kinds"]), ::testing::IsSupersetOf({"gemm", "collective", "c3", "interference"}));
  EXPECT_THAT(names(j["arbiters"]), ::testing::Contains("mca"));
  EXPECT_THAT(names(j["schedulers"]), ::testing::Contains("fcfs"));
  EXPECT_THAT(names(j["replacement_policies"]), ::testing::Contains("lru"));
  EXPECT_THAT(names(j["topologies"]), ::testing::Contains("fully-connected"));
  // Presets carry their numbers: T-NLG FC-2 at TP 8 is 8192 x 4256 x 2128 (T3 Table 2).
  const auto tnlg = std::find_if(j["gemm_presets"].begin(), j["gemm_presets"].end(),
                                 [](const nlohmann::json& p) { return p["name"] == "tnlg.fc2.tp8"; });
  ASSERT_NE(tnlg, j["gemm_presets"].end());
  EXPECT_EQ((*tnlg)["m"], 8192);
  EXPECT_EQ((*tnlg)["k"], 2128);
  EXPECT_EQ((*tnlg)["tp"], 8);
  EXPECT_FALSE(j["c3_presets"].empty());
  EXPECT_TRUE(j["c3_presets"][0].contains("collective_bytes"));
  // Every name of the JSON is in the text listing too (one source for both).
  const auto text = t3sim("list").out;
  for (const auto& [key, value] : j.items()) {
    const auto lists = key == "configurations" ? value : nlohmann::json::object({{key, value}});
    for (const auto& [_, list] : lists.items())
      for (const std::string& name : names(list)) EXPECT_NE(text.find("  " + name + " "), std::string::npos) << name;
  }
}

// A collective algorithm is taken by its registered name (collective/algorithms/): the
// halving-doubling all-reduce runs in full mode with its values checked, and
// homogeneous mode, which it cannot run, is refused at the key that chose it.
TEST_F(Cli, ACollectiveAlgorithmRunsByItsRegisteredName) {
  const auto r = t3sim(fmt::format("run {} {} --set workload.collective=rhd-ar --set run.mode=full -o '{}'", kSystem,
                                   kSmall, (dir_ / "rhd").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rhd-ar (cu-based)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("functional check   passed"), std::string::npos) << r.out;
  expect_bad_input(fmt::format("{} {} --set workload.collective=rhd-ar --set run.mode=homogeneous", kSystem, kSmall),
                   "homogeneous mode cannot run rhd-ar");
  // Only the ring pipeline has protocols: one chosen for another algorithm is refused,
  // not ignored.
  expect_bad_input(fmt::format("{} {} --set workload.collective=rhd-ar --set run.mode=full --set workload.protocol=ll",
                               kSystem, kSmall),
                   "workload.protocol: ll applies to the ring algorithms only: rhd-ar runs Simple's bulk slices");
  expect_bad_input("configs/systems/mi300x.yaml configs/workloads/c3/small.yaml --set "
                   "workload.collective.collective=all-to-all --set workload.collective.protocol=ll128",
                   "workload.collective.protocol: ll128 applies to the ring algorithms only: all-to-all runs");
}

TEST_F(Cli, RunPrintsSummaryOnStdoutAndWritesOutputs) {
  const auto r = t3sim(fmt::format("run {} {} -o '{}'", kSystem, kSmall, (dir_ / "out").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ring-rs (cu-based)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bus bw"), std::string::npos);
  EXPECT_NE(r.out.find("functional check   passed"), std::string::npos);
  EXPECT_EQ(r.err, "");  // logs only on request
  for (const char* f : {"results.json", "stats.csv", "timeline.json", "run_info.json"})
    EXPECT_TRUE(fs::exists(dir_ / "out" / f)) << f;
  const auto results = nlohmann::json::parse(slurp(dir_ / "out" / "results.json"));
  EXPECT_EQ(results["results"]["num_gpus"], 8);
  EXPECT_EQ(results["results"]["functional_check"], "passed");
  EXPECT_EQ(results["metadata"]["seed"], 1);
  EXPECT_EQ(results["metadata"]["resolved_config"]["system"]["num_gpus"], 8);
  const auto timeline = nlohmann::json::parse(slurp(dir_ / "out" / "timeline.json"));
  EXPECT_GT(timeline["traceEvents"].size(), 10u);
}

// --debug-shuffle-ties inserts same-time events in a random order: the canonical event
// order leaves results.json and stats.csv byte-identical; a negative seed is refused.
TEST_F(Cli, ShuffledTiesGiveByteIdenticalResults) {
  ASSERT_EQ(t3sim(fmt::format("run {} {} --set workload.size=6MB --no-timeline -o '{}'", kSystem, kSmall,
                              (dir_ / "plain").string())).exit_code, 0);
  ASSERT_EQ(t3sim(fmt::format("run {} {} --set workload.size=6MB --no-timeline --debug-shuffle-ties 7 -o '{}'",
                              kSystem, kSmall, (dir_ / "shuffled").string())).exit_code, 0);
  EXPECT_EQ(slurp(dir_ / "plain" / "stats.csv"), slurp(dir_ / "shuffled" / "stats.csv"));
  auto results = [](const fs::path& p) { return nlohmann::json::parse(slurp(p))["results"].dump(); };
  EXPECT_EQ(results(dir_ / "plain" / "results.json"), results(dir_ / "shuffled" / "results.json"));
  const auto bad = t3sim(fmt::format("run {} {} --debug-shuffle-ties -1", kSystem, kSmall));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST_F(Cli, IdenticalRunsGiveByteIdenticalResults) {
  for (const char* d : {"a", "b"})
    ASSERT_EQ(t3sim(fmt::format("run {} {} --set workload.size=6MB -o '{}'", kSystem, kSmall,
                                (dir_ / d).string())).exit_code, 0);
  for (const char* f : {"results.json", "stats.csv", "timeline.json"})
    EXPECT_EQ(slurp(dir_ / "a" / f), slurp(dir_ / "b" / f)) << f;
}

// Issue 45, D4: an output directory that cannot take the results is an error before the
// run simulates (the T-NLG FC-2 GEMM takes ~19 s; the refusal comes in well under one),
// exit 2 with the directory named and nothing on stdout.
TEST_F(Cli, UnwritableOutputDirectoryFailsBeforeSimulating) {
  const fs::path file = write("not_a_dir", "x");
  for (const std::string& out : {std::string("/proc/nope"), file.string(), (file / "sub").string()}) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = t3sim(fmt::format("run configs/systems/table1.yaml configs/workloads/gemm/tnlg_fc2_tp8.yaml -o '{}'",
                                     out));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 2) << out << "\n" << r.err;
    EXPECT_NE(r.err.find(out), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_LT(seconds, 3.0) << out;  // a second on an idle machine; CI's may be loaded
  }
}

// Issue 45, D8: a bandwidth without a unit, a second YAML document and a negative seed
// are errors naming what is wrong; --log-level may follow the subcommand.
TEST_F(Cli, UnitlessBandwidthSecondDocumentAndNegativeSeedAreRefused) {
  const std::string base = "base: " + std::string(T3SIM_SOURCE_DIR) + "/" + kSystem + "\n";
  const auto unitless = write("unitless.yaml", base + "net:\n  bandwidth: 75\n");
  expect_bad_input(fmt::format("'{}' {}", unitless.string(), kSmall), "unitless.yaml:3: system.net.bandwidth");
  expect_bad_input(fmt::format("'{}' {}", unitless.string(), kSmall), "missing unit");
  const auto two = write("two.yaml", base + "num_gpus: 4\n---\nnum_gpus: 8\n");
  expect_bad_input(fmt::format("'{}' {}", two.string(), kSmall), "two.yaml:3: a second YAML document");
  const auto r = t3sim(fmt::format("run {} {} --seed -1 -o '{}'", kSystem, kSmall, (dir_ / "o").string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--seed"), std::string::npos) << r.err;
  const auto v = t3sim(fmt::format("validate {} {} --log-level warn", kSystem, kSmall));
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

// Issue 45, D1: the overlap kinds whose kernels write back the L2 refuse the ideal
// memory at validate (exit 2, the key named), as the other kinds do; they used to pass
// validate and fail the run with an internal error.
TEST_F(Cli, OverlapKindsOnTheIdealMemoryFailValidate) {
  for (const char* workload : {"configs/workloads/gemm_a2a/moe.yaml", "configs/workloads/gemv_ar/decode.yaml",
                               "configs/workloads/embedding_a2a/dlrm.yaml"}) {
    const auto r = t3sim(fmt::format("validate configs/systems/ring8.yaml {}", workload));
    EXPECT_EQ(r.exit_code, 2) << workload << "\n" << r.err;
    EXPECT_NE(r.err.find("system.memory.model"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not ideal"), std::string::npos) << r.err;
  }
}

// Issue 45, D5: a pooling the embedding trace cannot express is refused at its key, at
// once (it failed to build the trace naming no key; at 4096 validate took 15 s and 5.8 GB).
TEST_F(Cli, EmbeddingPoolingBeyondTheTraceFormatNamesTheKey) {
  const auto r = t3sim("validate configs/systems/mi210x4.yaml configs/workloads/embedding_a2a/dlrm.yaml "
                       "--set workload.pooling_max=30");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("workload.pooling_max"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at most 29"), std::string::npos) << r.err;
  EXPECT_EQ(t3sim("validate configs/systems/mi210x4.yaml configs/workloads/embedding_a2a/dlrm.yaml "
                  "--set workload.pooling_max=29").exit_code, 0);
}

TEST_F(Cli, MisspelledKeyNamesFileLineAndSuggestion) {
  const auto sys = write("sys.yaml", "base: " + std::string(T3SIM_SOURCE_DIR) + "/" + kSystem +
                                         "\nnum_gpus: 4\nnet:\n  bandwith: 75GB/s\n");
  const auto r = t3sim(fmt::format("run '{}' {} -o '{}'", sys.string(), kSmall, (dir_ / "out").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("sys.yaml:4: system.net.bandwith: unknown key (did you mean 'bandwidth'?)"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(dir_ / "out" / "results.json"));  // nothing half-written
}

TEST_F(Cli, BadValuesAndOverridesAreUserErrors) {
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"--set system.net.latency=5parsecs", "system.net.latency: expected a time like '500ns', got '5parsecs'"},
      {"--set system.num_gpus=1", "system.num_gpus: 1 is out of range [2, 1024]"},
      {"--set system.num_gpus=many", "system.num_gpus: expected an unsigned integer, got 'many'"},
      {"--set workload.collective=allreduce", "workload.collective: expected one of"},
      {"--set workload.colective=all_gather", "unknown key (did you mean 'collective'?)"},
      {"--set nonsense", "expected the form key.path=value"},
      {"--config t3", "run.config: a collective alone has no configuration 't3'"},
      {"--config bogus", "run.config: expected one of"},
      {"--set system.net.topology=torus", "system.net.topology: expected one of fully-connected, ring, switch"},
      // Combinations only a model can judge are still user errors.
      {"--set workload.size=1001 --set workload.element_size=2", "1001 is not a whole number of 32-byte granules"},
      {"--set system.collective_engine.max_outstanding_reads=16", "system.collective_engine: no longer a system key"},
      {"--set system.memory.l2.size=1MiB", "system.memory.l2: applies to model: hbm only"},
  };
  for (const auto& c : cases) {
    const auto r = t3sim(fmt::format("run {} {} {} -o '{}'", kSystem, kSmall, c.args, (dir_ / "o").string()));
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

TEST_F(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(t3sim("").exit_code, 2);
  EXPECT_EQ(t3sim("frobnicate").exit_code, 2);
  EXPECT_EQ(t3sim(fmt::format("run {} /no/such/file.yaml", kSystem)).exit_code, 2);
  EXPECT_EQ(t3sim(fmt::format("run {} {} --seed notanumber", kSystem, kSmall)).exit_code, 2);
  const auto broken = write("broken.yaml", "num_gpus: [1, 2\n");
  const auto r = t3sim(fmt::format("validate '{}' {}", broken.string(), kSmall));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken.yaml:"), std::string::npos) << r.err;
}

TEST_F(Cli, UnfinishedRunIsASimulationErrorWithExitOneAndAReport) {
  // Stopped after 2us: every GPU is still running the collective kernel.
  const auto r = t3sim(fmt::format("run {} {} --set run.max_time=2us -o '{}'", kSystem, kSmall,
                                   (dir_ / "o").string()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("run.max_time (2.000us) reached before the collective finished; in flight:"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gpu0: kernel 0 (ring-rs.gpu0)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "results.json"));
}

TEST_F(Cli, LogsGoToStderrAndNeverToStdout) {
  const auto r = t3sim(fmt::format("--log-level debug run {} {} -o '{}'", kSystem, kSmall, (dir_ / "o").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[debug] gpu0: kernel ring-rs.gpu0 done"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("[debug]"), std::string::npos);
  const auto bad = t3sim(fmt::format("--log-level loud run {} {}", kSystem, kSmall));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown log level 'loud'"), std::string::npos) << bad.err;
}

TEST_F(Cli, VersionHelpAndValidate) {
  auto r = t3sim("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("t3sim "), std::string::npos);
  r = t3sim("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  r = t3sim(fmt::format("validate {} {}", kSystem, kSmall));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ok: ring-rs (cu) of 1048576 B per GPU on 8 GPUs"), std::string::npos) << r.out;
  // validate says what the run is estimated to need and what it may have (issue 45).
  EXPECT_NE(r.out.find("\n  host memory: about "), std::string::npos) << r.out;
  r = t3sim(fmt::format("validate {} {} --set run.host_memory=64GiB", kSystem, kSmall));
  EXPECT_NE(r.out.find(" estimated, 64.0 GiB available (run.host_memory)"), std::string::npos) << r.out;
}

}  // namespace

namespace t3sim {
namespace {

TEST_F(Cli, MemoryOnlyWorkloadFromTheReadme) {
  const auto r = t3sim(fmt::format(
      "run configs/systems/table1.yaml configs/workloads/memory/two_stream_updates.yaml -o '{}'",
      (dir_ / "mem").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("memory-only run: HBM2 x 32 channels"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all match"), std::string::npos) << r.out;
  const auto results = nlohmann::json::parse(slurp(dir_ / "mem" / "results.json"));
  EXPECT_EQ(results["results"]["workload"], "memory");
  EXPECT_EQ(results["results"]["values"]["mismatches"], 0);
  EXPECT_GT(results["results"]["memory"]["streams"]["communication"]["requests"]["update"].get<int>(), 0);
  EXPECT_EQ(results["metadata"]["resolved_config"]["system"]["memory"]["hbm"]["tCCDWL"], 4);
  // MC queue occupancy per stream as timeline counters, one track per controller.
  const std::string timeline = slurp(dir_ / "mem" / "timeline.json");
  EXPECT_NE(timeline.find("\"mem.mc0.communication queue\""), std::string::npos);
  EXPECT_NE(timeline.find("\"mem.mc31.compute queue\""), std::string::npos);

  const auto v = t3sim("validate configs/systems/table1.yaml configs/workloads/memory/contention.yaml");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("memory-only workload, 3 generators"), std::string::npos) << v.out;
}

TEST_F(Cli, MemoryWorkloadErrorsAreUserErrors) {
  const fs::path wl = write("bad.yaml", "kind: memory\ngenerators:\n  - name: g\n    op: raed\n    requests: 10\n");
  const auto r = t3sim(fmt::format("run configs/systems/table1.yaml '{}'", wl.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.yaml:4: workload.generators[0].op"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("expected one of read, write, update, mix; got 'raed'"), std::string::npos) << r.err;
  // A ring system with the idealized memory cannot run a memory-only workload.
  const auto ideal = t3sim("run configs/systems/ring8.yaml configs/workloads/memory/stream_read.yaml");
  EXPECT_EQ(ideal.exit_code, 2);
  EXPECT_NE(ideal.err.find("system.memory.model"), std::string::npos) << ideal.err;
  EXPECT_FALSE(fs::exists(dir_ / "t3sim-out"));
}

}  // namespace
}  // namespace t3sim

namespace t3sim {
namespace {

TEST_F(Cli, GemmWorkloadPrintsTimeThroughputAndTraffic) {
  const auto r = t3sim(fmt::format("run configs/systems/table1.yaml configs/workloads/gemm/small.yaml -o '{}'",
                                   (dir_ / "gemm").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("TFLOP/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stages             1 (32 WGs"), std::string::npos) << r.out;
  const auto results = nlohmann::json::parse(slurp(dir_ / "gemm" / "results.json"));
  EXPECT_EQ(results["results"]["flops"].get<std::uint64_t>(), 2ull * 1024 * 1024 * 1024);
  // One CU track per CU with a slice per WG.
  EXPECT_NE(slurp(dir_ / "gemm" / "timeline.json").find("gemm_1024x1024x1024 WG 31"), std::string::npos);

  const fs::path trace = write("bad.trace", "t3trace 1\nkernel k\nprogram p\n  lod 0 64\nend\n");
  const fs::path wl = write("bad.yaml", fmt::format("kind: gemm\ntrace: {}\n", trace.string()));
  const auto bad = t3sim(fmt::format("run configs/systems/table1.yaml '{}'", wl.string()));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.trace:4:"), std::string::npos) << bad.err;

  const fs::path typo = write("typo.yaml", "kind: gemm\npreset: tnlg.fc2.tp9\n");
  const auto p = t3sim(fmt::format("run configs/systems/table1.yaml '{}'", typo.string()));
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("typo.yaml:2: workload.preset: unknown GEMM preset 'tnlg.fc2.tp9'"), std::string::npos) << p.err;
}

TEST_F(Cli, SequentialSubLayerAndNodeCollectives) {
  // A small sequential sub-layer: phases and DRAM breakdown, results.json with links.
  const auto r = t3sim(fmt::format("run configs/systems/table1.yaml configs/workloads/gemm/small.yaml --config "
                                   "sequential --set system.num_gpus=4 --mode homogeneous -o '{}'",
                                   (dir_ / "seq").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("reduce-scatter"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("homogeneous mode"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("functional check   passed"), std::string::npos) << r.out;
  const auto results = nlohmann::json::parse(slurp(dir_ / "seq" / "results.json"));
  EXPECT_EQ(results["results"]["phases"].size(), 3u);
  EXPECT_EQ(results["results"]["simulated_gpus"], 1);
  EXPECT_FALSE(results["results"]["links"]["links"].empty());

  // A CU-based collective on the full GPU model (a partition per GPU, on two threads).
  const auto c = t3sim(
      "run configs/systems/table1.yaml configs/workloads/collectives/ring_rs.yaml --set system.num_gpus=4 "
      "--set workload.size=1MiB --threads 2");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("functional check   passed"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("M events/s, 4 partitions on 2 threads)"), std::string::npos) << c.out;
}

// Issue 45, D3: the README's first command checks values again and says "passed"; a run
// whose values are off says why (an output that does not split evenly across the GPUs
// was reported as "above values_limit").
TEST_F(Cli, FunctionalCheckRunsInTheReadmeCommandAndSaysWhyWhenNot) {
  const auto readme = t3sim(fmt::format("run configs/systems/ring8.yaml configs/workloads/ring_rs.yaml --no-timeline -o '{}'",
                                        (dir_ / "readme").string()));
  ASSERT_EQ(readme.exit_code, 0) << readme.err;
  EXPECT_NE(readme.out.find("functional check   passed (6000000 words)"), std::string::npos) << readme.out;

  // A 100 x 100 FP16 output (20,000 B) on 4 GPUs: not 4 chunks of whole 32 B granules.
  const auto seq = t3sim(fmt::format(
      "run configs/systems/table1.yaml configs/workloads/gemm/small.yaml --config sequential --set system.num_gpus=4 "
      "--set workload.m=100 --set workload.n=100 --set workload.k=64 --mode homogeneous --no-timeline -o '{}'",
      (dir_ / "seq").string()));
  ASSERT_EQ(seq.exit_code, 0) << seq.err;
  EXPECT_NE(seq.out.find("functional check   not run (the 20000 B output does not split into 4 equal chunks of "
                         "whole 32-byte granules)"),
            std::string::npos)
      << seq.out;
  // c3: a 1,000,032 B all-gather on 8 GPUs (31,251 granules), the same way.
  const auto c3 = t3sim(fmt::format(
      "run configs/systems/mi300x.yaml configs/workloads/c3/small.yaml --set workload.gemm.m=512 "
      "--set workload.gemm.n=512 --set workload.gemm.k=256 --set workload.collective.size=1000032B --mode homogeneous "
      "--no-timeline -o '{}'",
      (dir_ / "c3").string()));
  ASSERT_EQ(c3.exit_code, 0) << c3.err;
  EXPECT_NE(c3.out.find("not run (the 1000032 B collective does not split into 8 equal chunks of whole"),
            std::string::npos)
      << c3.out;
  // Off is off.
  const auto off = t3sim("run configs/systems/ring8.yaml configs/workloads/ring_rs.yaml --set workload.size=1MiB "
                         "--set workload.functional=off --no-timeline -o " + (dir_ / "off").string());
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("functional check   not run (workload.functional is off)"), std::string::npos) << off.out;
}

// Issue 45, item 3: a long run shows its progress on stderr (plain lines: stderr is a
// file here), never on stdout; --quiet shows none. T3SIM_PROGRESS_AFTER_S=0 makes any
// run "long" (the default is 2 s).
TEST_F(Cli, ALongRunShowsProgressOnStderrUnlessQuiet) {
  const std::string run =
      "run configs/systems/ring8.yaml configs/workloads/ring_rs.yaml --set workload.size=8MiB --no-timeline -o " +
      (dir_ / "o").string();
  // The same run with the line forced on: the helper's command with the variable set.
  auto with_progress = [&](const std::string& args) {
    const fs::path out = dir_ / "p_out.txt", err = dir_ / "p_err.txt";
    const std::string cmd = fmt::format("cd '{}' && T3SIM_PROGRESS_AFTER_S=0 T3SIM_PROGRESS_EVERY_S=0 '{}' {} >'{}' 2>'{}'",
                                        T3SIM_SOURCE_DIR,
                                        T3SIM_BINARY, args, out.string(), err.string());
    const int status = std::system(cmd.c_str());
    return Result{WEXITSTATUS(status), slurp(out), slurp(err)};
  };
  const auto forced = with_progress(run);
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("simulated "), std::string::npos) << forced.err;
  EXPECT_NE(forced.err.find(" M events/s), "), std::string::npos) << forced.err;
  EXPECT_EQ(forced.out.find("M events/s), "), std::string::npos) << forced.out;
  const auto quiet = with_progress(run + " --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("M events/s), "), std::string::npos) << quiet.err;
  // A kind that knows its work done (a GEMM alone: its WGs) adds it and an ETA; a
  // collective does not (T3SIM_PROGRESS_EVERY_S=0: a line at every report).
  EXPECT_EQ(forced.err.find("ETA"), std::string::npos) << forced.err;
  const auto gemm = with_progress("run configs/systems/table1.yaml configs/workloads/gemm/small.yaml --set "
                                  "workload.m=4096 --set workload.n=4096 --set workload.k=256 --no-timeline -o " +
                                  (dir_ / "g").string());
  ASSERT_EQ(gemm.exit_code, 0) << gemm.err;
  EXPECT_NE(gemm.err.find(" % done, ETA "), std::string::npos) << gemm.err;
}

// Issue 45, D6: errors blame the key at fault. 4,096 channels blamed the size; a tiny
// GEMM + all-to-all blamed collective.channels (then collective.size, a key it does not
// have); a relative trace path resolved against the current directory, and its error
// named no workload file.
TEST_F(Cli, ErrorsBlameTheKeyAtFault) {
  expect_bad_input("configs/systems/ring8.yaml configs/workloads/ring_rs.yaml --set workload.channels=4096",
                   "--set workload.channels=4096: workload.channels: collective: chunk_slices: 4096 channels");
  // Out of place is modelled for the ring kernels (issue 42: it adds the all-gather's own
  // chunk copy), not for the direct all-gather.
  expect_bad_input("configs/systems/ring8.yaml configs/workloads/ring_rs.yaml --set workload.collective=direct-ag "
                   "--set workload.in_place=false",
                   "--set workload.in_place=false: workload.in_place: expected true for the cu direct-ag: out of "
                   "place (false) is modelled for the ring kernels only");
  expect_bad_input("configs/systems/mi300x.yaml configs/workloads/gemm_a2a/moe.yaml --set workload.gemm.m=8 "
                   "--set workload.gemm.n=1 --config sequential",
                   "--set workload.gemm.n=1: workload.gemm.n: the all-to-all moves the 8 x 1 output of 16 B");
  // A trace named relative to its workload file, run from elsewhere (the source dir).
  write("tiny.trace",
        "t3trace 1\nkernel tiny\nresources wfs=1 threads=64\nprogram p\n  compute 100\nend\nwgs 1\nwg 0 p\n");
  const fs::path wl = write("relative.yaml", "kind: gemm\ntrace: tiny.trace\n");
  const auto ok = t3sim(fmt::format("run configs/systems/table1.yaml '{}' --no-timeline -o '{}'", wl.string(),
                                    (dir_ / "rel").string()));
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const fs::path missing = write("missing.yaml", "kind: gemm\ntrace: nothere.trace\n");
  expect_bad_input(fmt::format("configs/systems/table1.yaml '{}'", missing.string()),
                   fmt::format("missing.yaml:2: workload.trace: {}: cannot open the trace file",
                               (dir_ / "nothere.trace").string()));
}

// 64 GPUs (issue 20, item 5) in homogeneous mode: a ring reduce-scatter with its values
// checked, and a direct all-to-all (its loops by peer share a variable).
TEST_F(Cli, SixtyFourGpusInHomogeneousMode) {
  for (const char* workload : {"ring_rs.yaml --set workload.size=8MiB",
                               "ring_rs.yaml --set workload.size=8MiB --set workload.collective=all-to-all"}) {
    const auto r = t3sim(fmt::format("run configs/systems/ring8.yaml configs/workloads/{} --set system.num_gpus=64 "
                                     "--mode homogeneous",
                                     workload));
    ASSERT_EQ(r.exit_code, 0) << workload << ": " << r.err;
    EXPECT_NE(r.out.find("functional check   passed"), std::string::npos) << r.out;
  }
}

// The T3 configurations of the same sub-layer, one flag apart: the fused RS is
// checked functionally; the ideal ones come from isolated runs.
TEST_F(Cli, T3AndIdealConfigurations) {
  for (const char* config : {"t3", "t3-mca", "ideal-overlap", "ideal-rs-nmc"}) {
    const auto r = t3sim(fmt::format("run configs/systems/table1.yaml configs/workloads/gemm/small.yaml --config {} "
                                     "--set system.num_gpus=4 --mode homogeneous -o '{}'",
                                     config, (dir_ / config).string()));
    ASSERT_EQ(r.exit_code, 0) << config << "\n" << r.err;
    EXPECT_NE(r.out.find(fmt::format("configuration {}", config)), std::string::npos) << r.out;
    const auto results = nlohmann::json::parse(slurp(dir_ / config / "results.json"));
    EXPECT_EQ(results["results"]["configuration"], config);
    if (std::string(config).rfind("t3", 0) == 0) {
      EXPECT_NE(r.out.find("functional check   passed"), std::string::npos) << r.out;
      EXPECT_EQ(results["results"]["t3"]["tracker_size_bytes"], 19456);
    } else {
      EXPECT_NE(r.out.find("from isolated runs"), std::string::npos) << r.out;
    }
  }
}

// small.yaml on 8 GPUs: T3's chunks (4 tiles, half a tile row) are not the flat
// chunks a CU all-gather moves. Out of the box, t3 checks the RS's result (the CU AG
// runs timing-only); with T3's own all-gather every chunk of every GPU is checked.
TEST_F(Cli, T3AllGatherCuOrDmaChecksValues) {
  const std::uint64_t words = 1024 * 1024 * 2 / 32;  // the output in 32 B value granules
  for (const char* ag : {"cu", "dma"}) {
    const auto r = t3sim(fmt::format("run configs/systems/table1.yaml configs/workloads/gemm/small.yaml --config t3 "
                                     "--set workload.collective.t3_all_gather={} -o '{}'",
                                     ag, (dir_ / ag).string()));
    ASSERT_EQ(r.exit_code, 0) << ag << "\n" << r.err;
    const std::uint64_t checked = std::string(ag) == "cu" ? words : 8 * words;
    EXPECT_NE(r.out.find(fmt::format("functional check   passed ({} words)", checked)), std::string::npos)
        << ag << "\n" << r.out;
    EXPECT_EQ(r.out.find("(T3: tracker + DMA, ring)") != std::string::npos, std::string(ag) == "dma") << r.out;
  }
}

TEST_F(Cli, NodeRunBadInputNamesTheKey) {
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"configs/workloads/collectives/ring_rs.yaml --mode bogus", "run.mode: expected one of"},
      {"configs/workloads/collectives/ring_rs.yaml --set workload.collective=ring-rz",
       "workload.collective: expected one of"},
      {"configs/workloads/collectives/ring_rs.yaml --set workload.implementation=dma",
       "a DMA-based ring-rs is not supported"},
      {"configs/workloads/collectives/ring_rs.yaml --set workload.cus=81", "workload.cus: 81 is greater than the maximum 80"},
      {"configs/workloads/collectives/ring_rs.yaml --set system.dma.engnes=2", "unknown key (did you mean 'engines'?)"},
      {"configs/workloads/collectives/ring_rs.yaml --set system.net.topology=torus",
       "system.net.topology: expected one of"},
      {"configs/workloads/collectives/ring_rs.yaml --set workload.step_size=100",
       "workload.step_size: 100 B is not a multiple of the 32-byte value granule"},
      {"configs/workloads/gemm/small.yaml --config sequential --set workload.collective.step_size=100",
       "workload.collective.step_size: 100 B is not a multiple of the 32-byte value granule"},
      {"configs/workloads/collectives/ring_rs.yaml --set workload.fifo_depth=4",
       "workload.fifo_depth: 4 steps do not exceed a chunk of 4 steps"},
      {"configs/workloads/gemm/small.yaml --config sequential --set workload.collective.chanels=4",
       "unknown key (did you mean 'channels'?)"},
      {"configs/workloads/gemm/small.yaml --config fusde",
       "run.config: expected one of c3, c3-priority, conccl, fused, ideal, ideal-overlap, ideal-rs-nmc, sequential, t3, t3-mca; "
       "got 'fusde'"},
      {"configs/workloads/gemm/small.yaml --config conccl",
       "run.config: kind gemm takes one of the sub-layer configurations (fused, ideal-overlap, ideal-rs-nmc, "
       "sequential, t3, t3-mca), not 'conccl'"},
      {"configs/workloads/gemm/small.yaml --config fused --set workload.collective.fused_reduction=magic",
       "workload.collective.fused_reduction: expected one of staging, atomic; got 'magic'"},
      {"configs/workloads/gemm/small.yaml --config fused --set workload.collective.fused_order=sideways",
       "workload.collective.fused_order: expected one of comm-aware, oblivious; got 'sideways'"},
      {"configs/workloads/gemm/small.yaml --config fused --set system.num_gpus=3",
       "system.num_gpus: fused gives each of the 3 GPUs M / 3 whole rows of the GEMM's output, and M = 1024"},
      // 8.4 M tiles spelled out on 8 GPUs: ~128 GiB, refused before it is built.
      {"configs/workloads/gemm/small.yaml --config fused --set workload.m=1048576 --set workload.n=262144 "
       "--set system.num_gpus=8",
       "workload.m: fused's persistent kernels spell out every one of the GEMM's 8388608 tiles on 8 simulated GPUs"},
      {"configs/workloads/gemm/small.yaml --config fused --set run.mode=homogeneous "
       "--set workload.collective.fused_order=oblivious",
       "use --mode full or fused_order: comm-aware"},
      {"configs/workloads/gemm/small.yaml --config t3 --set system.memory.tracker.sest=4",
       "system.memory.tracker.sest: unknown key (known keys: sets, ways"},
      {"configs/workloads/gemm/small.yaml --config t3 --set system.memory.tracker.ways=0",
       "system.memory.tracker.ways: 0 is out of range"},
      {"configs/workloads/gemm/small.yaml --config t3 --set workload.collective.t3_all_gather=nccl",
       "workload.collective.t3_all_gather: expected one of cu, dma; got 'nccl'"},
      {"configs/workloads/gemm/small.yaml --config t3 --set system.memory.tracker.overflow_latency=5kg",
       "system.memory.tracker.overflow_latency: expected a time like '500ns', got '5kg'"},
      {"configs/workloads/gemm/small.yaml --config t3 --set system.gpu.cu.posted_stores=maybe",
       "system.gpu.cu.posted_stores: expected true or false, got 'maybe'"},
      {"configs/workloads/gemm/small.yaml --config t3 --set system.memory.tracker.set_full=drop",
       "system.memory.tracker.set_full: expected one of overflow, stall; got 'drop'"},
      // small.yaml has 32 output tiles: t3 cannot cut them into 3 equal chunks.
      {"configs/workloads/gemm/small.yaml --config t3 --set system.num_gpus=3",
       "system.num_gpus: t3 cuts the GEMM's 32 output tiles (WGs) into one chunk per GPU"},
      // A WG that fits no CU (issue 21, C01): an error naming the key that is too small,
      // from every kind that builds kernels, caught by validate too (below).
      {"configs/workloads/gemm/small.yaml --set system.gpu.cu.lds_size=0B",
       "a WG needs 49152 B of LDS and a CU has 0 B (system.gpu.cu.lds_size)"},
      {"configs/workloads/gemm/small.yaml --set system.gpu.cu.max_threads=64",
       "a WG has 256 threads and a CU holds 64 (system.gpu.cu.max_threads)"},
      {"configs/workloads/gemm/small.yaml --config t3 --set system.gpu.cu.lds_size=1KiB",
       "(system.gpu.cu.lds_size)"},
      {"configs/workloads/collectives/ring_rs.yaml --set system.gpu.cu.registers=1",
       "the ring-rs kernel cannot run: a WG needs 8192 registers and a CU has 1 (system.gpu.cu.registers)"},
  };
  for (const auto& c : cases) {
    const auto r = t3sim(fmt::format("run configs/systems/table1.yaml {} -o '{}'", c.args, (dir_ / "o").string()));
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_FALSE(fs::exists(dir_ / "o" / "results.json")) << c.args;
  }
}

// kind ag_gemm (seed 001): every key's bad value names the key.
TEST_F(Cli, AgGemmBadInputNamesTheKey) {
  struct Case {
    std::string args, expected;
  };
  const std::string w = "configs/workloads/ag_gemm/seed001.yaml";
  const Case cases[] = {
      {w + " --config t3",
       "run.config: kind ag_gemm takes one of fused, ideal-overlap, sequential, not 't3'"},
      {w + " --set workload.chunk_rows=128",
       "workload.chunk_rows: chunk_rows: 128 is not a multiple of the GEMM's tile_m (256)"},
      {w + " --set workload.chunk_rows=384",
       "workload.chunk_rows: chunk_rows: 384 does not divide a GPU's 1024 rows of A"},
      {w + " --set workload.gemm.n=11004",
       "workload.gemm.n: each of the 8 GPUs computes N / 8 columns (seed 001's local_N), and 11004 is not"},
      {w + " --set workload.gemm.m=8196",
       "workload.gemm.m: each of the 8 GPUs holds M / 8 rows of A, and 8196 is not"},
      {w + " --set workload.order=sideways",
       "workload.order: expected one of comm-aware, oblivious; got 'sideways'"},
      {w + " --set workload.launch_order=later",
       "workload.launch_order: expected one of copies-first, gemm-first; got 'later'"},
      {w + " --set workload.streams=-1", "workload.streams"},
      {w + " --set workload.gemm.cus=8",
       "workload.gemm.cus: the all-gather + GEMM's GEMM is generated from m, n, k"},
  };
  for (const auto& c : cases) expect_bad_input("configs/systems/mi300x.yaml " + c.args, c.expected);
}

// kind gemm_a2a (seed 000): every key's bad value names the key.
TEST_F(Cli, GemmA2aBadInputNamesTheKey) {
  struct Case {
    std::string args, expected;
  };
  const std::string w = "configs/systems/mi210x4.yaml configs/workloads/gemm_a2a/moe.yaml";
  const Case cases[] = {
      {w + " --config c3", "run.config: kind gemm_a2a takes one of fused, ideal-overlap, sequential, not 'c3'"},
      {w + " --set workload.gemm.m=4098",
       "workload.gemm.m: the all-to-all returns M / 4 rows to each of the 4 GPUs, and 4098 is not a multiple of 4"},
      {w + " --set workload.order=sideways", "workload.order: expected one of comm-aware, oblivious; got 'sideways'"},
      {w + " --mode homogeneous --set workload.order=oblivious",
       "workload.order: homogeneous mode mirrors GPU 0's schedule onto its peers"},
      {w + " --mode homogeneous --set workload.gemm.m=2560",
       "workload.gemm.m: homogeneous mode mirrors the all-to-all chunk by chunk, but the 640 rows per GPU"},
      {w + " --set workload.grid=70000", "workload.grid: 70000 is greater than the maximum 65535"},
      {w + " --set workload.gemm.trace=x.trace", "workload.gemm.trace: the GEMM + all-to-all's GEMM is generated"},
      {w + " --set workload.collective.functional=maybe", "workload.collective.functional: expected one of"},
  };
  for (const auto& c : cases) expect_bad_input(c.args, c.expected);
}

// kind gemv_ar (seed 000): every key's bad value names the key.
TEST_F(Cli, GemvArBadInputNamesTheKey) {
  struct Case {
    std::string args, expected;
  };
  const std::string w = "configs/systems/mi210x4.yaml configs/workloads/gemv_ar/decode.yaml";
  const Case cases[] = {
      {w + " --config t3", "run.config: kind gemv_ar takes one of fused, ideal-overlap, sequential, not 't3'"},
      {w + " --set workload.gemv.m=8190",
       "workload.gemv.m: the all-reduce gives each of the 4 GPUs M / 4 elements of y to reduce, and 8190 is not"},
      {w + " --set workload.gemv.k=0", "workload.gemv.k: 0 is out of range"},
      {w + " --set workload.gemv.tile_m=0", "workload.gemv.tile_m: 0 is out of range"},
      {w + " --mode homogeneous --set workload.gemv.tile_m=48",
       "workload.gemv.tile_m: homogeneous mode mirrors the all-reduce chunk by chunk, but the 2048 elements per GPU"},
      {w + " --mode homogeneous --set workload.order=oblivious",
       "workload.order: homogeneous mode mirrors GPU 0's schedule onto its peers"},
      {w + " --set workload.gemv.kstep=4", "workload.gemv.kstep: unknown key (did you mean 'k_step'?)"},
      {w + " --set workload.collective.functional=values --set workload.gemv.tile_m=8",
       "workload.collective.functional: values need y's chunks and tiles in whole 32-byte granules"},
  };
  for (const auto& c : cases) expect_bad_input(c.args, c.expected);
}

// kind embedding_a2a (seed 000): every key's bad value names the key.
TEST_F(Cli, EmbeddingA2aBadInputNamesTheKey) {
  struct Case {
    std::string args, expected;
  };
  const std::string w = "configs/systems/mi210x4.yaml configs/workloads/embedding_a2a/dlrm.yaml";
  const Case cases[] = {
      {w + " --config conccl", "run.config: kind embedding_a2a takes one of fused, ideal-overlap, sequential, not"},
      {w + " --set workload.batch=1022",
       "workload.batch: the all-to-all gives each of the 4 GPUs B / 4 samples, and the batch 1022 is not"},
      {w + " --set workload.tables=0", "workload.tables: 0 is out of range"},
      {w + " --set workload.pooling_max=0", "workload.pooling_max: 0 is out of range"},
      {w + " --mode homogeneous --set workload.order=oblivious",
       "workload.order: homogeneous mode mirrors GPU 0's schedule onto its peers"},
      {w + " --set workload.dim=7 --set workload.collective.functional=values",
       "workload.collective.functional: values need the embedding vectors and chunks in whole 32-byte granules"},
      {w + " --set workload.tabels=4", "workload.tabels: unknown key (did you mean 'tables'?)"},
  };
  for (const auto& c : cases) expect_bad_input(c.args, c.expected);
}

// run.sampling (models/gpu/stage_sampler.h): bad values, and the kinds and modes that
// cannot sample, are errors at the key.
TEST_F(Cli, SamplingBadInputNamesTheKey) {
  struct Case {
    std::string args, expected;
  };
  const std::string gemm = "configs/systems/table1.yaml configs/workloads/gemm/tnlg_fc2_tp8.yaml";
  const std::string c3 = "configs/systems/mi300x.yaml configs/workloads/c3/small.yaml";
  const std::string dma = "configs/systems/mi300x.yaml configs/workloads/collectives/dma_all_gather.yaml --mode homogeneous";
  const Case cases[] = {
      {gemm + " --set run.sampling=maybe", "run.sampling: expected one of off, on; got 'maybe'"},
      {gemm + " --set run.sampling=on --set run.sampling_window=1", "run.sampling_window: 1 is out of range"},
      {gemm + " --set run.sampling=on --set run.sampling_tolerance=2", "run.sampling_tolerance: 2 is out of range"},
      {gemm + " --set run.sampling=on --set run.sampling_tail=0", "run.sampling_tail: 0 is out of range"},
      {gemm + " --set run.samplng=on", "run.samplng: unknown key (did you mean 'sampling'?)"},
      {gemm + " --set run.sampling=on --set run.sampling_period=1ps", "run.sampling_period: 1ps is out of range"},
      {"configs/systems/table1.yaml configs/workloads/memory/contention.yaml --set run.sampling=on",
       "run.sampling: kind memory does not sample (gemm alone, c3 and DMA collectives in homogeneous mode do)"},
      {kSystem + " " + kSmall + " --set run.sampling=on", "run.sampling: collectives sample in homogeneous mode only"},
      {kSystem + " " + kSmall + " --mode homogeneous --set run.sampling=on",
       "run.sampling: a CU collective cannot be sampled"},
      {dma + " --set workload.size=1MiB --set run.sampling=on", "run.sampling: skipped copies carry no values"},
      {gemm + " --config t3 --set run.sampling=on", "run.sampling: kind gemm does not sample"},
      {c3 + " --set run.sampling=on", "run.sampling: C3 samples in homogeneous mode only"},
  };
  for (const auto& c : cases) expect_bad_input(c.args, c.expected);
}

// A DMA collective alone has no kernel stages: the GPU probes its copies every
// run.sampling_period and skips periods once two windows agree. The sampled time stays
// within 2 % of the exact one (issue 20's bound) and the results say what was skipped.
TEST_F(Cli, SampledDmaCollectiveWithinTwoPercentOfExact) {
  const std::string run = "run configs/systems/mi300x.yaml configs/workloads/collectives/dma_all_gather.yaml "
                          "--mode homogeneous --set workload.size=128MiB --set workload.functional=off";
  const auto exact = t3sim(fmt::format("{} -o '{}'", run, (dir_ / "exact").string()));
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  const auto sampled = t3sim(fmt::format("{} --set run.sampling=on -o '{}'", run, (dir_ / "sampled").string()));
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  EXPECT_NE(sampled.out.find("periods of copies skipped"), std::string::npos) << sampled.out;
  const auto e = nlohmann::json::parse(slurp(dir_ / "exact" / "results.json"));
  const auto s = nlohmann::json::parse(slurp(dir_ / "sampled" / "results.json"));
  EXPECT_FALSE(e["results"].contains("sampling"));
  ASSERT_TRUE(s["results"].contains("sampling")) << s["results"].dump();
  EXPECT_GT(s["results"]["sampling"]["skipped_probe_periods"].get<std::uint64_t>(), 0u);
  const double te = e["results"]["time_ps"].get<double>(), ts = s["results"]["time_ps"].get<double>();
  EXPECT_LE(std::abs(ts - te) / te, 0.02) << "exact " << te << " ps, sampled " << ts << " ps";
  EXPECT_LT(s["metadata"]["events"].get<double>(), 0.6 * e["metadata"]["events"].get<double>());
}

// Issue 45: a run whose simulated time outgrows the simulator's 2^64 ps (a 48 MiB
// reduce-scatter at the least accepted bandwidth, 1 B/s) exits 2 with what happened,
// and leaves no results.
TEST_F(Cli, ARunPastTheSimulatorsTimeRangeExitsTwoWithoutResults) {
  const fs::path out = dir_ / "overflow";
  const auto r = t3sim(fmt::format(
      "run configs/systems/ring8.yaml configs/workloads/collectives/ring_rs.yaml --set system.memory.bandwidth=1B/s "
      "--set workload.size=48MiB -o '{}'",
      out.string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the simulated time passed the simulator's limit of 2^64 ps"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out / "results.json"));
}

// run.isolated_cache: c3's isolated runs are kept by what they depend on: the order and
// the CUs reserved do not make a new entry, a system key does.
TEST_F(Cli, C3IsolatedRunsAreKeptByWhatTheyDependOn) {
  const fs::path cache = dir_ / "cache";
  const std::string base = fmt::format(
      "run configs/systems/mi300x.yaml configs/workloads/c3/small.yaml --mode homogeneous --config c3 "
      "--set workload.gemm.k=256 --set workload.collective.size=1MiB --set run.isolated_cache='{}'",
      cache.string());
  auto entries = [&] {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(cache)) n += e.path().extension() == ".json" ? 1 : 0;
    return n;
  };
  const auto gemm_first = t3sim(base);
  ASSERT_EQ(gemm_first.exit_code, 0) << gemm_first.err;
  EXPECT_EQ(entries(), 1u);
  const auto comm_first = t3sim(base + " --set workload.order=comm-first --set workload.comm_cus=16");
  ASSERT_EQ(comm_first.exit_code, 0) << comm_first.err;
  EXPECT_EQ(entries(), 1u);
  const auto other_system = t3sim(base + " --set system.gpu.num_cus=300");
  ASSERT_EQ(other_system.exit_code, 0) << other_system.err;
  EXPECT_EQ(entries(), 2u);
}

// Issue 43 item 2: the sub-layer's ideal bounds simulate exactly sequential's run. Given
// an isolated-run cache (a sweep's is beside its CSV), sequential keeps its run there and
// ideal-overlap / ideal-rs-nmc take it: the results they would simulate, nothing simulated
// again for it; t3 neither keeps nor takes; a damaged entry is simulated again, with a
// warning. A sweep runs the ideal bounds' points after the others.
TEST_F(Cli, TheIdealBoundsTakeSequentialsRunFromTheCache) {
  const fs::path cache = dir_ / "seq-cache";
  const std::string base =
      "run configs/systems/table1.yaml configs/workloads/gemm/small.yaml --set system.num_gpus=4 --mode homogeneous "
      "--no-timeline";
  const std::string cached = fmt::format(" --set run.isolated_cache='{}'", cache.string());
  auto entries = [&] {
    std::size_t n = 0;
    if (fs::exists(cache))
      for (const auto& e : fs::directory_iterator(cache)) n += e.path().extension() == ".json" ? 1 : 0;
    return n;
  };
  auto results = [&](const std::string& name) { return nlohmann::json::parse(slurp(dir_ / name / "results.json")); };
  auto run = [&](const std::string& args, const std::string& name) {
    const auto r = t3sim(fmt::format("{} {} -o '{}'", base, args, (dir_ / name).string()));
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    return r;
  };
  const char* ideals[] = {"ideal-overlap", "ideal-rs-nmc"};
  for (const char* ideal : ideals) run(fmt::format("--config {}", ideal), std::string("alone-") + ideal);
  run("--config sequential" + cached, "seq");
  EXPECT_EQ(entries(), 1u);
  run("--config t3" + cached, "t3");
  EXPECT_EQ(entries(), 1u);
  for (const char* ideal : ideals) {
    const auto r = run(fmt::format("--config {}{}", ideal, cached), std::string("taken-") + ideal);
    EXPECT_NE(r.out.find("sequential's run taken from the isolated-run cache"), std::string::npos) << r.out;
    nlohmann::json taken = results(std::string("taken-") + ideal);
    EXPECT_EQ(taken["metadata"]["events"], 0) << ideal;  // the main simulator ran nothing
    EXPECT_EQ(taken["results"]["sequential_run"], "taken from the isolated-run cache");
    taken["results"].erase("sequential_run");
    EXPECT_EQ(taken["results"], results(std::string("alone-") + ideal)["results"]) << ideal;
  }
  // Damaged: simulated again (and kept again), the same result.
  for (const auto& e : fs::directory_iterator(cache)) std::ofstream(e.path()) << "{\"key\": 1";
  const auto damaged = run("--config ideal-overlap" + cached, "damaged");
  EXPECT_NE(damaged.err.find("isolated-run cache entry"), std::string::npos) << damaged.err;
  EXPECT_EQ(damaged.out.find("taken from the isolated-run cache"), std::string::npos) << damaged.out;
  EXPECT_EQ(results("damaged")["results"], results("alone-ideal-overlap")["results"]);
  // Another system: another entry.
  run("--config sequential --set system.gpu.cu.lds_size=128KiB" + cached, "other");
  EXPECT_EQ(entries(), 2u);

  // A sweep: the ideal bound's point (index 0) runs after sequential's (index 1), and
  // takes its run from the sweep's cache beside the CSV.
  const fs::path csv = dir_ / "sweep" / "points.csv";
  fs::create_directories(csv.parent_path());
  const auto sweep = t3sim(fmt::format("sweep --system configs/systems/table1.yaml --workload "
                                       "configs/workloads/gemm/small.yaml --set system.num_gpus=4 --set "
                                       "run.mode=homogeneous --set 'run.config=[ideal-overlap,sequential]' -o '{}' -j 1",
                                       csv.string()));
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const std::string text = slurp(csv);
  const std::size_t seq_row = text.find("\n1,sequential,"), ideal_row = text.find("\n0,ideal-overlap,");
  ASSERT_NE(seq_row, std::string::npos) << text;
  ASSERT_NE(ideal_row, std::string::npos) << text;
  EXPECT_LT(seq_row, ideal_row) << text;
  EXPECT_EQ(std::distance(fs::directory_iterator(csv.parent_path() / "isolated-cache"), fs::directory_iterator{}), 1);
}
// Issue 44 item 2: one driver keeps and takes every kind's chained run the same way.
// `sequential` keeps it (c3's isolated run, an overlap op's sequential run); the other
// configurations take it: the critical path's (c3's ideal, ideal-overlap) simulate
// nothing on the main simulator and say so, the concurrent and fused runs simulate only
// their own; every result equals the one simulated without the store.
TEST_F(Cli, EveryKindsChainedRunIsKeptBySequentialAndTakenByTheOthers) {
  const struct {
    const char* name;
    std::string base;
    std::vector<std::string> takers;  // the critical path's first
  } kinds[] = {
      {"c3",
       "run configs/systems/mi300x.yaml configs/workloads/c3/small.yaml --mode homogeneous --set workload.gemm.k=256 "
       "--set workload.collective.size=1MiB",
       {"ideal", "c3"}},
      {"gemv_ar", "run configs/systems/mi210x4.yaml configs/workloads/gemv_ar/decode.yaml --set workload.gemv.m=1024",
       {"ideal-overlap", "fused"}},
  };
  for (const auto& kind : kinds) {
    const fs::path cache = dir_ / kind.name / "cache";
    auto entries = [&] {
      std::size_t n = 0;
      if (fs::exists(cache))
        for (const auto& e : fs::directory_iterator(cache)) n += e.path().extension() == ".json" ? 1 : 0;
      return n;
    };
    auto run = [&](const std::string& configuration, bool cached) {
      const fs::path out = dir_ / kind.name / fmt::format("{}-{}", configuration, cached ? "cached" : "alone");
      const auto r =
          t3sim(fmt::format("--log-level info {} --no-timeline --config {} -o '{}'{}", kind.base, configuration,
                            out.string(), cached ? fmt::format(" --set run.isolated_cache='{}'", cache.string()) : ""));
      EXPECT_EQ(r.exit_code, 0) << kind.name << " " << configuration << "\n" << r.err;
      // Taken from the store only where there is one, by every configuration but sequential.
      EXPECT_EQ(r.err.find("chained run taken from the isolated-run cache") != std::string::npos,
                cached && configuration != "sequential")
          << kind.name << " " << configuration << "\n" << r.err;
      return nlohmann::json::parse(slurp(out / "results.json"));
    };
    (void)run("sequential", true);
    EXPECT_EQ(entries(), 1u) << kind.name;
    for (std::size_t i = 0; i < kind.takers.size(); ++i) {
      const std::string& configuration = kind.takers[i];
      const nlohmann::json alone = run(configuration, false);
      nlohmann::json taken = run(configuration, true);
      const bool critical_path = i == 0;
      if (critical_path) {
        EXPECT_EQ(taken["metadata"]["events"], 0) << kind.name << " " << configuration;
        EXPECT_EQ(taken["results"]["sequential_run"], "taken from the isolated-run cache");
        taken["results"].erase("sequential_run");
      } else {
        EXPECT_FALSE(taken["results"].contains("sequential_run")) << kind.name << " " << configuration;
        EXPECT_EQ(taken["metadata"]["events"], alone["metadata"]["events"]) << kind.name << " " << configuration;
      }
      EXPECT_EQ(taken["results"], alone["results"]) << kind.name << " " << configuration;
    }
    EXPECT_EQ(entries(), 1u) << kind.name;  // taken, not kept again
  }
}

// kind c3 (seed 003): every new key's bad value names the key.
TEST_F(Cli, C3BadInputNamesTheKey) {
  struct Case {
    std::string args, expected;
  };
  const std::string small = "configs/workloads/c3/small.yaml";
  const Case cases[] = {
      {small + " --config t3", "run.config: kind c3 takes one of the C3 configurations (c3, c3-priority, conccl, ideal, "
                               "sequential), not 't3'"},
      {small + " --set workload.order=later", "workload.order: expected one of gemm-first, comm-first; got 'later'"},
      {small + " --set workload.comm_cus=304", "workload.comm_cus: 304 is greater than the maximum 303"},
      {small + " --set workload.scale=3", "workload.scale: 3 does not divide the GEMM's M (4096)"},
      {small + " --set workload.scale=0", "workload.scale: 0 is out of range"},
      {small + " --set workload.preset=mb1_897M", "workload.preset: unknown C3 case 'mb1_897M' (did you mean "
                                                  "'mb1_896M'?)"},
      {small + " --set workload.preset=mb1_896M", "workload.gemm.m: the GEMM comes from preset mb1_896M (mb1)"},
      {"configs/workloads/c3/table2.yaml --set workload.collective.size=1GiB",
       "workload.collective.size: the size comes from preset mb1_896M"},
      {"configs/workloads/c3/table2.yaml --set workload.gemm.tag=cb1", "workload.gemm.tag: the GEMM comes from preset"},
      {small + " --set workload.gemm.cus=8", "workload.gemm.cus: the GEMM's CUs follow the configuration"},
      {small + " --set workload.gemm.trace=gemm.trace", "workload.gemm.trace: a C3 GEMM is generated"},
      {small + " --set workload.gemm.preset=tnlg.fc2.tp8",
       "workload.gemm.m: the GEMM comes from gemm.preset: give either the preset or the GEMM's size"},
      {"configs/workloads/c3/table2.yaml --set workload.gemm.preset=tnlg.fc2.tp8",
       "workload.gemm.preset: the GEMM comes from preset mb1_896M"},
      {small + " --set workload.collective.collective=all_to_al",
       "workload.collective.collective: expected one of all-to-all, direct-ag, direct-rs, rhd-ar, ring-ag, ring-ar, "
       "ring-rs, a2a, all_to_all, all_gather"},
      {small + " --config conccl --set workload.collective.collective=reduce_scatter",
       "workload.collective.collective: conccl runs the collective on DMA engines, which copy and do not reduce"},
      // A collective the node cannot build: caught when the experiment is built (so by
      // validate too), named at the collective.
      {small + " --set workload.collective.channels=4096",
       "workload.collective.channels: collective: chunk_slices: 4096 channels"},
      {small + " --set system.gpu.collective.lds_per_wg=lots",
       "system.gpu.collective.lds_per_wg: expected a size like '16MiB', got 'lots'"},
      {small + " --set system.gpu.collective.lds_per_wg=128KiB",
       "the ring-ag kernel cannot run: a WG needs 131072 B of LDS and a CU has 65536 B (system.gpu.cu.lds_size); its "
       "LDS per WG is system.gpu.collective.lds_per_wg"},
      {small + " --set system.gpu.collective.registers_per_wg=many",
       "system.gpu.collective.registers_per_wg: expected"},
      {small + " --set system.gpu.collective.registers_per_wg=200000",
       "the ring-ag kernel cannot run: a WG needs 200192 registers"},
      {small + " --set workload.collective.size=100",
       "workload.collective.size: 100 B is not a whole number of 32-byte value granules"},
      {small + " --set workload.scale=64 --set workload.collective.size=1000032",
       "workload.scale: 64 does not divide the collective's size (1000032 B)"},
      {small + " --set workload.collective.functional=values --set workload.collective.size=1056",
       "workload.collective.functional: values needs the 1056 B array to split into 8 equal chunks"},
      {small + " --set workload.isolated=maybe", "workload.isolated: expected"},
      {small + " --config sequential --set workload.isolated=false",
       "workload.isolated: false keeps only a concurrent run (c3, conccl); configuration sequential is made of the "
       "isolated runs"},
      {small + " --config ideal --set workload.isolated=false", "workload.isolated: false keeps only a concurrent run"},
      // Without isolated runs the concurrent run is what validate builds.
      {small + " --set workload.isolated=false --set workload.collective.channels=4096",
       "workload.collective.channels: collective: chunk_slices: 4096 channels"},
  };
  for (const auto& c : cases) expect_bad_input("configs/systems/mi300x.yaml " + c.args, c.expected);
}

// kind c3 end to end: the summary, the results and the sweep row's metrics.
TEST_F(Cli, C3RunReportsIsolatedConcurrentAndTheFractionOfIdeal) {
  const auto r = t3sim(fmt::format("run configs/systems/mi300x.yaml configs/workloads/c3/small.yaml --mode homogeneous "
                                   "--config c3 --set workload.order=comm-first --set workload.gemm.k=512 "
                                   "--set workload.collective.size=8MiB -o '{}'",
                                   (dir_ / "o").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("configuration c3: collective launched first (c3_sp)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of the ideal realized"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("functional check   passed"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir_ / "o" / "results.json"));
  const nlohmann::json& res = j["results"];
  EXPECT_EQ(res["configuration"], "c3");
  EXPECT_EQ(res["order"], "comm-first");
  const auto iso_g = res["isolated"]["gemm"]["time_ps"].get<std::uint64_t>();
  const auto iso_c = res["isolated"]["collective"]["time_ps"].get<std::uint64_t>();
  EXPECT_EQ(res["sequential_ps"].get<std::uint64_t>(), iso_g + iso_c);
  EXPECT_GE(res["time_ps"].get<std::uint64_t>(), std::max(iso_g, iso_c));
  EXPECT_GT(res["run"]["gemm"]["dram_read_bytes"].get<std::uint64_t>(), 0u);
  EXPECT_GT(res["run"]["collective"]["l2_write_bytes"].get<std::uint64_t>(), 0u);
}

// isolated: false runs the concurrent configuration alone: the same concurrent times as
// the full run, and no isolated times, slowdowns or speedups in the summary or the
// results (the sweep row's empty cells are not checked here).
TEST_F(Cli, C3WithoutIsolatedRunsReportsTheConcurrentRunOnly) {
  const std::string args =
      "configs/systems/mi300x.yaml configs/workloads/c3/small.yaml --mode homogeneous --config c3 "
      "--set workload.order=comm-first --set workload.gemm.k=512 --set workload.collective.size=8MiB";
  const auto full = t3sim(fmt::format("run {} -o '{}'", args, (dir_ / "full").string()));
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const auto alone = t3sim(fmt::format("run {} --set workload.isolated=false -o '{}'", args, (dir_ / "c").string()));
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_NE(alone.out.find("isolated runs      off (workload.isolated)"), std::string::npos) << alone.out;
  EXPECT_EQ(alone.out.find("of the ideal realized"), std::string::npos) << alone.out;
  EXPECT_NE(alone.out.find("functional check   passed"), std::string::npos) << alone.out;
  const nlohmann::json f = nlohmann::json::parse(slurp(dir_ / "full" / "results.json"))["results"];
  const nlohmann::json c = nlohmann::json::parse(slurp(dir_ / "c" / "results.json"))["results"];
  EXPECT_EQ(c["time_ps"], f["time_ps"]);
  EXPECT_EQ(c["run"], f["run"]);
  EXPECT_TRUE(c["isolated"].is_string());
  EXPECT_FALSE(c.contains("fraction_of_ideal"));
  EXPECT_FALSE(c.contains("ideal_speedup"));
}

// scale: auto shrinks a Table II case while its GEMM keeps 8 waves of WGs on the GPU:
// mb2 (26,624 tiles, 87.6 waves on 304 CUs) by 8, mb1 (23.6 waves) by 2, cb1 (3.4) not.
TEST_F(Cli, C3AutoScaleKeepsTheGemmFillingTheGpu) {
  const struct {
    const char* preset;
    const char* shape;
  } cases[] = {{"mb2_3.25G", "mb2: 2048 x 106496 x 8192"},
               {"mb1_896M", "mb1: 4096 x 57344 x 8192"},
               {"cb1_896M", "cb1: 8192 x 8192 x 8192"}};
  // A T3 sub-layer's GEMM beside a collective of its output's size (size: gemm_output).
  const auto h200 = t3sim("validate configs/systems/h200.yaml configs/workloads/c3/h200_sublayer.yaml");
  EXPECT_EQ(h200.exit_code, 0) << h200.err;
  EXPECT_NE(h200.out.find("tnlg.fc2.tp8: 8192 x 4256 x 2128 with a ring-ag of 69730304 B per GPU"), std::string::npos)
      << h200.out;
  for (const auto& c : cases) {
    const auto r = t3sim(fmt::format("validate configs/systems/mi300x.yaml configs/workloads/c3/table2.yaml --set "
                                     "workload.preset={}",
                                     c.preset));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(c.shape), std::string::npos) << r.out;
  }
}

// A peer store in a GEMM alone (issue 21, C05) and a device given to merge (C07).
TEST_F(Cli, PeerStoresWithoutPeersAndDevicesAsCsvsAreUserErrors) {
  const fs::path trace = write("peer.trace",
                               "t3trace 1\nkernel k\nresources wfs=1 threads=64\nprogram p\n  store 0 64 peer=1\nend\n"
                               "wgs 1\nwg 0 p\n");
  const fs::path workload = write("peer.yaml", fmt::format("kind: gemm\ntrace: {}\n", trace.string()));
  const auto r = t3sim(fmt::format("validate configs/systems/table1.yaml '{}'", workload.string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("workload.trace: program 'p' sends to a peer GPU (peer=), but a GEMM alone runs on one GPU"),
            std::string::npos)
      << r.err;
  const auto m = t3sim(fmt::format("merge -o '{}' /dev/zero", (dir_ / "all.csv").string()));
  EXPECT_EQ(m.exit_code, 2) << m.err;
  EXPECT_NE(m.err.find("'/dev/zero' is not a regular file (expected a sweep CSV)"), std::string::npos) << m.err;
}

// Stores of part of a value granule (issue 21, C13, C02): a dirty partial sector written
// back at kernel end, uncached and update accesses at odd addresses. Timing-only traffic
// may be any size; they run. A DMA chunk that cannot carry whole words is a config error.
TEST_F(Cli, PartialGranuleStoresRunAndOddDmaChunksAreConfigErrors) {
  const fs::path gemm = write("edges.yaml", fmt::format("kind: gemm\ntrace: {}\n",
                                                        (fs::path(T3SIM_SOURCE_DIR) / "traces/gemm_300x200x100_edges.trace").string()));
  const fs::path odd = write("odd.trace",
                             "t3trace 1\nkernel k\nresources wfs=1 threads=64\nprogram p\n  store 0x10 48 uncached\n"
                             "  store 0x1008 8 update\n  load 0x2004 40\nend\nwgs 2\nwg 0 p\nwg 1 p\n");
  const fs::path odd_yaml = write("odd.yaml", fmt::format("kind: gemm\ntrace: {}\n", odd.string()));
  const fs::path tiny = write("tiny.yaml", "kind: gemm\nm: 1\nn: 8\nk: 32\n");
  for (const fs::path& w : {gemm, odd_yaml, tiny}) {
    for (const char* system : {"table1", "h200"}) {
      const auto r = t3sim(fmt::format("run configs/systems/{}.yaml '{}' -o '{}'", system, w.string(),
                                       (dir_ / "o").string()));
      EXPECT_EQ(r.exit_code, 0) << system << " " << w << "\n" << r.err;
      EXPECT_TRUE(fs::exists(dir_ / "o" / "results.json")) << system << " " << w;
    }
  }
  const auto r = t3sim("validate configs/systems/mi300x.yaml configs/workloads/collectives/dma_all_gather.yaml "
                       "--set system.dma.chunk_size=1B");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("system.dma.chunk_size: 1 B is not a multiple of system.memory.hbm.value_granule (32 B)"),
            std::string::npos)
      << r.err;
}

// Writes past the L2's capacity (issue 15): dirty lines keep draining into the
// controllers after the last write is acknowledged; the run ends when they are done and
// every statistic is dumped after its last update (was an abort in the stats dump).
TEST_F(Cli, AMemoryRunEndsWhenTheWriteBacksHaveDrained) {
  const fs::path w = write("writes.yaml",
                           "kind: memory\ngenerators:\n  - pattern: sequential\n    op: write\n"
                           "    request_size: 128B\n    footprint: 1GiB\n    max_outstanding: 16384\n"
                           "    requests: 200000\n");
  const auto r = t3sim(fmt::format("run configs/systems/table1.yaml '{}' -o '{}'", w.string(), (dir_ / "o").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto results = nlohmann::json::parse(std::ifstream(dir_ / "o" / "results.json"));
  const auto& compute = results["results"]["memory"]["streams"]["compute"];
  // More written to DRAM than the 16 MiB L2 can leave behind, and the run's end after
  // the last acknowledged write: the write-backs drained first.
  EXPECT_GE(compute["bytes"]["write"].get<std::uint64_t>(), 200000u * 128 - 16u * 1024 * 1024) << results.dump(1);
  EXPECT_GT(results["results"]["simulated_time_ps"].get<std::uint64_t>(),
            results["results"]["generators"][0]["last_response_ps"].get<std::uint64_t>());
  EXPECT_TRUE(fs::exists(dir_ / "o" / "stats.csv"));
}

// Issue 21: a sweep whose middle point cannot run records it as a failed row and runs
// the rest (the point used to abort the whole process, on every resume).
TEST_F(Cli, ASweepRecordsAPointThatCannotRunAndGoesOn) {
  const fs::path csv = dir_ / "x.csv";
  const auto r = t3sim(fmt::format("sweep --system configs/systems/table1.yaml --workload "
                                   "configs/workloads/gemm/small.yaml --set 'system.gpu.cu.lds_size=[64KiB,0B,128KiB]' "
                                   "-o '{}' -j 1",
                                   csv.string()));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // a point failed
  EXPECT_NE(r.out.find("3 points: 2 ok, 1 failed"), std::string::npos) << r.out;
  std::ifstream in(csv);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\n1,0B,user_error,GEMM gemm_1024x1024x1024 cannot run: a WG needs 49152 B of LDS"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n2,128KiB,ok,"), std::string::npos) << text;
}

// Inputs whose product would exhaust the host's memory are refused before anything is
// built (issues 15, 21: C08, C09, C15), naming the costliest key and the estimate; a
// budget can be set with run.host_memory.
// The 1-based line of the first line of a shipped file that starts with `prefix`
// (so an error's expected file:line follows edits of the file).
std::size_t line_of(const std::string& file, const std::string& prefix) {
  std::ifstream in(std::string(T3SIM_SOURCE_DIR) + "/" + file);
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n)
    if (line.rfind(prefix, 0) == 0) return n;
  ADD_FAILURE() << prefix << " not in " << file;
  return 0;
}

TEST_F(Cli, RunsTooLargeForTheHostAreRefusedBeforeTheyAreBuilt) {
  struct Case {
    std::string args, expected;
  };
  const Case cases[] = {
      {"configs/systems/table1.yaml configs/workloads/collectives/ring_rs.yaml --set system.num_gpus=1024",
       "system.num_gpus: 1024 GPUs: a node of full GPU models has at most 64"},
      {"configs/systems/table1.yaml configs/workloads/collectives/ring_rs.yaml --set workload.functional=values "
       "--set workload.size=1TiB",
       "--set workload.size=1TiB: workload.size: the run would need about 6.00 TiB of host memory, 6.00 TiB of it for "
       "the values checked on 8 GPUs"},
      {"configs/systems/ring16.yaml configs/workloads/ring_rs.yaml --set workload.size=2GiB --set "
       "workload.functional=values --set run.host_memory=16GiB",
       "workload.size: the run would need about 24.1 GiB of host memory, 24.0 GiB of it for the values checked on 16 "
       "GPUs; 16.0 GiB is available (run.host_memory)"},
      {"configs/systems/table1.yaml configs/workloads/gemm/small.yaml --set system.memory.l2.size=128GiB --set "
       "run.host_memory=16GiB",
       "system.memory.l2.size: the run would need about 32.0 GiB of host memory, 32.0 GiB of it for L2 tags of 1 GPU"},
      // The costliest term named at its file and line: on h200.yaml the requests its
      // L2's 16,384 transactions let be in flight.
      {"configs/systems/h200.yaml configs/workloads/gemm/tnlg_fc2_tp8.yaml --set run.host_memory=5MiB",
       fmt::format("configs/systems/h200.yaml:{}: system.memory.l2.max_transactions: the run would need about 81.7 "
                   "MiB of host memory, 24.0 MiB of it for requests in flight and their events of 1 GPU",
                   line_of("configs/systems/h200.yaml", "    max_transactions: 16384"))},
      // Below what the program needs before it builds anything.
      {"configs/systems/table1.yaml configs/workloads/gemm/small.yaml --set run.host_memory=5MiB",
       "run.host_memory: the run would need about 28.2 MiB of host memory, 8.00 MiB of it for the program itself"},
      {"configs/systems/table1.yaml configs/workloads/gemm/small.yaml --config t3 --set "
       "system.memory.tracker.sets=1048576 --set system.memory.tracker.ways=1024 --set run.host_memory=64GiB",
       "system.memory.tracker.sets: the run would need about 384 GiB of host memory, 384 GiB of it for tracker "
       "entries of 8 GPUs"},
      {"configs/systems/table1.yaml configs/workloads/memory/contention.yaml --set "
       "system.memory.mc.read_queue_size=65536 --set run.host_memory=64MiB",
       "system.memory.mc.read_queue_size: the run would need about"},
      // The op kinds (check_overlap_host_memory): a persistent kernel's tiles, a
      // functional collective's values.
      {"configs/systems/mi300x.yaml configs/workloads/ag_gemm/seed001.yaml --set run.host_memory=1GiB --set "
       "workload.gemm.m=4194304",
       "workload.gemm.m: the run would need about 2.61 GiB of host memory, 1.50 GiB of it for the consumer GEMM's "
       "tiles"},
      {"configs/systems/mi210x4.yaml configs/workloads/gemm_a2a/moe.yaml --set run.host_memory=256MiB --set "
       "workload.gemm.m=1048576 --set workload.collective.functional=values --set "
       "workload.collective.values_limit=64GiB",
       "workload.collective.values_limit: the run would need about 33.1 GiB of host memory, 32.0 GiB of it for the "
       "values checked on 4 GPUs"},
      {"configs/systems/mi210x4.yaml configs/workloads/gemv_ar/decode.yaml --set run.host_memory=64MiB --set "
       "workload.gemv.m=8388608",
       "workload.gemv.m: the run would need about 4.09 GiB of host memory, 4.00 GiB of it for the fused kernel's "
       "tiles"},
  };
  for (const auto& c : cases) {
    const auto r = t3sim("validate " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.args << "\n" << r.err;
  }
  // A run that fits reports its peak memory.
  const auto ok = t3sim(fmt::format("run configs/systems/table1.yaml configs/workloads/gemm/small.yaml -o '{}'",
                                    (dir_ / "o").string()));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto info = nlohmann::json::parse(std::ifstream(dir_ / "o" / "run_info.json"));
  EXPECT_GT(info["peak_rss_bytes"].get<std::uint64_t>(), 1u << 20);
}

// The host-memory estimate against what runs take (issue 45: the c3 run on h200.yaml was
// estimated at 23.4 MiB and peaked at 71-85 MB): within 2x of the peak RSS the run
// reports (run_info.json), for a GEMM on the Table 1 GPU and for c3 on the H200 node
// (homogeneous mode). Release builds only: a sanitizer's shadow memory multiplies the RSS.
TEST_F(Cli, HostMemoryEstimateIsWithinTwiceThePeak) {
  const std::string runs[] = {"configs/systems/table1.yaml configs/workloads/gemm/small.yaml",
                              "configs/systems/h200.yaml configs/workloads/c3/h200_sublayer.yaml --mode homogeneous"};
  for (const std::string& args : runs) {
    SCOPED_TRACE(args);
    const auto refused = t3sim("validate " + args + " --set run.host_memory=1MiB");
    ASSERT_EQ(refused.exit_code, 2) << refused.err;
    const std::size_t about = refused.err.find("would need about ");
    ASSERT_NE(about, std::string::npos) << refused.err;
    std::istringstream in(refused.err.substr(about + 17));
    double amount = 0;
    std::string unit;
    in >> amount >> unit;
    const double estimate = amount * (unit == "GiB" ? 1024.0 * 1024 * 1024 : unit == "MiB" ? 1024.0 * 1024 : 0);
    ASSERT_GT(estimate, 0) << refused.err;
    const auto out = dir_ / "estimate";
    std::filesystem::remove_all(out);
    const auto ok = t3sim(fmt::format("run {} --no-timeline -q -o '{}'", args, out.string()));
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    const auto info = nlohmann::json::parse(std::ifstream(out / "run_info.json"));
    const double peak = static_cast<double>(info["peak_rss_bytes"].get<std::uint64_t>());
    EXPECT_GT(peak, estimate / 2) << "estimate " << estimate / 1048576 << " MiB, peak " << peak / 1048576 << " MiB";
    EXPECT_LT(peak, estimate * 2) << "estimate " << estimate / 1048576 << " MiB, peak " << peak / 1048576 << " MiB";
  }
}

// validate's cost estimate (issue 45 item 3) against the events the run then takes,
// for kinds of every cost profile: a GEMM's tile loads, a CU collective's lines, copy
// engines' chunks, a GEMM beside a collective with its isolated runs, synthetic
// traffic, the README's first command (an idealized memory). Measured when written:
// 0.82-1.27x. Outside this set it is an order of
// magnitude: gemv_ar and embedding_a2a come out 0.35x and 0.56x (their small loads cost
// more per byte), H200 copy engines 10x over (configs/systems/h200.yaml's memory
// takes fewer events per byte than table1's).
TEST_F(Cli, ValidateEstimatesARunsEventsWithinThreeTimes) {
  const std::string runs[] = {
      "configs/systems/table1.yaml configs/workloads/gemm/small.yaml",
      "configs/systems/table1.yaml configs/workloads/collectives/ring_rs.yaml --set workload.size=4MB",
      "configs/systems/table1.yaml configs/workloads/collectives/dma_all_gather.yaml --set workload.size=4MB",
      "configs/systems/table1.yaml configs/workloads/c3/small.yaml --set workload.gemm.m=256 --set "
      "workload.collective.size=4MiB",
      "configs/systems/table1.yaml configs/workloads/memory/stream_read.yaml",
      "configs/systems/ring8.yaml configs/workloads/ring_rs.yaml",  // the README's first command
  };
  for (const std::string& args : runs) {
    SCOPED_TRACE(args);
    const auto validated = t3sim("validate " + args);
    ASSERT_EQ(validated.exit_code, 0) << validated.err;
    const std::size_t cost = validated.out.find("cost: about ");
    ASSERT_NE(cost, std::string::npos) << validated.out;
    const double estimate = std::stod(validated.out.substr(cost + 12)) * 1e6;
    EXPECT_NE(validated.out.find("of CPU time"), std::string::npos) << validated.out;
    const auto ran = t3sim(fmt::format("run {} --no-timeline -q -o '{}'", args, (dir_ / "cost").string()));
    ASSERT_EQ(ran.exit_code, 0) << ran.err;
    const std::size_t line = ran.out.find("simulation ");
    ASSERT_NE(line, std::string::npos) << ran.out;
    const double events = std::stod(ran.out.substr(line + 11));
    EXPECT_GT(estimate, events / 3) << "estimate " << estimate << ", events " << events;
    EXPECT_LT(estimate, events * 3) << "estimate " << estimate << ", events " << events;
  }
}

// Above an hour of CPU time, validate says so; a kind that cannot estimate says that.
TEST_F(Cli, ValidateWarnsAboveAnHourOfCpuTime) {
  const auto big = t3sim("validate configs/systems/table1.yaml configs/workloads/collectives/ring_rs.yaml --set "
                         "workload.size=100GB --set workload.functional=off");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(big.out.find("warning: above an hour of CPU time"), std::string::npos) << big.out;
  const auto small = t3sim("validate configs/systems/table1.yaml configs/workloads/gemm/small.yaml");
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(small.out.find("warning"), std::string::npos) << small.out;
}

// A budget (run.host_memory) above what the host has free is taken, but validate warns
// when the estimate does not fit what is free: the README's first command (about 1.13
// GiB estimated) under a 900 MB address-space limit (`ulimit -v`, which the free-memory
// reading honours). Not under AddressSanitizer, whose shadow memory needs more address
// space than any such limit leaves.
TEST_F(Cli, ValidateWarnsWhenTheEstimateIsAboveTheFreeMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ulimit -v and AddressSanitizer do not mix";
#endif
  const fs::path out = dir_ / "stdout.txt";
  auto validate = [&](const char* limit) {
    const std::string cmd = fmt::format(
        "ulimit -v {} && cd '{}' && '{}' validate configs/systems/ring8.yaml configs/workloads/ring_rs.yaml --set "
        "run.host_memory=4GiB >'{}' 2>/dev/null",
        limit, T3SIM_SOURCE_DIR, T3SIM_BINARY, out.string());
    EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0) << cmd;
    return slurp(out);
  };
  EXPECT_NE(validate("900000").find("warning: the estimate is above the"), std::string::npos);
  EXPECT_EQ(validate("unlimited").find("warning: the estimate is above the"), std::string::npos);
}

// A run killed at any moment (SIGKILL: no handler runs) leaves its output directory
// either without results.json or with a complete one whose stats.csv and run_info.json
// are its own (issue 15): the previous run's, or the new one's, never a mix. The kill
// moments sweep the whole run, set-up to the last file written.
TEST_F(Cli, AKilledRunNeverLeavesAResultsJsonBesidePartialFiles) {
  const fs::path out = dir_ / "o";
  auto run = [&](const std::string& m) {
    return fmt::format("run configs/systems/table1.yaml configs/workloads/gemm/small.yaml --set workload.m={} -o '{}'",
                       m, out.string());
  };
  ASSERT_EQ(t3sim(run("1024")).exit_code, 0);  // the previous, complete run
  auto events_of = [](const fs::path& file, bool metadata) {
    const auto j = nlohmann::json::parse(std::ifstream(file));
    return (metadata ? j["metadata"]["events"] : j["events"]).get<std::uint64_t>();
  };
  auto stats_rows = [](const fs::path& file) {
    std::ifstream in(file);
    return static_cast<std::size_t>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  int with_results = 0, without = 0;
  for (int delay_ms = 0; delay_ms <= 240; delay_ms += 12) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (::chdir(T3SIM_SOURCE_DIR) != 0) ::_exit(127);
      (void)!::freopen("/dev/null", "w", stdout);
      (void)!::freopen("/dev/null", "w", stderr);
      ::execl(T3SIM_BINARY, T3SIM_BINARY, "run", "configs/systems/table1.yaml", "configs/workloads/gemm/small.yaml",
              "--set", "workload.m=4096", "-o", out.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!fs::exists(out / "results.json")) {
      ++without;
      continue;
    }
    ++with_results;
    // Complete and consistent: the results' events are run_info's, and stats.csv has a
    // row per statistic of the results' stats section (plus its header).
    const auto results = nlohmann::json::parse(std::ifstream(out / "results.json"));
    EXPECT_EQ(results["metadata"]["events"].get<std::uint64_t>(), events_of(out / "run_info.json", false))
        << "killed after " << delay_ms << " ms";
    EXPECT_GE(stats_rows(out / "stats.csv"), results["stats"].size() + 1) << "killed after " << delay_ms << " ms";
    EXPECT_EQ(events_of(out / "results.json", true), results["metadata"]["events"].get<std::uint64_t>());
  }
  EXPECT_GT(with_results + without, 0);
}

TEST_F(Cli, ValidateCatchesAWgThatFitsNoCu) {
  const auto r = t3sim("validate configs/systems/table1.yaml configs/workloads/gemm/small.yaml --set "
                       "system.gpu.cu.lds_size=0B");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("(system.gpu.cu.lds_size)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace t3sim
