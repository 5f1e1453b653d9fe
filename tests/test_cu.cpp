// The CU's memory pipeline on hand-built traces against a fake memory (issue 17):
// load splitting into wave-instruction requests, the CU's in-flight load bytes
// (MSHRs) with back-pressure, the return port's bandwidth, the load pipeline's
// latency, the K-step barrier, prefetch stages, and values carried through split
// loads. Each expectation is an analytical time the mechanism must produce.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include "models/cu/compute_unit.h"
#include "sim/config.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

constexpr std::uint32_t kGranule = 32;  // bytes per functional word

// A memory that answers every request after a fixed latency (plus `slow` for
// addresses at or above `slow_from`), tracks the load bytes in flight at it and
// returns word value address / granule + 1 for functional reads; it records what
// functional stores carried.
class FakeMemory final : public MemTarget {
 public:
  explicit FakeMemory(Simulator& sim) : sim_(sim) {}
  bool can_accept(const MemRequest&) const override { return true; }
  void wait_for_space(MemClient*) override {}
  void accept(MemRequest&& req) override {
    requests.push_back(req);
    if (req.op == MemOp::kRead) {
      in_flight += req.total_bytes();
      max_in_flight = std::max(max_in_flight, in_flight);
      for (std::size_t i = 0; i < req.data.words.size(); ++i) {
        const std::uint64_t row = i * kGranule / req.bytes, col = i * kGranule % req.bytes;
        req.data.words[i] = (req.address + row * req.row_stride + col) / kGranule + 1;
      }
    } else {
      for (std::size_t i = 0; i < req.data.words.size(); ++i) stored[req.address + i * kGranule] = req.data.words[i];
    }
    const Tick when = sim_.now() + latency + (req.address >= slow_from ? slow : Tick());
    sim_.events().schedule_callback(when, [this, r = std::move(req)]() mutable {
      if (r.op == MemOp::kRead) in_flight -= r.total_bytes();
      MemClient* client = r.client;
      client->on_mem_response(std::move(r));
    });
  }

  Tick latency = Tick::ns(1000);
  Tick slow;
  std::uint64_t slow_from = UINT64_MAX;
  std::vector<MemRequest> requests;
  std::uint64_t in_flight = 0, max_in_flight = 0;
  std::map<std::uint64_t, std::uint64_t> stored;

 private:
  Simulator& sim_;
};

CuConfig pipeline(std::uint32_t request_bytes = 1024, std::uint64_t inflight = 0, std::uint32_t port = 0,
                  std::uint32_t latency = 0) {
  CuConfig c;
  c.clock_hz = 1'000'000'000;  // 1 GHz: a cycle is a nanosecond
  c.load_request_bytes = request_bytes;
  c.max_inflight_load_bytes = inflight;
  c.load_bytes_per_cycle = port;
  c.load_latency = latency;
  c.max_outstanding_per_wf = 1024;
  return c;
}

// One WG of `program` on a CU against a FakeMemory of the given latency, run to the end.
struct TimedRig {
  TimedRig(const CuConfig& cfg, const std::string& program, Tick latency, Tick slow = Tick(),
           std::uint64_t slow_from = UINT64_MAX, std::uint32_t value_granule = 0, std::uint32_t stages = 2,
           const char* extra_resources = "")
      : memory(sim), cu(root, "cu0", cfg, memory, flags) {
    memory.latency = latency;
    memory.slow = slow;
    memory.slow_from = slow_from;
    trace = parse_trace(fmt::format("t3trace 1\nkernel k\nresources wfs=1 threads=64 stages={}{}\n{}wgs 1\nwg 0 p\n",
                                    stages, extra_resources, program),
                        "test");
    cu.set_on_wg_done([this](const WgLaunch&) { done = sim.now(); });
    WgLaunch wg;
    wg.trace = &trace;
    wg.value_granule = value_granule;
    cu.launch(wg);
    sim.events().run();
  }
  double done_ns() const { return static_cast<double>(done.ps()) / 1000.0; }

  Simulator sim{1};
  Component root{sim, "gpu0"};
  FlagTable flags;
  FakeMemory memory;
  KernelTrace trace;
  ComputeUnit cu;
  Tick done;
};

