// The memory controller against a real HBM channel: exact latencies from the timing
// parameters, FR-FCFS order, write watermarks, same-address ordering, back-pressure,
// arbitration between streams and tick-on-demand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include <algorithm>
#include <map>

#include "models/hbm/hbm_channel.h"
#include "models/mc/address_map.h"
#include "models/mc/memory_controller.h"
#include "sim/config.h"
#include "sim/error.h"
#include "sim/simulator.h"

namespace t3sim {
namespace {

// Records responses in completion order.
class Recorder final : public MemClient {
 public:
  explicit Recorder(Simulator& sim) : sim_(sim) {}
  void on_mem_response(MemRequest&& r) override {
    done_at[r.tag] = sim_.now();
    order.push_back(r.tag);
    data[r.tag] = std::move(r.data);
  }
  void on_mem_retry() override { ++retries; }
  std::map<std::uint64_t, Tick> done_at;
  std::map<std::uint64_t, Payload> data;
  std::vector<std::uint64_t> order;
  int retries = 0;

 private:
  Simulator& sim_;
};

HbmConfig one_channel() {
  HbmConfig h;  // T3 Table 1 HBM2 timings (hbm_config.h defaults), one channel
  h.channels = 1;
  h.refresh = false;
  return h;
}

struct Rig {
  explicit Rig(McConfig mc = {}, HbmConfig hbm = one_channel())
      : hbm_cfg(hbm),
        map(AddressMapConfig{"ro-ba-bg-co-ch", 256}, hbm_cfg),
        root(sim, "gpu0"),
        dram(root, "hbm0", hbm_cfg),
        ctrl(root, "mc0", mc, dram, map, 0),
        client(sim) {}

  // An address in bank (group g, bank b), row r, column c (32 B accesses).
  std::uint64_t addr(std::uint32_t g, std::uint32_t b, std::uint32_t r, std::uint32_t c = 0) const {
    return map.encode(DecodedAddress{0, BankAddress{g, b, r, c}});
  }
  void send(std::uint64_t tag, MemOp op, std::uint64_t address, Stream s = Stream::kCompute,
            std::uint32_t bytes = 32, Payload data = {}) {
    MemRequest r;
    r.op = op;
    r.stream = s;
    r.address = address;
    r.bytes = bytes;
    r.tag = tag;
    r.client = &client;
    r.created = sim.now();
    r.data = std::move(data);
    ASSERT_TRUE(ctrl.can_accept(r));
    ctrl.accept(std::move(r));
  }
  std::uint64_t ns(std::uint64_t tag) const { return client.done_at.at(tag).ps() / 1000; }

