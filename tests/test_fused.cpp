// The `fused` configuration (seed 000 §III-B on T3's sub-layers): the persistent
// GEMM + reduce-scatter kernel's generator (trace/fused_gemm.h) and its runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include <fmt/format.h>

#include "models/system/sublayer_system.h"
#include "sim/error.h"
#include "tests/table1_node.h"
#include "tests/wg_ops.h"
#include "trace/fused_gemm.h"

namespace t3sim {
namespace {

GemmParams gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  GemmParams g;
  g.m = m;
  g.n = n;
  g.k = k;
  return g;
}

FusedGemmRsParams fused(const GemmParams& g, std::uint32_t gpus, std::uint32_t gpu, std::uint32_t grid) {
  FusedGemmRsParams p;
  p.gemm = g;
  p.num_gpus = gpus;
  p.gpu = gpu;
  p.grid = grid;
  p.staging_base = 1ULL << 30;
  p.flag_base = 1000;
  return p;
}


// 1024 x 1024 on 4 GPUs: chunks of 256 rows, one tile row (256 x 128 tiles) each.
TEST(FusedGemmRs, MovesEveryPartialOnceAndReducesTheOwnChunk) {
  const GemmParams g = gemm(1024, 1024, 512);
  const KernelTrace t = make_fused_gemm_rs_trace(fused(g, 4, 1, 80));
  const TraceTotals tot = trace_totals(t);
  const std::uint64_t output = 1024 * 1024 * 2, chunk = output / 4;
  EXPECT_EQ(tot.store_bytes_remote, 3 * chunk);    // the other GPUs' rows, to their owners
  EXPECT_EQ(tot.store_bytes_cached, 2 * chunk);    // the own rows' partial, then their sum
  EXPECT_EQ(tot.flops, 2ULL * 1024 * 1024 * 512);  // the GEMM's, unchanged
  EXPECT_EQ(tot.sets, 32u);                        // one per tile (a tile is one segment here)
  EXPECT_EQ(tot.waits, 8u * 4);                    // each own segment waits for its 4 partials
  EXPECT_EQ(t.num_wgs(), 40u);                     // 32 tiles + 8 reductions < the 80 given
  EXPECT_EQ(fused_rs_flags_used(fused(g, 4, 1, 80)), 4u * 8);
  EXPECT_EQ(fused_rs_staging_bytes(fused(g, 4, 1, 80)), 3 * chunk);
}

// Communication-aware order: GPU g's WGs take GPU g+1's tiles first and their own
// chunk's last; oblivious: the GEMM's order (its own chunk's tiles wherever they fall).
TEST(FusedGemmRs, CommunicationAwareOrderSendsRemoteTilesFirst) {
  const GemmParams g = gemm(1024, 1024, 512);
  const std::uint64_t tiles_n = 8, rows_per_chunk_in_tiles = 1;
  for (std::uint32_t gpu = 0; gpu < 4; ++gpu) {
    FusedGemmRsParams p = fused(g, 4, gpu, 8);
    const std::vector<std::uint64_t> order = fused_rs_tile_order(p);
    ASSERT_EQ(order.size(), 32u);
    auto chunk = [&](std::uint64_t tile) { return tile / tiles_n / rows_per_chunk_in_tiles; };
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::uint64_t want = (gpu + 1 + i / 8) % 4;  // 8 tiles per chunk: g+1, g+2, g+3, g
      EXPECT_EQ(chunk(order[i]), want) << "GPU " << gpu << " position " << i;
    }
    // The first store of every WG goes to GPU g + 1.
    const KernelTrace t = make_fused_gemm_rs_trace(p);
    for (const auto& ops : ops_of(t)) {
      const auto first_store = std::find_if(ops.begin(), ops.end(), [](const WgOp& o) { return o.kind == TraceOpKind::kStore; });
      ASSERT_NE(first_store, ops.end());
      EXPECT_EQ(first_store->peer, static_cast<std::int32_t>((gpu + 1) % 4));
    }
    p.comm_aware = false;
    EXPECT_EQ(fused_rs_tile_order(p), gemm_tile_order(g));
  }
}

