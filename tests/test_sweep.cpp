// Sweeps and merges, driven by a fake runner: no simulation runs, so these are fast
// and deterministic.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/sweep.h"
#include "sim/config.h"
#include "sim/error.h"

namespace t3sim {
namespace {

namespace fs = std::filesystem;

// Points that fail under FakeRunner: (num_gpus=4, size=1MiB) is a user error and
// (num_gpus=8, size=16MiB) a simulation error with a multi-line report.
bool has(const RunRequest& request, const std::string& override_text) {
  return std::find(request.overrides.begin(), request.overrides.end(), override_text) !=
         request.overrides.end();
}

RunOutcome healthy_outcome(const RunRequest& request) {
  std::string joined;
  for (const std::string& o : request.overrides) joined += o + ";";
  RunOutcome outcome;
  outcome.metrics = {{"time_ps", std::to_string(std::hash<std::string>{}(joined) % 100000)},
                     {"note", "a,\"quoted\" " + request.configuration},
                     {"overrides", joined}};
  return outcome;
}

class FakeRunner {
 public:
  explicit FakeRunner(bool with_failures = true) : with_failures_(with_failures) {}
  RunOutcome operator()(const RunRequest& request) {
    ++calls_;
    if (with_failures_ && has(request, "system.num_gpus=4") && has(request, "workload.size=1MiB")) {
      throw UserError("wl.yaml:3: workload.size: too small for 4 GPUs");
    }
    if (with_failures_ && has(request, "system.num_gpus=8") && has(request, "workload.size=16MiB")) {
      throw SimulationError("deadlock at 1.5us\n  gpu3: waiting for chunk 7");
    }
    return healthy_outcome(request);
  }
  SweepRunner runner() {
    return [this](const RunRequest& request) { return (*this)(request); };
  }
  int calls() const { return calls_; }

