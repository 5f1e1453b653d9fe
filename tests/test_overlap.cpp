// The overlap ops (models/system/overlap): seed 001's consumer all-gather + GEMM (the
// persistent consumer GEMM's generator, trace/consumer_gemm.h; the copy engines'
// signals, models/dma; the runs, ops/ag_gemm.cpp) and seed 000's GEMM + all-to-all
// (trace/fused_gemm.h without reduction; ops/gemm_a2a.cpp).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/system/overlap/ops.h"
#include "sim/error.h"
#include "tests/table1_node.h"
#include "tests/wg_ops.h"
#include "trace/consumer_gemm.h"
#include "trace/embedding.h"
#include "trace/fused_gemm.h"

namespace t3sim {
namespace {

// 4 GPUs; A is 4096 x 512 (1024 rows each: 4 chunks of 256); tiles 256 x 256.
ConsumerGemmParams consumer(std::uint32_t gpu, std::uint32_t grid = 8) {
  ConsumerGemmParams p;
  p.gemm.m = 4096;
  p.gemm.n = 512;
  p.gemm.k = 512;
  p.gemm.tile_m = 256;
  p.gemm.tile_n = 256;
  p.num_gpus = 4;
  p.gpu = gpu;
  p.grid = grid;
  p.chunk_rows = 256;
  p.flag_base = 1000;
  return p;
}


// The tutorial's swizzle: own rows first, then chunk 0 of g+1, g+2, ..., then chunk 1
// of every GPU (own first): the order the copies land in, one stream per peer.
TEST(ConsumerGemm, SwizzleTakesOwnRowsFirstThenChunksInDeliveryOrder) {
  for (std::uint32_t gpu = 0; gpu < 4; ++gpu) {
    const std::vector<std::uint64_t> order = consumer_tile_order(consumer(gpu));
    ASSERT_EQ(order.size(), 16u * 2);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::uint64_t row = order[i] / 2 * 256;  // 2 tiles per row of tiles
      const std::uint64_t source = row / 1024, chunk = row % 1024 / 256;
      EXPECT_EQ(source, (gpu + i / 2 % 4) % 4) << "GPU " << gpu << " position " << i;
      EXPECT_EQ(chunk, i / 8) << "GPU " << gpu << " position " << i;
    }
    ConsumerGemmParams oblivious = consumer(gpu);
    oblivious.swizzle = false;
    EXPECT_EQ(consumer_tile_order(oblivious), gemm_tile_order(oblivious.gemm));
  }
}

// Acquire: a tile whose rows another GPU sends waits for that chunk's signal before
// its first load of A; tiles of the GPU's own rows wait for nothing.
TEST(ConsumerGemm, EveryRemoteTileWaitsForItsChunkBeforeReadingIt) {
  const ConsumerGemmParams p = consumer(1, 5);
  const KernelTrace t = make_consumer_gemm_trace(p);
  ASSERT_EQ(t.num_wgs(), 5u);
  const std::uint64_t a_bytes = 4096ULL * 512 * 2;
  std::uint64_t waits = 0, a_loads = 0;
  for (const auto& ops : ops_of(t)) {
    std::set<std::uint64_t> waited;
    for (const WgOp& op : ops) {
      if (op.kind == TraceOpKind::kWait) {
        waited.insert(op.flag());
        ++waits;
      } else if (op.kind == TraceOpKind::kLoad && op.addr() < a_bytes) {
        ++a_loads;
        const std::uint64_t row = op.addr() / (512 * 2);
        const auto source = static_cast<std::uint32_t>(row / 1024);
        if (source == 1) continue;
        EXPECT_TRUE(waited.count(consumer_chunk_flag(p, source, row % 1024 / 256)))
            << "a load of row " << row << " before its chunk's signal";
      }
    }
  }
  EXPECT_EQ(waits, 24u);  // the 3 other GPUs' 4 chunks x 2 tiles each
  EXPECT_GT(a_loads, 0u);
  // Flags are by ring distance: GPU 1 waits for GPU 2's chunk 3 on the id GPU 0 uses
  // for GPU 1's.
  ConsumerGemmParams zero = p;
  zero.gpu = 0;
  EXPECT_EQ(consumer_chunk_flag(p, 2, 3), consumer_chunk_flag(zero, 1, 3));
  EXPECT_EQ(consumer_chunk_flag(p, 2, 3), 1000u + 1 * 4 + 3);
}

TEST(ConsumerGemm, RejectsChunksThatAreNotWholeTilesOrRows) {
  ConsumerGemmParams p = consumer(0);
  p.chunk_rows = 128;  // half a 256-row tile
  EXPECT_THROW(validate_consumer_gemm(p), UserError);
  p.chunk_rows = 768;  // does not divide 1024 rows
  EXPECT_THROW(validate_consumer_gemm(p), UserError);
  p = consumer(0);
  p.gemm.m = 4100;
  EXPECT_THROW(validate_consumer_gemm(p), UserError);
  p = consumer(0);
  p.gemm.a_layout = MatrixLayout::kColumnMajor;
  EXPECT_THROW(validate_consumer_gemm(p), UserError);
}

// A signal is a stream's next command: it reaches the peer only after the copy before
// it on the same engine is complete (release); alone, it arrives within a link latency.
TEST(DmaSignal, ASignalFollowsTheCopyBeforeIt) {
  auto flag_time = [](bool with_copy) {
    Simulator sim(1);
    NodeConfig cfg = table1(2);
    cfg.dma.launch_latency = Tick::zero();
    Node node(sim, cfg);
    DmaEngine& engine = node.dma(0, 0);
    if (with_copy) {
      DmaCommand copy;
      copy.src = 0;
      copy.dst = 1 << 20;
      copy.bytes = 1 << 20;
      copy.destination = &node.dma_destination(0, 1);
      engine.launch(std::move(copy));
    }
    DmaCommand signal;
    signal.signal = DmaCommand::Signal{1, 77, 1};
    engine.launch(std::move(signal));
    Tick set_at = Tick::max();
    node.gpu(1).flags().wait(77, 1, [&] { set_at = node.gpu(1).now(); });
    sim.run(Tick::max());
    EXPECT_EQ(node.gpu(1).flags().get(77), 1u);
    return set_at;
  };
  const Tick alone = flag_time(false), after = flag_time(true);
  const NodeConfig cfg = table1(2);
  EXPECT_LE(alone, cfg.net.link.latency * 2);
  // 1 MiB at the engine's or the link's rate, whichever is slower, before the flag.
  const Bandwidth slower = std::min(cfg.dma.bandwidth, cfg.net.link.bandwidth);
  EXPECT_GE(after, slower.transfer_time(1 << 20));
}

// ---------------------------------------------------------------------------- runs

// The MI300X-like node cut to 4 GPUs (full mode: every GPU simulated).
NodeConfig node4(const std::vector<std::string>& overrides = {}, NetMode mode = NetMode::kHomogeneous) {
  std::vector<std::string> o = {"num_gpus=4"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  NodeConfig cfg = system_node("mi300x.yaml", mode, o);
  cfg.partitioned = true;
  return cfg;
}

AgGemmSpec spec(const NodeConfig& node, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  AgGemmSpec s;
  s.gemm = node.gpu.gemm;
  s.gemm.m = m;
  s.gemm.n = n;
  s.gemm.k = k;
  s.gemm.flops_per_cycle = node.gpu.cu.flops_per_cycle;
  s.gemm.b_layout = MatrixLayout::kColumnMajor;
  s.ag.kind = CollectiveKind::named("ring-ag");
  s.ag.channels = node.gpu.collective_channels;
  s.ag.values = true;
  s.chunk_rows = 256;
  return s;
}

struct Result : OverlapResult {
  Tick gemm_launch, copies_end;  // the fused run's (results.json "fused")
};
Result run(const NodeConfig& node, const AgGemmSpec& s, const std::string& configuration) {
  Simulator sim(1);
  OverlapSystem sys(sim, node, ag_gemm_op(s), configuration, 1);
  Result r{sys.run(), {}, {}};
  r.extra_events += sim.dispatched();
  if (r.json.contains("fused")) {
    r.gemm_launch = Tick::ps(r.json["fused"]["gemm_launch_ps"].get<std::int64_t>());
    r.copies_end = Tick::ps(r.json["fused"]["copies_end_ps"].get<std::int64_t>());
  }
  return r;
}

// Values: every GPU's gathered A holds every GPU's rows after both procedures; the
// configurations' times follow from their runs.
TEST(AgGemm, GathersEveryRowAndTimesFollowTheRuns) {
  const NodeConfig node = node4({}, NetMode::kFull);
  const AgGemmSpec s = spec(node, 4096, 2048, 512);
  const Result seq = run(node, s, "sequential");
  const Result ideal = run(node, s, "ideal-overlap");
  const Result fused = run(node, s, "fused");
  for (const Result* r : {&seq, &ideal, &fused}) {
    EXPECT_TRUE(r->values_checked);
    EXPECT_GT(r->words_checked, 0u);
    EXPECT_EQ(r->sequential, seq.time);
  }
  EXPECT_EQ(seq.time, seq.isolated_collective + seq.isolated_compute);
  EXPECT_EQ(ideal.time, std::max(seq.isolated_collective, seq.isolated_compute));
  EXPECT_EQ(fused.words_checked, 2 * seq.words_checked);  // both runs checked
  EXPECT_GT(fused.time, fused.gemm_launch);
  EXPECT_GE(fused.time, fused.copies_end);  // the last chunk is read after it lands
}

// The host thread submits a copy and a signal per peer and chunk (2 x 3 x 4 here),
// each costing it dma.launch_latency, then launches the GEMM (the library's order);
// gemm-first launches it at once.
TEST(AgGemm, TheHostLaunchesTheGemmAfterItsCopySubmissions) {
  const NodeConfig node = node4({"dma.launch_latency=2us"});
  AgGemmSpec s = spec(node, 4096, 2048, 512);
  const Result after = run(node, s, "fused");
  EXPECT_EQ(after.gemm_launch, Tick::us(2 * 24));
  s.copies_first = false;
  const Result before = run(node, s, "fused");
  EXPECT_EQ(before.gemm_launch, Tick::zero());
  // Each of the 32 WGs has one tile here, so both end with the last chunk's tile.
  EXPECT_GE(before.time, before.copies_end);
}

// A chunk delayed on the links is waited for (the waits block, values stay right);
// with no latency and instant submissions, fewer waits block.
TEST(AgGemm, ADelayedChunkIsWaitedFor) {
  AgGemmSpec s = spec(node4(), 4096, 2048, 512);
  s.copies_first = false;
  const Result slow = run(node4({"net.latency=20us"}), s, "fused");
  EXPECT_TRUE(slow.values_checked);
  EXPECT_GT(slow.flag_waits, 0u);
  EXPECT_GE(slow.time, Tick::us(20));
  const Result fast = run(node4({"dma.launch_latency=0us"}), s, "fused");
  EXPECT_LT(fast.time, slow.time);
}

// Tiles of several waves per persistent WG (one per CU) and cheap submissions: the
// overlap pays. Homogeneous mode, for speed.
TEST(AgGemm, OverlapBeatsSequentialWhenTheGemmHasWork) {
  const NodeConfig node = node4({"dma.launch_latency=500ns"});
  AgGemmSpec s = spec(node, 8192, 4096, 2048);
  s.gemm.tile_m = 128;
  s.gemm.tile_n = 128;  // 64 x 8 = 512 tiles on 304 WGs
  s.ag.values = false;
  const Result r = run(node, s, "fused");
  EXPECT_LT(r.time, r.sequential);
  EXPECT_GE(r.time.ps() * 2, r.ideal.ps()) << "far below max(AG, GEMM): suspicious";
}

TEST(AgGemm, SameSeedSameEverything) {
  const NodeConfig node = node4();
  const AgGemmSpec s = spec(node, 4096, 2048, 512);
  const Result a = run(node, s, "fused"), b = run(node, s, "fused");
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(a.extra_events, b.extra_events);
  EXPECT_EQ(a.flag_waits, b.flag_waits);
}

// Homogeneous mode mirrors GPU 0's copies and signals to its peers: the same times as
// the full node within a few percent.
TEST(AgGemm, HomogeneousModeAgreesWithTheFullNode) {
  AgGemmSpec s = spec(node4(), 4096, 2048, 512);
  const Result full = run(node4({}, NetMode::kFull), s, "fused");
  const Result mirrored = run(node4(), s, "fused");
  EXPECT_TRUE(mirrored.values_checked);
  EXPECT_NEAR(static_cast<double>(mirrored.time.ps()), static_cast<double>(full.time.ps()),
              0.05 * static_cast<double>(full.time.ps()));
}

// ---------------------------------------------------------------------------- gemm_a2a

// Any op under a configuration; extra_events counts every event (determinism checks).
OverlapResult run_op(const NodeConfig& node, OverlapOpFactory op, const std::string& configuration) {
  Simulator sim(1);
  OverlapSystem sys(sim, node, std::move(op), configuration, 1);
  OverlapResult r = sys.run();
  r.extra_events += sim.dispatched();
  return r;
}

// Without reduction the fused kernel moves every other GPU's rows once and keeps its
// own; its last phase only waits for the slices it receives (no loads, no adds).
TEST(FusedGemmA2a, SendsEveryRemoteRowOnceAndOnlyWaitsForTheRest) {
  FusedGemmRsParams p;
  p.gemm.m = 1024;
  p.gemm.n = 1024;
  p.gemm.k = 512;
  p.num_gpus = 4;
  p.gpu = 2;
  p.grid = 80;
  p.staging_base = 1ULL << 30;
  p.flag_base = 1000;
  p.reduce = false;
  const KernelTrace t = make_fused_gemm_rs_trace(p);
  const TraceTotals tot = trace_totals(t);
  const std::uint64_t chunk = 1024 * 1024 * 2 / 4;
  EXPECT_EQ(tot.store_bytes_remote, 3 * chunk);
  EXPECT_EQ(tot.store_bytes_cached, chunk);        // its own rows, once
  EXPECT_EQ(tot.sets, 24u);                        // one per remote tile (8 tiles per chunk)
  EXPECT_EQ(tot.waits, 8u * 3);                    // each own segment waits for its 3 slices
  EXPECT_EQ(tot.load_bytes, trace_totals(make_gemm_trace(p.gemm)).load_bytes);  // the GEMM's loads only
  EXPECT_EQ(tot.flops, 2ULL * 1024 * 1024 * 512);
}

GemmA2aSpec a2a_spec(const NodeConfig& node, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  GemmA2aSpec s;
  s.gemm = node.gpu.gemm;
  s.gemm.m = m;
  s.gemm.n = n;
  s.gemm.k = k;
  s.gemm.flops_per_cycle = node.gpu.cu.flops_per_cycle;
  s.a2a.kind = CollectiveKind::named("all-to-all");
  s.a2a.channels = node.gpu.collective_channels;
  s.a2a.values = true;
  return s;
}

NodeConfig mi210(const std::vector<std::string>& overrides = {}, NetMode mode = NetMode::kHomogeneous) {
  NodeConfig cfg = system_node("mi210x4.yaml", mode, overrides);
  cfg.partitioned = true;
  return cfg;
}

OverlapResult run_a2a(const NodeConfig& node, const GemmA2aSpec& s, const std::string& configuration) {
  return run_op(node, gemm_a2a_op(s), configuration);
}

// Values: the sequential all-to-all and the fused kernel's remote stores both land
// every GPU's rows where they belong (full mode: every GPU checked), in both orders.
TEST(GemmA2a, EveryRowReachesItsGpuInBothProcedures) {
  const NodeConfig node = mi210({}, NetMode::kFull);
  GemmA2aSpec s = a2a_spec(node, 2048, 1024, 512);
  const OverlapResult seq = run_a2a(node, s, "sequential");
  EXPECT_TRUE(seq.values_checked);
  EXPECT_GT(seq.words_checked, 0u);
  EXPECT_EQ(seq.time, seq.isolated_compute + seq.isolated_collective);
  double skew[2] = {0, 0};
  for (bool comm_aware : {true, false}) {
    s.comm_aware = comm_aware;
    const OverlapResult fused = run_a2a(node, s, "fused");
    // Both runs checked: the sequential one's words, then 4 GPUs x 4 chunks of 1 MiB / 4.
    EXPECT_EQ(fused.words_checked, seq.words_checked + 4ULL * 2048 * 1024 * 2 / 32) << comm_aware;
    EXPECT_LT(fused.time, fused.sequential) << comm_aware;
    skew[comm_aware ? 0 : 1] = fused.skew;
  }
  // Seed 000 Figure 14: remote slices first evens out when the GPUs finish; in the
  // oblivious order every GPU serves GPU 0's rows first, and GPU 3's arrive last.
  EXPECT_LT(skew[0], skew[1]);
}

// A slice delayed on the links is waited for: the kernel's last phase blocks.
TEST(GemmA2a, ADelayedSliceIsWaitedFor) {
  const GemmA2aSpec s = a2a_spec(mi210(), 2048, 1024, 512);
  const OverlapResult slow = run_a2a(mi210({"net.latency=20us"}), s, "fused");
  EXPECT_GT(slow.flag_waits, 0u);
  EXPECT_GE(slow.time, Tick::us(20));
  const OverlapResult fast = run_a2a(mi210(), s, "fused");
  EXPECT_LT(fast.time, slow.time);
}

TEST(GemmA2a, HomogeneousModeAgreesWithTheFullNodeAndRunsAreDeterministic) {
  const GemmA2aSpec s = a2a_spec(mi210(), 2048, 1024, 512);
  const OverlapResult full = run_a2a(mi210({}, NetMode::kFull), s, "fused");
  const OverlapResult mirrored = run_a2a(mi210(), s, "fused");
  const OverlapResult again = run_a2a(mi210(), s, "fused");
  EXPECT_TRUE(mirrored.values_checked);
  EXPECT_NEAR(static_cast<double>(mirrored.time.ps()), static_cast<double>(full.time.ps()),
              0.05 * static_cast<double>(full.time.ps()));
  EXPECT_EQ(again.time, mirrored.time);
  EXPECT_EQ(again.extra_events, mirrored.extra_events);
  const OverlapResult ideal = run_a2a(mi210(), s, "ideal-overlap");
  EXPECT_EQ(ideal.time, std::max(ideal.isolated_compute, ideal.isolated_collective));
}

// ---------------------------------------------------------------------------- gemv_ar

// The two-phase direct all-reduce inside the GEMV's kernel: each GPU sends the 3 chunks
// it does not own once (to their owners), then its own chunk's sum to each of the 3
// peers; it waits for its chunk's 4 partials and for the 3 other chunks' sums.
TEST(FusedGemvAr, SendsPartialsToOwnersThenSumsToEveryone) {
  FusedGemmRsParams p;
  p.gemm = gemv_params(4096, 1024, 16, 512, 128, 64);
  p.num_gpus = 4;
  p.gpu = 1;
  p.grid = 104;
  p.staging_base = 1ULL << 30;
  p.flag_base = 1000;
  p.all_gather = true;
  const KernelTrace t = make_fused_gemm_rs_trace(p);
  const TraceTotals tot = trace_totals(t);
  const std::uint64_t chunk = 4096 * 2 / 4;  // 1024 elements of y
  const std::uint64_t tiles_per_chunk = 1024 / 16;
  EXPECT_EQ(tot.store_bytes_remote, 3 * chunk + 3 * chunk);
  EXPECT_EQ(tot.waits, tiles_per_chunk * 4 + 3 * tiles_per_chunk);
  EXPECT_EQ(tot.sets, 3 * tiles_per_chunk + tiles_per_chunk + 3 * tiles_per_chunk);  // partials, own, sums
  EXPECT_EQ(fused_rs_flags_used(p), 2u * 4 * tiles_per_chunk);
  // A tile's store of y is one contiguous 32-byte access, not 16 rows of 2 bytes.
  for (const auto& ops : ops_of(t))
    for (const WgOp& op : ops)
      if (op.kind == TraceOpKind::kStore) {
        EXPECT_EQ(op.rows(), 1u);
      }
}

GemvArSpec gemv_spec(const NodeConfig& node, std::uint64_t m, std::uint64_t k) {
  GemvArSpec s;
  s.gemv = gemv_params(m, k, 16, 512, 128, node.gpu.gemm.wave_size);
  s.ar.kind = CollectiveKind::named("ring-ar");
  s.ar.channels = node.gpu.collective_channels;
  s.ar.values = true;
  return s;
}

OverlapResult run_gemv(const NodeConfig& node, const GemvArSpec& s, const std::string& configuration) {
  return run_op(node, gemv_ar_op(s), configuration);
}

// Values: after either procedure every GPU's y is the sum of the partial vectors (full
// mode, both orders); the fused all-reduce pays two link latencies of a slow link.
TEST(GemvAr, EveryGpuEndsWithTheSumInBothProcedures) {
  const NodeConfig node = mi210({}, NetMode::kFull);
  GemvArSpec s = gemv_spec(node, 4096, 2048);
  const OverlapResult seq = run_gemv(node, s, "sequential");
  EXPECT_TRUE(seq.values_checked);
  EXPECT_GT(seq.words_checked, 0u);
  for (bool comm_aware : {true, false}) {
    s.comm_aware = comm_aware;
    const OverlapResult fused = run_gemv(node, s, "fused");
    EXPECT_EQ(fused.words_checked, seq.words_checked + 4ULL * 4096 * 2 / 32) << comm_aware;
  }
  s.comm_aware = true;
  const OverlapResult slow = run_gemv(mi210({"net.latency=20us"}), s, "fused");
  EXPECT_GE(slow.time, Tick::us(40));
  EXPECT_GT(slow.flag_waits, 0u);
}

TEST(GemvAr, HomogeneousModeAgreesWithTheFullNode) {
  const GemvArSpec s = gemv_spec(mi210(), 4096, 2048);
  const OverlapResult full = run_gemv(mi210({}, NetMode::kFull), s, "fused");
  const OverlapResult mirrored = run_gemv(mi210(), s, "fused");
  EXPECT_TRUE(mirrored.values_checked);
  EXPECT_NEAR(static_cast<double>(mirrored.time.ps()), static_cast<double>(full.time.ps()),
              0.05 * static_cast<double>(full.time.ps()));
}

// ---------------------------------------------------------------------------- embedding_a2a

EmbeddingParams embedding(std::uint32_t gpu, std::uint32_t grid = 16) {
  EmbeddingParams p;
  p.num_gpus = 4;
  p.gpu = gpu;
  p.batch = 64;
  p.tables = 8;
  p.rows = 1000;
  p.grid = grid;
  p.table_base = 0;
  p.index_base = 3ULL << 30;
  p.out_base = 1ULL << 30;
  p.recv_base = 2ULL << 30;
  p.flag_base = 5000;
  return p;
}

// DLRM's generator: 1 to pooling_max rows per bag, mean about half of it; every GPU's
// bags are GPU 0's shifted by its chunk of samples (homogeneous mode mirrors them).
TEST(Embedding, BagsFollowDlrmsGeneratorAndShiftWithTheGpu) {
  const EmbeddingParams p0 = embedding(0), p2 = embedding(2);
  const double mean = embedding_mean_pooling(p0);
  EXPECT_GT(mean, 4.5);
  EXPECT_LT(mean, 5.6);
  for (std::uint32_t t = 0; t < 8; ++t) {
    for (std::uint64_t b = 0; b < 64; ++b) {
      const auto rows = embedding_bag_rows(p0, t, b);
      EXPECT_GE(rows.size(), 1u);
      EXPECT_LE(rows.size(), 10u);
      for (std::uint64_t r : rows) EXPECT_LT(r, 1000u);
      EXPECT_EQ(embedding_bag_rows(p2, t, (b + 32) % 64), rows);  // GPU 2: 2 chunks of 16 samples later
    }
  }
}

// The bulk kernel: one WG per bag, its rows loaded, one vector stored into [B][T][D].
// The fused kernel: the same loads, 3/4 of the vectors stored remotely (other GPUs'
// samples first), each WG's end flag at every peer, and its waits.
TEST(Embedding, BulkAndFusedKernelsPoolEveryBagOnce) {
  const EmbeddingParams p = embedding(1);
  std::uint64_t rows = 0;
  for (std::uint64_t b = 0; b < 64; ++b)
    for (std::uint32_t t = 0; t < 8; ++t) rows += embedding_bag_rows(p, t, b).size();
  const TraceTotals bulk = trace_totals(make_embedding_trace(p));
  EXPECT_EQ(bulk.wgs, 64u * 8);
  // Each bag: its offsets (16 B), then per row its index (8 B) and the row (1 KiB).
  const std::uint64_t bag_loads = rows * (1024 + 8) + 64u * 8 * 16;
  EXPECT_EQ(bulk.load_bytes, bag_loads);
  EXPECT_EQ(bulk.compute_ops, 64u * 8 + 2 * rows);
  EXPECT_EQ(embedding_index_bytes(p), (8u * 65 + rows) * 8);
  {
    // PyTorch's loop, a dependent chain: offsets; per row its index, then the row,
    // added into the sum carried to the next row; the last add is not carried.
    const KernelTrace bulk_trace = make_embedding_trace(p);
    const auto bag = ops_of(bulk_trace).front();
    const std::size_t n = embedding_bag_rows(p, 0, 0).size();
    ASSERT_EQ(bag.size(), 2 + 4 * n + 1);
    EXPECT_EQ(bag[0].kind, TraceOpKind::kLoad);
    EXPECT_EQ(bag[0].bytes(), 16u);
    for (std::size_t i = 0; i < n; ++i) {
      const WgOp* step = &bag[2 + 4 * i];
      EXPECT_EQ(step[0].bytes(), 8u);
      EXPECT_TRUE(step[1].kind == TraceOpKind::kCompute && step[1].carry());
      EXPECT_EQ(step[2].bytes(), 1024u);
      EXPECT_EQ(step[2].addr(), embedding_bag_rows(p, 0, 0)[i] * 1024);
      EXPECT_EQ(step[3].carry(), i + 1 < n) << "row " << i;
    }
    EXPECT_EQ(bag.back().kind, TraceOpKind::kStore);
    EXPECT_EQ(bulk_trace.resources.stages, 1u);
  }
  EXPECT_EQ(bulk.store_bytes_cached, 64u * 8 * 1024);
  const KernelTrace fused_trace = make_fused_embedding_a2a_trace(p);
  const TraceTotals fused = trace_totals(fused_trace);
  EXPECT_EQ(fused.wgs, 16u);
  EXPECT_EQ(fused.load_bytes, bag_loads);
  EXPECT_EQ(fused.store_bytes_remote, 48u * 8 * 1024);  // the 3 other GPUs' 16 samples each
  EXPECT_EQ(fused.store_bytes_cached, 16u * 8 * 1024);  // its own samples
  EXPECT_EQ(fused.sets, 16u * 3);
  EXPECT_EQ(fused.waits, 16u * 3);
  // Communication-aware: other GPUs' samples first, interleaved over them (WG w's first
  // bag is sample 0 of GPU 2 for w < 8 tables, of GPU 3 next), its own samples last.
  const auto per_wg = ops_of(fused_trace);
  for (std::size_t w = 0; w < per_wg.size(); ++w) {
    std::vector<const WgOp*> stores;
    for (const WgOp& op : per_wg[w])
      if (op.kind == TraceOpKind::kStore) stores.push_back(&op);
    ASSERT_FALSE(stores.empty());
    EXPECT_TRUE(stores.front()->remote());
    EXPECT_EQ(stores.front()->peer, w < 8 ? 2 : 3) << "WG " << w;
    EXPECT_FALSE(stores.back()->remote()) << "WG " << w;
  }
}

EmbeddingA2aSpec embedding_spec(const NodeConfig& node, std::uint64_t batch, std::uint32_t tables) {
  EmbeddingA2aSpec s;
  s.embedding.batch = batch;
  s.embedding.tables = tables;
  s.embedding.rows = 256;
  s.a2a.kind = CollectiveKind::named("all-to-all");
  s.a2a.channels = node.gpu.collective_channels;
  s.a2a.values = true;
  return s;
}

OverlapResult run_embedding(const NodeConfig& node, const EmbeddingA2aSpec& s, const std::string& configuration) {
  return run_op(node, embedding_a2a_op(s), configuration);
}

// Values: every received vector is the sum of its bag's rows (full mode, both orders);
// homogeneous mode agrees with the full node; the fused operator beats sequential.
TEST(EmbeddingA2a, EveryVectorIsItsBagsSumAndTheFusedOperatorWins) {
  const NodeConfig full = mi210({}, NetMode::kFull);
  EmbeddingA2aSpec s = embedding_spec(full, 128, 8);
  const OverlapResult seq = run_embedding(full, s, "sequential");
  EXPECT_TRUE(seq.values_checked);
  OverlapResult fused[2];
  for (bool comm_aware : {true, false}) {
    s.embedding.comm_aware = comm_aware;
    fused[comm_aware ? 0 : 1] = run_embedding(full, s, "fused");
    EXPECT_EQ(fused[comm_aware ? 0 : 1].words_checked, seq.words_checked + 4ULL * 128 * 8 * 32) << comm_aware;
    EXPECT_LT(fused[comm_aware ? 0 : 1].time, seq.time) << comm_aware;
  }
  s.embedding.comm_aware = true;
  const OverlapResult mirrored = run_embedding(mi210(), s, "fused");
  EXPECT_TRUE(mirrored.values_checked);
  EXPECT_NEAR(static_cast<double>(mirrored.time.ps()), static_cast<double>(fused[0].time.ps()),
              0.05 * static_cast<double>(fused[0].time.ps()));
}

}  // namespace
}  // namespace t3sim
