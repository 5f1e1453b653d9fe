#include "trace/trace.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "trace/gemm.h"

namespace t3sim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kTracesDir = std::string(T3SIM_SOURCE_DIR) + "/traces";

std::vector<WgOp> expand(const KernelTrace& t, std::uint32_t wg) {
  std::vector<WgOp> ops;
  WgExpander x(t, wg);
  WgOp op;
  while (x.next(op)) ops.push_back(op);
  return ops;
}

WgOp range(TraceOpKind kind, std::uint64_t addr, std::uint64_t row_bytes, std::uint64_t rows, std::uint64_t stride,
           std::int32_t wf = -1, std::uint8_t flags = 0) {
  WgOp op;
  op.kind = kind;
  op.flags = flags;
  op.wf = wf;
  op.v[0] = addr;
  op.v[1] = row_bytes;
  op.v[2] = rows;
  op.v[3] = stride;
  return op;
}

// Ignores op_index (compared separately where it matters).
bool same_ops(std::vector<WgOp> a, std::vector<WgOp> b) {
  for (auto& op : a) op.op_index = 0;
  for (auto& op : b) op.op_index = 0;
  return a == b;
}

// The TraceError parsing `text` throws (a test failure if none).
std::string trace_error(const std::string& text) {
  try {
    parse_trace(text, "bad.trace");
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a TraceError for:\n" << text;
  return "";
}

GemmParams small_gemm(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  GemmParams p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

const char* kHandTrace = R"(# a hand-written trace using every op
t3trace 1
kernel hand
attr note two programs, loops, flags
resources wfs=2 threads=128 regs_per_thread=64 lds_bytes=4096
params base peer_base
program main
  loop i 2
    load base+128*i 128   # 1D
    compute 10 flops=20480
  end
  wait 3 1
  loop w 2
    store peer_base+64*w 64 rows=4 stride=256 uncached update peer=1 wf=w
  end
  set 4 1 peer=1
end
program other
  load 0x1000 64 rows=2 stride=4096 uncached wf=1
  store base 32 cached
end
wgs 3
wg 0 main 0 8192
wg 1 other 4096 0
wg 2 main 1024 16384
)";

// ---------------------------------------------------------------------------
// Format

TEST(TraceFormat, ParsesAndExpandsAHandWrittenTrace) {
  const KernelTrace t = parse_trace(kHandTrace, "hand.trace");
  EXPECT_EQ(t.name, "hand");
  EXPECT_EQ(t.num_wgs(), 3u);
  EXPECT_EQ(t.resources.wfs_per_wg, 2u);
  EXPECT_EQ(t.resources.threads_per_wg, 128u);
  EXPECT_EQ(t.resources.regs_per_thread, 64u);
  EXPECT_EQ(t.resources.lds_bytes, 4096u);
  ASSERT_NE(t.attr("note"), nullptr);
  EXPECT_EQ(*t.attr("note"), "two programs, loops, flags");

  const std::vector<WgOp> ops = expand(t, 2);
  ASSERT_EQ(ops.size(), 8u);
  EXPECT_TRUE(same_ops({ops[0]}, {range(TraceOpKind::kLoad, 1024, 128, 1, 128)}));
  EXPECT_EQ(ops[1].kind, TraceOpKind::kCompute);
  EXPECT_EQ(ops[1].cycles(), 10u);
  EXPECT_EQ(ops[1].flops(), 20480u);
  EXPECT_EQ(ops[2].addr(), 1024u + 128);
  EXPECT_EQ(ops[4].kind, TraceOpKind::kWait);
  EXPECT_EQ(ops[4].flag(), 3u);
  EXPECT_EQ(ops[4].value(), 1u);
  WgOp store = range(TraceOpKind::kStore, 16384 + 64, 64, 4, 256, 1, kTraceUncached | kTraceUpdate | kTraceRemote);
  store.peer = 1;
  EXPECT_TRUE(same_ops({ops[6]}, {store}));
  EXPECT_EQ(ops[6].bytes(), 256u);
  EXPECT_EQ(ops[7].kind, TraceOpKind::kSet);
  EXPECT_EQ(ops[7].peer, 1);

  const std::vector<WgOp> other = expand(t, 1);
  ASSERT_EQ(other.size(), 2u);
  EXPECT_TRUE(same_ops(other, {range(TraceOpKind::kLoad, 4096, 64, 2, 4096, 1, kTraceUncached),
                               range(TraceOpKind::kStore, 4096, 32, 1, 32)}));
  // The source line of an op is kept for messages.
  EXPECT_EQ(t.program_of(1).lines[other[0].op_index], 19u);
}

TEST(TraceFormat, RoundTripIsExact) {
  const KernelTrace hand = parse_trace(kHandTrace, "hand.trace");
  const std::string text = trace_to_string(hand);
  const KernelTrace again = parse_trace(text, "again.trace");
  EXPECT_TRUE(again == hand);
  EXPECT_EQ(trace_to_string(again), text);  // canonical text is a fixed point

  GemmParams p = small_gemm(300, 200, 100);
  p.tile_m = 128;
  p.tile_n = 128;
  p.k_step = 64;
  p.wf_grid_m = 2;
  p.wf_grid_n = 2;
  p.store_uncached = true;
  p.store_update = true;
  p.store_peer = 3;
  p.order = TileOrder::kGrouped;
  p.group_size = 2;
  p.stagger_wgs = 1;
  for (MatrixLayout layout : {MatrixLayout::kRowMajor, MatrixLayout::kColumnMajor}) {
    p.a_layout = p.b_layout = p.c_layout = layout;
    const KernelTrace g = make_gemm_trace(p);
    const KernelTrace back = parse_trace(trace_to_string(g), "g.trace");
    EXPECT_TRUE(back == g);
    EXPECT_EQ(trace_totals(back), trace_totals(g));
  }
  // Equality notices a difference.
  KernelTrace changed = hand;
  changed.wg_params[0] += 1;
  EXPECT_FALSE(changed == hand);
}

// `stages` (TraceResources): the generator's buffers, the LDS they take by default,
// the resources line (left out at the default 2, so earlier traces read and write as
// before) and a round trip.
TEST(TraceFormat, StagesRoundTripAndSizeTheDefaultLds) {
  GemmParams p = small_gemm(512, 512, 512);
  const KernelTrace two = make_gemm_trace(p);
  EXPECT_EQ(two.resources.stages, 2u);
  EXPECT_EQ(two.resources.lds_bytes, 2u * (256 + 128) * 32 * 2);
  EXPECT_THAT(trace_to_string(two), Not(HasSubstr("stages=")));
  p.stages = 4;
  const KernelTrace four = make_gemm_trace(p);
  EXPECT_EQ(four.resources.lds_bytes, 4u * (256 + 128) * 32 * 2);
  const std::string text = trace_to_string(four);
  EXPECT_THAT(text, HasSubstr(" stages=4\n"));
  EXPECT_EQ(parse_trace(text, "four.trace").resources.stages, 4u);
  p.stages = 0;
  EXPECT_THROW(make_gemm_trace(p), UserError);
}

// `tma` (TraceResources): Hopper's TMA loads; written only when set, read back.
TEST(TraceFormat, TmaRoundTrips) {
  GemmParams p = small_gemm(512, 512, 512);
  EXPECT_THAT(trace_to_string(make_gemm_trace(p)), Not(HasSubstr("tma")));
  p.tma = true;
  const KernelTrace t = make_gemm_trace(p);
  EXPECT_TRUE(t.resources.tma);
  const std::string text = trace_to_string(t);
  EXPECT_THAT(text, HasSubstr(" tma=1\n"));
  EXPECT_TRUE(parse_trace(text, "tma.trace") == t);
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 tma=2\n"), HasSubstr("bad.trace:3: resources: bad number '2' for tma (expected an integer in [0, 1])"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 boost=2\n"),
              HasSubstr("bad.trace:3: resources: bad number '2' for boost (expected an integer in [0, 1])"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 bost=1\n"),
              HasSubstr("unknown key 'bost'"));
}