 private:
  bool with_failures_;
  std::atomic<int> calls_{0};
};

SweepSpec make_spec() {
  SweepSpec spec;
  spec.system = "sys.yaml";
  spec.workload = "wl.yaml";
  spec.parameters = {{"system.num_gpus", {"2", "4", "8"}, {}},
                     {"workload.size", {"1MiB", "16MiB"}, {}}};
  return spec;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Rows as comparable strings, sorted: the content of a results file regardless of order.
std::vector<std::string> sorted_rows(const fs::path& path) {
  const ResultsTable table = read_results(path);
  std::vector<std::string> rows;
  for (const ResultsTable::Row& row : table.rows) {
    std::vector<std::string> cells{std::to_string(row.index)};
    cells.insert(cells.end(), row.values.begin(), row.values.end());
    cells.emplace_back(status_name(row.status));
    cells.push_back(row.error);
    for (std::size_t m = 0; m < row.metrics.size(); ++m) {
      cells.push_back(table.metric_names[m] + "=" + row.metrics[m]);
    }
    rows.push_back(csv_line(cells));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::vector<std::size_t> row_indices(const fs::path& path) {
  std::vector<std::size_t> indices;
  for (const ResultsTable::Row& row : read_results(path).rows) indices.push_back(row.index);
  std::sort(indices.begin(), indices.end());
  return indices;
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("t3sim_test_sweep_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SweepOptions options(const std::string& csv_name, unsigned jobs = 1) const {
    SweepOptions o;
    o.output = dir_ / csv_name;
    o.jobs = jobs;
    return o;
  }

  fs::path dir_;
};

// --- Points and shards ---------------------------------------------------------------

TEST(SweepPoints, CartesianProductFirstParameterSlowest) {
  const SweepSpec spec = make_spec();
  const std::vector<SweepPoint> points = enumerate_points(spec);
  ASSERT_EQ(points.size(), 6u);
  const std::vector<std::string> expected = {
      "system.num_gpus=2;workload.size=1MiB", "system.num_gpus=2;workload.size=16MiB",
      "system.num_gpus=4;workload.size=1MiB", "system.num_gpus=4;workload.size=16MiB",
      "system.num_gpus=8;workload.size=1MiB", "system.num_gpus=8;workload.size=16MiB"};
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i].index, i);
    EXPECT_EQ(point_key(spec, points[i]), expected[i]);
  }
}

TEST(SweepPoints, NoParametersIsOnePoint) {
  SweepSpec spec;
  const std::vector<SweepPoint> points = enumerate_points(spec);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(point_key(spec, points[0]), "");
}

TEST(SweepPoints, RunRequestAppliesFixedThenPointValues) {
  SweepSpec spec = make_spec();
  spec.parameters.push_back({"run.config", {"sequential", "fused"}, {}});
  spec.fixed = {"system.link.latency=500ns", "run.seed=7"};
  const std::vector<SweepPoint> points = enumerate_points(spec);
  const RunRequest request = make_run_request(spec, points[3]);  // 2 GPUs, 16MiB, fused
  EXPECT_EQ(request.system, fs::path("sys.yaml"));
  EXPECT_EQ(request.workload, fs::path("wl.yaml"));
  EXPECT_EQ(request.configuration, "fused");
  EXPECT_EQ(request.seed, 7u);
  EXPECT_FALSE(request.output_dir.has_value());
  EXPECT_EQ(request.overrides, (std::vector<std::string>{"system.link.latency=500ns",
                                                          "system.num_gpus=2", "workload.size=16MiB"}));
}

TEST(SweepPoints, PointsRunOnOneThreadUnlessTheSpecSetsRunThreads) {
  SweepSpec spec = make_spec();
  const std::vector<SweepPoint> points = enumerate_points(spec);
  EXPECT_EQ(make_run_request(spec, points[0]).threads, 1u);
  spec.fixed = {"run.threads=2"};
  const RunRequest request = make_run_request(spec, points[0]);
  EXPECT_EQ(request.threads, 0u);  // 0: the run.threads key decides
  EXPECT_EQ(request.overrides.front(), "run.threads=2");
}

TEST(SweepPoints, CommandLineSetAddsReplacesOrPinsAxes) {
  SweepSpec spec = make_spec();
  apply_command_line_set(spec, "workload.size=[4KiB, 8KiB, 12KiB]");  // replaces the axis
  apply_command_line_set(spec, "run.seed=[1,2]");                    // a new axis
  apply_command_line_set(spec, "system.num_gpus=16");                // pins: axis removed
  apply_command_line_set(spec, "system.link.latency=1us");           // fixed
  ASSERT_EQ(spec.parameters.size(), 2u);
  EXPECT_EQ(spec.parameters[0].key, "workload.size");
  EXPECT_EQ(spec.parameters[0].values, (std::vector<std::string>{"4KiB", "8KiB", "12KiB"}));
  EXPECT_EQ(spec.parameters[1].key, "run.seed");
  EXPECT_EQ(spec.fixed, (std::vector<std::string>{"system.num_gpus=16", "system.link.latency=1us"}));
  EXPECT_EQ(enumerate_points(spec).size(), 6u);
}

TEST(SweepPoints, CommandLineSetErrors) {
  SweepSpec spec = make_spec();
  EXPECT_THROW(apply_command_line_set(spec, "gpu.count=[1,2]"), UserError);
  EXPECT_THROW(apply_command_line_set(spec, "no_equals_sign"), UserError);
  EXPECT_THROW(apply_command_line_set(spec, "system.num_gpus=[]"), UserError);
  EXPECT_THROW(apply_command_line_set(spec, "system.num_gpus=[2,2]"), UserError);
  EXPECT_THROW(apply_command_line_set(spec, "run.seed=abc"), UserError);
  try {
    apply_command_line_set(spec, "run.confg=fused");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'run.config'"), std::string::npos) << e.what();
  }
  try {
    apply_command_line_set(spec, "run.sampling_windw=8");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'run.sampling_window'"), std::string::npos) << e.what();
  }
}

// Sampling (run.sampling and its settings) may be fixed or an axis: exact against sampled.
TEST(SweepPoints, SamplingIsARunKeyOfThePoint) {
  SweepSpec spec = make_spec();
  apply_command_line_set(spec, "run.sampling=[off, on]");
  apply_command_line_set(spec, "run.sampling_tolerance=0.05");
  const auto points = enumerate_points(spec);
  const RunRequest request = make_run_request(spec, points.back());
  EXPECT_NE(std::find(request.overrides.begin(), request.overrides.end(), "run.sampling=on"), request.overrides.end());
  EXPECT_NE(std::find(request.overrides.begin(), request.overrides.end(), "run.sampling_tolerance=0.05"),
            request.overrides.end());
}

TEST(SweepShards, ParseShard) {
  const Shard shard = parse_shard("1/4");
  EXPECT_EQ(shard.index, 1u);
  EXPECT_EQ(shard.count, 4u);
  for (const char* bad : {"3/3", "4/3", "1", "1/", "/2", "a/b", "-1/2", "1/0", "", "1/2/3"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("--shard: expected i/n with 0 <= i < n, got '") + bad + "'");
    }
  }
}

TEST(SweepShards, EveryPointInExactlyOneShard) {
  SweepSpec spec = make_spec();
  spec.parameters.push_back({"run.seed", {"1", "2", "3", "4", "5"}, {}});
  const std::vector<SweepPoint> points = enumerate_points(spec);
  for (std::size_t n = 1; n <= 8; ++n) {
    std::vector<int> owners(points.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      for (const SweepPoint& point : points) owners[point.index] += Shard{i, n}.contains(point);
    }
    EXPECT_TRUE(std::all_of(owners.begin(), owners.end(), [](int o) { return o == 1; })) << n;
  }
}

// --- CSV -------------------------------------------------------------------------------

TEST(SweepCsv, QuotesAndParsesBack) {
  const std::vector<std::string> cells = {"plain", "a,b", "say \"hi\"", "two\nlines", ""};
  const std::string line = csv_line(cells);
  EXPECT_EQ(line, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\n");
  const CsvText parsed = parse_csv(line + "x,y\r\n");
  ASSERT_EQ(parsed.records.size(), 2u);
  EXPECT_EQ(parsed.records[0], cells);
  EXPECT_EQ(parsed.records[1], (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(parsed.lines, (std::vector<std::size_t>{1, 3}));
  EXPECT_EQ(parsed.complete_bytes, line.size() + 5);
}

TEST(SweepCsv, TornLastRecordIsLeftOut) {
  const std::string complete = "a,b\n1,2\n";
  for (const std::string torn : {"3,", "3,\"open quote\n still open"}) {
    const CsvText parsed = parse_csv(complete + torn);
    EXPECT_EQ(parsed.records.size(), 2u);
    EXPECT_EQ(parsed.complete_bytes, complete.size());
  }
}

// --- Running ---------------------------------------------------------------------------

TEST_F(SweepTest, WritesOneRowPerPointWithStatusAndMetrics) {
  FakeRunner fake;
  const SweepOptions o = options("out.csv");
  const SweepSummary summary = run_sweep(make_spec(), o, fake.runner());
  EXPECT_EQ(summary.total, 6u);
  EXPECT_EQ(summary.ok, 4u);
  EXPECT_EQ(summary.failed, 2u);
  EXPECT_EQ(summary.skipped, 0u);
  EXPECT_EQ(summary.runs, 6u);
  EXPECT_EQ(fake.calls(), 6);
  EXPECT_EQ(summary.line(o.output),
            "6 points: 4 ok, 2 failed, 0 skipped (already done); results in " + o.output.string());

  const std::string text = read_text(o.output);
  EXPECT_TRUE(text.starts_with(
      "point,system.num_gpus,workload.size,status,error,time_ps,note,overrides\n"))
      << text;
  const ResultsTable table = read_results(o.output);
  ASSERT_EQ(table.rows.size(), 6u);
  EXPECT_EQ(table.rows[2].status, PointStatus::kUserError);
  EXPECT_EQ(table.rows[2].error, "wl.yaml:3: workload.size: too small for 4 GPUs");
  EXPECT_EQ(table.rows[2].metrics, (std::vector<std::string>{"", "", ""}));
  EXPECT_EQ(table.rows[5].status, PointStatus::kSimError);
  EXPECT_EQ(table.rows[5].error, "deadlock at 1.5us\n  gpu3: waiting for chunk 7");
  EXPECT_EQ(table.rows[0].status, PointStatus::kOk);
  EXPECT_EQ(table.rows[0].metrics[1], "a,\"quoted\" ");
  EXPECT_EQ(table.rows[0].metrics[2], "system.num_gpus=2;workload.size=1MiB;");
}

TEST_F(SweepTest, FailedFirstPointGetsMetricColumnsLater) {
  SweepSpec spec = make_spec();
  spec.parameters[0].values = {"4", "2"};  // the first point, (4, 1MiB), fails
  const SweepOptions o = options("out.csv");
  FakeRunner fake;
  run_sweep(spec, o, fake.runner());
  const ResultsTable table = read_results(o.output);
  EXPECT_EQ(table.metric_names, (std::vector<std::string>{"time_ps", "note", "overrides"}));
  ASSERT_EQ(table.rows.size(), 4u);
  EXPECT_EQ(table.rows[0].status, PointStatus::kUserError);
  EXPECT_EQ(table.rows[0].metrics, (std::vector<std::string>{"", "", ""}));
}

TEST_F(SweepTest, AllFailedHasNoMetricColumns) {
  const SweepOptions o = options("out.csv");
  run_sweep(make_spec(), o, [](const RunRequest&) -> RunOutcome { throw SimulationError("boom"); });
  EXPECT_TRUE(read_text(o.output).starts_with("point,system.num_gpus,workload.size,status,error\n"));
  EXPECT_EQ(read_results(o.output).rows.size(), 6u);
}

TEST_F(SweepTest, MetricColumnsAreUnitedAcrossWorkloadKinds) {
  SweepSpec spec;
  spec.parameters = {{"workload.kind", {"gemm", "allreduce"}, {}}};
  const SweepOptions o = options("out.csv");
  run_sweep(spec, o, [](const RunRequest& request) {
    RunOutcome outcome;
    outcome.metrics = {{"time_ps", "10"}};
    if (has(request, "workload.kind=allreduce")) outcome.metrics.emplace_back("bus_bw", "5");
    return outcome;
  });
  const ResultsTable table = read_results(o.output);
  EXPECT_EQ(table.metric_names, (std::vector<std::string>{"time_ps", "bus_bw"}));
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0].metrics, (std::vector<std::string>{"10", ""}));
  EXPECT_EQ(table.rows[1].metrics, (std::vector<std::string>{"10", "5"}));
}

TEST_F(SweepTest, ResumeAfterCrashRunsOnlyUnfinishedPoints) {
  const SweepOptions o = options("out.csv");
  std::atomic<int> calls{0};
  // Not a point's failure (every std::exception of a point is a failed row, below): the
  // process dies here, as if killed.
  struct ProcessDies {};
  const SweepRunner crashing = [&calls](const RunRequest& request) {
    if (++calls == 3) throw ProcessDies{};
    return healthy_outcome(request);
  };
  EXPECT_THROW(run_sweep(make_spec(), o, crashing), ProcessDies);
  EXPECT_EQ(read_results(o.output).rows.size(), 2u);  // the two finished points survive

  FakeRunner fake(false);
  const SweepSummary summary = run_sweep(make_spec(), o, fake.runner());
  EXPECT_EQ(fake.calls(), 4);
  EXPECT_EQ(summary.skipped, 2u);
  EXPECT_EQ(summary.ok, 6u);
  EXPECT_EQ(row_indices(o.output), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));

  // A third run has nothing left to do.
  FakeRunner idle(false);
  EXPECT_EQ(run_sweep(make_spec(), o, idle.runner()).skipped, 6u);
  EXPECT_EQ(idle.calls(), 0);
}

// A point whose run throws anything (issue 21: an internal error, out of host memory,
// a bug) is a failed row; the points after it still run.
TEST_F(SweepTest, APointThatThrowsIsAFailedRowAndTheSweepGoesOn) {
  const SweepOptions o = options("out.csv");
  std::atomic<int> calls{0};
  const SweepRunner failing = [&calls](const RunRequest& request) -> RunOutcome {
    const int call = ++calls;
    if (call == 2) throw std::bad_alloc();
    if (call == 4) throw std::out_of_range("vector::at");
    return healthy_outcome(request);
  };
  const SweepSummary summary = run_sweep(make_spec(), o, failing);
  EXPECT_EQ(calls, 6);
  EXPECT_EQ(summary.ok, 4u);
  EXPECT_EQ(summary.failed, 2u);
  const ResultsTable table = read_results(o.output);
  ASSERT_EQ(table.rows.size(), 6u);
  std::vector<std::string> errors;
  for (const auto& row : table.rows)
    if (row.status != PointStatus::kOk) {
      EXPECT_EQ(row.status, PointStatus::kSimError);
      errors.push_back(row.error);
    }
  EXPECT_EQ(errors, (std::vector<std::string>{"out of host memory while setting up the run",
                                              "internal error: vector::at"}));
}

TEST_F(SweepTest, TornLastLineIsDroppedAndRerun) {
  const SweepOptions o = options("out.csv");
  FakeRunner first(false);
  run_sweep(make_spec(), o, first.runner());
  const std::string full = read_text(o.output);
  // Cut the last row in half, as a crash in the middle of its write would.
  const std::size_t last_row = full.rfind('\n', full.size() - 2) + 1;
  write_text(o.output, full.substr(0, last_row + 4));

  FakeRunner second(false);
  const SweepSummary summary = run_sweep(make_spec(), o, second.runner());
  EXPECT_EQ(second.calls(), 1);
  EXPECT_EQ(summary.skipped, 5u);
  EXPECT_EQ(read_text(o.output), full);
}

TEST_F(SweepTest, FailedRowsCountAsDoneUnlessRetryErrors) {
  const SweepOptions o = options("out.csv");
  FakeRunner failing;
  run_sweep(make_spec(), o, failing.runner());

  FakeRunner rerun(false);
  const SweepSummary again = run_sweep(make_spec(), o, rerun.runner());
  EXPECT_EQ(rerun.calls(), 0);
  EXPECT_EQ(again.failed, 2u);

  SweepOptions retry = o;
  retry.retry_errors = true;
  FakeRunner fixed(false);
  const SweepSummary retried = run_sweep(make_spec(), retry, fixed.runner());
  EXPECT_EQ(fixed.calls(), 2);
  EXPECT_EQ(retried.ok, 6u);
  EXPECT_EQ(retried.failed, 0u);
  const ResultsTable table = read_results(o.output);
  EXPECT_EQ(row_indices(o.output), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(std::all_of(table.rows.begin(), table.rows.end(),
                          [](const ResultsTable::Row& row) { return row.status == PointStatus::kOk; }));
}

TEST_F(SweepTest, ExistingFileOfOtherParametersIsAnError) {
  const SweepOptions o = options("out.csv");
  FakeRunner fake;
  run_sweep(make_spec(), o, fake.runner());
  SweepSpec other = make_spec();
  other.parameters[1].key = "workload.chunks";
  try {
    run_sweep(other, o, fake.runner());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("system.num_gpus, workload.size"), std::string::npos) << message;
    EXPECT_NE(message.find("system.num_gpus, workload.chunks"), std::string::npos) << message;
  }
  write_text(dir_ / "garbage.csv", "name,value\nx,1\n");
  EXPECT_THROW(run_sweep(make_spec(), options("garbage.csv"), fake.runner()), UserError);
}

// -o naming a directory (issue 21, C10) is bad input, not an uncaught filesystem error.
TEST_F(SweepTest, OutputThatIsADirectoryIsAnError) {
  std::filesystem::create_directories(dir_ / "a_directory");
  FakeRunner fake;
  try {
    run_sweep(make_spec(), options("a_directory"), fake.runner());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a regular file: -o names the CSV file"), std::string::npos)
        << e.what();
  }
}

TEST_F(SweepTest, ShardRunsItsSliceAndMergeEqualsUnsharded) {
  FakeRunner fake;
  run_sweep(make_spec(), options("all.csv"), fake.runner());

  std::vector<fs::path> shards;
  for (std::size_t i = 0; i < 4; ++i) {
    SweepOptions o = options("shard" + std::to_string(i) + ".csv");
    o.shard = Shard{i, 4};
    const SweepSummary summary = run_sweep(make_spec(), o, fake.runner());
    EXPECT_EQ(summary.total, i < 2 ? 2u : 1u);
    for (std::size_t index : row_indices(o.output)) EXPECT_EQ(index % 4, i);
    shards.push_back(o.output);
  }
  // Shard 2 holds only point 2, a user error: its file has no metric columns.
  EXPECT_TRUE(read_results(shards[2]).metric_names.empty());

  const MergeSummary merged = merge_results(shards, dir_ / "merged.csv");
  EXPECT_EQ(merged.files, 4u);
  EXPECT_EQ(merged.rows, 6u);
  EXPECT_EQ(merged.duplicates, 0u);
  EXPECT_EQ(read_text(dir_ / "merged.csv"), read_text(dir_ / "all.csv"));
}

TEST_F(SweepTest, MergeDeduplicatesPreferringOkRows) {
  FakeRunner failing;
  run_sweep(make_spec(), options("failed.csv"), failing.runner());
  FakeRunner healthy(false);
  run_sweep(make_spec(), options("ok.csv"), healthy.runner());

  const MergeSummary merged =
      merge_results({dir_ / "failed.csv", dir_ / "ok.csv"}, dir_ / "merged.csv");
  EXPECT_EQ(merged.rows, 6u);
  EXPECT_EQ(merged.duplicates, 6u);
  EXPECT_EQ(read_text(dir_ / "merged.csv"), read_text(dir_ / "ok.csv"));
}

TEST_F(SweepTest, MergeRejectsFilesOfOtherParameters) {
  FakeRunner fake;
  run_sweep(make_spec(), options("a.csv"), fake.runner());
  SweepSpec other = make_spec();
  other.parameters.pop_back();
  run_sweep(other, options("b.csv"), fake.runner());
  try {
    merge_results({dir_ / "a.csv", dir_ / "b.csv"}, dir_ / "merged.csv");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "b.csv").string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "merged.csv"));
  EXPECT_THROW(merge_results({dir_ / "a.csv", dir_ / "missing.csv"}, dir_ / "merged.csv"), UserError);
}

