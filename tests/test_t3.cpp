// T3 (T3 §4): the tracker (indexing, tagging, threshold, fire exactly once, set
// full), the address-space configuration of the fused ring / direct reduce-scatter,
// and the fused RS on the full node model, checked functionally through the
// near-memory updates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "models/node/node.h"
#include "models/t3/t3_collective.h"
#include "models/tracker/tracker.h"
#include "sim/config.h"
#include "sim/simulator.h"
#include "tests/table1_node.h"
#include "trace/gemm.h"

namespace t3sim {
namespace {

// ---------------------------------------------------------------------------
// Tracker, on its own.

class FakeProgram final : public TrackerProgram {
 public:
  std::uint64_t expected = 256;  // bytes per region
  std::uint32_t untracked_wg = 999;
  std::vector<std::pair<std::uint32_t, std::uint8_t>> fired;
  std::uint64_t expected_bytes(std::uint32_t wg, std::uint8_t, std::uint64_t) const override {
    return wg == untracked_wg ? 0 : expected;
  }
  void on_region_ready(std::uint32_t wg, std::uint8_t wf) override { fired.emplace_back(wg, wf); }
};

class Waiter final : public AdmissionWaiter {
 public:
  int woken = 0;
  void on_admission_room() override { ++woken; }
};

struct TrackerBench {
  Simulator sim{1};
  Component root{sim, "gpu0"};
  TrackerConfig cfg;
  std::unique_ptr<Tracker> tracker;
  FakeProgram program;
  explicit TrackerBench(std::uint32_t sets = 4, std::uint32_t ways = 2,
                        SetFullPolicy set_full = SetFullPolicy::kOverflow) {
    cfg.sets = sets;
    cfg.ways = ways;
    cfg.set_full = set_full;
    tracker = std::make_unique<Tracker>(root, "tracker", cfg);
    tracker->program(&program);
  }
  std::uint64_t stat(const std::string& name) {
    const auto* c = dynamic_cast<const Counter*>(sim.stats().find("gpu0.tracker." + name));
    return c != nullptr ? c->value() : ~std::uint64_t{0};
  }
  static MemRequest write(std::uint32_t wg, std::uint8_t wf, std::uint64_t address, std::uint32_t bytes = 64,
                          MemOp op = MemOp::kUpdate) {
    MemRequest r;
    r.op = op;
    r.address = address;
    r.bytes = bytes;
    r.track.wg = wg;
    r.track.wf = wf;
    return r;
  }
};

TEST(Tracker, FiresExactlyOnceAtThreshold) {
  TrackerBench b;
  for (int i = 0; i < 3; ++i) b.tracker->on_admit(TrackerBench::write(5, 1, 0x1000 + 64 * i));
  // (Not run: a live entry left at the end is reported as a deadlock, by design.)
  EXPECT_EQ(b.sim.events().pending(), 0u);  // 192 of 256 bytes: nothing fires
  EXPECT_EQ(b.tracker->live_entries(), 1u);
  b.tracker->on_admit(TrackerBench::write(5, 1, 0x1000 + 192));
  b.sim.run();
  ASSERT_EQ(b.program.fired.size(), 1u);
  EXPECT_EQ(b.program.fired[0], std::make_pair(5u, std::uint8_t{1}));
  EXPECT_EQ(b.tracker->live_entries(), 0u);
  EXPECT_EQ(b.tracker->regions_completed(), 1u);
  // More than expected is an internal error (an update counted twice).
  b.tracker->on_admit(TrackerBench::write(5, 1, 0x1000, 192));
  EXPECT_THAT([&] { b.tracker->on_admit(TrackerBench::write(5, 1, 0x1000, 128)); }, testing::ThrowsMessage<InternalError>(testing::HasSubstr("counted")));
}

TEST(Tracker, WfsAndWgsAreCountedSeparately) {
  TrackerBench b(4, 4);
  b.program.expected = 128;
  // WG 1 and WG 5 share set 1 (5 mod 4); WF 0 and 1 of WG 1 are distinct tags.
  b.tracker->on_admit(TrackerBench::write(1, 0, 0x0));
  b.tracker->on_admit(TrackerBench::write(1, 1, 0x40));
  b.tracker->on_admit(TrackerBench::write(5, 0, 0x80));
  EXPECT_EQ(b.tracker->live_entries(), 3u);
  b.tracker->on_admit(TrackerBench::write(1, 0, 0x0));
  EXPECT_EQ(b.tracker->live_entries(), 2u);
  b.tracker->on_admit(TrackerBench::write(1, 1, 0x40));
  b.tracker->on_admit(TrackerBench::write(5, 0, 0x80));
  b.sim.run();
  ASSERT_EQ(b.program.fired.size(), 3u);
  EXPECT_EQ(b.program.fired[0], std::make_pair(1u, std::uint8_t{0}));
  EXPECT_EQ(b.program.fired[1], std::make_pair(1u, std::uint8_t{1}));
  EXPECT_EQ(b.program.fired[2], std::make_pair(5u, std::uint8_t{0}));
}

TEST(Tracker, ReadsUntaggedAndUnprogrammedAccessesAreNotCounted) {
  TrackerBench b;
  b.tracker->on_admit(TrackerBench::write(5, 0, 0, 256, MemOp::kRead));
  MemRequest untagged = TrackerBench::write(5, 0, 0, 256);
  untagged.track = TrackerTag{};  // untracked
  b.tracker->on_admit(untagged);
  b.tracker->on_admit(TrackerBench::write(b.program.untracked_wg, 0, 0, 256));
  b.sim.run();
  EXPECT_TRUE(b.program.fired.empty());
  EXPECT_EQ(b.tracker->live_entries(), 0u);
}

TEST(Tracker, StallPolicyHoldsNewTagsOfAFullSetUntilAnEntryFrees) {
  TrackerBench b(4, 2, SetFullPolicy::kStall);  // sets of two ways
  b.tracker->on_admit(TrackerBench::write(2, 0, 0));  // set 2
  b.tracker->on_admit(TrackerBench::write(6, 0, 0));  // set 2: full now
  EXPECT_TRUE(b.tracker->can_admit(TrackerBench::write(2, 0, 64)));   // has an entry
  EXPECT_TRUE(b.tracker->can_admit(TrackerBench::write(3, 0, 64)));   // other set
  EXPECT_FALSE(b.tracker->can_admit(TrackerBench::write(10, 0, 64)));  // set 2, new tag
  EXPECT_FALSE(b.tracker->can_admit(TrackerBench::write(2, 1, 64)));   // same WG, new WF
  Waiter w;
  b.tracker->wait_for_room(&w);
  b.tracker->wait_for_room(&w);  // twice = once
  b.tracker->on_admit(TrackerBench::write(2, 0, 64, 192));  // completes (2, 0)
  EXPECT_EQ(w.woken, 1);
  EXPECT_TRUE(b.tracker->can_admit(TrackerBench::write(10, 0, 64)));
  b.tracker->on_admit(TrackerBench::write(6, 0, 64, 192));
  b.sim.run();
  EXPECT_EQ(b.program.fired.size(), 2u);
}

TEST(Tracker, OverflowPolicyCountsAFullSetsNewRegionsInTheBackingTable) {
  TrackerBench b(4, 2);  // default: overflow
  b.tracker->on_admit(TrackerBench::write(2, 0, 0));  // set 2
  b.tracker->on_admit(TrackerBench::write(6, 0, 0));  // set 2: full now
  // Nothing is ever held: a new tag of the full set is admitted ...
  EXPECT_TRUE(b.tracker->can_admit(TrackerBench::write(10, 0, 0x100)));
  b.tracker->on_admit(TrackerBench::write(10, 0, 0x100, 64));
  EXPECT_EQ(b.tracker->overflowed_regions(), 1u);
  EXPECT_EQ(b.tracker->live_entries(), 2u);
  // ... and once the set has room, the overflowed region still counts in the table
  // (its bytes so far are there), while a new region takes the free way.
  b.tracker->on_admit(TrackerBench::write(2, 0, 64, 192));  // completes (2, 0): a way frees
  b.tracker->on_admit(TrackerBench::write(10, 0, 0x140, 192));  // the rest of (10, 0)
  b.tracker->on_admit(TrackerBench::write(14, 1, 0x200, 64));   // new: takes the free way
  EXPECT_EQ(b.tracker->live_entries(), 2u);
  EXPECT_EQ(b.tracker->overflowed_regions(), 1u);
  b.sim.run(Tick::ns(99));
  EXPECT_EQ(b.program.fired.size(), 1u);  // (10, 0)'s counts are still on their way
  b.sim.run(Tick::ns(101));
  ASSERT_EQ(b.program.fired.size(), 2u);
  EXPECT_EQ(b.program.fired[1], std::make_pair(10u, std::uint8_t{0}));
  EXPECT_EQ(b.tracker->overflowed_regions(), 0u);
  EXPECT_EQ(b.stat("overflow_regions"), 1u);
  EXPECT_EQ(b.stat("overflow_accesses"), 2u);
  EXPECT_EQ(b.stat("set_full_stalls"), 0u);
  b.tracker->on_admit(TrackerBench::write(6, 0, 64, 192));
  b.tracker->on_admit(TrackerBench::write(14, 1, 0x240, 192));
  b.sim.run();
  EXPECT_EQ(b.program.fired.size(), 4u);
}

TEST(Tracker, SizeIsTheT3Papers19KB) {
  TrackerBench b(256, 8);
  // 2048 entries x (4 + 3 + 48 + 21) bits = 19456 B (T3 §4.2.1: 19 KB).
  EXPECT_EQ(b.tracker->size_bytes(), 19456u);
}

// ---------------------------------------------------------------------------
// Address-space configuration.

GemmParams small_gemm(std::uint32_t gpus) {
  GemmParams g;
  g.m = 256 * gpus;  // one tile row per chunk ... times 2 below
  g.m *= 2;
  g.n = 512;
  g.k = 256;
  g.store_uncached = true;  // T3 §4.3: the output is allocated uncached ...
  g.store_update = true;    // ... and the GEMM's stores are updates
  return g;
}

TEST(AddressSpace, RingReduceScatterOnFourGpusMapsAsT3Figure11) {
  const KernelTrace trace = make_gemm_trace(small_gemm(4));  // 8 x 4 tiles, 32 WGs
  OutputRegions regions(trace);
  ASSERT_EQ(regions.num_wgs(), 32u);
  AddressSpace as(regions, 0);
  configure_ring_reduce_scatter(as, 4);
  // GPU 0: stage 1 (chunk 1) written straight to GPU 3; stages 2-3 (chunks 2, 3)
  // written locally and DMA-updated to GPU 3 once local + incoming updates are in;
  // stage 4 (chunk 0) only local: GPU 0's reduced result.
  EXPECT_EQ(as.mapping_of(8).kind, MapKind::kRemote);
  EXPECT_EQ(as.mapping_of(8).peer, 3u);
  EXPECT_EQ(as.remote_peer(15, 0), 3);
  for (std::uint32_t wg : {16u, 31u}) {
    EXPECT_EQ(as.mapping_of(wg).kind, MapKind::kDma) << wg;
    EXPECT_EQ(as.mapping_of(wg).peer, 3u);
    EXPECT_EQ(as.mapping_of(wg).op, MemOp::kUpdate);
    EXPECT_EQ(as.mapping_of(wg).updates_per_element, 2u);
  }
  EXPECT_EQ(as.mapping_of(0).kind, MapKind::kFinal);
  EXPECT_EQ(as.remote_peer(0, 0), -1);
  // Threshold = wf_tile_size x updates per element (4 WFs of a 256 x 128 FP16 tile).
  EXPECT_EQ(as.expected_bytes(16, 2), 64u * 128 * 2 * 2);
  EXPECT_EQ(as.expected_bytes(8, 0), 0u);  // remote-mapped: not tracked here
  // Staggered: GPU g starts with chunk g + 1.
  EXPECT_EQ(ring_first_wg(32, 4, 0), 8u);
  EXPECT_EQ(ring_first_wg(32, 4, 3), 0u);
}

// T3 §7.1: the all-gather reuses the ring's configuration with stores, no updates.
TEST(AddressSpace, AllGatherMapsStoresRingOrDirect) {
  const KernelTrace trace = make_gemm_trace(small_gemm(4));  // 32 WGs: chunks of 8
  OutputRegions regions(trace);
  AddressSpace ring(regions, 0);
  configure_ring_all_gather(ring, 4);
  for (std::uint32_t wg : {0u, 8u, 16u}) {  // own chunk 0, then chunks 1, 2 forwarded
    EXPECT_EQ(ring.mapping_of(wg).kind, MapKind::kDma) << wg;
    EXPECT_EQ(ring.mapping_of(wg).peer, 3u);
    EXPECT_EQ(ring.mapping_of(wg).op, MemOp::kWrite);
    EXPECT_EQ(ring.mapping_of(wg).updates_per_element, 1u);
  }
  EXPECT_EQ(ring.mapping_of(24).kind, MapKind::kFinal);  // chunk 3 arrives last (3 hops)
  EXPECT_EQ(ring.expected_bytes(24, 0), 64u * 128 * 2);  // one store per element
  AddressSpace direct(regions, 2);
  configure_direct_all_gather(direct, 4);
  EXPECT_EQ(direct.mapping_of(16).kind, MapKind::kDma);
  EXPECT_THAT(direct.mapping_of(16).peers, testing::ElementsAre(3u, 0u, 1u));
  for (std::uint32_t wg : {0u, 8u, 24u}) EXPECT_EQ(direct.mapping_of(wg).kind, MapKind::kFinal) << wg;
  EXPECT_THROW(direct.dma_map({0, 8}, std::vector<std::uint32_t>{1, 2}, MemOp::kWrite, 1), UserError);  // mapped
  AddressSpace self(regions, 1);
  EXPECT_THROW(self.dma_map({0, 8}, std::vector<std::uint32_t>{0, 1}, MemOp::kWrite, 1), UserError);  // to itself
}

TEST(AddressSpace, OverlapsAndBadRangesAreUserErrors) {
  const KernelTrace trace = make_gemm_trace(small_gemm(4));
  OutputRegions regions(trace);
  AddressSpace as(regions, 1);
  as.remote_map({0, 8}, 2);
  EXPECT_THROW(as.dma_map({4, 12}, 2, MemOp::kUpdate, 2), UserError);
  EXPECT_THROW(as.remote_map({8, 40}, 2), UserError);
  EXPECT_THROW(as.remote_map({8, 16}, 1), UserError);  // to itself
  EXPECT_THROW(chunk_wgs(30, 4, 0), UserError);
}

// ---------------------------------------------------------------------------
// The fused reduce-scatter on the node.


struct FusedRun {
  std::string error;
  std::uint64_t words = 0;
  Tick rs_done;
  std::uint64_t comm_reads = 0, comm_writes = 0, comm_updates = 0, compute_updates = 0;  // GPU 0's DRAM bytes
  std::uint64_t tracker_fires = 0, tracker_overflows = 0;
  bool all_done = true;
};

FusedRun run_fused(const NodeConfig& cfg, T3CollectiveParams p, const GemmParams& g) {
  Simulator sim(p.seed);
  Node node(sim, cfg);
  const KernelTrace trace = make_gemm_trace(g);
  T3Collective rs(node, trace, p);
  rs.preload();
  for (std::uint32_t gpu = 0; gpu < node.simulated_gpus(); ++gpu) {
    rs.start(gpu);
    if (!p.with_producer) continue;
    KernelLaunch k;
    k.trace = &trace;
    k.first_wg = rs.first_wg(gpu);
    k.routing = rs.routing(gpu);
    k.value_granule = p.values ? cfg.gpu.memory.hbm.value_granule : 0;
    node.gpu(gpu).launch(std::move(k));
  }
  sim.run();
  FusedRun r;
  for (std::uint32_t gpu = 0; gpu < node.simulated_gpus(); ++gpu) {
    r.all_done = r.all_done && rs.done(gpu);
    r.rs_done = std::max(r.rs_done, rs.finished(gpu));
  }
  r.words = rs.verify(r.error);
  const McStreamStats comm = node.gpu(0).memory().stream_totals(Stream::kCommunication);
  const McStreamStats comp = node.gpu(0).memory().stream_totals(Stream::kCompute);
  r.comm_reads = comm.bytes[index(MemOp::kRead)];
  r.comm_updates = comm.bytes[index(MemOp::kUpdate)];
  r.comm_writes = comm.bytes[index(MemOp::kWrite)];
  r.compute_updates = comp.bytes[index(MemOp::kUpdate)];
  r.tracker_fires = node.gpu(0).memory().tracker().regions_completed();
  r.tracker_overflows = node.gpu(0).memory().tracker().overflows();
  rs.finish();
  return r;
}

TEST(T3Collective, RingProducesExactlyTheReducedValues) {
  for (NetMode mode : {NetMode::kFull, NetMode::kHomogeneous}) {
    T3CollectiveParams p;
    p.values = true;
    p.seed = 5;
    const FusedRun r = run_fused(table1(4, mode), p, small_gemm(4));
    EXPECT_TRUE(r.all_done) << to_string(mode);
    EXPECT_EQ(r.error, "") << to_string(mode);
    // Each simulated GPU's own chunk: 512 rows x 512 FP16 / 32 B granules.
    EXPECT_EQ(r.words, (mode == NetMode::kFull ? 4u : 1u) * 512 * 512 * 2 / 32) << to_string(mode);
    // Every tracked region of GPU 0 fired once: 3 chunks x 8 WGs x 4 WFs.
    EXPECT_EQ(r.tracker_fires, 3u * 8 * 4) << to_string(mode);
  }
}

// A tracker far smaller than a stage's regions (T-NLG FC-2 at TP 4 outgrows the
// paper's 256 sets): under `overflow` the fused RS still completes with exact values,
// the spilled regions counted in the backing table; under `stall` the held accesses
// block what would free the sets and the watchdog reports it (no hang).
TEST(T3Collective, UndersizedTrackerOverflowsExactlyOrStallIsReported) {
  T3CollectiveParams p;
  p.values = true;
  const FusedRun r = run_fused(table1(4, NetMode::kFull, {"memory.tracker.sets=1", "memory.tracker.ways=2"}), p,
                               small_gemm(4));
  EXPECT_TRUE(r.all_done);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.tracker_fires, 3u * 8 * 4);  // every region, wherever counted
  EXPECT_GT(r.tracker_overflows, 0u);
  try {
    run_fused(table1(4, NetMode::kFull, {"memory.tracker.sets=1", "memory.tracker.ways=2",
                                         "memory.tracker.set_full=stall"}),
              p, small_gemm(4));
    ADD_FAILURE() << "a 2-entry stalling tracker completed";
  } catch (const SimulationError& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("held by the admission observer"));
    EXPECT_THAT(e.what(), testing::HasSubstr("controllers held on a full set"));
  }
}