// `persistent` (TraceResources::persistent_wgs, issue 41): a GEMM's persistent grid;
// written only when set, read back; a misspelt key is named with the right one.
TEST(TraceFormat, PersistentRoundTrips) {
  GemmParams p = small_gemm(512, 512, 512);
  EXPECT_THAT(trace_to_string(make_gemm_trace(p)), Not(HasSubstr("persistent")));
  p.persistent_wgs = 132;
  const KernelTrace t = make_gemm_trace(p);
  EXPECT_EQ(t.resources.persistent_wgs, 132u);
  const std::string text = trace_to_string(t);
  EXPECT_THAT(text, HasSubstr(" persistent=132\n"));
  EXPECT_TRUE(parse_trace(text, "persistent.trace") == t);
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 persistant=4\n"),
              HasSubstr("bad.trace:3: resources: unknown key 'persistant' (did you mean 'persistent'?)"));
  // The programs each persistent WG owns (persistent_static): written when set, read
  // back, and only with a persistent grid.
  p.persistent_static_tiles = 2;
  const KernelTrace owned = make_gemm_trace(p);
  EXPECT_EQ(owned.resources.persistent_static, 2u);
  const std::string owned_text = trace_to_string(owned);
  EXPECT_THAT(owned_text, HasSubstr(" persistent=132 persistent_static=2\n"));
  EXPECT_TRUE(parse_trace(owned_text, "owned.trace") == owned);
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 persistent_static=2\n"),
              HasSubstr("bad.trace:3: resources: persistent_static needs persistent=N"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 persistent=4 persistent_static=65\n"),
              HasSubstr("bad number '65' for persistent_static (expected an integer in [0, 64])"));
  // Clusters of persistent WGs (cluster_m of a persistent GEMM): written when above 1,
  // read back, a divisor of the persistent grid.
  p.cluster_m = 2;
  const KernelTrace clustered = make_gemm_trace(p);
  EXPECT_EQ(clustered.resources.cluster, 2u);
  const std::string clustered_text = trace_to_string(clustered);
  EXPECT_THAT(clustered_text, HasSubstr(" persistent=132 persistent_static=2 cluster=2\n"));
  EXPECT_TRUE(parse_trace(clustered_text, "clustered.trace") == clustered);
  p.persistent_wgs = 0;
  EXPECT_EQ(make_gemm_trace(p).resources.cluster, 1u);  // one WG per tile: placed alone
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 persistent=5 cluster=2\n"),
              HasSubstr("bad.trace:3: resources: cluster=2 needs persistent=N, a multiple of it"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 persistent=4 cluster=0\n"),
              HasSubstr("resources: cluster must be in [1, 16]"));
}