TEST_F(SweepTest, ParallelRunGivesTheSameRows) {
  SweepSpec spec = make_spec();
  spec.parameters.push_back({"run.seed", {"1", "2", "3", "4"}, {}});
  FakeRunner serial;
  run_sweep(spec, options("serial.csv", 1), serial.runner());
  FakeRunner parallel;
  const SweepSummary summary = run_sweep(spec, options("parallel.csv", 3), parallel.runner());
  EXPECT_EQ(parallel.calls(), 24);
  EXPECT_EQ(summary.ok + summary.failed, 24u);
  EXPECT_EQ(sorted_rows(dir_ / "parallel.csv"), sorted_rows(dir_ / "serial.csv"));
}

TEST_F(SweepTest, FailFastStopsSchedulingAfterTheFirstFailure) {
  SweepOptions o = options("out.csv");
  o.fail_fast = true;
  FakeRunner fake;
  const SweepSummary summary = run_sweep(make_spec(), o, fake.runner());
  EXPECT_EQ(fake.calls(), 3);  // points 0, 1 ok; point 2 fails
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(summary.not_run, 3u);
  EXPECT_NE(summary.line(o.output).find("3 not run (--fail-fast)"), std::string::npos);
}

TEST_F(SweepTest, EmptyShardStillWritesAHeader) {
  SweepOptions o = options("out.csv");
  o.shard = Shard{6, 7};  // 6 points: index 6 does not exist
  FakeRunner fake;
  EXPECT_EQ(run_sweep(make_spec(), o, fake.runner()).total, 0u);
  EXPECT_EQ(read_text(o.output), "point,system.num_gpus,workload.size,status,error\n");
}