// Each reduction waits for all its partials before it loads any of them, and loads
// exactly the slots the producers' stores and flags name.
TEST(FusedGemmRs, ReductionsWaitForEveryPartialBeforeLoading) {
  const GemmParams g = gemm(1024, 1024, 512);
  std::set<std::pair<std::uint64_t, std::uint64_t>> stored_at_gpu2;  // (address, flag) GPU 2 receives
  for (std::uint32_t gpu = 0; gpu < 4; ++gpu) {
    for (const auto& ops : ops_of(make_fused_gemm_rs_trace(fused(g, 4, gpu, 80)))) {
      for (std::size_t i = 0; i + 1 < ops.size(); ++i)
        if (ops[i].kind == TraceOpKind::kStore && ops[i].peer == 2 && ops[i + 1].kind == TraceOpKind::kSet)
          stored_at_gpu2.insert({ops[i].addr(), ops[i + 1].flag()});
    }
  }
  EXPECT_EQ(stored_at_gpu2.size(), 3u * 8);  // 8 tiles from each of the 3 others
  std::uint64_t staged_loads = 0;
  for (const auto& ops : ops_of(make_fused_gemm_rs_trace(fused(g, 4, 2, 80)))) {
    std::set<std::uint64_t> waited;
    for (const WgOp& o : ops) {
      if (o.kind == TraceOpKind::kWait) waited.insert(o.flag());
      if (o.kind == TraceOpKind::kLoad && o.uncached()) {  // a received partial
        ++staged_loads;
        const auto it = std::find_if(stored_at_gpu2.begin(), stored_at_gpu2.end(),
                                     [&](const auto& s) { return s.first == o.addr(); });
        ASSERT_NE(it, stored_at_gpu2.end()) << "a load of a slot nobody stores to";
        EXPECT_TRUE(waited.count(it->second)) << "a partial loaded before its flag was waited for";
      }
    }
  }
  EXPECT_EQ(staged_loads, 3u * 8);
}

// A chunk of fewer rows than a tile (T3's TP-32 sub-layers): each tile splits into
// one segment per chunk it covers; every chunk still has the same segments.
TEST(FusedGemmRs, TilesSplitAtChunkBoundaries) {
  const GemmParams g = gemm(512, 256, 64);  // 2 x 2 tiles of 256 x 128; 8 GPUs: 64-row chunks
  const FusedGemmRsParams p = fused(g, 8, 3, 100);
  const FusedRsLayout l = fused_rs_layout(p);
  EXPECT_EQ(l.chunk_rows, 64u);
  EXPECT_TRUE(l.same_segments);
  EXPECT_EQ(l.segments_per_chunk, 2u);  // one tile row x 2 tile columns
  const TraceTotals tot = trace_totals(make_fused_gemm_rs_trace(p));
  EXPECT_EQ(tot.sets, 4u * 4);  // each of the 4 tiles covers 4 chunks
  EXPECT_EQ(tot.store_bytes_remote, 7u * 64 * 256 * 2);
  // 384-row chunks cut 256-row tiles differently from chunk to chunk.
  EXPECT_FALSE(fused_rs_layout(fused(gemm(768, 256, 64), 2, 0, 10)).same_segments);
}

TEST(FusedGemmRs, RejectsWhatItCannotFuse) {
  EXPECT_THROW(make_fused_gemm_rs_trace(fused(gemm(1004, 256, 64), 8, 0, 10)), UserError);  // 1004 rows / 8
  EXPECT_THROW(make_fused_gemm_rs_trace(fused(gemm(1024, 256, 64), 1, 0, 10)), UserError);
  GemmParams col = gemm(1024, 256, 64);
  col.c_layout = MatrixLayout::kColumnMajor;
  EXPECT_THROW(make_fused_gemm_rs_trace(fused(col, 4, 0, 10)), UserError);
  EXPECT_THROW(make_fused_gemm_rs_trace(fused(gemm(1024, 256, 64), 4, 0, 0)), UserError);
}