// A compute's `lds` and `issue` (issue 17): written when not 0, read back, bounded.
TEST(TraceFormat, ComputeLdsAndIssueRoundTripAndAreBounded) {
  GemmParams p = small_gemm(512, 512, 512);
  p.issue_cycles = 40;
  const KernelTrace t = make_gemm_trace(p);
  const std::string text = trace_to_string(t);
  EXPECT_THAT(text, HasSubstr("compute 2048 flops=2097152 lds=49152 issue=40\n"));
  EXPECT_TRUE(parse_trace(text, "k.trace") == t);
  const std::string head = "t3trace 1\nkernel k\nresources wfs=1 threads=64\nprogram p\n";
  EXPECT_THAT(trace_error(head + "  compute 10 lds=-1\nend\nwgs 1\nwg 0 p\n"), HasSubstr("bad.trace:5:"));
  EXPECT_THAT(trace_error(head + "  compute 10 isue=3\nend\nwgs 1\nwg 0 p\n"), HasSubstr("'compute' takes no option 'isue' (expected 'compute CYCLES [flops=F] [lds=B] [issue=C] [carry] [wf=W]')"));
  // `carry` (an embedding bag's running sum) round-trips; it is a compute's flag only.
  const std::string carried = head + "  load 0 64\n  compute 10 carry\n  load 64 64\n  compute 10\nend\nwgs 1\nwg 0 p\n";
  const KernelTrace c = parse_trace(carried, "carry.trace");
  EXPECT_TRUE(c.programs[0].ops[1].flags & kTraceCarry);
  EXPECT_FALSE(c.programs[0].ops[3].flags & kTraceCarry);
  EXPECT_THAT(trace_to_string(c), HasSubstr("compute 10 carry\n"));
  EXPECT_TRUE(parse_trace(trace_to_string(c), "carry.trace") == c);
  EXPECT_THAT(trace_error(head + "  load 0 64 carry\nend\nwgs 1\nwg 0 p\n"), HasSubstr("'load' takes no flag 'carry'"));
  EXPECT_THAT(trace_error(head + "  compute 10 issue=2000000000000\nend\nwgs 1\nwg 0 p\n"),
              HasSubstr("issue evaluates to 2000000000000 (expected at most 1099511627776 cycles)"));
  EXPECT_THAT(trace_error(head + "  compute 10 lds=2000000000000\nend\nwgs 1\nwg 0 p\n"),
              HasSubstr("lds evaluates to 2000000000000 (expected at most 1099511627776 bytes)"));
}

// The epilogue's passes through shared memory (issue 46): the last K step of every tile
// carries 2 x tile bytes / the LDS port's rate as issue cycles on top of the kernel's,
// the others only the kernel's; a partial last step carries it too. Off (0 passes, or
// no LDS rate) it costs nothing.
TEST(Gemm, TheEpilogueIsChargedOnceToEachTilesLastKStep) {
  GemmParams p = small_gemm(512, 512, 512);  // 256x128 tiles, K step 32: 16 steps
  p.issue_cycles = 10;
  p.epilogue_smem_passes = 2;
  p.lds_bytes_per_cycle = 128;
  EXPECT_EQ(gemm_epilogue_cycles(p, 256, 128), 2u * 256 * 128 * 2 / 128);  // 1024
  auto issues = [](const KernelTrace& t) {
    std::vector<std::uint64_t> out;  // the issue cycles of program 0's computes, loop bodies once
    for (const TraceOp& op : t.programs[0].ops)
      if (op.kind == TraceOpKind::kCompute) out.push_back(static_cast<std::uint64_t>(op.arg[3].constant));
    return out;
  };
  const KernelTrace t = make_gemm_trace(p);
  EXPECT_EQ(issues(t), (std::vector<std::uint64_t>{10, 10 + 1024}));
  EXPECT_THAT(trace_to_string(t), HasSubstr("loop k 15\n"));
  p.k = 500;  // 15 full steps and a partial one of 20
  EXPECT_EQ(issues(make_gemm_trace(p)), (std::vector<std::uint64_t>{10, 10 + 1024}));
  EXPECT_THAT(trace_to_string(make_gemm_trace(p)), HasSubstr("loop k 15\n"));
  p.k = 512;
  p.lds_bytes_per_cycle = 0;
  EXPECT_EQ(issues(make_gemm_trace(p)), (std::vector<std::uint64_t>{10}));
  EXPECT_THAT(trace_to_string(make_gemm_trace(p)), HasSubstr("loop k 16\n"));
  p.lds_bytes_per_cycle = 128;
  p.epilogue_smem_passes = 0;
  EXPECT_EQ(issues(make_gemm_trace(p)), (std::vector<std::uint64_t>{10}));
}

// A kernel on older instructions (issue 42: cuBLAS's align2 fallback on Hopper): its
// matrix cycles at its own mma rate, its threads' tile copies as issue cycles of every K
// step (A and B tile bytes of the step / the copy rate), and its matrix steps at the
// boost clock (resources boost=1, which the text form keeps).
TEST(Gemm, AnOlderKernelsMmaRateCopyCyclesAndClockReachItsTrace) {
  GemmParams p = small_gemm(512, 512, 512);  // 256x128 tiles, K step 32: 16 steps
  p.flops_per_cycle = 4096;
  p.issue_cycles = 10;
  auto computes = [](const KernelTrace& t) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;  // (matrix cycles, issue cycles)
    for (const TraceOp& op : t.programs[0].ops)
      if (op.kind == TraceOpKind::kCompute) out.emplace_back(op.arg[0].constant, op.arg[3].constant);
    return out;
  };
  const std::int64_t flops = 2 * 256 * 128 * 32;
  EXPECT_EQ(computes(make_gemm_trace(p)), (std::vector<std::pair<std::int64_t, std::int64_t>>{{flops / 4096, 10}}));
  EXPECT_FALSE(make_gemm_trace(p).resources.boost_clock);
  p.mma_flops_per_cycle = 2665;
  p.load_issue_bytes_per_cycle = 32;
  p.boost_clock = true;
  const KernelTrace t = make_gemm_trace(p);
  const std::int64_t copy = (256 + 128) * 32 * 2 / 32;  // 768 cycles per step
  EXPECT_EQ(computes(t), (std::vector<std::pair<std::int64_t, std::int64_t>>{{(flops + 2664) / 2665, 10 + copy}}));
  EXPECT_TRUE(t.resources.boost_clock);
  EXPECT_THAT(trace_to_string(t), HasSubstr(" boost=1"));
  EXPECT_EQ(parse_trace(trace_to_string(t), "t").resources.boost_clock, true);
  p.k = 500;  // a partial last step of 20 copies 20 rows of K, not 32
  EXPECT_EQ(computes(make_gemm_trace(p)).back().second, 10 + (256 + 128) * 20 * 2 / 32);
}