  Simulator sim{1};
  HbmConfig hbm_cfg;
  AddressMap map;
  Component root;
  HbmChannel dram;
  MemoryController ctrl;
  Recorder client;
};

TEST(MemoryController, ClosedBankReadLatencyIsActivatePlusColumnPlusResponse) {
  Rig rig;
  rig.send(1, MemOp::kRead, rig.addr(0, 0, 5));
  rig.sim.run();
  const HbmTimings t = rig.hbm_cfg.timing;
  // Arrives at cycle 0: admitted and ACT at 0, RD at tRCD, data done at +tCL+tBL, response +10.
  EXPECT_EQ(rig.ns(1), t.tRCD + t.tCL + t.tBL + 10u);
}

TEST(MemoryController, RowHitIsFasterThanRowConflict) {
  Rig rig;
  rig.send(1, MemOp::kRead, rig.addr(0, 0, 5));
  rig.sim.run();
  const Tick start = rig.sim.now();
  rig.send(2, MemOp::kRead, rig.addr(0, 0, 5, 1));  // same row: a hit
  rig.sim.run();
  const std::uint64_t hit = (rig.client.done_at[2] - start).ps() / 1000;
  const Tick start3 = rig.sim.now();
  rig.send(3, MemOp::kRead, rig.addr(0, 0, 6));  // other row: PRE + ACT + RD
  rig.sim.run();
  const std::uint64_t conflict = (rig.client.done_at[3] - start3).ps() / 1000;
  const HbmTimings t = rig.hbm_cfg.timing;
  EXPECT_LE(hit, t.tCL + t.tBL + 10u + 1);
  EXPECT_GE(conflict, hit + t.tRP + t.tRCD);
}

TEST(MemoryController, FrFcfsServesAYoungerRowHitBeforeAnOlderConflict) {
  Rig rig;
  // 1 opens row 5; 2 (older) wants row 9 of the same bank, 3 (younger) row 5. The
  // bank cannot close before tRAS anyway, so all three are queued when it could.
  rig.send(1, MemOp::kRead, rig.addr(0, 0, 5));
  rig.send(2, MemOp::kRead, rig.addr(0, 0, 9));
  rig.send(3, MemOp::kRead, rig.addr(0, 0, 5, 3));
  rig.sim.run();
  EXPECT_THAT(rig.client.order, ::testing::ElementsAre(1, 3, 2));
}

// The same three requests under fcfs: the older conflict goes first, and the younger
// hit waits for it (PRE, ACT of row 9, then row 5 opened again).
TEST(MemoryController, FcfsServesInArrivalOrderWhereFrFcfsPassesARowHitAhead) {
  McConfig mc;
  mc.scheduler = "fcfs";
  Rig rig(mc);
  rig.send(1, MemOp::kRead, rig.addr(0, 0, 5));
  rig.send(2, MemOp::kRead, rig.addr(0, 0, 9));
  rig.send(3, MemOp::kRead, rig.addr(0, 0, 5, 3));
  rig.sim.run();
  EXPECT_THAT(rig.client.order, ::testing::ElementsAre(1, 2, 3));
  const HbmTimings t = rig.hbm_cfg.timing;
  EXPECT_GE(rig.ns(3), rig.ns(2) + t.tRP + t.tRCD);  // 3's row was closed under it
}

// Many reads over a few banks and rows: fcfs completes them in arrival order (each
// read is one column command, issued after every older one's), FR-FCFS does not.
std::vector<std::uint64_t> completion_order(const std::string& scheduler) {
  McConfig mc;
  mc.scheduler = scheduler;
  Rig rig(mc);
  std::uint64_t x = 7;
  for (std::uint64_t tag = 0; tag < 24; ++tag) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    rig.send(tag, MemOp::kRead, rig.addr(0, static_cast<std::uint32_t>(x >> 62), static_cast<std::uint32_t>(x >> 60 & 1),
                                         static_cast<std::uint32_t>(tag % 8)));
  }
  rig.sim.run();
  return rig.client.order;
}

TEST(MemoryController, FcfsNeverReordersFrFcfsDoes) {
  const std::vector<std::uint64_t> fcfs = completion_order("fcfs");
  ASSERT_EQ(fcfs.size(), 24u);
  EXPECT_TRUE(std::is_sorted(fcfs.begin(), fcfs.end()));
  const std::vector<std::uint64_t> fr_fcfs = completion_order("fr-fcfs");
  ASSERT_EQ(fr_fcfs.size(), 24u);
  EXPECT_FALSE(std::is_sorted(fr_fcfs.begin(), fr_fcfs.end()));
}

TEST(MemoryController, SchedulerRegistryAndConfig) {
  std::vector<std::string> names;
  for (const RegistryEntry& entry : scheduler_types()) {
    names.push_back(entry.name);
    EXPECT_FALSE(entry.description.empty()) << entry.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fcfs", "fr-fcfs"}));
  auto read = [](const std::string& yaml) {
    ConfigTree tree = ConfigTree::parse(yaml, "sys.yaml");
    ResolvedConfig resolved;
    ConfigNode top(&tree.root(), "", &resolved);
    return read_mc_config(top.child("mc"));
  };
  EXPECT_EQ(read("mc: {}\n").scheduler, "fr-fcfs");
  EXPECT_EQ(read("mc:\n  scheduler: fcfs\n").scheduler, "fcfs");
  try {
    read("mc:\n  scheduler: frfcfs\n");
    ADD_FAILURE() << "a bad scheduler name was accepted";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "sys.yaml:2: mc.scheduler: expected one of fcfs, fr-fcfs; got 'frfcfs' "
                           "(did you mean 'fr-fcfs'?)");
  }
}

TEST(MemoryController, WritesWaitForTheHighWatermarkWhileReadsArePending) {
  McConfig mc;
  mc.write_high_watermark = 4;
  mc.write_low_watermark = 1;
  // Reads to 8 rows of one bank (each a row conflict: slow), then `writes` writes.
  auto run = [&](std::uint64_t writes) {
    Rig rig(mc);
    for (std::uint64_t i = 0; i < 8; ++i) rig.send(i, MemOp::kRead, rig.addr(0, 1, static_cast<std::uint32_t>(i)));
    for (std::uint64_t i = 0; i < writes; ++i)
      rig.send(100 + i, MemOp::kWrite, rig.addr(1, 0, 1, static_cast<std::uint32_t>(i)));
    rig.sim.run();
    Tick last_read, first_write = Tick::max();
    for (std::uint64_t i = 0; i < 8; ++i) last_read = std::max(last_read, rig.client.done_at.at(i));
    for (std::uint64_t i = 0; i < writes; ++i) first_write = std::min(first_write, rig.client.done_at.at(100 + i));
    return first_write < last_read;
  };
  EXPECT_FALSE(run(3));  // below the watermark: writes wait for the reads
  EXPECT_TRUE(run(4));   // at the watermark: writes drain ahead of the pending reads
}

TEST(MemoryController, OpensTheOtherQueuesRowWhileTheActiveQueueWaits) {
  Rig rig;
  // A read to a closed bank (ACT, then tRCD before its RD) and, below the write
  // watermark, a write to another bank group's closed row.
  rig.send(1, MemOp::kRead, rig.addr(0, 1, 2));
  rig.send(100, MemOp::kWrite, rig.addr(1, 0, 1));
  // Before the read's column command (cycle tRCD = 12), the idle command slots open
  // the write's row too: ACT/PRE need no bus turnaround.
  rig.sim.run(Tick::ns(rig.hbm_cfg.timing.tRCD - 1));
  const Stat* activates = rig.sim.stats().find("gpu0.hbm0.activates");
  ASSERT_NE(activates, nullptr);
  EXPECT_EQ(activates->flat(rig.sim.now()).front().second, 2);
  rig.sim.run();
  EXPECT_EQ(rig.client.order.size(), 2u);
}

TEST(MemoryController, AWriteWaitingPastTheDrainTimeoutIsServed) {
  McConfig mc;
  mc.write_drain_timeout = 100;
  Rig rig(mc);
  // One write below the watermark, then reads to 12 rows of one bank (each ~40 cycles).
  rig.send(100, MemOp::kWrite, rig.addr(1, 0, 1));
  for (std::uint64_t i = 0; i < 12; ++i) rig.send(i, MemOp::kRead, rig.addr(0, 1, static_cast<std::uint32_t>(i)));
  rig.sim.run();
  // Served after about the timeout, long before the last read.
  EXPECT_LT(rig.client.done_at.at(100), rig.client.done_at.at(11));
  EXPECT_GE(rig.ns(100), 100u);
  EXPECT_LE(rig.ns(100), 100u + 60u);
}

// What a write past the timeout does. An old write to row 1 of bank (1, 0), whose row 2
// a stream of reads keeps open, and, before the old write times out, eight young writes
// to an open row of bank (2, 0). "drain" (the default) makes the write queue the active
// one until no write is that old, FR-FCFS within it: the young row hits go first, then
// the old write's PRE, ACT and column, and the reads wait for all of it. "oldest-first"
// lets the reads go on: the old write issues when its bank allows (here after the
// reads' row hits, which the guard does not cut short: a write that waits on a bank the
// reads keep open waits for their stream to pause, or for the high watermark), and the
// young writes wait for their own timeout.
TEST(MemoryController, OldestFirstLetsTheReadsGoOnWhereADrainServesEveryRowHitFirst) {
  struct Order {
    std::uint64_t old_write_ns, first_young_ns, last_read_ns;
  };
  auto run = [](const std::string& action) {
    McConfig mc;
    mc.write_drain_timeout = 100;
    mc.write_timeout_action = action;
    Rig rig(mc);
    rig.send(100, MemOp::kWrite, rig.addr(1, 0, 1));
    for (std::uint32_t c = 0; c < 30; ++c) rig.send(c, MemOp::kRead, rig.addr(1, 0, 2, c));
    rig.send(99, MemOp::kRead, rig.addr(2, 0, 3));  // opens the young writes' row
    rig.sim.run(Tick::ns(60));
    for (std::uint32_t c = 1; c <= 8; ++c) rig.send(100 + c, MemOp::kWrite, rig.addr(2, 0, 3, c));
    for (std::uint32_t c = 0; c < 30; ++c) rig.send(30 + c, MemOp::kRead, rig.addr(1, 0, 2, c));
    rig.sim.run();
    return Order{rig.ns(100), rig.ns(101), rig.ns(59)};
  };
  const Order drain = run("drain"), oldest = run("oldest-first");
  EXPECT_LT(drain.first_young_ns, drain.old_write_ns);  // the young row hits went first
  EXPECT_LT(drain.old_write_ns, drain.last_read_ns);    // and the old write before the reads
  EXPECT_LT(oldest.last_read_ns, drain.last_read_ns);   // oldest-first: the reads went on
  EXPECT_GE(oldest.first_young_ns, 60u + 100u);         // the young writes waited for their timeout
  EXPECT_LE(oldest.old_write_ns, oldest.last_read_ns + 60u);  // the old write right after the reads' row
}

TEST(MemoryController, SameAddressRequestsKeepTheirOrderAndValues) {
  Rig rig;
  const std::uint64_t a = rig.addr(2, 1, 7);
  rig.send(1, MemOp::kWrite, a, Stream::kCompute, 32, Payload{{100}});
  rig.send(2, MemOp::kUpdate, a, Stream::kCommunication, 32, Payload{{5}});
  rig.send(3, MemOp::kUpdate, a, Stream::kCompute, 32, Payload{{7}});
  // Admission (one per cycle) fixes the memory order; the read comes after all three.
  rig.sim.run(Tick::ns(10));
  rig.send(4, MemOp::kRead, a, Stream::kCompute, 32, Payload{{0}});
  // Reads of other rows that FR-FCFS would rather serve do not pass it.
  rig.send(5, MemOp::kRead, rig.addr(2, 1, 7, 1));
  rig.sim.run();
  EXPECT_EQ(rig.client.data[4].words, std::vector<std::uint64_t>{112});
  EXPECT_EQ(rig.dram.peek(a, 32).words, std::vector<std::uint64_t>{112});
}

TEST(MemoryController, ManyUpdatesFromBothStreamsAreAllApplied) {
  Rig rig;
  const std::uint64_t a = rig.addr(3, 3, 3);
  std::uint64_t expected = 0, tag = 0;
  // Interleaved with reads of other rows so the scheduler has reasons to reorder.
  for (int round = 0; round < 20; ++round) {
    for (Stream s : {Stream::kCompute, Stream::kCommunication}) {
      const std::uint64_t v = 1000003ULL * (tag + 1);
      expected += v;
      rig.send(tag++, MemOp::kUpdate, a, s, 32, Payload{{v}});
    }
    rig.send(tag++, MemOp::kRead, rig.addr(3, 3, 9, static_cast<std::uint32_t>(round)));
    rig.sim.run();
  }
  EXPECT_EQ(rig.dram.peek(a, 32).words, std::vector<std::uint64_t>{expected});
}

TEST(MemoryController, IngressBackPressureAndRetry) {
  McConfig mc;
  mc.ingress_queue_size = 2;
  mc.read_queue_size = 1;
  Rig rig(mc);
  // Fill the read queue (1) and the ingress (2) without letting time pass.
  MemRequest r;
  r.op = MemOp::kRead;
  r.bytes = 32;
  r.client = &rig.client;
  for (std::uint64_t i = 0; i < 3; ++i) {
    r.tag = i;
    r.address = rig.addr(0, 0, static_cast<std::uint32_t>(i));  // conflicts: slow
    ASSERT_TRUE(rig.ctrl.can_accept(r));
    rig.ctrl.accept(MemRequest(r));
    if (i == 0) rig.sim.run(rig.sim.now() + Tick::ns(1));  // admitted into the read queue
  }
  r.tag = 9;
  EXPECT_FALSE(rig.ctrl.can_accept(r));
  // Communication has its own ingress queue.
  r.stream = Stream::kCommunication;
  EXPECT_TRUE(rig.ctrl.can_accept(r));
  rig.ctrl.wait_for_space(&rig.client);
  rig.ctrl.wait_for_space(&rig.client);  // twice = once
  rig.sim.run();
  EXPECT_EQ(rig.client.retries, 1);
  EXPECT_EQ(rig.client.order.size(), 3u);
}

TEST(MemoryController, SleepsWhenIdle) {
  Rig rig;
  rig.send(1, MemOp::kRead, rig.addr(0, 0, 1));
  rig.sim.run();
  const std::uint64_t events = rig.sim.events().dispatched();
  EXPECT_LT(events, 20u);  // a handful of ticks, not one per cycle of the latency
  EXPECT_TRUE(rig.ctrl.idle());
  EXPECT_EQ(rig.sim.events().pending(), 0u);
}

TEST(MemoryController, SkipsTheCyclesInWhichNothingCanIssue) {
  // Eight reads of one row of one bank: after the ACT the column commands wait tRCD,
  // then tCCDL apart; the controller ticks only at the cycles that issue something,
  // and the reads complete exactly as a tick per cycle would have them.
  Rig rig;
  for (std::uint64_t i = 0; i < 8; ++i) rig.send(i, MemOp::kRead, rig.addr(0, 0, 5, static_cast<std::uint32_t>(i)));
  rig.sim.run();
  const HbmTimings t = rig.hbm_cfg.timing;
  ASSERT_EQ(rig.client.order.size(), 8u);
  for (std::uint64_t i = 0; i < 8; ++i) EXPECT_EQ(rig.ns(i), t.tRCD + i * t.tCCDL + t.tCL + t.tBL + 10u) << i;
  // Ticks at the 8 admissions (the ACT with the first) and the 8 column commands, and 8
  // responses: 24 events and the first accept's wake-up. A tick per cycle after progress
  // makes 32 (one at cycle 8, and the 7 cycles between the column commands).
  EXPECT_LE(rig.sim.events().dispatched(), 25u);
}

TEST(MemoryController, AClientWaitingWithAnEmptyIngressIsToldAtTheNextCycleEvenIfThatCycleWasSkipped) {
  // The L2 may wait for a controller whose ingress is empty (same-line order across its
  // streams); the next tick tells it, even one that has nothing to issue.
  Rig rig;
  rig.send(1, MemOp::kRead, rig.addr(0, 0, 5));
  rig.sim.run(Tick::zero());  // cycle 0: admitted, ACT; the RD waits tRCD, so cycles 1.. are skipped
  EXPECT_EQ(rig.client.retries, 0);
  rig.ctrl.wait_for_space(&rig.client);
  rig.sim.run(Tick::ns(1));  // the tick of cycle 1 runs after all
  EXPECT_EQ(rig.client.retries, 1);
  rig.sim.run();
  const HbmTimings t = rig.hbm_cfg.timing;
  EXPECT_EQ(rig.ns(1), t.tRCD + t.tCL + t.tBL + 10u);
}

TEST(MemoryController, RefreshIsIssuedEveryTrefi) {
  HbmConfig h = one_channel();
  h.refresh = true;
  Rig rig(McConfig{}, h);
  // Keep the controller busy for 10 refresh intervals with a slow trickle of reads.
  const std::uint64_t interval_ns = h.timing.tREFI;  // 1 GHz: cycles = ns
  std::uint64_t tag = 0;
  // (The controller sleeps between reads; refreshes due meanwhile are accounted when it wakes.)
  for (std::uint64_t t = 0; t < 10 * interval_ns; t += 500) {
    const std::uint64_t t_ = tag++;
    rig.sim.events().schedule_callback(Tick::ns(t), [&rig, t_] {
      rig.send(t_, MemOp::kRead, rig.addr(static_cast<std::uint32_t>(t_ % 4), 0, static_cast<std::uint32_t>(t_)));
    });
  }
  rig.sim.run();
  const auto* refreshes = rig.sim.stats().find("gpu0.hbm0.refreshes");
  ASSERT_NE(refreshes, nullptr);
  const double n = refreshes->flat(rig.sim.now()).front().second;
  EXPECT_GE(n, 9);
  EXPECT_LE(n, 11);
  EXPECT_EQ(rig.client.order.size(), tag);
}

// The arbiter decides admission: with MCA and a threshold of 2, communication
// requests never find more than 2 requests in the DRAM queues when admitted while
// compute is busy, while round-robin lets them fill it.
std::uint32_t max_comm_admission_occupancy(const std::string& arbiter) {
  McConfig mc;
  mc.arbiter.type = arbiter;
  mc.arbiter.threshold = 2;
  mc.arbiter.starvation_limit = 1'000'000;
  Rig rig(mc);
  std::uint64_t tag = 0;
  for (int i = 0; i < 24; ++i) {
    rig.send(tag++, MemOp::kRead, rig.addr(static_cast<std::uint32_t>(i % 4), 1, static_cast<std::uint32_t>(i)),
             Stream::kCompute);
    rig.send(1000 + tag++, MemOp::kRead, rig.addr(static_cast<std::uint32_t>(i % 4), 2, static_cast<std::uint32_t>(i)),
             Stream::kCommunication);
  }
  rig.sim.run();
  EXPECT_EQ(rig.client.order.size(), 48u);
  // The comm stream's occupancy histogram: the highest level it ever held.
  const TimeWeighted* occ = rig.ctrl.stream_stats(Stream::kCommunication).dram_queue_occupancy;
  return static_cast<std::uint32_t>(occ->max());
}

TEST(MemoryController, McaKeepsCommunicationOutOfAFullQueue) {
  EXPECT_LE(max_comm_admission_occupancy("mca"), 2u);
  EXPECT_GE(max_comm_admission_occupancy("round-robin"), 8u);
}

TEST(AddressMap, DecodeEncodeRoundTripAndInterleaving) {
  for (std::uint32_t channels : {32u, 192u}) {  // power of two, and six HBM3e stacks
    HbmConfig h;
    h.channels = channels;
    const AddressMap map(AddressMapConfig{"ro-co-ba-bg-ch", 256}, h);
    std::uint64_t x = 12345;
    for (int i = 0; i < 2000; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const std::uint64_t a = (x >> 20) % (h.channel_bytes() * channels) & ~std::uint64_t{31};
      const DecodedAddress d = map.decode(a);
      ASSERT_LT(d.channel, channels);
      ASSERT_EQ(map.encode(d), a) << channels << " " << a;
      ASSERT_EQ(map.channel(a), d.channel);
    }
    // Consecutive 256 B units visit every channel once, then the next bank group.
    std::vector<int> seen(channels, 0);
    for (std::uint64_t u = 0; u < channels; ++u) ++seen[map.channel(u * 256)];
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(channels));
    EXPECT_EQ(map.decode(0).bank.bank_group, 0u);
    EXPECT_EQ(map.decode(channels * 256).bank.bank_group, 1u);
    EXPECT_EQ(map.decode(255).bank.column, 7u);  // 8 accesses of 32 B per unit
  }
  // XOR hashing spreads a stride of channels x interleave (every row of a GEMM tile
  // with an 8 KiB row pitch) over all channels instead of one.
  HbmConfig h;
  const AddressMap hashed(AddressMapConfig{"ro-co-ba-bg-ch", 256, true}, h);
  const AddressMap plain(AddressMapConfig{"ro-co-ba-bg-ch", 256, false}, h);
  std::vector<int> hashed_hits(32, 0), plain_hits(32, 0);
  for (std::uint64_t r = 0; r < 64; ++r) {
    ++hashed_hits[hashed.channel(r * 8192)];
    ++plain_hits[plain.channel(r * 8192)];
  }
  EXPECT_EQ(std::count(plain_hits.begin(), plain_hits.end(), 64), 1);     // all on one channel
  EXPECT_EQ(std::count(hashed_hits.begin(), hashed_hits.end(), 2), 32);   // two on each
  HbmConfig six;
  six.channels = 192;
  EXPECT_THROW(AddressMap(AddressMapConfig{"ro-co-ch-ba-bg", 256}, six), std::invalid_argument);
}