// A 4-GPU sub-layer of small_gemm; `flag_waits`: the CUs' blocked waits, summed.
SublayerResult run(NetMode mode, const std::string& configuration, const std::string& order = "comm-aware",
                   const std::vector<std::string>& overrides = {}, double* flag_waits = nullptr,
                   const std::string& reduction = "staging") {
  const NodeConfig cfg = table1(4, mode, overrides);
  Simulator sim(3);
  SublayerOptions opt;
  opt.functional = "values";
  opt.fused_order = order;
  opt.fused_reduction = reduction;
  SublayerSystem sys(sim, cfg, small_gemm(cfg), opt, configuration, 3);
  const SublayerResult r = sys.run();
  if (flag_waits != nullptr) {
    *flag_waits = 0;
    for (std::uint32_t g = 0; g < sys.node().simulated_gpus(); ++g)
      for (std::uint32_t c = 0; c < cfg.gpu.num_cus; ++c)
        if (const auto* w = static_cast<const Counter*>(sim.stats().find(fmt::format("gpu{}.cu{}.flag_waits", g, c))))
          *flag_waits += static_cast<double>(w->value());
  }
  return r;
}

// The fused kernel leaves exactly the all-reduced output on every GPU (checked word
// by word against the sum of the GPUs' partials), in full and homogeneous mode and in
// either tile order.
TEST(FusedSublayer, ValuesAreTheSumOfThePartials) {
  for (const NetMode mode : {NetMode::kFull, NetMode::kHomogeneous}) {
    for (const char* order : {"comm-aware", "oblivious"}) {
      if (mode == NetMode::kHomogeneous && std::string(order) == "oblivious") continue;  // not mirrorable (below)
      const SublayerResult r = run(mode, "fused", order);
      EXPECT_TRUE(r.values_checked);
      EXPECT_EQ(r.words_checked, (mode == NetMode::kFull ? 4u : 1u) * 1024 * 1024 * 2 / 32);  // every GPU simulated
      EXPECT_EQ(r.rs, Tick::zero());  // inside the kernel
      EXPECT_EQ(r.json["fused"]["order"], order);
    }
  }
}

// The atomic variant: every GPU's partial segment is added into its owner's chunk
// (remote updates, applied at the owner's memory), the own one locally, then flagged;
// the owner only waits. Byte counts, then values under contention: four GPUs adding
// into every chunk at once lose nothing (full and homogeneous mode).
TEST(FusedGemmRs, AtomicAddsReplaceTheStagingAndTheReduction) {
  const GemmParams g = gemm(1024, 1024, 512);
  FusedGemmRsParams p = fused(g, 4, 1, 80);
  p.atomic = true;
  const TraceTotals tot = trace_totals(make_fused_gemm_rs_trace(p));
  const std::uint64_t chunk = 1024 * 1024 * 2 / 4;
  EXPECT_EQ(tot.store_bytes_update, 4 * chunk);   // every partial, added where it belongs
  EXPECT_EQ(tot.store_bytes_remote, 3 * chunk);   // the other GPUs' rows
  EXPECT_EQ(tot.store_bytes_cached, 0u);
  EXPECT_EQ(tot.load_bytes, trace_totals(make_gemm_trace(g)).load_bytes);  // no staged loads
  EXPECT_EQ(tot.waits, 8u * 4);                   // each own segment's 4 adds
  EXPECT_EQ(tot.sets, 32u);
  p.all_gather = true;
  EXPECT_THROW(make_fused_gemm_rs_trace(p), UserError);
}