// The LDS operand bytes of each shipped system's GEMM kernel (its gpu.gemm), per K
// step: what the CU's LDS port must deliver against the step's matrix cycles.
TEST(Gemm, LdsReadBytesFollowTheKernelsMmaSplit) {
  GemmParams table1 = small_gemm(4096, 4096, 4096);  // 256x128x32, 4 WFs: 2 x 2
  EXPECT_EQ(mma_grid(table1, 256, 128).m, 2u);
  EXPECT_EQ(lds_read_bytes(table1, 256, 128, 32), 32u * 2 * (256 * 2 + 128 * 2));  // 48 KiB
  GemmParams h200 = table1;  // 128x256x64, 8 warps = 2 warpgroups (WGMMA): 1 x 2
  h200.tile_m = 128;
  h200.tile_n = 256;
  h200.k_step = 64;
  h200.wfs_per_wg = 8;
  h200.wave_size = 32;
  h200.tma = true;
  EXPECT_EQ(mma_grid(h200, 128, 256).n, 2u);
  EXPECT_EQ(lds_read_bytes(h200, 128, 256, 64), 64u * 2 * (128 * 2 + 256 * 1));  // 64 KiB
  GemmParams mi300x = table1;  // 256x256x32, 4 waves: 2 x 2
  mi300x.tile_n = 256;
  EXPECT_EQ(lds_read_bytes(mi300x, 256, 256, 32), 32u * 2 * (256 * 2 + 256 * 2));  // 64 KiB
  // A single WF reads each operand once; a tile narrower than the WFs splits one way.
  GemmParams one = table1;
  one.wfs_per_wg = 1;
  EXPECT_EQ(lds_read_bytes(one, 256, 128, 32), 32u * 2 * (256 + 128));
  EXPECT_EQ(mma_grid(table1, 1, 128).m, 1u);
}

// Clusters along M with TMA multicast (issue 17, item 5): the tiles of a cluster each
// fetch their share of every K step's B tile, so B is read once per cluster; A, the
// computes and the stores are unchanged.
TEST(Gemm, ClusterMulticastFetchesEachBTileOncePerCluster) {
  GemmParams p = small_gemm(1024, 512, 96);  // 4 x 4 tiles of 256 x 128, K steps of 32 (3)
  const TraceTotals alone = trace_totals(make_gemm_trace(p));
  p.cluster_m = 2;
  const KernelTrace clustered = make_gemm_trace(p);
  const TraceTotals two = trace_totals(clustered);
  const std::uint64_t a_bytes = 1024ull * 96 * 2 * 4;  // A read by each of the 4 tile columns
  const std::uint64_t b_bytes = 96ull * 512 * 2 * 4;   // B read by each of the 4 tile rows
  EXPECT_EQ(alone.load_bytes, a_bytes + b_bytes);
  EXPECT_EQ(two.load_bytes, a_bytes + b_bytes / 2);
  EXPECT_EQ(two.compute_cycles, alone.compute_cycles);
  EXPECT_EQ(two.store_bytes, alone.store_bytes);
  // Rank 0 fetches B's K rows 0-15 of each step, rank 1 rows 16-31.
  const std::string text = trace_to_string(clustered);
  EXPECT_THAT(text, HasSubstr("program tile_256x128_b0of2\n"));
  EXPECT_THAT(text, HasSubstr("program tile_256x128_b1of2\n"));
  EXPECT_THAT(text, Not(HasSubstr("program tile_256x128\n")));
  EXPECT_THAT(text, HasSubstr("load b+32768*k 256 rows=16 stride=1024\n"));
  EXPECT_THAT(text, HasSubstr("load b+32768*k+16384 256 rows=16 stride=1024\n"));
  EXPECT_TRUE(parse_trace(text, "c.trace") == clustered);
  // Three tile rows: the last cluster has one tile, which fetches all of its B; a K tail
  // of 33 splits 17 / 16.
  GemmParams odd = small_gemm(768, 512, 33);
  odd.cluster_m = 2;
  const TraceTotals t = trace_totals(make_gemm_trace(odd));
  EXPECT_EQ(t.load_bytes, 768ull * 33 * 2 * 4 + 33ull * 512 * 2 * 2);
  odd.cluster_m = 0;
  EXPECT_THROW(make_gemm_trace(odd), UserError);
}