// --- Progress ------------------------------------------------------------------------------

TEST(SweepProgress, Format) {
  EXPECT_EQ(format_progress(12, 48, 3, 62, 190),
            "[=====>              ] 12/48 points, 3 failed, elapsed 1m02s, ETA 3m10s");
  EXPECT_EQ(format_progress(0, 4, 0, 0, -1),
            "[>                   ] 0/4 points, 0 failed, elapsed 0s, ETA --");
  EXPECT_EQ(format_progress(4, 4, 0, 5, 0),
            "[====================] 4/4 points, 0 failed, elapsed 5s, ETA 0s");
  EXPECT_EQ(format_duration(3725), "1h02m05s");
  EXPECT_EQ(format_duration(59.4), "59s");
}

TEST_F(SweepTest, ProgressLinesOnePerFinishedPoint) {
  SweepOptions o = options("out.csv");
  std::FILE* progress = std::tmpfile();
  ASSERT_NE(progress, nullptr);
  o.progress = progress;
  o.progress_style = ProgressStyle::kLines;
  FakeRunner fake;
  run_sweep(make_spec(), o, fake.runner());
  std::rewind(progress);
  std::string text;
  for (int c; (c = std::fgetc(progress)) != EOF;) text += static_cast<char>(c);
  std::fclose(progress);
  std::size_t bars = 0;
  for (std::size_t at = 0; (at = text.find(" points, ", at)) != std::string::npos; ++at) ++bars;
  EXPECT_EQ(bars, 6u) << text;
  EXPECT_NE(text.find("6/6 points, 2 failed"), std::string::npos) << text;
  EXPECT_NE(text.find("point 5 (system.num_gpus=8;workload.size=16MiB) failed: sim_error: "
                      "deadlock at 1.5us\n"),
            std::string::npos)
      << text;
}