TEST(CuLoadPath, ATileLoadSplitsIntoRequestsOfLoadRequestBytes) {
  // 256 rows of 64 B, 4 KiB apart: 16 rows per 1 KiB request, 16 requests, each a
  // 2D piece of the tile, in row order.
  TimedRig tile(pipeline(1024), "program p\n  load 0 64 rows=256 stride=4096\n  compute 10\nend\n", Tick::ns(100));
  ASSERT_EQ(tile.memory.requests.size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(tile.memory.requests[i].rows, 16u);
    EXPECT_EQ(tile.memory.requests[i].bytes, 64u);
    EXPECT_EQ(tile.memory.requests[i].address, i * 16 * 4096);
    EXPECT_EQ(tile.memory.requests[i].row_stride, 4096u);
  }
  // One row of 5000 B: cut into 1024 B parts, the last one 904 B.
  TimedRig row(pipeline(1024), "program p\n  load 0 5000\n  compute 10\nend\n", Tick::ns(100));
  ASSERT_EQ(row.memory.requests.size(), 5u);
  EXPECT_EQ(row.memory.requests[4].address, 4096u);
  EXPECT_EQ(row.memory.requests[4].bytes, 904u);
  // load_request_bytes 0: the whole op is one request (the L2 batches its lines).
  TimedRig whole(pipeline(0), "program p\n  load 0 64 rows=256 stride=4096\n  compute 10\nend\n", Tick::ns(100));
  ASSERT_EQ(whole.memory.requests.size(), 1u);
  EXPECT_EQ(whole.memory.requests[0].rows, 256u);
}

TEST(CuLoadPath, InFlightLoadBytesAreCappedAndTheRestWaits) {
  // 64 KiB in 1 KiB requests against a 1 us memory. Unbounded: one round trip.
  // With 4 KiB of MSHRs: 16 rounds of 4 requests, each a full round trip.
  const std::string program = "program p\n  load 0 65536\n  compute 1\nend\n";
  TimedRig open(pipeline(1024, 0), program, Tick::us(1));
  TimedRig capped(pipeline(1024, 4096), program, Tick::us(1));
  EXPECT_EQ(open.memory.max_in_flight, 65536u);
  EXPECT_EQ(capped.memory.max_in_flight, 4096u);
  EXPECT_NEAR(open.done_ns(), 1000 + 1, 1e-9);
  EXPECT_NEAR(capped.done_ns(), 16 * 1000 + 1, 1e-9);
  // Stats say why: requests that waited, and for how long some WG waited.
  const Stat* stalls = capped.sim.stats().find("gpu0.cu0.load_room_stalls");
  ASSERT_NE(stalls, nullptr);
  EXPECT_GT(static_cast<const Counter*>(stalls)->value(), 0u);
  const auto* cycles = static_cast<const Counter*>(capped.sim.stats().find("gpu0.cu0.load_room_stall_cycles"));
  EXPECT_EQ(cycles->value(), 15u * 1000);  // waited from the first round trip's start to the last's
}

// Hopper's TMA copies (a kernel with tma=1) do not hold the L1's MSHRs: the same
// 64 KiB goes out at once, one round trip, and nothing waits for room.
TEST(CuLoadPath, TmaLoadsDoNotHoldTheMshrs) {
  const std::string program = "program p\n  load 0 65536\n  compute 1\nend\n";
  TimedRig tma(pipeline(1024, 4096), program, Tick::us(1), Tick(), UINT64_MAX, 0, 2, " tma=1");
  EXPECT_TRUE(tma.trace.resources.tma);
  EXPECT_EQ(tma.memory.max_in_flight, 65536u);
  EXPECT_NEAR(tma.done_ns(), 1000 + 1, 1e-9);
  EXPECT_EQ(static_cast<const Counter*>(tma.sim.stats().find("gpu0.cu0.load_room_stalls"))->value(), 0u);
}

// A store whose compute is not done queues; the WG goes on loading (its other warps
// do): the next K step's load goes out at once, before the store, which follows its
// compute. A release (set) waits for the queued store.
TEST(CuLoadPath, AStoreWaitingForItsComputeDoesNotHoldBackLaterLoads) {
  TimedRig rig(pipeline(1024, 0), "program p\n  load 0 1024\n  compute 500\n  store 4096 1024\n  load 8192 1024\n"
               "  compute 1\n  store 12288 1024\nend\n", Tick::us(1));
  ASSERT_EQ(rig.memory.requests.size(), 4u);
  EXPECT_EQ(rig.memory.requests[0].address, 0u);
  EXPECT_EQ(rig.memory.requests[1].address, 8192u);  // the second load, before the first store
  EXPECT_EQ(rig.memory.requests[1].op, MemOp::kRead);
  EXPECT_EQ(rig.memory.requests[2].address, 4096u);
  EXPECT_EQ(rig.memory.requests[3].address, 12288u);
  // Both loads land at 1 us; computes 1000-1500 and 1500-1501; the stores go at 1500
  // and 1501 and are acknowledged 1 us later.
  EXPECT_NEAR(rig.done_ns(), 2501, 1e-9);
}

