// One GPU's memory system (L2 + memory controllers + HBM2 of T3 Table 1) driven by the
// memory-only workload, end to end through the same path as `t3sim run`: bandwidth
// envelopes, turnaround and near-memory-update costs, arbitration under a bursty
// communication stream (T3 §4.5), functional values and determinism.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/run.h"
#include "sim/error.h"

namespace t3sim {
namespace {

const std::string kSource = T3SIM_SOURCE_DIR;
const std::string kSystem = kSource + "/configs/systems/table1.yaml";
std::string workload(const std::string& name) { return kSource + "/configs/workloads/memory/" + name + ".yaml"; }

RunOutcome run(const std::string& wl, std::vector<std::string> sets) {
  RunRequest req;
  req.system = kSystem;
  req.workload = workload(wl);
  req.overrides = std::move(sets);
  return run_simulation(req);
}

double metric(const RunOutcome& out, const std::string& name) {
  for (const auto& [k, v] : out.metrics) {
    if (k == name) return std::stod(v);
  }
  ADD_FAILURE() << "no metric " << name;
  return 0;
}

// One streaming generator, `requests` of 128 B with enough in flight to saturate HBM.
std::vector<std::string> stream(const std::string& op, std::uint64_t requests, std::vector<std::string> more = {}) {
  std::vector<std::string> s = {"workload.generators[0].op=" + op,
                                "workload.generators[0].requests=" + std::to_string(requests),
                                "workload.generators[0].max_outstanding=3072",
                                "workload.generators[0].uncached=true"};
  s.insert(s.end(), more.begin(), more.end());
  return s;
}

TEST(MemoryEnvelope, SequentialReadsReachMostOfPeak) {
  const RunOutcome out = run("stream_read", stream("read", 100000));
  const double util = metric(out, "dram_utilization");
  // Refresh alone costs tRFC / tREFI = 6.7 %; row switches and the ramp a little more.
  EXPECT_GE(util, 0.85);
  EXPECT_LE(util, 0.97);
  EXPECT_GT(metric(out, "row_hit_rate"), 0.85);
}

TEST(MemoryEnvelope, RandomSmallReadsGetClearlyLess) {
  const RunOutcome seq = run("stream_read", stream("read", 60000));
  const RunOutcome rnd = run("random_read", {"workload.generators[0].requests=60000",
                                             "workload.generators[0].max_outstanding=3072"});
  const double util = metric(rnd, "dram_utilization");
  EXPECT_LT(util, 0.7 * metric(seq, "dram_utilization"));
  EXPECT_LT(metric(rnd, "row_hit_rate"), 0.2);
  // Analytical bound: nearly every 64 B read opens a row, and tFAW allows four ACTs per
  // 15 cycles, so at most 4 x (64 B / 32 B per access) / 15 = 53.3 % of the bus.
  EXPECT_LE(util, 4.0 * 2.0 / 15.0 + 0.002);
  EXPECT_GE(util, 0.7 * 4.0 * 2.0 / 15.0);
}

TEST(MemoryEnvelope, ReadWriteMixPaysTurnarounds) {
  const double read = metric(run("stream_read", stream("read", 60000)), "dram_bandwidth_GBps");
  const double write = metric(run("stream_read", stream("write", 60000)), "dram_bandwidth_GBps");
  const RunOutcome mix = run("stream_read", stream("mix", 60000));
  EXPECT_LT(metric(mix, "dram_bandwidth_GBps"), 0.95 * std::min(read, write));
}

TEST(MemoryEnvelope, UpdatesPayTccdwlWithinABankGroup) {
  // All traffic in one bank group (bg the top address bits): column commands are
  // tCCDL = 2 apart for writes and tCCDWL = 4 apart after updates (T3 Table 1).
  const std::vector<std::string> one_group = {"system.memory.address_map.order=bg-ro-ba-co-ch"};
  const double write = metric(run("stream_read", stream("write", 30000, one_group)), "dram_bandwidth_GBps");
  const double update = metric(run("stream_read", stream("update", 30000, one_group)), "dram_bandwidth_GBps");
  EXPECT_NEAR(update / write, 2.0 / 4.0, 0.05);
  // Spread over the four bank groups the scheduler interleaves them, and tCCDWL = 4
  // cycles is hidden behind the other three groups' commands.
  const double spread_write = metric(run("stream_read", stream("write", 30000)), "dram_bandwidth_GBps");
  const double spread_update = metric(run("stream_read", stream("update", 30000)), "dram_bandwidth_GBps");
  EXPECT_GT(spread_write, 1.5 * write);
  EXPECT_NEAR(spread_update / spread_write, 1.0, 0.1);
}

TEST(MemoryValues, UpdatesFromTwoStreamsToTheSameAddressesAllCount) {
  // Compute and communication both update the same 1 MiB, which the workload checks
  // against the generators' reference (a lost or doubled update fails the run).
  const RunOutcome out = run("two_stream_updates", {});
  // Every kind's row ends with the skeleton's events and wall time.
  EXPECT_EQ(out.metrics[out.metrics.size() - 2].first, "events");
  EXPECT_EQ(out.metrics.back().first, "wall_s");
  EXPECT_EQ(metric(out, "compute_mc_latency_mean_ns") > 0, true);
  bool passed = false;
  for (const auto& [k, v] : out.metrics) passed |= (k == "functional_check" && v == "passed");
  EXPECT_TRUE(passed);
}

// T3 §4.5 / §6.1.3: under bursty communication, round-robin lets communication fill the
// DRAM queues and compute requests wait behind it; MCA keeps compute latency down.
TEST(MemoryArbitration, McaProtectsComputeLatencyRoundRobinDoesNot) {
  auto compute_latency = [](const std::string& arbiter, std::vector<std::string> more = {}) {
    std::vector<std::string> sets = {"system.memory.mc.arbiter.type=" + arbiter,
                                     "workload.generators[0].requests=60000"};
    sets.insert(sets.end(), more.begin(), more.end());
    const RunOutcome out = run("contention", sets);
    return std::pair(metric(out, "compute_mc_latency_mean_ns"), metric(out, "gemm_latency_mean_ns"));
  };
  const auto alone = compute_latency("round-robin", {"workload.generators[1].duration=1ns",
                                                     "workload.generators[2].duration=1ns"});
  const auto rr = compute_latency("round-robin");
  const auto mca = compute_latency("mca", {"system.memory.mc.arbiter.threshold=5"});
  // Communication slows compute down under round-robin...
  EXPECT_GT(rr.first, 1.2 * alone.first);
  // ...and MCA takes back most of it, at the memory controllers and end to end.
  EXPECT_LT(mca.first, rr.first * 0.85);
  EXPECT_LT(mca.second, rr.second);
}

TEST(MemoryArbitration, DynamicMcaProfilesTheKernelAloneAndPicksFromTheSet) {
  RunRequest req;
  req.system = kSystem;
  req.workload = workload("contention");
  req.overrides = {"system.memory.mc.arbiter.type=mca", "system.memory.mc.arbiter.dynamic=true",
                   "workload.generators[0].requests=40000"};
  req.output_dir = std::filesystem::temp_directory_path() / "t3sim_mem_dynamic";
  req.timeline = false;
  run_simulation(req);
  std::ifstream in(*req.output_dir / "results.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  const auto& stats = j.at("stats");
  // The GEMM alone keeps a few requests per channel in the DRAM queues: far from
  // memory-bound, so the rule (largest t <= capacity - occupancy) gives 30.
  const double occupancy = stats.at("gpu0.mem.mc0.arbiter.profiled_occupancy").at("value").get<double>();
  EXPECT_GT(occupancy, 0.5);
  EXPECT_LT(occupancy, 34.0);
  EXPECT_EQ(stats.at("gpu0.mem.mc0.arbiter.threshold").at("value").get<double>(), 30.0);
  // The kernel boundary let the remaining communication drain.
  EXPECT_EQ(stats.at("gpu0.mem.mc0.arbiter.kernel_drains").at("value").get<double>(), 1.0);
}

TEST(MemoryDeterminism, SameSeedSameResultsFile) {
  auto results = [](const std::string& dir) {
    RunRequest req;
    req.system = kSystem;
    req.workload = workload("contention");
    req.overrides = {"workload.generators[0].requests=20000", "workload.generators[1].duration=5us",
                     "workload.generators[2].duration=5us"};
    req.output_dir = std::filesystem::temp_directory_path() / dir;
    req.timeline = false;
    run_simulation(req);
    std::ifstream in(*req.output_dir / "results.json");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string a = results("t3sim_mem_det_a"), b = results("t3sim_mem_det_b");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST(MemoryConfigErrors, BadMemorySectionsNameTheKey) {
  auto error = [](std::vector<std::string> sets) -> std::string {
    try {
      run("stream_read", std::move(sets));
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_THAT(error({"system.memory.address_map.order=ro-ba-co-bg"}),
              ::testing::HasSubstr("system.memory.address_map.order: expected each of ro, ba, bg, co, ch exactly once"));
  EXPECT_THAT(error({"system.memory.address_map.interleave=64B"}),
              ::testing::HasSubstr("system.memory.address_map.interleave: expected at least the L2 line size"));
  EXPECT_THAT(error({"system.memory.mc.write_low_watermark=30"}),
              ::testing::HasSubstr("system.memory.mc.write_low_watermark: expected less than write_high_watermark (24), got 30"));
  EXPECT_THAT(error({"system.memory.mc.arbiter.type=mca", "system.memory.mc.arbiter.threshold=lots"}),
              ::testing::HasSubstr("system.memory.mc.arbiter.threshold: expected a number of requests"));
  EXPECT_THAT(error({"system.memory.mc.arbitr.type=mca"}),
              ::testing::HasSubstr("system.memory.mc.arbitr: unknown key (did you mean 'arbiter'?)"));
  EXPECT_THAT(error({"system.memory.mc.write_timeout_action=flush"}),
              ::testing::HasSubstr("system.memory.mc.write_timeout_action"));
  EXPECT_THAT(error({"run.config=t3"}), ::testing::HasSubstr("a memory workload has no configurations"));
  EXPECT_THAT(error({"workload.generators[3].op=read"}), ::testing::HasSubstr("has 1 items; index 3 is out of range"));
}


// Issue 41: the H200's DRAM under a stream of writes, against tools/h200/dram_mix.cu
// (results/h200-measurements/dram_mix.csv, README point 17; one H200, driver 580.159.04,
// SM clock 1,980 MHz). What it checks is the memory controller's read / write handling
// (write drains, turnarounds, the ingress a read waits in behind writes): the writes of
// a GEMM's dirty lines must cost reads what they cost on the machine, no more.
class H200DramCalibration : public ::testing::Test {
 protected:
  static RunOutcome run_h200(std::vector<std::string> sets) {
    RunRequest req;
    req.system = kSource + "/configs/systems/h200.yaml";
    req.workload = workload("h200_reads_beside_writes");
    req.overrides = std::move(sets);
    return run_simulation(req);
  }
  // The writer at `gbps` (0: one write, nothing to speak of) for about 210 us, the
  // reader as the file has it.
  static std::vector<std::string> writer(int gbps, std::vector<std::string> more = {}, std::uint64_t piece = 512) {
    std::vector<std::string> s;
    if (gbps == 0) {
      s.push_back("workload.generators[0].requests=1");
    } else {
      s.push_back(fmt::format("workload.generators[0].rate={}GB/s", gbps));
      s.push_back(fmt::format("workload.generators[0].requests={}", std::uint64_t{210} * gbps * 1000 / piece));
    }
    s.insert(s.end(), more.begin(), more.end());
    return s;
  }
};

// Reads lose bandwidth beside writes as on the machine. dram_mix.csv, stream rows: 66
// readers 1,096.3 GB/s alone (line 13) and 861.6 beside 16 writers at 976.4 GB/s
// (line 16): 0.786; 16 readers 270.8 alone (line 12), 109.1 beside 66 writers at
// 3,652.4 (line 17): 0.403. The model's reader keeps 66 readers' loads in flight for
// both (at 16 readers' depth it is latency-bound the same way). At a GEMM's write-back
// rate (~1.1 TB/s) the model is within 0.1 (0.780 since stop 58, where a write past the
// drain timeout goes first instead of starting a drain; 0.74 at stop 54 with the
// 512-entry write queue, 0.82 with 32). Beside 3.65 TB/s of writes it starves the reads
// more than the machine (0.298 against 0.403; 0.27 with the timeout's drains) while its
// DRAM moves ~4 TB/s in all against the machine's 3.76; the write queue's depth does not
// close it (0.27-0.29 for 32-512 entries at stop 54). Held here as the known deviation it
// is (README point 17), so a change that moves it shows.
TEST_F(H200DramCalibration, ReadsLoseToAWriteStreamWhatTheyLoseOnTheMachine) {
  const double alone = metric(run_h200(writer(0)), "reader_GBps");
  const double beside_1tb = metric(run_h200(writer(976)), "reader_GBps");
  const double beside_3_6tb = metric(run_h200(writer(3652)), "reader_GBps");
  EXPECT_NEAR(beside_1tb / alone, 0.786, 0.1) << beside_1tb << " / " << alone;
  EXPECT_NEAR(beside_3_6tb / alone, 0.298, 0.05) << beside_3_6tb << " / " << alone << " (machine 0.403)";
}

// A pointer chase's DRAM round trip beside scattered writes (256 B at random offsets,
// as a cache's write-backs): dram_mix.csv, scattered rows: 340.4 ns beside 4 writer
// CTAs at 101 GB/s (line 23, the unloaded latency: cap_latency.csv gives 337-341 alone)
// and 398.6 beside 66 at 1,664.4 GB/s (line 27): 1.171 (the model: 1.104).
TEST_F(H200DramCalibration, AChaseBesideScatteredWritesSlowsAsOnTheMachine) {
  const std::vector<std::string> chase = {"workload.generators[1].pattern=random",
                                          "workload.generators[1].max_outstanding=1",
                                          "workload.generators[1].requests=300", "workload.generators[1].start=80us"};
  const std::vector<std::string> scattered = {"workload.generators[0].pattern=random",
                                              "workload.generators[0].request_size=256B"};
  std::vector<std::string> both = chase;
  both.insert(both.end(), scattered.begin(), scattered.end());
  const double alone = metric(run_h200(writer(0, chase)), "reader_latency_mean_ns");
  const double beside = metric(run_h200(writer(1664, both, 256)), "reader_latency_mean_ns");
  EXPECT_NEAR(beside / alone, 1.171, 0.1) << beside << " / " << alone;
}

// The L2's capacity: a buffer swept over and over is served from the H200's L2 up to
// 56 MiB (7,490.7 GB/s, l2_replacement.csv line 11; 8,488.5 at 48 MiB, line 9) and from
// DRAM from 60 MiB (4,629.3, line 12): a 60 MB L2 that keeps the most recent lines. The
// model's sweep keeps 8,192 reads in flight (latency-bound, so its rates are lower than
// the machine's 264 CTAs'; the ratio is the point): 56 MiB as fast as 48, 60 MiB at most
// two thirds of that (stop 54: 5,310, 5,325 and 2,903 GB/s; with the 50 MiB L2 it had
// before, 56 MiB ran at DRAM's 2,585).
TEST_F(H200DramCalibration, TheL2HoldsA56MiBSweepAndNotA60MiBOne) {
  auto sweep = [](int mib) {
    return metric(run_h200({"workload.generators[0].requests=1", "workload.generators[1].start=0us",
                            "workload.generators[1].max_outstanding=8192",
                            fmt::format("workload.generators[1].footprint={}MiB", mib),
                            fmt::format("workload.generators[1].requests={}", mib * 8192 * 4)}),
                  "reader_GBps");
  };
  const double at48 = sweep(48), at56 = sweep(56), at60 = sweep(60);
  EXPECT_NEAR(at56, at48, 0.05 * at48);
  EXPECT_LT(at60, 0.67 * at56) << at60 << " against " << at56;
}

// How fast DRAM takes writes alone: dram_mix.csv 264 writer CTAs, 4,348.4 GB/s as a
// stream (line 10), 3,713.9 scattered (line 29); the model within 15 %.
TEST_F(H200DramCalibration, WritesAloneReachTheMachinesRate) {
  const std::vector<std::string> no_reader = {"workload.generators[0].rate=0B/s",
                                              "workload.generators[0].max_outstanding=8192",
                                              "workload.generators[1].requests=1",
                                              "workload.generators[1].start=0us"};
  // Enough to make the first ~6 us (the L2 taking the first 50 MB, DRAM idle) small.
  std::vector<std::string> stream = no_reader;
  stream.push_back("workload.generators[0].requests=1000000");
  std::vector<std::string> scattered = no_reader;
  scattered.insert(scattered.end(), {"workload.generators[0].requests=2000000", "workload.generators[0].pattern=random",
                                     "workload.generators[0].request_size=256B"});
  EXPECT_NEAR(metric(run_h200(stream), "dram_bandwidth_GBps"), 4348.4, 4348.4 * 0.15);
  EXPECT_NEAR(metric(run_h200(scattered), "dram_bandwidth_GBps"), 3713.9, 3713.9 * 0.15);
}

}  // namespace
}  // namespace t3sim