// --- Sweep files ------------------------------------------------------------------------------

TEST_F(SweepTest, LoadsASweepFile) {
  fs::create_directories(dir_ / "sweeps");
  write_text(dir_ / "sweeps" / "s.yaml",
             "system: ../systems/ring8.yaml\n"
             "workload: /abs/wl.yaml\n"
             "parameters:\n"
             "  system.num_gpus: [2, 4, 8, 16]\n"
             "  workload.size: [1MiB, 16MiB]\n"
             "  system.topology.dims: [[2, 4], [4, 2]]\n"
             "  run.config: [sequential]\n"
             "set: [system.link.latency=500ns, run.seed=3]\n");
  const SweepSpec spec = load_sweep_spec(dir_ / "sweeps" / "s.yaml");
  EXPECT_EQ(spec.system.lexically_normal(), (dir_ / "systems" / "ring8.yaml").lexically_normal());
  EXPECT_EQ(spec.workload, fs::path("/abs/wl.yaml"));
  ASSERT_EQ(spec.parameters.size(), 4u);
  EXPECT_EQ(spec.parameters[0].key, "system.num_gpus");
  EXPECT_EQ(spec.parameters[0].values, (std::vector<std::string>{"2", "4", "8", "16"}));
  EXPECT_EQ(spec.parameters[1].values, (std::vector<std::string>{"1MiB", "16MiB"}));
  EXPECT_EQ(spec.parameters[2].values, (std::vector<std::string>{"[2, 4]", "[4, 2]"}));
  EXPECT_EQ(spec.parameters[3].key, "run.config");
  EXPECT_EQ(spec.fixed, (std::vector<std::string>{"system.link.latency=500ns", "run.seed=3"}));
  EXPECT_EQ(enumerate_points(spec).size(), 16u);
  const RunRequest request = make_run_request(spec, enumerate_points(spec)[0]);
  EXPECT_EQ(request.configuration, "sequential");
  EXPECT_EQ(request.seed, 3u);
}