// A channel's functional store is indexed by channel_local(): among one channel's
// addresses it is one-to-one, and an array spread over every channel fills each
// channel's local space densely (the first 1/channels of the array's size, unit by unit).
TEST(AddressMap, ChannelLocalAddressesAreDenseAndDistinctPerChannel) {
  for (const auto& [channels, order, hashed] : {std::tuple{32u, "ro-co-ba-bg-ch", true},
                                                std::tuple{32u, "ro-co-ba-bg-ch", false},
                                                std::tuple{32u, "ro-ch-co-ba-bg", true},
                                                std::tuple{192u, "ro-co-ba-bg-ch", true}}) {
    HbmConfig h;
    h.channels = channels;
    const AddressMap map(AddressMapConfig{order, 256, hashed}, h);
    const std::uint64_t array = std::uint64_t{channels} * 256 * 64;  // 64 units per channel
    std::vector<std::set<std::uint64_t>> units(channels);
    for (std::uint64_t a = 0; a < array; a += 32) {
      const std::uint64_t local = map.channel_local(a);
      EXPECT_EQ(local % 256, a % 256) << order;  // a unit stays contiguous
      units[map.channel(a)].insert(local / 256);
    }
    std::size_t distinct = 0;
    for (std::uint32_t c = 0; c < channels; ++c) {
      distinct += units[c].size();
      // Dense when the channel is the lowest field: units 0..63 of each channel.
      if (std::string(order).ends_with("-ch")) {
        EXPECT_EQ(units[c].size(), 64u) << order << " channel " << c;
        if (!units[c].empty()) {
          EXPECT_EQ(*units[c].rbegin(), 63u) << order << " channel " << c;
        }
      }
    }
    EXPECT_EQ(distinct, array / 256) << order;  // no two units of a channel share a local address
  }
}

}  // namespace
}  // namespace t3sim