TEST(CuLoadPath, TheReturnPortBoundsALoadsBandwidth) {
  // 64 KiB through a 64 B/cycle port at 1 GHz: 1024 cycles after the first data
  // arrive (10 ns memory), whatever the MSHRs allow.
  TimedRig r(pipeline(1024, 0, 64), "program p\n  load 0 65536\n  compute 1\nend\n", Tick::ns(10));
  EXPECT_NEAR(r.done_ns(), 10 + 1024 + 1, 1e-9);
}

TEST(CuLoadPath, TheLoadPipelineLatencyIsPaidOncePerRoundTrip) {
  TimedRig r(pipeline(1024, 0, 0, 120), "program p\n  load 0 4096\n  compute 5\nend\n", Tick::ns(300));
  EXPECT_NEAR(r.done_ns(), 300 + 120 + 5, 1e-9);
  // MSHRs free when the data land, after the pipeline: 2 rounds of (300 + 120).
  TimedRig capped(pipeline(1024, 2048, 0, 120), "program p\n  load 0 4096\n  compute 5\nend\n", Tick::ns(300));
  EXPECT_NEAR(capped.done_ns(), 2 * (300 + 120) + 5, 1e-9);
}

TEST(CuLoadPath, AKStepComputesOnlyOnceEveryPieceOfItsLoadsLanded) {
  // The second half of the tile comes back 500 ns late: the compute waits for it
  // (the K loop's barrier), even though most pieces landed early.
  TimedRig r(pipeline(1024), "program p\n  load 0 8192\n  compute 50\nend\n", Tick::ns(100), Tick::ns(500), 4096);
  EXPECT_NEAR(r.done_ns(), 100 + 500 + 50, 1e-9);
}

TEST(CuLoadPath, PrefetchStagesOverlapLoadsOfLaterKStepsWithTheCurrentCompute) {
  // 8 K steps of (load 1 KiB with a 300 ns latency, compute 100 cycles = 100 ns).
  const std::string program = "program p\n  loop k 8\n    load 1024*k 1024\n    compute 100\n  end\nend\n";
  const Tick latency = Tick::ns(300);
  auto run = [&](std::uint32_t stages) {
    return TimedRig(pipeline(1024), program, latency, Tick(), UINT64_MAX, 0, stages).done_ns();
  };
  const double one = run(1), two = run(2), four = run(4);
  // One buffer: nothing overlaps, every step pays the load and the compute.
  EXPECT_NEAR(one, 8 * (300 + 100), 1e-9);
  // Two buffers: both load at once; a buffer reloads when its compute is done, so
  // with the latency (300) longer than a compute (100) the steps go in pairs, one
  // pair per latency + compute: 300 + 3 x (300 + 100) + 2 x 100.
  EXPECT_NEAR(two, 300 + 3 * (300 + 100) + 2 * 100, 1e-9);
  // Four: three loads ahead cover the 300 ns latency with 3 x 100 ns of compute:
  // the first load's latency, then one compute per step (compute bound).
  EXPECT_NEAR(four, 300 + 8 * 100, 1e-9);
}

TEST(CuLoadPath, SplitLoadsCarryTheirValuesIntoTheGroupSum) {
  // A reduction step: two loads of 4 KiB (split into 4 pieces each, some answered
  // late, so they land out of order), one compute, a store of the element-wise sum.
  const std::string program =
      "program p\n  load 0 4096\n  load 65536 4096\n  compute 10\n  store 131072 4096\nend\n";
  TimedRig r(pipeline(1024), program, Tick::ns(100), Tick::ns(700), 2048 + 65536, kGranule);
  ASSERT_EQ(r.memory.stored.size(), 4096u / kGranule);
  for (std::uint64_t i = 0; i < 4096 / kGranule; ++i) {
    const std::uint64_t expected = (i + 1) + (65536 / kGranule + i + 1);
    EXPECT_EQ(r.memory.stored[131072 + i * kGranule], expected) << "word " << i;
  }
}

TEST(CuLoadPath, CarryKeepsARunningSumAcrossLoadGroups) {
  // An embedding bag of three rows, one row per group: each add carries the sum on, so
  // the store after the last (uncarried) add writes row 0 + row 1 + row 2. With one
  // stage buffer the groups are a chain (load, add, load, ...): 3 x (100 + 10) ns; with
  // two the next row loads under the add, and the values are the same.
  const std::string program =
      "program p\n  loop i 3\n    load 8192*i 1024\n    compute 10 carry\n  end\n"
      "  load 32768 1024\n  compute 10\n  store 65536 1024\nend\n";
  for (std::uint32_t stages : {1u, 2u}) {
    TimedRig r(pipeline(1024), program, Tick::ns(100), Tick(), UINT64_MAX, kGranule, stages);
    ASSERT_EQ(r.memory.stored.size(), 1024u / kGranule);
    for (std::uint64_t i = 0; i < 1024 / kGranule; ++i) {
      std::uint64_t expected = 0;
      for (std::uint64_t row : {0u, 8192u, 16384u, 32768u}) expected += row / kGranule + i + 1;
      EXPECT_EQ(r.memory.stored[65536 + i * kGranule], expected) << "stages " << stages << " word " << i;
    }
    if (stages == 1) EXPECT_NEAR(r.done_ns(), 4 * (100 + 10) + 100, 1e-9);  // the store's round trip last
    else EXPECT_LT(r.done_ns(), 4 * (100 + 10) + 100);
  }
  // Without carry the store writes only the last group's row.
  TimedRig plain(pipeline(1024), "program p\n  load 0 1024\n  compute 10\n  load 32768 1024\n  compute 10\n"
                                 "  store 65536 1024\nend\n",
                 Tick::ns(100), Tick(), UINT64_MAX, kGranule, 1);
  EXPECT_EQ(plain.memory.stored[65536], 32768 / kGranule + 1);
}