// The error of loading a sweep file with `body`.
std::string sweep_file_error(const fs::path& dir, const std::string& body) {
  const fs::path file = dir / "bad.yaml";
  write_text(file, body);
  try {
    load_sweep_spec(file);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// A point runs the value its CSV row names (found by fuzz_sweep, issue 15): values with
// line breaks or tabs, quoted null words and map keys that need quotes survive being
// applied as key=value overrides; a sweep past a million points is refused, not
// enumerated (or wrapped around).
TEST_F(SweepTest, EveryValueSurvivesBeingAppliedAsAnOverride) {
  write_text(dir_ / "s.yaml",
             "system: s.yaml\nworkload: w.yaml\nparameters:\n"
             "  workload.a: [\"x\\ny\", \"NULL\", \"tab\\there\", \"~\", plain, ..., \"---\", ...x]\n"
             "  workload.m: [{\"a,b\": 1, c: \"null\"}]\n");
  const SweepSpec spec = load_sweep_spec(dir_ / "s.yaml");
  const std::vector<std::string> expected = {"x\ny", "NULL", "tab\there", "~", "plain", "...", "---", "...x"};
  const auto points = enumerate_points(spec);
  ASSERT_EQ(points.size(), expected.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    ConfigTree tree;
    for (const std::string& o : make_run_request(spec, points[i]).overrides) tree.apply_override(o);
    const ConfigValue* workload = tree.root().find("workload");
    ASSERT_NE(workload, nullptr);
    const ConfigValue* a = workload->find("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->kind, ConfigValue::Kind::kScalar) << i;
    EXPECT_EQ(a->scalar, expected[i]) << i;
    const ConfigValue* m = workload->find("m");
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(m->kind, ConfigValue::Kind::kMap);
    ASSERT_EQ(m->map.size(), 2u);
    EXPECT_EQ(m->map[0].first, "a,b");
    EXPECT_EQ(m->map[1].second.kind, ConfigValue::Kind::kScalar);
    EXPECT_EQ(m->map[1].second.scalar, "null");
  }
  std::string axes;
  for (int k = 0; k < 7; ++k) axes += fmt::format("  workload.k{}: [1, 2, 3, 4, 5, 6, 7, 8]\n", k);
  write_text(dir_ / "big.yaml", "system: s.yaml\nworkload: w.yaml\nparameters:\n" + axes);
  EXPECT_THAT([&] { (void)enumerate_points(load_sweep_spec(dir_ / "big.yaml")); },
              testing::ThrowsMessage<ConfigError>(testing::HasSubstr("workload.k6: the sweep would have more than 1000000 points")));
}

TEST_F(SweepTest, SweepFileErrors) {
  const std::string file = (dir_ / "bad.yaml").string();
  EXPECT_EQ(sweep_file_error(dir_, "system: s.yaml\nparamters:\n  system.num_gpus: [2]\n"),
            file + ":2: paramters: unknown key (did you mean 'parameters'?)");
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  system.num_gpus: [2]\n  gpu.count: [1, 2]\n"),
            file + ":3: parameters.gpu.count: a sweep key must start with 'system.', 'workload.' or "
                   "'run.'");
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  system.num_gpus: []\n"),
            file + ":2: parameters.system.num_gpus: empty list: a sweep parameter needs at least one "
                   "value");
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  system.num_gpus: 4\n"),
            file + ":2: parameters.system.num_gpus: expected a list of values, like [2, 4, 8]");
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  system.num_gpus: [2, 4, 2]\n"),
            file + ":2: parameters.system.num_gpus: value '2' is listed twice");
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  run.sed: [1, 2]\n"),
            file + ":2: parameters.run.sed: unknown run key (did you mean 'run.seed'?)");
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  run.seed: [1, x]\n"),
            file + ":2: parameters.run.seed: expected an unsigned integer seed, got 'x'");
  // Found by fuzz_sweep (issue 15): a key with '=' would split when applied.
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  \"workload.a=b\": [1]\n"),
            file + ":2: parameters.workload.a=b: a sweep key cannot contain '=' (points apply it as key=value)");
  // Found by the long fuzz_sweep run (issue 15, S3): a key ending in a tab set another
  // key (key=value trims it).
  EXPECT_EQ(sweep_file_error(dir_, "parameters:\n  \"workload.preset\\t\": [a]\n"),
            file + ":2: parameters.workload.preset\t: a sweep key cannot begin or end with blanks (points apply it "
                   "as key=value, which trims them)");
  EXPECT_EQ(sweep_file_error(dir_, "set: [latency=5ns]\n"),
            file + ":1: set: latency: a sweep key must start with 'system.', 'workload.' or 'run.'");
}