TEST(FusedSublayer, AtomicAddsUnderContentionLoseNothing) {
  for (const NetMode mode : {NetMode::kFull, NetMode::kHomogeneous}) {
    const SublayerResult r = run(mode, "fused", "comm-aware", {}, nullptr, "atomic");
    EXPECT_TRUE(r.values_checked);
    EXPECT_EQ(r.words_checked, (mode == NetMode::kFull ? 4u : 1u) * 1024 * 1024 * 2 / 32);
    EXPECT_EQ(r.json["fused"]["reduction"], "atomic");
  }
}

// With several waves of tiles the partials of the first ones travel while the later
// ones compute: the GEMM with its fused RS takes less than the GEMM and the RS one
// after the other, and the communication-aware order beats the oblivious one (seed
// 000 §III), all in full mode (homogeneous mode cannot mirror the oblivious order).
TEST(FusedSublayer, TheRsHidesBehindAGemmOfSeveralWaves) {
  auto total = [](const std::string& configuration, const std::string& order) {
    const NodeConfig cfg = table1(4, NetMode::kFull);
    GemmWorkload wl = small_gemm(cfg);
    wl.params->m = 4096;  // 16 x 16 = 256 tiles of 256 x 128: several waves on 80 CUs
    wl.params->n = 2048;
    wl.trace = make_gemm_trace(*wl.params);
    Simulator sim(3);
    SublayerOptions opt;
    opt.functional = "off";
    opt.fused_order = order;
    SublayerSystem sys(sim, cfg, wl, opt, configuration, 3);
    return sys.run();
  };
  const SublayerResult seq = total("sequential", "comm-aware");
  const SublayerResult aware = total("fused", "comm-aware"), oblivious = total("fused", "oblivious");
  EXPECT_LT(aware.gemm, seq.gemm + seq.rs);
  EXPECT_LT(aware.total, seq.total);
  EXPECT_LT(aware.total, oblivious.total);
}

// Flags order the reduction after its data: with 20 us links the partials arrive late,
// the reductions wait (counted) and the values are still right.
TEST(FusedSublayer, ADelayedPartialIsWaitedFor) {
  double fast_waits = 0, slow_waits = 0;
  const SublayerResult fast = run(NetMode::kFull, "fused", "comm-aware", {}, &fast_waits);
  const SublayerResult slow = run(NetMode::kFull, "fused", "comm-aware", {"net.latency=20us"}, &slow_waits);
  EXPECT_TRUE(slow.values_checked);
  EXPECT_GT(slow.gemm, fast.gemm + Tick::us(20));
  EXPECT_GT(slow_waits, 0);
  EXPECT_GE(slow_waits, fast_waits);
}

TEST(FusedSublayer, SameSeedSameResult) {
  const SublayerResult a = run(NetMode::kFull, "fused"), b = run(NetMode::kFull, "fused");
  EXPECT_EQ(a.total, b.total);
  EXPECT_EQ(a.json.dump(), b.json.dump());
}

TEST(FusedSublayer, HomogeneousModeCannotMirrorTheObliviousOrder) {
  const NodeConfig cfg = table1(4, NetMode::kHomogeneous);
  Simulator sim(3);
  SublayerOptions opt;
  opt.fused_order = "oblivious";
  try {
    SublayerSystem sys(sim, cfg, small_gemm(cfg), opt, "fused", 3);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("use --mode full or fused_order: comm-aware"), std::string::npos) << e.what();
  }
}

TEST(FusedSublayer, HomogeneousModeNeedsTheSameSegmentsInEveryChunk) {
  // 1536 rows on 4 GPUs: 384-row chunks over 256-row tiles.
  const NodeConfig cfg = table1(4, NetMode::kHomogeneous);
  GemmWorkload wl = small_gemm(cfg);
  wl.params->m = 1536;
  wl.trace = make_gemm_trace(*wl.params);
  Simulator sim(3);
  try {
    SublayerSystem sys(sim, cfg, wl, SublayerOptions{}, "fused", 3);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("use --mode full"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace t3sim