// Every WG of `trace_text` launched at once on one CU against a FakeMemory (1 us),
// run to the end.
struct ManyWgRig {
  ManyWgRig(const CuConfig& cfg, const std::string& trace_text) : memory(sim), cu(root, "cu0", cfg, memory, flags) {
    trace = parse_trace(trace_text, "test");
    cu.set_on_wg_done([this](const WgLaunch&) { done_ns.push_back(static_cast<double>(sim.now().ps()) / 1000.0); });
    for (std::uint32_t w = 0; w < trace.num_wgs(); ++w) {
      WgLaunch wg;
      wg.trace = &trace;
      wg.wg = w;
      cu.launch(wg);
    }
    sim.events().run();
  }

  Simulator sim{1};
  Component root{sim, "gpu0"};
  FlagTable flags;
  FakeMemory memory;
  KernelTrace trace;
  ComputeUnit cu;
  std::vector<double> done_ns;  // in the order the WGs ended
};

TEST(CuLoadPath, SharedByTheWgsOfACu) {
  // Two WGs on one CU, 32 KiB each, 8 KiB of MSHRs against a 1 us memory: the CU
  // moves 8 KiB per microsecond in all, so 64 KiB take 8 round trips.
  ManyWgRig rig(pipeline(1024, 8192),
                "t3trace 1\nkernel k\nresources wfs=1 threads=64\nparams a\nprogram p\n  load a 32768\n  compute 1\nend\n"
                "wgs 2\nwg 0 p 0\nwg 1 p 1048576\n");
  EXPECT_EQ(rig.memory.max_in_flight, 8192u);
  ASSERT_EQ(rig.done_ns.size(), 2u);
  EXPECT_NEAR(rig.done_ns.back(), 8 * 1000 + 1, 1e-9);
}

// The K step's LDS operand reads (issue 17, item 1): a compute whose `lds` bytes take
// longer through the CU's LDS port than its matrix cycles holds the matrix cores for
// the LDS time; one that fits is unchanged; with the port unbounded (0) `lds` is free.
TEST(CuKStep, LdsBandwidthBoundsAComputeWhoseOperandsTakeLongerThanItsMatrixWork) {
  CuConfig cfg = pipeline(1024);
  cfg.lds_bytes_per_cycle = 128;
  // 25600 B at 128 B/cycle = 200 cycles against 100 matrix cycles.
  TimedRig bound(cfg, "program p\n  load 0 1024\n  compute 100 lds=25600\nend\n", Tick::ns(100));
  EXPECT_NEAR(bound.done_ns(), 100 + 200, 1e-9);
  EXPECT_EQ(static_cast<const Counter*>(bound.sim.stats().find("gpu0.cu0.lds_bound_cycles"))->value(), 100u);
  EXPECT_EQ(static_cast<const Counter*>(bound.sim.stats().find("gpu0.cu0.matrix_busy_cycles"))->value(), 200u);
  // 6400 B = 50 cycles: hidden under the 100 matrix cycles.
  TimedRig fits(cfg, "program p\n  load 0 1024\n  compute 100 lds=6400\nend\n", Tick::ns(100));
  EXPECT_NEAR(fits.done_ns(), 100 + 100, 1e-9);
  EXPECT_EQ(static_cast<const Counter*>(fits.sim.stats().find("gpu0.cu0.lds_bound_cycles"))->value(), 0u);
  TimedRig open(pipeline(1024), "program p\n  load 0 1024\n  compute 100 lds=25600\nend\n", Tick::ns(100));
  EXPECT_NEAR(open.done_ns(), 100 + 100, 1e-9);
}