// The all-gather through tracker + DMA (T3 §7.1): every GPU ends with every chunk
// (the owner's values), on a ring (N-1 hops, each region forwarded once the tracker
// saw it arrive) and direct on a fully-connected node, in both modes. DRAM reads:
// N-1 chunks per GPU either way (ring: the own chunk and N-2 forwarded ones; direct:
// the own chunk once per peer); writes: the N-1 chunks that arrive.
TEST(T3AllGather, EveryGpuHoldsEveryChunk) {
  const GemmParams g = small_gemm(4);
  const std::uint64_t chunk = g.m * g.n * 2 / 4;
  for (T3Route algorithm : {T3Route::kRing, T3Route::kDirect}) {
    for (NetMode mode : {NetMode::kFull, NetMode::kHomogeneous}) {
      T3CollectiveParams p;
      p.op = CollectiveOp::kAllGather;
      p.algorithm = algorithm;
      p.with_producer = false;
      p.values = true;
      const std::vector<std::string> topo =
          algorithm == T3Route::kDirect ? std::vector<std::string>{"net.topology=fully-connected"}
                                               : std::vector<std::string>{};
      const std::string what = fmt::format("{} {}", algorithm == T3Route::kRing ? "ring" : "direct",
                                           to_string(mode));
      const FusedRun r = run_fused(table1(4, mode, topo), p, g);
      EXPECT_TRUE(r.all_done) << what;
      EXPECT_EQ(r.error, "") << what;
      EXPECT_EQ(r.words, (mode == NetMode::kFull ? 4u : 1u) * 4 * chunk / 32) << what;  // all chunks
      EXPECT_EQ(r.comm_reads, 3 * chunk) << what;
      EXPECT_EQ(r.comm_writes, 3 * chunk) << what;
      EXPECT_EQ(r.comm_updates, 0u) << what;
    }
  }
  T3CollectiveParams with_producer;
  with_producer.op = CollectiveOp::kAllGather;
  EXPECT_THROW(run_fused(table1(4), with_producer, g), UserError);
}