TEST_F(SweepTest, CommandLineNeedsSystemAndWorkload) {
  SweepCommandLine command_line;
  command_line.sets = {"system.num_gpus=[2,4]"};
  EXPECT_THROW(build_sweep_spec(command_line), UserError);
  command_line.system = "s.yaml";
  EXPECT_THROW(build_sweep_spec(command_line), UserError);
  command_line.workload = "w.yaml";
  const SweepSpec spec = build_sweep_spec(command_line);
  EXPECT_EQ(spec.parameters.size(), 1u);
  EXPECT_EQ(enumerate_points(spec).size(), 2u);
}

// --- The command line (the real binary, on tiny points) ----------------------------------------

// Runs `t3sim <arguments>`, returning the exit code; stdout and stderr go to `log`.
int run_t3sim(const std::string& arguments, const fs::path& log) {
  const std::string command =
      std::string(T3SIM_BINARY) + " " + arguments + " > " + log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(SweepTest, CommandLineSweepResumeAndErrors) {
  const std::string configs = std::string(T3SIM_SOURCE_DIR) + "/configs/";
  const std::string csv = (dir_ / "cli.csv").string();
  const fs::path log = dir_ / "log.txt";
  const std::string sweep = "sweep --system " + configs + "systems/ring8.yaml --workload " + configs +
                            "workloads/ring_rs.yaml --set workload.size=64KiB -j 2 -o " + csv;

  ASSERT_EQ(run_t3sim(sweep + " --set system.num_gpus=[2,4]", log), 0) << read_text(log);
  EXPECT_NE(read_text(log).find("2 points: 2 ok, 0 failed, 0 skipped"), std::string::npos)
      << read_text(log);
  // A point the config reader rejects is a failed row: exit 1, the others still run.
  EXPECT_EQ(run_t3sim(sweep + " --set system.num_gpus=[1,2,4,8]", log), 1) << read_text(log);
  EXPECT_NE(read_text(log).find("4 points: 3 ok, 1 failed, 2 skipped"), std::string::npos)
      << read_text(log);
  EXPECT_EQ(read_results(csv).rows.size(), 4u);

  EXPECT_EQ(run_t3sim(sweep + " --shard 2/2", log), 2);
  EXPECT_NE(read_text(log).find("t3sim: error: --shard: expected i/n with 0 <= i < n, got '2/2'"),
            std::string::npos)
      << read_text(log);
  EXPECT_EQ(run_t3sim("merge -o " + (dir_ / "merged.csv").string() + " " + csv + " " + csv, log), 0)
      << read_text(log);
  EXPECT_EQ(read_results(dir_ / "merged.csv").rows.size(), 4u);
}

// --validate: every point is checked with validate_only and nothing is written; the
// bad points are named by index and values.
TEST_F(SweepTest, ValidateChecksEveryPointAndWritesNothing) {
  std::atomic<int> validate_only{0};
  const SweepRunner runner = [&](const RunRequest& request) {
    if (request.validate_only) ++validate_only;
    if (has(request, "system.num_gpus=4") && has(request, "workload.size=1MiB"))
      throw UserError("wl.yaml:3: workload.size: too small for 4 GPUs");
    if (has(request, "system.num_gpus=8") && has(request, "workload.size=16MiB"))
      throw std::invalid_argument("8 GPUs cannot split 16MiB");
    return healthy_outcome(request);
  };
  const SweepValidation v = validate_sweep(make_spec(), Shard{}, runner);
  EXPECT_EQ(v.points, 6u);
  EXPECT_EQ(validate_only.load(), 6);
  ASSERT_EQ(v.errors.size(), 2u);
  EXPECT_EQ(v.errors[0], "point 2 (system.num_gpus=4;workload.size=1MiB): wl.yaml:3: workload.size: too small for 4 GPUs");
  EXPECT_EQ(v.errors[1], "point 5 (system.num_gpus=8;workload.size=16MiB): 8 GPUs cannot split 16MiB");
  EXPECT_EQ(validate_sweep(make_spec(), Shard{1, 2}, runner).points, 3u);
  EXPECT_TRUE(fs::is_empty(dir_));
  // A failure that is not bad input is not a point's error: it propagates.
  const SweepRunner broken = [](const RunRequest&) -> RunOutcome { throw SimulationError("bug"); };
  EXPECT_THROW(validate_sweep(make_spec(), Shard{}, broken), SimulationError);
}

// Every shipped sweep's points validate: a renamed key or a preset a model no longer
// accepts fails here, not hours into a figure's sweep.
TEST_F(SweepTest, EveryShippedSweepValidates) {
  const fs::path sweeps = fs::path(T3SIM_SOURCE_DIR) / "configs" / "sweeps";
  const fs::path log = dir_ / "log.txt";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(sweeps)) {
    if (entry.path().extension() != ".yaml") continue;
    ++checked;
    EXPECT_EQ(run_t3sim("sweep " + entry.path().string() + " --validate", log), 0)
        << entry.path() << "\n" << read_text(log);
    EXPECT_NE(read_text(log).find(", 0 with errors"), std::string::npos) << read_text(log);
  }
  EXPECT_GT(checked, 20);
}

TEST_F(SweepTest, CommandLineValidateNamesTheBadPointAndNeedsNoCsv) {
  const std::string configs = std::string(T3SIM_SOURCE_DIR) + "/configs/";
  const fs::path log = dir_ / "log.txt";
  const std::string sweep = "sweep --system " + configs + "systems/ring8.yaml --workload " + configs +
                            "workloads/ring_rs.yaml --set system.num_gpus=2";
  EXPECT_EQ(run_t3sim(sweep + " --set 'workload.size=[64KiB,lots]' --validate", log), 2);
  const std::string text = read_text(log);
  EXPECT_NE(text.find("point 1 (workload.size=lots): "), std::string::npos) << text;
  EXPECT_NE(text.find("expected a size like '16MiB', got 'lots'"), std::string::npos) << text;
  EXPECT_NE(text.find("2 points: 1 valid, 1 with errors"), std::string::npos) << text;
  EXPECT_EQ(run_t3sim(sweep + " --set 'workload.size=[64KiB]'", log), 2);
  EXPECT_NE(read_text(log).find("t3sim: error: -o,--output is required"), std::string::npos) << read_text(log);
}

}  // namespace
}  // namespace t3sim