// Two WGs on one CU each doing 4 K steps of `compute 100 lds=...`: the LDS port is the
// CU's, so their operand reads queue behind each other like their matrix work.
TEST(CuKStep, TheLdsPortIsSharedByTheCusWgs) {
  CuConfig cfg = pipeline(1024);
  cfg.lds_bytes_per_cycle = 64;
  // 12800 B at 64 B/cycle = 200 cycles a step: 8 steps in all on one port.
  ManyWgRig rig(cfg,
                "t3trace 1\nkernel k\nresources wfs=1 threads=64\nprogram p\n  loop k 4\n    compute 100 lds=12800\n"
                "  end\nend\nwgs 2\nwg 0 p\nwg 1 p\n");
  ASSERT_EQ(rig.done_ns.size(), 2u);
  EXPECT_NEAR(rig.done_ns.back(), 8 * 200, 1e-9);
}

// A K step's issue cycles (barrier, waits, first LDS reads: no matrix work) follow its
// matrix work. Alone, a WG pays them every step; a second WG on the CU fills them
// with its own matrix work, because they do not hold the matrix cores.
TEST(CuKStep, IssueCyclesFollowTheMatrixWorkAndAnotherWgFillsThem) {
  const std::string program = "program p\n  loop k 4\n    compute 100 issue=100\n  end\nend\n";
  TimedRig alone(pipeline(1024), program, Tick::ns(100));
  EXPECT_NEAR(alone.done_ns(), 4 * (100 + 100), 1e-9);
  EXPECT_EQ(static_cast<const Counter*>(alone.sim.stats().find("gpu0.cu0.issue_cycles"))->value(), 400u);
  EXPECT_EQ(static_cast<const Counter*>(alone.sim.stats().find("gpu0.cu0.matrix_busy_cycles"))->value(), 400u);

  ManyWgRig pair(pipeline(1024), "t3trace 1\nkernel k\nresources wfs=1 threads=64\n" + program + "wgs 2\nwg 0 p\nwg 1 p\n");
  // WG 0's matrix work at 0, 200, 400, 600 (done 800); WG 1's in between, at 100,
  // 300, 500, 700 (done 900): 8 steps in 900 cycles instead of 1600.
  ASSERT_EQ(pair.done_ns.size(), 2u);
  EXPECT_NEAR(pair.done_ns[0], 800, 1e-9);
  EXPECT_NEAR(pair.done_ns[1], 900, 1e-9);
}

// The compute clock (issue 46: the H200's SMs under a GEMM run at their power cap's
// clock): a matrix step's (operands from the LDS) matrix and issue cycles run at
// compute_clock, the loads and other compute at clock. 4 steps of 100 + 100 cycles at
// 500 MHz take 1,600 ns after the first load's 100 ns (later loads overlap the steps);
// at the CU clock (1 GHz) 800 ns.
TEST(CuKStep, MatrixStepsRunAtTheComputeClockAndLoadsAtTheCuClock) {
  const std::string program = "program p\n  loop k 4\n    load 0 1024\n    compute 100 lds=128 issue=100\n  end\nend\n";
  TimedRig boost(pipeline(1024), program, Tick::ns(100));
  EXPECT_NEAR(boost.done_ns(), 100 + 4 * 200, 1e-9);
  CuConfig capped = pipeline(1024);
  capped.compute_clock_hz = 500'000'000;
  TimedRig slow(capped, program, Tick::ns(100));
  EXPECT_NEAR(slow.done_ns(), 100 + 4 * 400, 1e-9);
  // The cycle counters stay in cycles.
  EXPECT_EQ(static_cast<const Counter*>(slow.sim.stats().find("gpu0.cu0.matrix_busy_cycles"))->value(), 400u);
  EXPECT_EQ(static_cast<const Counter*>(slow.sim.stats().find("gpu0.cu0.issue_cycles"))->value(), 400u);
  // A compute without LDS operands (a collective's reduce) keeps the CU clock.
  TimedRig vector(capped, "program p\n  loop k 4\n    load 0 1024\n    compute 100 issue=100\n  end\nend\n",
                  Tick::ns(100));
  EXPECT_NEAR(vector.done_ns(), 100 + 4 * 200, 1e-9);
}