TEST(T3Collective, NmcReadsEachPartialOnceAndNeverTheReceivedCopy) {
  T3CollectiveParams p;
  const GemmParams g = small_gemm(4);
  const FusedRun r = run_fused(table1(4, NetMode::kFull), p, g);
  ASSERT_TRUE(r.all_done);
  const std::uint64_t chunk = g.m * g.n * 2 / 4;
  // T3 Figure 10: one DMA read per middle stage (N-2 chunks), nothing for stage 1
  // (remote-written) or the last stage (its reduction happened in memory).
  EXPECT_EQ(r.comm_reads, 2 * chunk);
  // Updates arriving: stage 1's remote writes and the DMA of N-2 stages.
  EXPECT_EQ(r.comm_updates, 3 * chunk);
  // The GEMM's own updates: every stage but the one remote-mapped.
  EXPECT_EQ(r.compute_updates, 3 * chunk);
}

TEST(T3Collective, DirectOnFullyConnectedIssuesNoCollectiveReads) {
  T3CollectiveParams p;
  p.algorithm = T3Route::kDirect;
  p.values = true;
  const FusedRun r = run_fused(table1(4, NetMode::kFull, {"net.topology=fully-connected"}), p, small_gemm(4));
  ASSERT_TRUE(r.all_done);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.comm_reads, 0u);
}

TEST(T3Collective, StandAloneRsWithNmcReducesPreloadedData) {
  for (NetMode mode : {NetMode::kFull, NetMode::kHomogeneous}) {
    T3CollectiveParams p;
    p.with_producer = false;
    p.values = true;
    const FusedRun r = run_fused(table1(4, mode), p, small_gemm(4));
    EXPECT_TRUE(r.all_done) << to_string(mode);
    EXPECT_EQ(r.error, "") << to_string(mode);
    EXPECT_GT(r.words, 0u);
  }
}

}  // namespace
}  // namespace t3sim