TEST(TraceFormat, MalformedTracesNameFileAndLine) {
  const std::string head = "t3trace 1\nkernel k\nresources wfs=1 threads=64\nparams a\n";
  EXPECT_THAT(trace_error(""), HasSubstr("missing header"));
  EXPECT_THAT(trace_error("kernel k\n"), HasSubstr("bad.trace:1: missing header"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 stages=0\n"),
              HasSubstr("bad.trace:3: resources: stages must be in [1, 16]"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64 stage=3\n"),
              HasSubstr("bad.trace:3: resources: unknown key 'stage' (did you mean 'stages'?)"));
  EXPECT_THAT(trace_error("# c\nt3trace 2\n"), HasSubstr("bad.trace:2: unsupported trace format version 2"));
  EXPECT_THAT(trace_error("t3trace one\n"), HasSubstr("bad.trace:1: bad version 'one'"));
  EXPECT_THAT(trace_error(head + "program p\n  lod a 64\nend\n"),
              HasSubstr("bad.trace:6: unknown op 'lod' (did you mean 'load'?)"));
  EXPECT_THAT(trace_error(head + "program p\n  load a 6x4\nend\n"), HasSubstr("bad.trace:6: bad expression '6x4'"));
  EXPECT_THAT(trace_error(head + "program p\n  compute 1+\nend\n"), HasSubstr("bad.trace:6: bad expression"));
  EXPECT_THAT(trace_error(head + "program p\n  load q 64\nend\n"), HasSubstr("unknown variable 'q'"));
  EXPECT_THAT(trace_error(head + "program p\n  loop i 4\n    compute 1\n"),
              HasSubstr("bad.trace:6: unterminated loop 'i'"));
  EXPECT_THAT(trace_error(head + "program p\n  compute 1\n"), HasSubstr("bad.trace:5: unterminated program 'p'"));
  EXPECT_THAT(trace_error(head + "program p\n  store a 64 cached uncached\nend\n"),
              HasSubstr("bad.trace:6: a store is either cached or uncached"));
  EXPECT_THAT(trace_error(head + "program p\n  load a 64 peer=1\nend\n"), HasSubstr("takes no option 'peer'"));
  EXPECT_THAT(trace_error(head + "program p\n  compute 1\nend\nwgs 2\nwg 0 p 0\n"),
              HasSubstr("bad.trace:8: 'wgs 2' declared but 1 'wg' lines follow"));
  EXPECT_THAT(trace_error(head + "program p\n  compute 1\nend\nwgs 1\nwg 0 p zero\n"),
              HasSubstr("bad.trace:9: bad value 'zero' for parameter 'a'"));
  EXPECT_THAT(trace_error(head + "program p\n  compute 1\nend\nwgs 1\nwg 0 q 0\n"),
              HasSubstr("bad.trace:9: unknown program 'q'"));
  EXPECT_THAT(trace_error(head + "program p\n  compute 1\nend\nwgs 1\nwg 1 p 0\n"), HasSubstr("bad WG id '1'"));
  // Values are checked for every WG: a negative address, a WF out of range.
  EXPECT_THAT(trace_error(head + "program p\n  load a-64 64\nend\nwgs 2\nwg 0 p 100\nwg 1 p 0\n"),
              HasSubstr("bad.trace:6: WG 1: address evaluates to -64"));
  EXPECT_THAT(trace_error(head + "program p\n  loop w 2\n    store a 64 wf=w\n  end\nend\nwgs 1\nwg 0 p 0\n"),
              HasSubstr("bad.trace:7: WG 0: wf evaluates to 1 (expected below the kernel's 1 WFs per WG)"));
  EXPECT_THAT(trace_error(head + "program p\n  compute 9223372036854775807*a\nend\nwgs 1\nwg 0 p 2\n"),
              HasSubstr("cycles overflows"));
  // Accesses the memory system cannot carry (issue 21, C03, C04, C14), per WG.
  EXPECT_THAT(trace_error(head + "program p\n  load a+64 0\nend\nwgs 1\nwg 0 p 0\n"),
              HasSubstr("bad.trace:6: WG 0: bytes evaluates to 0 (expected an access of at least 1 byte)"));
  EXPECT_THAT(trace_error(head + "program p\n  load 0 256 rows=2 stride=128\nend\nwgs 1\nwg 0 p 0\n"),
              HasSubstr("WG 0: stride 128 is smaller than a row's 256 bytes: the rows would overlap"));
  EXPECT_THAT(trace_error(head + "program p\n  load 0 256 rows=1000000000000\nend\nwgs 1\nwg 0 p 0\n"),
              HasSubstr("WG 0: rows evaluates to 1000000000000 (expected at most 1048576)"));
  EXPECT_THAT(trace_error(head + "program p\n  load 0 a\nend\nwgs 2\nwg 0 p 64\nwg 1 p 0\n"),
              HasSubstr("WG 1: bytes evaluates to 0"));
  // Loops that would not end in any reasonable time (issue 15), alone or nested.
  EXPECT_THAT(trace_error(head + "program p\n  loop i 1000000000000\n    load a 64\n  end\nend\nwgs 1\nwg 0 p 0\n"),
              HasSubstr("bad.trace:6: WG 0: loop count evaluates to 1000000000000: 1000000000000 iterations with the "
                        "loops around it (expected at most 4294967296 per WG)"));
  EXPECT_THAT(trace_error(head + "program p\n  loop i 65536\n    loop j 65537\n      load a 64\n    end\n  end\nend\n"
                                 "wgs 1\nwg 0 p 0\n"),
              HasSubstr("loop count evaluates to 65537: 4295032832 iterations with the loops around it"));
  // A kernel of more WGs than the host can hold (issue 15): refused at its count.
  EXPECT_THAT(trace_error(head + "program p\n  compute 1\nend\nwgs 4294967295\n"),
              HasSubstr("bad.trace:8: bad WG count '4294967295' (expected an integer in [1, 16777216])"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=3 threads=64\n"), HasSubstr("multiple of wfs"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresources wfs=1 threads=64\nprogram p\nend\n"),
              HasSubstr("missing 'wgs COUNT'"));
  EXPECT_THAT(trace_error("t3trace 1\nkernel k\nresorces wfs=1\n"), HasSubstr("did you mean 'resources'"));
  // read_trace names the file.
  try {
    read_trace("/nonexistent/x.trace");
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/x.trace"));
  }
}

// ---------------------------------------------------------------------------
// GEMM generator

TEST(Gemm, TinyGemmExpandsToHandCheckedOps) {
  // 4x4 output, K = 6, 2x2 tiles, K step 4 (one full step + a tail of 2), 2 WFs
  // (one output row each), FP16. A at 0, B at 0x1000, C at 0x2000.
  GemmParams p = small_gemm(4, 4, 6);
  p.tile_m = p.tile_n = 2;
  p.k_step = 4;
  p.wfs_per_wg = 2;
  p.flops_per_cycle = 8;
  p.a_base = 0;
  p.b_base = 0x1000;
  p.c_base = 0x2000;
  p.store_uncached = true;
  const KernelTrace t = make_gemm_trace(p);
  ASSERT_EQ(t.num_wgs(), 4u);
  // WG 3 (row-major order) is tile (1, 1): rows 2..3, columns 2..3.
  const std::vector<WgOp> ops = expand(t, 3);
  WgOp c1;
  c1.kind = TraceOpKind::kCompute;
  c1.v[0] = 2 * 2 * 2 * 4 / 8;
  c1.v[1] = 2 * 2 * 2 * 4;
  // LDS operand bytes: the 2 WFs split the 2x2 tile 1 x 2 (a column each: ties go to
  // fewer rows), so each reads all 2 rows of A and its column of B every K step:
  // kc x 2 B x (2 rows x 2 WFs + 2 columns x 1) = 48 for kc 4.
  c1.v[2] = 4 * 2 * (2 * 2 + 2 * 1);
  WgOp c2 = c1;
  c2.v[0] = 2;  // 16 flops / 8
  c2.v[1] = 16;
  c2.v[2] = 2 * 2 * (2 * 2 + 2 * 1);
  const std::vector<WgOp> want = {
      // A rows 2..3 (row stride K*2 = 12 bytes), K 0..3: 8 bytes per row
      range(TraceOpKind::kLoad, 2 * 12, 8, 2, 12),
      // B rows 0..3 (row stride N*2 = 8), columns 2..3: 4 bytes per row
      range(TraceOpKind::kLoad, 0x1000 + 4, 4, 4, 8),
      c1,
      // the K tail: K 4..5
      range(TraceOpKind::kLoad, 2 * 12 + 8, 4, 2, 12),
      range(TraceOpKind::kLoad, 0x1000 + 4 * 8 + 4, 4, 2, 8),
      c2,
      // WF 0 stores row 2, WF 1 row 3 (columns 2..3), uncached
      range(TraceOpKind::kStore, 0x2000 + (2 * 4 + 2) * 2, 4, 1, 8, 0, kTraceUncached),
      range(TraceOpKind::kStore, 0x2000 + (3 * 4 + 2) * 2, 4, 1, 8, 1, kTraceUncached),
  };
  EXPECT_TRUE(same_ops(ops, want)) << trace_to_string(t);
}

TEST(Gemm, TotalsAreExactForExactTilings) {
  for (MatrixLayout layout : {MatrixLayout::kRowMajor, MatrixLayout::kColumnMajor}) {
    GemmParams p = small_gemm(1024, 512, 384);
    p.a_layout = p.b_layout = p.c_layout = layout;
    const TraceTotals t = trace_totals(make_gemm_trace(p));
    const std::uint64_t dt = 2;
    EXPECT_EQ(t.wgs, (1024 / 256) * (512 / 128));
    EXPECT_EQ(t.flops, 2ull * 1024 * 512 * 384);
    EXPECT_EQ(t.compute_cycles, 2ull * 1024 * 512 * 384 / 1024);
    EXPECT_EQ(t.store_bytes, 1024ull * 512 * dt);
    EXPECT_EQ(t.store_bytes_cached, t.store_bytes);
    EXPECT_EQ(t.load_bytes, (1024 / 256) * (512 / 128) * (256 + 128) * 384 * dt);
    EXPECT_EQ(t.stores, t.wgs * 4);  // one per WF
  }
  GemmParams p = small_gemm(512, 512, 512);
  p.store_uncached = true;
  p.store_update = true;
  p.store_peer = 2;
  const TraceTotals t = trace_totals(make_gemm_trace(p));
  EXPECT_EQ(t.store_bytes_uncached, 512u * 512 * 2);
  EXPECT_EQ(t.store_bytes_update, 512u * 512 * 2);
  EXPECT_EQ(t.store_bytes_remote, 512u * 512 * 2);
  EXPECT_EQ(t.store_bytes_cached, 0u);
}

TEST(Gemm, EdgeTilesArePartialAndTotalsStayExact) {
  for (auto [m, n, k] : {std::array<std::uint64_t, 3>{300, 200, 100}, {1000, 600, 70}, {100, 50, 10}}) {
    for (std::uint32_t grid_m : {0u, 2u}) {
      GemmParams p = small_gemm(m, n, k);
      p.tile_m = p.tile_n = 128;
      p.k_step = 64;
      if (grid_m != 0) {
        p.wf_grid_m = grid_m;
        p.wf_grid_n = 2;
      }
      const KernelTrace trace = make_gemm_trace(p);
      EXPECT_NO_THROW(validate_trace(trace));
      const TraceTotals t = trace_totals(trace);
      EXPECT_EQ(t.flops, 2 * m * n * k);
      EXPECT_EQ(t.store_bytes, m * n * 2);
      // Each tile loads its partial A rows and B columns over the whole K.
      std::uint64_t loads = 0;
      for (std::uint64_t r = 0; r < m; r += 128) {
        for (std::uint64_t c = 0; c < n; c += 128) loads += (std::min<std::uint64_t>(128, m - r) + std::min<std::uint64_t>(128, n - c)) * k * 2;
      }
      EXPECT_EQ(t.load_bytes, loads);
      // Every output byte is stored exactly once.
      std::vector<char> written(m * n, 0);
      const std::uint64_t c_base = gemm_addresses(p).c;
      std::uint64_t count = 0;
      for (std::uint32_t wg = 0; wg < trace.num_wgs(); ++wg) {
        for (const WgOp& op : expand(trace, wg)) {
          if (op.kind != TraceOpKind::kStore) continue;
          ASSERT_GE(op.wf, 0);
          ASSERT_LT(op.wf, 4);
          for (std::uint64_t row = 0; row < op.rows(); ++row) {
            for (std::uint64_t b = 0; b < op.row_bytes(); b += 2) {
              const std::uint64_t element = (op.addr() + row * op.stride() + b - c_base) / 2;
              ASSERT_LT(element, m * n);
              count += written[element] == 0 ? 1 : 0;
              written[element] = 1;
            }
          }
        }
      }
      EXPECT_EQ(count, m * n);  // every element once (the byte totals exclude overlaps)
    }
  }
}

TEST(Gemm, TileOrdersVisitEveryTileOnce) {
  GemmParams p = small_gemm(256 * 5, 128 * 3, 64);  // 5 x 3 tiles
  for (TileOrder order : {TileOrder::kRowMajor, TileOrder::kColumnMajor, TileOrder::kGrouped}) {
    for (std::uint32_t group : {1u, 2u, 8u}) {
      p.order = order;
      p.group_size = group;
      std::vector<std::uint64_t> tiles = gemm_tile_order(p);
      ASSERT_EQ(tiles.size(), 15u);
      std::sort(tiles.begin(), tiles.end());
      for (std::uint64_t i = 0; i < tiles.size(); ++i) EXPECT_EQ(tiles[i], i);
    }
  }
  p.order = TileOrder::kRowMajor;
  EXPECT_EQ(gemm_tile_order(p)[1], 1u);
  p.order = TileOrder::kColumnMajor;
  EXPECT_EQ(gemm_tile_order(p)[1], 3u);  // (row 1, column 0)
  p.order = TileOrder::kGrouped;
  p.group_size = 2;
  // Rows 0-1 column by column, then rows 2-3, then row 4.
  EXPECT_EQ(gemm_tile_order(p), (std::vector<std::uint64_t>{0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11, 12, 13, 14}));
  // The trace's WGs follow the order: WG 1 of the grouped order computes tile 3.
  const KernelTrace t = make_gemm_trace(p);
  EXPECT_EQ(static_cast<std::uint64_t>(t.params_of(1)[2]), gemm_addresses(p).c + 256ull * 384 * 2);
}

// CUTLASS's sm90 raster heuristic: along M (column-major) for a wide grid, along N
// (row-major) for a tall one.
TEST(Gemm, HeuristicOrderRastersAlongTheDimensionWithFewerTiles) {
  GemmParams wide = small_gemm(512, 1024, 64);  // 2 x 8 tiles of 256 x 128
  wide.order = TileOrder::kHeuristic;
  GemmParams col = wide;
  col.order = TileOrder::kColumnMajor;
  EXPECT_EQ(gemm_tile_order(wide), gemm_tile_order(col));
  GemmParams tall = small_gemm(4096, 256, 64);  // 16 x 2 tiles
  tall.order = TileOrder::kHeuristic;
  GemmParams row = tall;
  row.order = TileOrder::kRowMajor;
  EXPECT_EQ(gemm_tile_order(tall), gemm_tile_order(row));
  EXPECT_EQ(parse_tile_order("heuristic"), TileOrder::kHeuristic);
}

TEST(Gemm, StaggerRotatesTheOrder) {
  GemmParams p = small_gemm(1024, 512, 64);  // 16 tiles
  const std::vector<std::uint64_t> base = gemm_tile_order(p);
  p.stagger_wgs = 5;
  const std::vector<std::uint64_t> rotated = gemm_tile_order(p);
  for (std::size_t i = 0; i < base.size(); ++i) EXPECT_EQ(rotated[i], base[(i + 5) % base.size()]);
  p.stagger_wgs = 16 + 5;
  EXPECT_EQ(gemm_tile_order(p), rotated);
  // Same work either way.
  GemmParams q = p;
  q.stagger_wgs = 0;
  EXPECT_EQ(trace_totals(make_gemm_trace(p)), trace_totals(make_gemm_trace(q)));
}

TEST(Gemm, BadParametersAreUserErrors) {
  GemmParams p = small_gemm(0, 4, 4);
  EXPECT_THROW(make_gemm_trace(p), UserError);
  p = small_gemm(512, 512, 512);
  p.wf_grid_m = 3;
  p.wf_grid_n = 1;
  EXPECT_THROW(make_gemm_trace(p), UserError);
  EXPECT_THROW(parse_tile_order("diagonal"), UserError);
  // More output tiles than a kernel may have WGs (issue 15: m = n = 1e8 was a bad_alloc),
  // refused before the tile order is built; the largest allowed count is fine to check.
  p = small_gemm(100000000, 100000000, 64);
  EXPECT_THAT([&] { make_gemm_trace(p); },
              testing::ThrowsMessage<UserError>(HasSubstr("is 305175781250 WGs, more than a kernel may have (16777216")));
  p = small_gemm(1 << 20, (1 << 18) + 1, 64);  // 2^13 x (2^11 + 1) tiles of 128 x 128: one row too many
  p.tile_m = p.tile_n = 128;
  EXPECT_THROW(validate_gemm(p), UserError);
  p.n = 1 << 18;  // 2^13 x 2^11 = 2^24 tiles: the limit
  EXPECT_NO_THROW(validate_gemm(p));
}

// ---------------------------------------------------------------------------
// Presets

TEST(Presets, EveryTable2SubLayer) {
  struct Want {
    const char* name;
    std::uint64_t m, n, k;
  };
  const Want want[] = {
      {"megagpt2.op.tp8", 16384, 3072, 384},   {"megagpt2.fc2.tp8", 16384, 3072, 1536},
      {"megagpt2.fc1.tp8", 16384, 3072, 1536}, {"megagpt2.ip.tp8", 16384, 3072, 1152},
      {"megagpt2.op.tp16", 16384, 3072, 192},  {"megagpt2.fc2.tp16", 16384, 3072, 768},
      {"megagpt2.fc1.tp16", 16384, 3072, 768}, {"megagpt2.ip.tp16", 16384, 3072, 576},
      {"tnlg.op.tp8", 8192, 4256, 532},        {"tnlg.fc2.tp8", 8192, 4256, 2128},
      {"tnlg.fc1.tp8", 8192, 4256, 2128},      {"tnlg.ip.tp8", 8192, 4256, 1596},
      {"tnlg.op.tp16", 8192, 4256, 266},       {"tnlg.fc2.tp16", 8192, 4256, 1064},
      {"tnlg.fc1.tp16", 8192, 4256, 1064},     {"tnlg.ip.tp16", 8192, 4256, 798},
      {"gpt3.op.tp32", 2048, 12288, 384},      {"gpt3.fc2.tp32", 2048, 12288, 1536},
      {"gpt3.fc1.tp32", 2048, 12288, 1536},    {"gpt3.ip.tp32", 2048, 12288, 1152},
      {"palm.op.tp32", 2048, 18432, 576},      {"palm.fc2.tp32", 2048, 18432, 2304},
      {"palm.fc1.tp32", 2048, 18432, 2304},    {"palm.ip.tp32", 2048, 18432, 1728},
      {"mtnlg.op.tp32", 2048, 20480, 640},     {"mtnlg.fc2.tp32", 2048, 20480, 2560},
      {"mtnlg.fc1.tp32", 2048, 20480, 2560},   {"mtnlg.ip.tp32", 2048, 20480, 1920},
      // Beyond Table 2, for TP-degree sweeps: every model at TP 4, 8, 16 and 32.
      {"tnlg.fc2.tp4", 8192, 4256, 4256},      {"tnlg.op.tp32", 8192, 4256, 133},
      {"gpt3.fc2.tp8", 2048, 12288, 6144},
  };
  EXPECT_EQ(gemm_preset_names().size(), 5u * 4 * 4);
  for (const Want& w : want) {
    SCOPED_TRACE(w.name);
    const GemmParams p = gemm_preset_params(w.name);
    EXPECT_EQ(p.m, w.m);
    EXPECT_EQ(p.n, w.n);
    EXPECT_EQ(p.k, w.k);
    EXPECT_EQ(p.dtype_bytes, 2u);
    EXPECT_EQ(p.name, w.name);
    const bool forward = std::string(w.name).find(".op.") != std::string::npos ||
                         std::string(w.name).find(".fc2.") != std::string::npos;
    EXPECT_EQ(p.b_layout, forward ? MatrixLayout::kColumnMajor : MatrixLayout::kRowMajor);
  }
  // One of the largest builds quickly and has the exact totals.
  const GemmParams p = gemm_preset_params("tnlg.fc2.tp8");
  const KernelTrace t = make_gemm_trace(p);
  EXPECT_EQ(t.num_wgs(), (8192u / 256) * ((4256u + 127) / 128));
  const TraceTotals totals = trace_totals(t);
  EXPECT_EQ(totals.flops, 2ull * 8192 * 4256 * 2128);
  EXPECT_EQ(totals.store_bytes, 8192ull * 4256 * 2);
}

TEST(Presets, UnknownNameSuggests) {
  try {
    find_gemm_preset("tnlg.fc2.tq8");
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("did you mean 'tnlg.fc2.tp8'"));
  }
  EXPECT_THROW(gemm_preset_params("bert.op.tp8"), UserError);
}

// ---------------------------------------------------------------------------
// Shipped examples: they parse, and they are what the generator makes today.

TEST(Examples, ShippedTracesMatchTheGenerator) {
  GemmParams g512 = small_gemm(512, 512, 512);
  GemmParams edge = small_gemm(300, 200, 100);
  edge.tile_m = edge.tile_n = 128;
  edge.k_step = 64;
  edge.wf_grid_m = edge.wf_grid_n = 2;
  GemmParams t3 = small_gemm(1024, 1024, 256);
  t3.order = TileOrder::kGrouped;
  t3.group_size = 2;
  t3.stagger_wgs = 8;
  t3.store_uncached = true;
  t3.store_update = true;
  const std::pair<const char*, GemmParams> examples[] = {
      {"gemm_512x512x512.trace", g512}, {"gemm_300x200x100_edges.trace", edge}, {"gemm_1024_t3_stagger.trace", t3}};
  for (const auto& [file, params] : examples) {
    SCOPED_TRACE(file);
    const KernelTrace shipped = read_trace(kTracesDir + "/" + file);
    EXPECT_TRUE(shipped == make_gemm_trace(params)) << "regenerate with t3sim-tracegen (see traces/FORMAT.md)";
  }
}

}  // namespace
}  // namespace t3sim
