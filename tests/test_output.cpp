#include "sim/output.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/error.h"
#include "sim/version.h"

namespace t3sim {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class OutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("t3sim_test_output_" + std::string(info->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static std::vector<std::string> files_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    return names;
  }

  // A small run's worth of inputs.
  struct Run {
    RunMetadata metadata;
    json results = {{"algorithm_bandwidth_gbps", 123.5}, {"bytes", 1048576}};
    StatsRegistry stats;
    Timeline timeline;
    Tick end = Tick::us(3);

    explicit Run(bool with_timeline, double wall_seconds = 1.5) {
      metadata.command_line = "t3sim run sys.yaml ar.yaml -o out";
      metadata.configuration = "ring";
      metadata.seed = 7;
      metadata.resolved_config = {{"system", {{"gpus", 8}}}};
      metadata.wall_seconds = wall_seconds;
      metadata.events = 3000;
      metadata.simulated_time = end;
      stats.counter("gpu0.link.bytes", "B", "bytes sent, all kinds") += 4096;
      stats.time_weighted("gpu0.link.queue", "msgs", "queue occupancy").set(Tick::us(1), 2);
      if (with_timeline) {
        timeline.enable();
        timeline.slice(timeline.track("gpu0.link"), "send", Tick::us(1), Tick::us(2));
      }
    }
    void write(const fs::path& dir) const {
      write_run_outputs(dir, metadata, results, stats, timeline, end);
    }
  };

  fs::path dir_;
};

TEST_F(OutputTest, WritesAllFiles) {
  const Run run(/*with_timeline=*/true);
  run.write(dir_ / "nested" / "out");
  const fs::path out = dir_ / "nested" / "out";
  EXPECT_THAT(files_in(out),
              UnorderedElementsAre("results.json", "stats.csv", "timeline.json", "run_info.json"));

  const json results = json::parse(read(out / "results.json"));
  const json& meta = results["metadata"];
  EXPECT_EQ(meta["version"], kVersion);
  EXPECT_EQ(meta["git_revision"], kGitRevision);
  EXPECT_EQ(meta["command_line"], "t3sim run sys.yaml ar.yaml -o out");
  EXPECT_EQ(meta["configuration"], "ring");
  EXPECT_EQ(meta["seed"], 7);
  EXPECT_EQ(meta["resolved_config"]["system"]["gpus"], 8);
  EXPECT_EQ(meta["events"], 3000);
  EXPECT_EQ(meta["simulated_time_ps"], 3'000'000);
  EXPECT_FALSE(meta.contains("wall_seconds"));
  EXPECT_EQ(results["results"]["algorithm_bandwidth_gbps"], 123.5);
  EXPECT_EQ(results["stats"]["gpu0.link.bytes"]["value"], 4096);
  EXPECT_DOUBLE_EQ(results["stats"]["gpu0.link.queue"]["mean"].get<double>(), 2.0 * 2 / 3);

  const json info = json::parse(read(out / "run_info.json"));
  EXPECT_EQ(info["wall_seconds"], 1.5);
  EXPECT_EQ(info["events_per_second"], 2000.0);
  EXPECT_EQ(info["partitions"], 1);  // how the run was spread over host threads:
  EXPECT_EQ(info["threads"], 1);     // here only, as results do not depend on it
  EXPECT_TRUE(info["host"].is_string());
  EXPECT_EQ(info["peak_rss_bytes"], 0);  // as given (the CLI measures it)

  const std::string csv = read(out / "stats.csv");
  EXPECT_TRUE(csv.starts_with("name,kind,unit,field,value,description\n"));
  EXPECT_THAT(csv, HasSubstr("gpu0.link.bytes,counter,B,value,4096,\"bytes sent, all kinds\"\n"));

  const json timeline = json::parse(read(out / "timeline.json"));
  EXPECT_TRUE(timeline["traceEvents"].is_array());
}

TEST_F(OutputTest, ResultsJsonIsByteIdenticalAcrossIdenticalRuns) {
  // Only the wall-clock time differs, and it is kept out of results.json.
  Run(true, 1.0).write(dir_ / "a");
  Run(true, 99.0).write(dir_ / "b");
  EXPECT_EQ(read(dir_ / "a" / "results.json"), read(dir_ / "b" / "results.json"));
  EXPECT_EQ(read(dir_ / "a" / "stats.csv"), read(dir_ / "b" / "stats.csv"));
  EXPECT_EQ(read(dir_ / "a" / "timeline.json"), read(dir_ / "b" / "timeline.json"));
  EXPECT_NE(read(dir_ / "a" / "run_info.json"), read(dir_ / "b" / "run_info.json"));
}

TEST_F(OutputTest, NoTimelineFileWhenDisabledAndStaleOneRemoved) {
  Run(true).write(dir_);
  ASSERT_TRUE(fs::exists(dir_ / "timeline.json"));
  Run(false).write(dir_);
  EXPECT_THAT(files_in(dir_), UnorderedElementsAre("results.json", "stats.csv", "run_info.json"));
}

TEST_F(OutputTest, UncreatableDirectoryIsUserError) {
  fs::create_directories(dir_);
  write_file_atomically(dir_ / "a_file", "x");
  const Run run(false);
  try {
    run.write(dir_ / "a_file" / "out");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a_file"));
  }
}

TEST_F(OutputTest, AtomicWriteReplacesContentAndLeavesNoTemporaryFiles) {
  fs::create_directories(dir_);
  write_file_atomically(dir_ / "f.txt", "first");
  write_file_atomically(dir_ / "f.txt", std::string("second\n"));
  EXPECT_EQ(read(dir_ / "f.txt"), "second\n");
  EXPECT_THAT(files_in(dir_), UnorderedElementsAre("f.txt"));
}

TEST_F(OutputTest, FailedStreamingWriteKeepsOldFileAndCleansUp) {
  fs::create_directories(dir_);
  write_file_atomically(dir_ / "f.txt", "old");
  EXPECT_THROW(write_file_atomically(dir_ / "f.txt",
                                     [](std::ostream& out) {
                                       out << "partial";
                                       throw std::runtime_error("generator failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read(dir_ / "f.txt"), "old");
  EXPECT_THAT(files_in(dir_), UnorderedElementsAre("f.txt"));
}

TEST_F(OutputTest, WriteIntoMissingDirectoryIsUserError) {
  EXPECT_THROW(write_file_atomically(dir_ / "missing" / "f.txt", "x"), UserError);
}

}  // namespace
}  // namespace t3sim