// The GPU's SM clock at the power cap (models/cu/sm_clock.h): a capping matrix step
// puts it at the cap's clock from just after the step starts until `hold` after it ends;
// overlapping steps extend the stretch, a step after it has ended starts a new one.
TEST(SmClock, ACappingStepHoldsTheCapFromJustAfterItsStartUntilHoldAfterItsEnd) {
  SmClock clock(1'000'000'000, 500'000'000, Tick::ns(1000));
  EXPECT_FALSE(clock.capped(Tick::ns(0)));
  clock.note_capping_work(Tick::ns(100), Tick::ns(200));
  EXPECT_FALSE(clock.capped(Tick::ns(100)));  // whichever same-time event asks first
  EXPECT_TRUE(clock.capped(Tick::ns(100) + Tick(1)));
  EXPECT_TRUE(clock.capped(Tick::ns(1199)));
  EXPECT_FALSE(clock.capped(Tick::ns(1200)));
  EXPECT_EQ(clock.at(Tick::ns(150)).frequency_hz(), 500'000'000u);
  EXPECT_EQ(clock.at(Tick::ns(1200)).frequency_hz(), 1'000'000'000u);
  clock.note_capping_work(Tick::ns(150), Tick::ns(400));  // overlaps: extends to 1400
  EXPECT_TRUE(clock.capped(Tick::ns(1399)));
  EXPECT_FALSE(clock.capped(Tick::ns(1400)));
  clock.note_capping_work(Tick::ns(2000), Tick::ns(2100));  // after the stretch: a new one
  EXPECT_FALSE(clock.capped(Tick::ns(1500)));
  EXPECT_FALSE(clock.capped(Tick::ns(2000)));
  EXPECT_TRUE(clock.capped(Tick::ns(2001)));
  EXPECT_FALSE(clock.capped(Tick::ns(3100)));
}

// NVLink traffic under the cap (models/cu/sm_clock.h): while the port has carried
// traffic within `hold`, the cap's clock is the link-busy one; without capping work the
// SMs keep their boost clock, traffic or not.
TEST(SmClock, LinkTrafficLowersTheCapsClockWhileItHolds) {
  SmClock clock(1'000'000'000, 500'000'000, Tick::ns(1000), 400'000'000);
  clock.note_link_traffic(Tick::ns(50));
  EXPECT_EQ(clock.at(Tick::ns(60)).frequency_hz(), 1'000'000'000u) << "no capping work: boost";
  EXPECT_EQ(clock.cap_clock(Tick::ns(60)).frequency_hz(), 400'000'000u);
  clock.note_capping_work(Tick::ns(100), Tick::ns(200));  // capped until 1,200
  EXPECT_EQ(clock.at(Tick::ns(150)).frequency_hz(), 400'000'000u);
  EXPECT_EQ(clock.at(Tick::ns(1049)).frequency_hz(), 400'000'000u);
  EXPECT_EQ(clock.at(Tick::ns(1050)).frequency_hz(), 500'000'000u) << "the traffic's hold has passed";
  EXPECT_EQ(clock.cap_clock(Tick::ns(1100)).frequency_hz(), 500'000'000u);
  clock.note_link_traffic(Tick::ns(1100));  // busy again until 2,100
  EXPECT_EQ(clock.at(Tick::ns(1150)).frequency_hz(), 400'000'000u);
  EXPECT_EQ(clock.at(Tick::ns(1250)).frequency_hz(), 1'000'000'000u) << "the cap's hold has passed";
  SmClock same(1'000'000'000, 500'000'000, Tick::ns(1000));
  same.note_link_traffic(Tick::ns(0));
  EXPECT_EQ(same.cap_clock(Tick::ns(10)).frequency_hz(), 500'000'000u) << "no link-busy clock: the cap's";
}

// Two CUs of one GPU sharing its SM clock: cu0 runs `matrix_program` (or nothing), cu1
// `program` from `start`, against a FakeMemory of 10 ns.
struct SharedClockRig {
  SharedClockRig(const CuConfig& cfg, const std::string& matrix_program, const std::string& program, Tick start)
      : memory(sim),
        clock(cfg.clock_hz, cfg.compute_clock_hz, cfg.power_cap_hold),
        cu0(root, "cu0", cfg, memory, flags),
        cu1(root, "cu1", cfg, memory, flags) {
    memory.latency = Tick::ns(10);
    cu0.share_sm_clock(clock);
    cu1.share_sm_clock(clock);
    cu1.set_on_wg_done([this](const WgLaunch&) { done = sim.now(); });
    if (!matrix_program.empty()) {
      matrix = parse_trace("t3trace 1\nkernel m\n" + matrix_program + "wgs 1\nwg 0 p\n", "test");
      WgLaunch wg;
      wg.trace = &matrix;
      cu0.launch(wg);
    }
    other = parse_trace("t3trace 1\nkernel k\nresources wfs=1 threads=64\n" + program + "wgs 1\nwg 0 p\n", "test");
    WgLaunch wg;
    wg.trace = &other;
    cu1.launch(wg, start);
    sim.events().run();
  }
  double done_ns() const { return static_cast<double>(done.ps()) / 1000.0; }

  Simulator sim{1};
  Component root{sim, "gpu0"};
  FlagTable flags;
  FakeMemory memory;
  SmClock clock;
  KernelTrace matrix, other;
  ComputeUnit cu0, cu1;
  Tick done;
};

// While cu0 runs a GEMM's matrix steps (and for the hold after), cu1's port-bound loads
// and its compute run at the cap's clock (500 MHz: twice the time); once the hold has
// passed, or beside a kernel that draws too little power (boost), at the boost clock.
TEST(CuKStep, WhileAnotherCuRunsMatrixStepsThisCusDataPortRunsAtTheCapsClock) {
  CuConfig cfg = pipeline(1024, 0, 64);
  cfg.compute_clock_hz = 500'000'000;
  cfg.power_cap_hold = Tick::us(10);
  const std::string gemm = "resources wfs=1 threads=64\nprogram p\n  loop k 4\n    compute 100 lds=128 issue=100\n  end\nend\n";
  const std::string copy = "program p\n  load 0 65536\n  compute 1\nend\n";
  // Alone: 64 KiB at 64 B per 1 ns cycle after the first data (10 ns), then 1 cycle.
  EXPECT_NEAR(SharedClockRig(cfg, "", copy, Tick()).done_ns(), 10 + 1024 + 1, 1e-9);
  // Beside the matrix steps (0-1,600 ns, capped until 11,600): 2 ns cycles.
  EXPECT_NEAR(SharedClockRig(cfg, gemm, copy, Tick()).done_ns(), 10 + 2048 + 2, 1e-9);
  // Started after the hold: boost again.
  EXPECT_NEAR(SharedClockRig(cfg, gemm, copy, Tick::us(12)).done_ns(), 12000 + 10 + 1024 + 1, 1e-9);
  // A boost_clock kernel does not cap the GPU.
  const std::string cool = "resources wfs=1 threads=64 boost=1\nprogram p\n  loop k 4\n    compute 100 lds=128 issue=100\n"
                           "  end\nend\n";
  EXPECT_NEAR(SharedClockRig(cfg, cool, copy, Tick()).done_ns(), 10 + 1024 + 1, 1e-9);
}

std::string cu_error(const std::string& yaml) {
  try {
    ConfigTree tree = ConfigTree::parse(yaml, "sys.yaml");
    ResolvedConfig resolved;
    ConfigNode root(&tree.root(), "", &resolved);
    read_cu_config(root.child("cu"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CuLoadPathConfig, BadValuesNameFileLineAndKey) {
  EXPECT_THAT(cu_error("cu:\n  load_request_bytes: lots\n"), ::testing::HasSubstr("sys.yaml:2: cu.load_request_bytes:"));
  EXPECT_THAT(cu_error("cu:\n  max_inflight_load_byte: 4KiB\n"),
              ::testing::HasSubstr("did you mean 'max_inflight_load_bytes'?"));
  EXPECT_THAT(cu_error("cu:\n  load_latency: -3\n"), ::testing::HasSubstr("sys.yaml:2: cu.load_latency:"));
  EXPECT_THAT(cu_error("cu:\n  lds_bytes_per_cycle: fast\n"), ::testing::HasSubstr("sys.yaml:2: cu.lds_bytes_per_cycle:"));
  EXPECT_THAT(cu_error("cu:\n  store_bytes_per_cycle: -32\n"), ::testing::HasSubstr("sys.yaml:2: cu.store_bytes_per_cycle:"));
  EXPECT_THAT(cu_error("cu:\n  store_byte_per_cycle: 32\n"), ::testing::HasSubstr("did you mean 'store_bytes_per_cycle'?"));
  EXPECT_THAT(cu_error("cu:\n  clock: 1GHz\n  compute_clock: 1.5GHz\n"),
              ::testing::HasSubstr("sys.yaml:3: cu.compute_clock: expected at most `clock` (1000000000 Hz)"));
  EXPECT_THAT(cu_error("cu:\n  compute_clock: 0Hz\n"), ::testing::HasSubstr("sys.yaml:2: cu.compute_clock:"));
  EXPECT_THAT(cu_error("cu:\n  power_cap_hold: 74\n"), ::testing::HasSubstr("sys.yaml:2: cu.power_cap_hold:"));
  EXPECT_THAT(cu_error("cu:\n  power_cap_hold: -1ms\n"), ::testing::HasSubstr("sys.yaml:2: cu.power_cap_hold:"));
  EXPECT_THAT(cu_error("cu:\n  power_cap_hol: 1ms\n"), ::testing::HasSubstr("did you mean 'power_cap_hold'?"));
  EXPECT_THAT(cu_error("cu:\n  clock: 1GHz\n  compute_clock: 800MHz\n  link_busy_compute_clock: 900MHz\n"),
              ::testing::HasSubstr("sys.yaml:4: cu.link_busy_compute_clock: expected at most `compute_clock`"));
  EXPECT_THAT(cu_error("cu:\n  link_busy_compute_clock: slow\n"), ::testing::HasSubstr("sys.yaml:2: cu.link_busy_compute_clock:"));
  EXPECT_THAT(cu_error("cu:\n  flag_latency: 256\n"), ::testing::HasSubstr("sys.yaml:2: cu.flag_latency:"));
  EXPECT_THAT(cu_error("cu:\n  fence_latency: -1ns\n"), ::testing::HasSubstr("sys.yaml:2: cu.fence_latency:"));
  EXPECT_THAT(cu_error("cu:\n  fence_latncy: 1ns\n"), ::testing::HasSubstr("did you mean 'fence_latency'?"));
  EXPECT_THAT(cu_error("cu:\n  remote_store_wire_ratio: 0.8\n"), ::testing::HasSubstr("sys.yaml:2: cu.remote_store_wire_ratio:"));
  EXPECT_THAT(cu_error("cu:\n  remote_store_wire_ratio: 1.23\n"),
              ::testing::HasSubstr("sys.yaml:2: cu.remote_store_wire_ratio: expected a multiple of 0.05, got 1.23"));
  EXPECT_THAT(cu_error("cu:\n  remote_store_wire_ratio: 3.95\n"),
              ::testing::HasSubstr("sys.yaml:2: cu.remote_store_wire_ratio: 3.95 with LL128's lines does not fit"));
  EXPECT_EQ(cu_error("cu:\n  flag_latency: 256ns\n  fence_latency: 576ns\n  remote_store_wire_ratio: 1.2\n"), "no error");
  EXPECT_EQ(cu_error("cu:\n  load_request_bytes: 1KiB\n  max_inflight_load_bytes: 16KiB\n  load_bytes_per_cycle: 64\n"
                     "  load_latency: 20\n  lds_bytes_per_cycle: 128\n  store_bytes_per_cycle: 32\n"),
            "no error");
}

// The load path's stages alone (models/cu/load_path.h). LoadRoom: a request that does
// not fit waits, its slot once, oldest first; one larger than the whole goes alone when
// nothing is in flight; freeing room with slots waiting counts the stall's cycles and
// hands them back in order.
TEST(LoadRoom, RequestsWaitForRoomOldestFirstAndTheStallIsCounted) {
  TimeWeighted in_flight("inflight_load_bytes", "bytes", "", 64, 4);
  Counter stalls("load_room_stalls", "requests", ""), stall_cycles("load_room_stall_cycles", "cycles", "");
  LoadRoom room(256, in_flight, stalls, stall_cycles);
  const ClockDomain clock(1'000'000'000);  // 1 ns cycles
  EXPECT_FALSE(room.must_wait(1024));  // nothing in flight: even more than the whole goes
  room.hold(200, Tick::ns(0));
  EXPECT_FALSE(room.must_wait(56));
  EXPECT_TRUE(room.must_wait(57));
  EXPECT_EQ(room.freed(Tick::ns(1), clock), nullptr);  // nobody waits: nothing counted
  room.wait(3, Tick::ns(2));
  room.wait(1, Tick::ns(4));
  room.wait(3, Tick::ns(5));  // registered once
  EXPECT_EQ(stalls.value(), 2u);
  EXPECT_TRUE(room.waiting(1));
  EXPECT_FALSE(room.waiting(2));
  room.release(200, Tick::ns(10));
  EXPECT_EQ(room.held(), 0u);
  std::vector<std::uint32_t>* waiting = room.freed(Tick::ns(10), clock);
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(*waiting, (std::vector<std::uint32_t>{3, 1}));
  EXPECT_EQ(stall_cycles.value(), 8u);  // since the first waiter, at 2 ns
  waiting->clear();                     // the CU retried both, and both went
  EXPECT_EQ(room.waiters(), 0u);
  LoadRoom unbounded(0, in_flight, stalls, stall_cycles);
  unbounded.hold(1ULL << 40, Tick::ns(11));
  EXPECT_FALSE(unbounded.must_wait(1ULL << 40));
}

// DataPort: one transfer at a time, each from when the one before it ended (or from
// when it reaches the port, if later).
TEST(DataPort, TransfersCrossOneAfterAnother) {
  DataPort port;
  EXPECT_FALSE(port.busy(Tick::ns(0)));
  EXPECT_EQ(port.transfer(Tick::ns(10), Tick::ns(4)), Tick::ns(14));
  EXPECT_TRUE(port.busy(Tick::ns(13)));
  EXPECT_EQ(port.transfer(Tick::ns(11), Tick::ns(4)), Tick::ns(18));  // queued behind the first
  EXPECT_EQ(port.free_at(), Tick::ns(18));
  EXPECT_FALSE(port.busy(Tick::ns(18)));
  EXPECT_EQ(port.transfer(Tick::ns(30), Tick::ns(2)), Tick::ns(32));  // idle port: from its arrival
}

}  // namespace
}  // namespace t3sim
