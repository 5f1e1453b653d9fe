#include "trace/fused_gemm.h"

#include <algorithm>

#include <fmt/format.h>

#include "sim/error.h"
#include "sim/int_math.h"

namespace t3sim {

namespace {

// One tile's rows inside one chunk.
struct Segment {
  std::uint32_t chunk = 0;
  std::uint64_t row0 = 0, rows = 0;  // in C
  std::uint64_t col0 = 0, cols = 0;
  std::uint64_t index = 0;           // in its chunk: (tile row - the chunk's first) x tiles_n + tile column
};

struct Geometry {
  FusedRsLayout layout;
  std::uint64_t tiles_n = 0;
  // The segments of tile (r, c), in row order.
  std::vector<Segment> segments(const GemmParams& g, std::uint64_t r, std::uint64_t c) const {
    std::vector<Segment> out;
    const std::uint64_t r_lo = r * g.tile_m, r_hi = std::min(r_lo + g.tile_m, g.m);
    const std::uint64_t c_lo = c * g.tile_n, c_hi = std::min(c_lo + g.tile_n, g.n);
    const std::uint64_t R = layout.chunk_rows;
    for (std::uint64_t j = r_lo / R; j * R < r_hi; ++j) {
      const std::uint64_t first_tile_row = j * R / g.tile_m;
      Segment s;
      s.chunk = static_cast<std::uint32_t>(j);
      s.row0 = std::max(r_lo, j * R);
      s.rows = std::min(r_hi, (j + 1) * R) - s.row0;
      s.col0 = c_lo;
      s.cols = c_hi - c_lo;
      s.index = (r - first_tile_row) * tiles_n + c;
      out.push_back(s);
    }
    return out;
  }
};

Geometry geometry(const FusedGemmRsParams& p) {
  const GemmParams& g = p.gemm;
  if (p.num_gpus < 2) throw UserError("a fused reduce-scatter needs at least 2 GPUs");
  if (p.gpu >= p.num_gpus) throw UserError(fmt::format("GPU {} of {}", p.gpu, p.num_gpus));
  if (g.c_layout != MatrixLayout::kRowMajor)
    throw UserError("the fused reduce-scatter cuts a row-major output into chunks of whole rows: c_layout must be "
                    "row-major");
  if (g.m % p.num_gpus != 0)
    throw UserError(fmt::format("the fused reduce-scatter gives each of the {} GPUs M / {} whole rows of the output, "
                                "and M = {} is not a multiple of {}",
                                p.num_gpus, p.num_gpus, g.m, p.num_gpus));
  Geometry geo;
  FusedRsLayout& l = geo.layout;
  l.c_base = gemm_addresses(g).c;
  l.chunk_rows = g.m / p.num_gpus;
  l.chunk_bytes = l.chunk_rows * g.n * g.dtype_bytes;
  l.array_bytes = l.chunk_bytes * p.num_gpus;
  geo.tiles_n = gemm_tiles_n(g);
  // Per chunk, the (row offset, rows) of its tile rows: chunk 0's shifted for every
  // chunk when the chunk and the tile rows tile each other the same way everywhere.
  auto blocks = [&](std::uint64_t j) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    const std::uint64_t lo = j * l.chunk_rows, hi = lo + l.chunk_rows;
    for (std::uint64_t r = lo / g.tile_m; r * g.tile_m < hi; ++r) {
      const std::uint64_t a = std::max(lo, r * g.tile_m), b = std::min(hi, std::min(g.m, (r + 1) * g.tile_m));
      out.emplace_back(a - lo, b - a);
    }
    return out;
  };
  const auto first = blocks(0);
  l.same_segments = true;
  for (std::uint32_t j = 0; j < p.num_gpus; ++j) {
    const auto b = blocks(j);
    l.segments_per_chunk = std::max<std::uint64_t>(l.segments_per_chunk, b.size() * geo.tiles_n);
    if (b != first) l.same_segments = false;
  }
  return geo;
}

// The ring distance from GPU g to the owner of chunk j.
std::uint32_t distance(const FusedGemmRsParams& p, std::uint32_t chunk) {
  return (chunk + p.num_gpus - p.gpu) % p.num_gpus;
}

}  // namespace

FusedRsLayout fused_rs_layout(const FusedGemmRsParams& p) { return geometry(p).layout; }

std::uint64_t fused_rs_flags_used(const FusedGemmRsParams& p) {
  return std::uint64_t{p.num_gpus} * (p.all_gather ? 2 : 1) * fused_rs_layout(p).segments_per_chunk;
}

std::uint64_t fused_rs_staging_bytes(const FusedGemmRsParams& p) {
  return std::uint64_t{p.num_gpus - 1} * fused_rs_layout(p).chunk_bytes;
}

std::vector<std::uint64_t> fused_rs_tile_order(const FusedGemmRsParams& p) {
  const Geometry geo = geometry(p);
  std::vector<std::uint64_t> order = gemm_tile_order(p.gemm);
  if (!p.comm_aware) return order;
  // A tile goes by the nearest remote owner among its segments (its own chunk's tiles,
  // which nobody waits for, last): GPU g + 1's first, as T3 staggers its GPUs.
  auto key = [&](std::uint64_t tile) {
    std::uint32_t k = p.num_gpus;
    for (const Segment& s : geo.segments(p.gemm, tile / geo.tiles_n, tile % geo.tiles_n)) {
      const std::uint32_t d = distance(p, s.chunk);
      if (d != 0) k = std::min(k, d);
    }
    return k;
  };
  std::stable_sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) { return key(a) < key(b); });
  return order;
}

KernelTrace make_fused_gemm_rs_trace(const FusedGemmRsParams& p) {
  validate_gemm(p.gemm);
  const Geometry geo = geometry(p);
  const FusedRsLayout& l = geo.layout;
  const GemmParams& g = p.gemm;
  if (p.grid == 0) throw UserError("a persistent kernel needs a grid of at least one WG");
  if (p.adds_per_cycle == 0) throw UserError("adds_per_cycle must be at least 1");
  const std::vector<std::uint64_t> tiles = fused_rs_tile_order(p);
  // Own-chunk segments to reduce: chunk g's, by index.
  std::vector<Segment> own, others;  // others: the all-reduce's, whose sums other GPUs send
  for (std::uint64_t r = 0; r < gemm_tiles_m(g); ++r)
    for (std::uint64_t c = 0; c < geo.tiles_n; ++c)
      for (const Segment& s : geo.segments(g, r, c)) {
        if (s.chunk == p.gpu)
          own.push_back(s);
        else if (p.all_gather)
          others.push_back(s);
      }
  if (p.all_gather && !p.reduce) throw UserError("a fused all-gather follows the reduction: all_gather needs reduce");
  if (p.atomic && (!p.reduce || p.all_gather))
    throw UserError("atomic adds are the reduce-scatter's alternative to staging: atomic needs reduce, not all_gather");
  const std::uint64_t tasks = tiles.size() + own.size() + others.size();
  const auto grid = static_cast<std::uint32_t>(std::min<std::uint64_t>(p.grid, tasks));
  if (grid > 65535) throw UserError(fmt::format("a persistent grid of {} WGs (at most 65535 programs)", grid));

  const GemmAddresses base = gemm_addresses(g);
  const std::int64_t dt = g.dtype_bytes;
  const std::int64_t row_stride = i64(g.n) * dt;

  KernelTrace t;
  t.name = fmt::format("fused_gemm_{}_{}x{}x{}_gpu{}", p.reduce ? "rs" : "a2a", g.m, g.n, g.k, p.gpu);
  t.attrs.emplace_back("generator", p.reduce ? "t3sim fused GEMM + reduce-scatter (persistent)"
                                            : "t3sim fused GEMM + all-to-all (persistent)");
  t.attrs.emplace_back("gemm", describe(g));
  t.attrs.emplace_back("fused", fmt::format("gpus={} gpu={} grid={} order={} staging={:#x} flags={}", p.num_gpus,
                                            p.gpu, grid, p.comm_aware ? "comm-aware" : "oblivious", p.staging_base,
                                            p.flag_base));
  t.resources = gemm_resources(g);
  t.programs.resize(grid);
  for (std::uint32_t w = 0; w < grid; ++w) t.programs[w].name = fmt::format("wg_{}", w);

  auto flag = [&](std::uint32_t d, std::uint64_t index) { return i64(p.flag_base + d * l.segments_per_chunk + index); };
  // Where segment s's partial lands at its owner, from this GPU.
  auto staged = [&](const Segment& s, std::uint32_t d) {
    const std::uint64_t in_chunk = (s.row0 - std::uint64_t{s.chunk} * l.chunk_rows) * g.n * g.dtype_bytes +
                                   s.col0 * g.dtype_bytes;
    return i64(p.staging_base + std::uint64_t{d - 1} * l.chunk_bytes + in_chunk);
  };
  auto c_address = [&](const Segment& s) { return i64(l.c_base + (s.row0 * g.n + s.col0) * g.dtype_bytes); };
  // A segment's access: its rows, or one contiguous run when it spans whole rows (a
  // narrow output: a GEMV's vector), as the WG's coalesced accesses are.
  struct Region {
    std::int64_t bytes, rows;
  };
  auto region = [&](const Segment& s) {
    if (s.cols == g.n) return Region{i64(s.rows * s.cols) * dt, 1};
    return Region{i64(s.cols) * dt, i64(s.rows)};
  };

  // The tiles, round-robin over the grid.
  for (std::uint64_t i = 0; i < tiles.size(); ++i) {
    TraceProgram& prog = t.programs[i % grid];
    const std::uint64_t r = tiles[i] / geo.tiles_n, c = tiles[i] % geo.tiles_n;
    const std::uint64_t r0 = r * g.tile_m, c0 = c * g.tile_n;
    const std::uint64_t tm = std::min<std::uint64_t>(g.tile_m, g.m - r0), tn = std::min<std::uint64_t>(g.tile_n, g.n - c0);
    const std::uint64_t a = base.a + (g.a_layout == MatrixLayout::kRowMajor ? r0 * g.k : r0) * g.dtype_bytes;
    const std::uint64_t b = base.b + (g.b_layout == MatrixLayout::kRowMajor ? c0 : c0 * g.k) * g.dtype_bytes;
    // Every tile's K loop uses variable slot 0 (loops that follow each other share it).
    prog.loop_vars.clear();
    append_tile_mainloop(prog, g, tm, tn, TileBase{i64(a), std::nullopt}, TileBase{i64(b), std::nullopt}, 0);
    for (const Segment& s : geo.segments(g, r, c)) {
      const std::uint32_t d = distance(p, s.chunk);
      const Region seg = region(s);
      if (p.atomic) {
        // Added into the owner's C (its own chunk locally), then flagged there.
        TraceOp add = prog.constant_op(TraceOpKind::kStore, {c_address(s), seg.bytes, seg.rows, row_stride, i64(s.chunk)});
        add.flags = kTraceUncached | kTraceUpdate | (d == 0 ? 0 : kTraceRemote);
        prog.ops.push_back(add);
        TraceOp set = prog.constant_op(TraceOpKind::kSet, {flag(d, s.index), 1, 0, 0, i64(s.chunk)});
        set.flags = d == 0 ? 0 : kTraceRemote;
        prog.ops.push_back(set);
      } else if (d == 0) {
        prog.ops.push_back(prog.constant_op(TraceOpKind::kStore, {c_address(s), seg.bytes, seg.rows, row_stride}));
        if (p.reduce) prog.ops.push_back(prog.constant_op(TraceOpKind::kSet, {flag(0, s.index), 1}));
      } else {
        TraceOp st = prog.constant_op(TraceOpKind::kStore, {staged(s, d), seg.bytes, seg.rows, row_stride, i64(s.chunk)});
        st.flags = kTraceUncached | kTraceRemote;
        prog.ops.push_back(st);
        TraceOp set = prog.constant_op(TraceOpKind::kSet, {flag(d, s.index), 1, 0, 0, i64(s.chunk)});
        set.flags = kTraceRemote;
        prog.ops.push_back(set);
      }
    }
  }
  // The own chunk's reduction, continuing the round-robin.
  for (std::uint64_t i = 0; i < own.size(); ++i) {
    const Segment& s = own[i];
    TraceProgram& prog = t.programs[(tiles.size() + i) % grid];
    for (std::uint32_t d = p.reduce ? 0 : 1; d < p.num_gpus; ++d)
      prog.ops.push_back(prog.constant_op(TraceOpKind::kWait, {flag(d, s.index), 1}));
    if (!p.reduce || p.atomic) continue;  // the slices landed (all-to-all) or were added (atomic) in place
    const std::int64_t bytes = region(s).bytes, rows = region(s).rows;
    prog.ops.push_back(prog.constant_op(TraceOpKind::kLoad, {c_address(s), bytes, rows, row_stride}));
    for (std::uint32_t d = 1; d < p.num_gpus; ++d) {
      TraceOp ld = prog.constant_op(TraceOpKind::kLoad, {staged(s, d), bytes, rows, row_stride});
      ld.flags = kTraceUncached;
      prog.ops.push_back(ld);
    }
    const std::uint64_t elements = s.rows * s.cols;
    prog.ops.push_back(prog.constant_op(TraceOpKind::kCompute,
                          {i64((std::uint64_t{p.num_gpus - 1} * elements + p.adds_per_cycle - 1) / p.adds_per_cycle)}));
    prog.ops.push_back(prog.constant_op(TraceOpKind::kStore, {c_address(s), bytes, rows, row_stride}));
    if (!p.all_gather) continue;
    // The all-reduce's second phase: the sum to every peer's C, each with a flag there
    // (released: after the store is acknowledged), GPU g + 1 first.
    for (std::uint32_t e = 1; e < p.num_gpus; ++e) {
      const std::uint32_t peer = (p.gpu + e) % p.num_gpus;
      TraceOp st = prog.constant_op(TraceOpKind::kStore, {c_address(s), bytes, rows, row_stride, i64(peer)});
      st.flags = kTraceUncached | kTraceRemote;
      prog.ops.push_back(st);
      TraceOp set = prog.constant_op(TraceOpKind::kSet, {flag(p.num_gpus + (p.num_gpus - e), s.index), 1, 0, 0, i64(peer)});
      set.flags = kTraceRemote;
      prog.ops.push_back(set);
    }
  }
  // The all-reduce's end: wait for the other chunks' sums, continuing the round-robin.
  for (std::uint64_t i = 0; i < others.size(); ++i) {
    const Segment& s = others[i];
    TraceProgram& prog = t.programs[(tiles.size() + own.size() + i) % grid];
    prog.ops.push_back(prog.constant_op(TraceOpKind::kWait, {flag(p.num_gpus + distance(p, s.chunk), s.index), 1}));
  }
  for (std::uint32_t w = 0; w < grid; ++w) t.add_wg(static_cast<std::uint16_t>(w), {});
  validate_trace(t);
  return t;
}

}  // namespace t3sim
